"""What an alert says: the pieces and editions of a subscriber's window, its data (webhook
payload and template context), and its email, rendered once per distinct alert
(docs/ALERTS.md). Used by services/delivery/alerts.py, which plans and sends.

Alerts are made outside any request: their absolute URLs are under each paper's canonical
origin (`PaperOrigins.links(paper)`, services/links.py), the ones its pages use.

`Content` reads each paper's recent pieces once per run and answers every window from memory;
`Composer` renders `templates/mail/alert.*` once per distinct (paper, pieces, editions,
cadence, period) into a `mail.Template` and makes each reader's copy by substitution
(docs/PERFORMANCE.md "send-alerts throughput").
"""
from __future__ import annotations

import bisect
from datetime import date, datetime, timedelta
from types import SimpleNamespace

from flask import render_template
from markupsafe import escape
from sqlalchemy import select

from extensions import db
from models import Edition, Paper, Persona, Piece, Section
from models.clock import rfc3339
from services.delivery import mail, subscriptions
from services.links import Links, PaperOrigins

# A window never reaches further back than this (a reader who was silent for months gets the
# recent news, not the whole archive).
MAX_LOOKBACK = timedelta(days=31)
# Distinct rendered alerts kept per run (each is a few tens of kilobytes).
TEMPLATE_CACHE = 512
# Stand-ins for the per-reader values in a rendered alert; letters only, so autoescape keeps them.
EMAIL_SLOT, UNSUBSCRIBE_SLOT = "PDxREADERxEMAILx7c1f", "PDxUNSUBSCRIBExURLx7c1f"
MANAGE_SLOT = "PDxMANAGExURLx7c1f"


def period_for(cadence: str, now: datetime) -> str:
    """The cadence slot `now` falls in: instant -> the run time; daily -> the UTC date;
    weekly -> the ISO week (`2026-W47`)."""
    if cadence == "daily":
        return now.date().isoformat()
    if cadence == "weekly":
        year, week, _ = now.isocalendar()
        return f"{year}-W{week:02d}"
    return rfc3339(now)


def cadence_of(period: str) -> str:
    """The cadence a recorded period was planned under, from its shape: `2026-11-24` daily,
    `2026-W48` weekly, a time instant. A reader may change cadence between the planning of a
    window and its sending; the alert still speaks of the slot it was planned for."""
    if "-W" in period:
        return "weekly"
    return "daily" if len(period) == 10 else "instant"


def period_words(cadence: str, period: str) -> str:
    """A digest's period as a reader says it: daily `2026-11-24` -> "Tuesday 24 November 2026",
    weekly `2026-W48` -> "Week of 23 November 2026" (the ISO week's Monday); an instant alert's
    period (a time) -> "". English, whatever the server's locale."""
    if cadence == "daily":
        day = date.fromisoformat(period)
        return f"{_WEEKDAYS[day.weekday()]} {day.day} {_MONTHS[day.month - 1]} {day.year}"
    if cadence == "weekly":
        year, week = period.split("-W")
        monday = date.fromisocalendar(int(year), int(week), 1)
        return f"Week of {monday.day} {_MONTHS[monday.month - 1]} {monday.year}"
    return ""


_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")


def subject_for(nameplate: str, cadence: str, period: str, headlines: list[str],
                edition_title: str | None) -> str:
    """An alert's subject, newest news first: an instant alert is its headline ("Headline + 2
    more" for several); a digest "<nameplate>, <period in words>: Headline + N more"; an alert
    with only a video edition names the edition. Made one line by `mail` whatever it holds."""
    if headlines:
        news = headlines[0] + (f" + {len(headlines) - 1} more" if len(headlines) > 1 else "")
    else:
        news = f"the video edition, {edition_title}" if edition_title else "the video edition"
    if cadence in ("daily", "weekly"):
        return f"{nameplate}, {period_words(cadence, period)}: {news}"
    return news if headlines else f"{nameplate}: {news}"


_PIECE_COLUMNS = (Piece.id, Piece.slug, Piece.headline, Piece.dek, Piece.on_air_at,
                  Section.name.label("section"), Persona.name.label("byline"))
_EDITION_COLUMNS = (Edition.id, Edition.day, Edition.title, Edition.video_url, Edition.poster_url,
                    Edition.published_at)


def _pieces_query(paper_id: int, start: datetime, end: datetime):
    return (select(*_PIECE_COLUMNS)
            .join(Section, Section.id == Piece.section_id).join(Persona, Persona.id == Piece.persona_id)
            .where(Piece.paper_id == paper_id, Piece.on_air.is_(True),
                   Piece.on_air_at >= start, Piece.on_air_at < end)
            .order_by(Piece.on_air_at, Piece.id))


def _editions_query(paper_id: int, start: datetime, end: datetime):
    return (select(*_EDITION_COLUMNS).where(Edition.paper_id == paper_id, Edition.published_at >= start,
                                            Edition.published_at < end)
            .order_by(Edition.published_at, Edition.id))


def window_content(subscriber, start: datetime, end: datetime) -> tuple[list, list]:
    """(pieces, editions) of the half-open window [start, end): pieces on air in the subscriber's
    sections, oldest first, as dicts; editions (rows with id, day, title, video_url,
    poster_url, published_at) published in it when `cast` is on. Two queries."""
    query = _pieces_query(subscriber.paper_id, start, end)
    if subscriber.sections is not None:
        query = query.where(Section.name.in_(subscriber.sections))
    pieces = [row._asdict() for row in db.session.execute(query)]
    editions = list(db.session.execute(_editions_query(subscriber.paper_id, start, end))) if subscriber.cast else []
    return pieces, editions


class Content:
    """Every paper's on-air pieces and editions in [since, until), read once per paper per run,
    answering `window_content` for any window inside that span without a query (a window
    reaching outside it falls back to `window_content`)."""

    def __init__(self, since: datetime, until: datetime):
        self.since, self.until = since, until
        self._papers: dict[int, tuple[list, list, list, list]] = {}

    def _load(self, paper_id: int):
        if paper_id not in self._papers:
            pieces = [row._asdict() for row in db.session.execute(_pieces_query(paper_id, self.since, self.until))]
            editions = list(db.session.execute(_editions_query(paper_id, self.since, self.until)))
            self._papers[paper_id] = (pieces, [p["on_air_at"] for p in pieces],
                                      editions, [e.published_at for e in editions])
        return self._papers[paper_id]

    def window(self, subscriber, start: datetime, end: datetime) -> tuple[list, list]:
        if start < self.since or end > self.until:
            return window_content(subscriber, start, end)
        pieces, piece_times, editions, edition_times = self._load(subscriber.paper_id)
        chosen = pieces[bisect.bisect_left(piece_times, start):bisect.bisect_left(piece_times, end)]
        if subscriber.sections is not None:
            wanted = set(subscriber.sections)
            chosen = [p for p in chosen if p["section"] in wanted]
        cast = editions[bisect.bisect_left(edition_times, start):bisect.bisect_left(edition_times, end)]
        return chosen, cast if subscriber.cast else []


def alert_data(paper: Paper, subscriber, alert, pieces, editions, *, links: Links) -> dict:
    """The `data` of an alert (webhook payload and email template context): `{paper, email,
    cadence, period, period_words, window: {start, end}, pieces: [...], edition, editions:
    [...]}`, pieces and editions newest first (`edition` the newest), times as RFC 3339 text,
    page URLs under `links`. `subscriber` needs email and cadence; `alert`
    period, window_start and window_end; `pieces` are `window_content` dicts and `editions`
    its edition rows."""
    edition_rows = [{"day": e.day.isoformat(), "title": e.title, "url": links.edition_page(e.day),
                     "video_url": links.media(e.video_url), "poster_url": links.media(e.poster_url)}
                    for e in reversed(editions)]
    return {
        "paper": paper.slug, "email": subscriber.email, "cadence": subscriber.cadence,
        "period": alert.period, "period_words": period_words(subscriber.cadence, alert.period),
        "window": {"start": rfc3339(alert.window_start), "end": rfc3339(alert.window_end)},
        "pieces": [{"id": str(p["id"]), "slug": p["slug"], "headline": p["headline"], "dek": p["dek"],
                    "section": p["section"], "byline": p["byline"], "url": links.story_page(p["slug"]),
                    "on_air_at": rfc3339(p["on_air_at"])} for p in reversed(pieces)],
        "edition": edition_rows[0] if edition_rows else None,
        "editions": edition_rows,
    }


class Composer:
    """Makes each unsent row's message: the window's content from `Content`, one rendered
    `mail.Template` per distinct (paper, pieces, editions, cadence, period), and the reader's
    copy by substitution. URLs are under each paper's origin from `origins`. Needs an app
    context (templates/mail/alert.*, SECRET_KEY for unsubscribe tokens)."""

    def __init__(self, now: datetime, origins: PaperOrigins):
        self.now = now
        self.origins = origins
        self.content = Content(now - MAX_LOOKBACK, now)
        self.templates: dict[tuple, mail.Template] = {}
        self.papers: dict[int, tuple[Paper, str, str, Links]] = {}

    def _paper(self, paper_id: int) -> tuple[Paper, str, str, Links]:
        """(paper, slug, mail domain, links), read once per paper: the ORM object expires at
        every commit (one commit a message), its slug and host would each cost a query."""
        if paper_id not in self.papers:
            paper = db.session.get(Paper, paper_id)
            links = self.origins.links(paper)
            domain = subscriptions.sender_address(paper, links=links).rsplit("@", 1)[1]
            self.papers[paper_id] = (paper, paper.slug, domain, links)
        return self.papers[paper_id]

    def message(self, row) -> mail.Outgoing | None:
        """The alert for an unsent row, or None when its window holds nothing any more
        (everything in it was taken off air since it was recorded)."""
        pieces, editions = self.content.window(row, row.window_start, row.window_end)
        if not pieces and not editions:
            return None
        paper, slug, domain, links = self._paper(row.paper_id)
        cadence = cadence_of(row.period)
        key = (row.paper_id, tuple(p["id"] for p in pieces), tuple(e.id for e in editions), cadence, row.period)
        template = self.templates.get(key)
        if template is None:
            if len(self.templates) >= TEMPLATE_CACHE:
                self.templates.clear()
            template = self.templates[key] = self._render(paper, row, cadence, pieces, editions, links)
        reader = SimpleNamespace(id=row.subscriber_id, paper_id=row.paper_id, email=row.email)
        unsubscribe = subscriptions.unsubscribe_url(reader, links=links)
        manage = subscriptions.preferences_url(reader, links=links)
        # The same id on a resend after a crash (docs/ALERTS.md "Crash safety"): mail stores
        # that de-duplicate by Message-ID show one copy.
        message_id = f"<alert.{row.id}.{int(row.window_end.timestamp())}.{slug}@{domain}>"
        return template.fill(to=row.email, message_id=message_id, unsubscribe_url=unsubscribe, values={
            EMAIL_SLOT: (row.email, str(escape(row.email))),
            UNSUBSCRIBE_SLOT: (unsubscribe, str(escape(unsubscribe))),
            MANAGE_SLOT: (manage, str(escape(manage)))})

    def _render(self, paper: Paper, row, cadence: str, pieces, editions, links: Links) -> mail.Template:
        """Render `templates/mail/alert.*` once for every reader of this content. Per-reader
        values reach the templates only as `unsubscribe`, `manage` (the preference centre)
        and `data.email` (stand-ins replaced per message); `data.window` differs per reader,
        so it is not given. `cadence` is the one the row's period was planned under."""
        data = alert_data(paper, SimpleNamespace(email=EMAIL_SLOT, cadence=cadence), row, pieces, editions,
                          links=links)
        del data["window"]
        subject = subject_for(paper.nameplate, cadence, row.period,
                              [piece["headline"] for piece in data["pieces"]],
                              data["edition"]["title"] if data["edition"] else None)
        context = {"paper": paper, "data": data, "unsubscribe": UNSUBSCRIBE_SLOT, "manage": MANAGE_SLOT,
                   "home": links.home()}
        from_name, from_addr = subscriptions.sender(paper, links=links)
        return mail.Template(from_name=from_name, from_addr=from_addr,
                             subject=subject, now=self.now, list_id=subscriptions.list_id(paper, links=links),
                             one_click=True, text=render_template("mail/alert.txt", **context),
                             html=render_template("mail/alert.html", **context))
