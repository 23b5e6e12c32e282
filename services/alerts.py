"""Cadence alerts: plan each confirmed subscriber's due alert window, then send the recorded
windows (spec "Events"; CONTRACT.md "subscribe", "webhooks"; docs/ALERTS.md).

Crash safety rests on one rule: a window is recorded (an `AlertDelivery` row, unique per
subscriber and period and per window start) and committed BEFORE anything is sent, and marked
`sent_at` in its own transaction right after the SMTP server accepted it. A run killed midway
leaves unsent rows that the next run sends; a sent row is never sent again. The one gap is
between the server's "250" and that commit (a few hundred microseconds): a crash there sends
that one message again on the next run, with the same Message-ID (at-least-once). Rows are
claimed one at a time with `SELECT ... FOR UPDATE SKIP LOCKED`, so two runs on PostgreSQL never
send the same row; on SQLite (no row locks) `send_lock()` lets one run send at a time.

Throughput (docs/PERFORMANCE.md): a run reads each paper's recent pieces once (`Content`), renders
each distinct alert (same pieces, editions, cadence and period) once into a `mail.Template`, and
makes each reader's copy by substitution; planning inserts a chunk of windows in one statement.
"""
from __future__ import annotations

import bisect
import fcntl
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Callable, Iterator

from flask import current_app, render_template
from markupsafe import escape
from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError

from clock import rfc3339
from extensions import db
from models import AlertDelivery, Edition, Paper, Persona, Piece, Section, Subscriber
from models.types import UTCDateTime
from services import mail, subscriptions, urls, webhooks

# A window never reaches further back than this (a reader who was silent for months gets the
# recent news, not the whole archive).
MAX_LOOKBACK = timedelta(days=31)
CHUNK = 1000
# Consecutive failed messages after which the run stops trying (the SMTP server is down).
GIVE_UP_AFTER = 5
# Distinct rendered alerts kept per run (each is a few tens of kilobytes).
TEMPLATE_CACHE = 512
# Stand-ins for the per-reader values in a rendered alert; letters only, so autoescape keeps them.
EMAIL_SLOT, UNSUBSCRIBE_SLOT = "PDxREADERxEMAILx7c1f", "PDxUNSUBSCRIBExURLx7c1f"


def period_for(cadence: str, now: datetime) -> str:
    """The cadence slot `now` falls in: instant -> the run time; daily -> the UTC date;
    weekly -> the ISO week (`2026-W47`)."""
    if cadence == "daily":
        return now.date().isoformat()
    if cadence == "weekly":
        year, week, _ = now.isocalendar()
        return f"{year}-W{week:02d}"
    return rfc3339(now)


def paper_base_url(paper: Paper) -> str:
    """The paper's public origin outside a request: its custom host, else `{slug}.{PAPER_DOMAIN}`
    (the bare PAPER_DOMAIN for DEFAULT_PAPER), with PUBLIC_URL_SCHEME and PUBLIC_PORT."""
    config = current_app.config
    host = paper.host or (config["PAPER_DOMAIN"] if paper.slug == config["DEFAULT_PAPER"]
                          else f"{paper.slug}.{config['PAPER_DOMAIN']}")
    port = config.get("PUBLIC_PORT") or ""
    return f"{config['PUBLIC_URL_SCHEME']}://{host}{':' + str(port) if port else ''}"


def paper_context(paper: Paper):
    """A request context on the paper's host, so `services.urls` builds its absolute URLs."""
    return current_app.test_request_context("/", base_url=paper_base_url(paper))


_PIECE_COLUMNS = (Piece.id, Piece.slug, Piece.headline, Piece.dek, Piece.on_air_at,
                  Section.name.label("section"), Persona.name.label("byline"))
_EDITION_COLUMNS = (Edition.id, Edition.day, Edition.title, Edition.video_url, Edition.poster_url,
                    Edition.published_at)


def _pieces_query(paper_id: int, start: datetime, end: datetime):
    return (select(*_PIECE_COLUMNS)
            .join(Section, Section.id == Piece.section_id).join(Persona, Persona.id == Piece.persona_id)
            .where(Piece.paper_id == paper_id, Piece.on_air.is_(True),
                   Piece.on_air_at > start, Piece.on_air_at <= end)
            .order_by(Piece.on_air_at, Piece.id))


def _editions_query(paper_id: int, start: datetime, end: datetime):
    return (select(*_EDITION_COLUMNS).where(Edition.paper_id == paper_id, Edition.published_at > start,
                                            Edition.published_at <= end)
            .order_by(Edition.published_at, Edition.id))


def window_content(subscriber, start: datetime, end: datetime) -> tuple[list, list]:
    """(pieces, editions) of the window (start, end]: pieces on air in the subscriber's
    sections, oldest first, as dicts; editions (rows with id, day, title, video_url,
    poster_url, published_at) published in it when `cast` is on. Two queries."""
    query = _pieces_query(subscriber.paper_id, start, end)
    if subscriber.sections is not None:
        query = query.where(Section.name.in_(subscriber.sections))
    pieces = [row._asdict() for row in db.session.execute(query)]
    editions = list(db.session.execute(_editions_query(subscriber.paper_id, start, end))) if subscriber.cast else []
    return pieces, editions


class Content:
    """Every paper's on-air pieces and editions in (since, until], read once per paper per run,
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
        chosen = pieces[bisect.bisect_right(piece_times, start):bisect.bisect_right(piece_times, end)]
        if subscriber.sections is not None:
            wanted = set(subscriber.sections)
            chosen = [p for p in chosen if p["section"] in wanted]
        cast = editions[bisect.bisect_right(edition_times, start):bisect.bisect_right(edition_times, end)]
        return chosen, cast if subscriber.cast else []


def alert_data(paper: Paper, subscriber, alert, pieces, editions) -> dict:
    """The `data` of an alert (webhook payload and email template context). Needs a request
    context on the paper's host."""
    edition_rows = [{"day": e.day.isoformat(), "title": e.title, "url": urls.edition_page(e.day),
                     "video_url": e.video_url, "poster_url": e.poster_url} for e in editions]
    return {
        "paper": paper.slug, "email": subscriber.email, "cadence": subscriber.cadence,
        "period": alert.period,
        "window": {"start": rfc3339(alert.window_start), "end": rfc3339(alert.window_end)},
        "pieces": [{"id": str(p["id"]), "slug": p["slug"], "headline": p["headline"], "dek": p["dek"],
                    "section": p["section"], "byline": p["byline"], "url": urls.story_page(p["slug"]),
                    "on_air_at": rfc3339(p["on_air_at"])} for p in pieces],
        "edition": edition_rows[-1] if edition_rows else None,
        "editions": edition_rows,
    }


# --- planning ------------------------------------------------------------------------------

@dataclass
class PlanReport:
    recorded: int = 0
    skipped: int = 0


_PLAN_COLUMNS = (Subscriber.id, Subscriber.paper_id, Subscriber.email, Subscriber.cadence,
                 Subscriber.sections, Subscriber.cast, Subscriber.confirmed_at, Subscriber.webhook_url)


def plan_alerts(now: datetime) -> PlanReport:
    """Record the due alert window of every confirmed subscriber (and its webhook delivery).

    A subscriber is skipped when its cadence slot for `now` is already recorded or nothing
    went on air in its sections (nor an edition, with cast) since its last window. Per chunk of
    CHUNK subscribers: three reads, one multi-row insert that leaves out a slot another run
    recorded first (ON CONFLICT DO NOTHING), one commit. Rows with a webhook are recorded one by
    one, with their outbox delivery."""
    report = PlanReport()
    content = Content(now - MAX_LOOKBACK, now)
    papers: dict[int, Paper] = {}
    last_id = 0
    while True:
        chunk = db.session.execute(select(*_PLAN_COLUMNS).where(
            Subscriber.id > last_id, Subscriber.confirmed_at.is_not(None),
            Subscriber.unsubscribed_at.is_(None)).order_by(Subscriber.id).limit(CHUNK)).all()
        if not chunk:
            break
        last_id = chunk[-1].id
        ids = [s.id for s in chunk]
        last_end = dict(db.session.execute(select(AlertDelivery.subscriber_id, func.max(AlertDelivery.window_end))
                                           .where(AlertDelivery.subscriber_id.in_(ids))
                                           .group_by(AlertDelivery.subscriber_id)).all())
        periods = {s.id: period_for(s.cadence, now) for s in chunk}
        taken = set(db.session.execute(select(AlertDelivery.subscriber_id, AlertDelivery.period).where(
            AlertDelivery.subscriber_id.in_(ids), AlertDelivery.period.in_(set(periods.values())))).all())
        rows = []
        for sub in chunk:
            start = max(last_end.get(sub.id) or sub.confirmed_at, now - MAX_LOOKBACK)
            if (sub.id, periods[sub.id]) in taken or start >= now:
                report.skipped += 1
                continue
            pieces, editions = content.window(sub, start, now)
            if not pieces and not editions:
                report.skipped += 1
                continue
            if not sub.webhook_url:
                rows.append({"subscriber_id": sub.id, "period": periods[sub.id], "window_start": start,
                             "window_end": now, "created_at": now, "attempts": 0})
                continue
            if sub.paper_id not in papers:
                papers[sub.paper_id] = db.session.get(Paper, sub.paper_id)
            recorded = _record(papers[sub.paper_id], sub, periods[sub.id], start, now, pieces, editions)
            report.recorded += recorded
            report.skipped += not recorded
        if rows:
            inserted = len(db.session.execute(_insert_new(rows)).all())
            report.recorded += inserted
            report.skipped += len(rows) - inserted
        db.session.commit()
    return report


def _insert_new(rows: list[dict]):
    """INSERT ... ON CONFLICT DO NOTHING RETURNING id: the rows another run has not recorded."""
    dialect = db.session.get_bind().dialect.name
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    return insert(AlertDelivery).values(rows).on_conflict_do_nothing().returning(AlertDelivery.id)


def _record(paper, sub, period, start, now, pieces, editions) -> bool:
    try:
        with db.session.begin_nested():
            alert = AlertDelivery(subscriber_id=sub.id, period=period, window_start=start,
                                  window_end=now, created_at=now, attempts=0)
            db.session.add(alert)
            db.session.flush()
            with paper_context(paper):
                data = alert_data(paper, sub, alert, pieces, editions)
            webhooks.enqueue(sub, "alert", data, now, alert_id=alert.id)
        return True
    except IntegrityError:  # another run recorded this slot first
        return False


# --- sending -------------------------------------------------------------------------------

@dataclass
class SendReport:
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)


def unsent_count() -> int:
    return db.session.scalar(select(func.count()).select_from(AlertDelivery)
                             .where(AlertDelivery.sent_at.is_(None))) or 0


@contextmanager
def send_lock() -> Iterator[bool]:
    """Yield True when this run may send. SQLite has no row locks, so two runs at once (cron
    overlapping a long run) could both send a row: an exclusive `flock` on `<database>.send-lock`
    beside the database file lets one send at a time (the kernel drops it if the run dies).
    PostgreSQL needs none (rows are claimed with SKIP LOCKED): always True."""
    url = db.engine.url
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        yield True
        return
    with open(os.path.abspath(url.database) + ".send-lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True  # closing the file releases the lock


# Built once: statement construction is a visible share of a message's cost at this rate.
# _CLAIM: the next unsent row after id `after`, with its subscriber, locked for this transaction
# (PostgreSQL skips rows another run holds).
_CLAIM = (select(AlertDelivery.id, AlertDelivery.subscriber_id, AlertDelivery.period,
                 AlertDelivery.window_start, AlertDelivery.window_end, Subscriber.paper_id,
                 Subscriber.email, Subscriber.cadence, Subscriber.sections, Subscriber.cast,
                 Subscriber.confirmed_at, Subscriber.unsubscribed_at)
          .join(Subscriber, Subscriber.id == AlertDelivery.subscriber_id)
          .where(AlertDelivery.sent_at.is_(None), AlertDelivery.id > bindparam("after"))
          .order_by(AlertDelivery.id).limit(1)
          .with_for_update(of=AlertDelivery, skip_locked=True))
_MARK_SENT = (update(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
              .values(sent_at=bindparam("now", type_=UTCDateTime()), attempts=AlertDelivery.attempts + 1))
_MARK_READER = (update(Subscriber).where(Subscriber.id == bindparam("subscriber_id"))
                .values(last_sent_at=bindparam("now", type_=UTCDateTime())))
_MARK_FAILED = (update(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
                .values(attempts=AlertDelivery.attempts + 1, last_error=bindparam("error")))
_DROP = delete(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
# Plain UPDATE/DELETE by id: nothing of these tables is loaded in the session to keep in step.
_BULK = {"execution_options": {"synchronize_session": False}}


class Composer:
    """Makes each claimed row's message: the window's content from `Content`, one rendered
    `mail.Template` per distinct (paper, pieces, editions, cadence, period), and the reader's
    copy by substitution. Keeps one request context pushed, on the current paper's host."""

    def __init__(self, now: datetime):
        self.now = now
        self.content = Content(now - MAX_LOOKBACK, now)
        self.templates: dict[tuple, mail.Template] = {}
        self.papers: dict[int, tuple[Paper, str, str]] = {}
        self._context, self._context_paper = None, None

    def _enter(self, paper_id: int) -> tuple[Paper, str, str]:
        """(paper, slug, mail domain), with a request context on its host pushed. The slug and
        domain are read once: the ORM object expires at every commit (one commit a message)."""
        if self._context_paper != paper_id:
            self.close()
            paper = db.session.get(Paper, paper_id)
            self._context = paper_context(paper)
            self._context.push()
            self._context_paper = paper_id
            if paper_id not in self.papers:
                domain = subscriptions.sender_address(paper).rsplit("@", 1)[1]
                self.papers[paper_id] = (paper, paper.slug, domain)
        return self.papers[paper_id]

    def close(self) -> None:
        if self._context is not None:
            self._context.pop()
        self._context, self._context_paper = None, None

    def message(self, row) -> mail.Outgoing | None:
        """The alert for a claimed row, or None when its window holds nothing any more
        (everything in it was taken off air since it was recorded)."""
        pieces, editions = self.content.window(row, row.window_start, row.window_end)
        if not pieces and not editions:
            return None
        paper, slug, domain = self._enter(row.paper_id)
        key = (row.paper_id, tuple(p["id"] for p in pieces), tuple(e.id for e in editions),
               row.cadence, row.period)
        template = self.templates.get(key)
        if template is None:
            if len(self.templates) >= TEMPLATE_CACHE:
                self.templates.clear()
            template = self.templates[key] = self._render(paper, row, pieces, editions)
        reader = SimpleNamespace(id=row.subscriber_id, paper_id=row.paper_id, email=row.email)
        unsubscribe = subscriptions.unsubscribe_url(reader)
        # The same id on a resend after a crash (see the module docstring): receivers that
        # de-duplicate by Message-ID show one copy.
        message_id = f"<alert.{row.id}.{int(row.window_end.timestamp())}.{slug}@{domain}>"
        return template.fill(to=row.email, message_id=message_id, unsubscribe_url=unsubscribe, values={
            EMAIL_SLOT: (row.email, str(escape(row.email))),
            UNSUBSCRIBE_SLOT: (unsubscribe, str(escape(unsubscribe)))})

    def _render(self, paper: Paper, row, pieces, editions) -> mail.Template:
        """Render `templates/mail/alert.*` once for every reader of this content. Per-reader
        values reach the templates only as `unsubscribe` and `data.email` (stand-ins replaced
        per message); `data.window` differs per reader, so it is not given."""
        data = alert_data(paper, SimpleNamespace(email=EMAIL_SLOT, cadence=row.cadence), row, pieces, editions)
        del data["window"]
        count = len(pieces)
        subject = (f"{paper.nameplate}: {count} new piece{'s' if count != 1 else ''}" if count
                   else f"{paper.nameplate}: today's video edition")
        context = {"paper": paper, "data": data, "unsubscribe": UNSUBSCRIBE_SLOT, "home": urls.home()}
        return mail.Template(from_name=paper.nameplate, from_addr=subscriptions.sender_address(paper),
                             subject=subject, now=self.now, list_id=subscriptions.list_id(paper),
                             one_click=True, text=render_template("mail/alert.txt", **context),
                             html=render_template("mail/alert.html", **context))


def send_recorded(now: datetime, mailer: mail.Mailer,
                  progress: Callable[[int], None] | None = None) -> SendReport:
    """Send every recorded, unsent alert, one row per transaction: claim (one query), send,
    then mark it sent (two UPDATEs) and commit at once. A failed message stays unsent for the
    next run; after GIVE_UP_AFTER failures in a row the run stops (the server is down). Rows of
    addresses that left the list are dropped."""
    report = SendReport()
    composer = Composer(now)
    after, streak = 0, 0
    try:
        while streak < GIVE_UP_AFTER:
            row = db.session.execute(_CLAIM, {"after": after}).first()
            if row is None:
                db.session.commit()
                break
            after = row.id
            if row.confirmed_at is None or row.unsubscribed_at is not None:
                db.session.execute(_DROP, {"alert_id": row.id}, **_BULK)
                db.session.commit()
                report.skipped += 1
                progress and progress(1)
                continue
            try:
                message = composer.message(row)
                if message is not None:
                    mailer.send(message)
            except mail.MailError as exc:
                db.session.execute(_MARK_FAILED, {"alert_id": row.id, "error": str(exc)[:1000]}, **_BULK)
                db.session.commit()
                report.failed += 1
                report.errors.append(str(exc))
                streak += 1
            else:
                # Nothing between the server's "250" and this commit but two one-row UPDATEs:
                # the gap in which a crash would send this message again is kept minimal.
                db.session.execute(_MARK_SENT, {"alert_id": row.id, "now": now}, **_BULK)
                db.session.execute(_MARK_READER, {"subscriber_id": row.subscriber_id, "now": now}, **_BULK)
                db.session.commit()
                report.sent += 1
                streak = 0
            progress and progress(1)
    finally:
        composer.close()
    return report
