"""Cadence alerts: plan each confirmed subscriber's due alert window, then send the recorded
windows (spec "Events"; CONTRACT.md "subscribe", "webhooks"; docs/ALERTS.md).

Crash safety rests on one rule: a window is recorded (an `AlertDelivery` row, unique per
subscriber and period and per window start) and committed BEFORE anything is sent, and marked
`sent_at` in its own transaction right after the SMTP server accepted it. A run killed midway
leaves unsent rows that the next run sends; a sent row is never sent again. Rows are claimed
one at a time with `SELECT ... FOR UPDATE SKIP LOCKED`, so two runs on PostgreSQL never send
the same row (SQLite has a single writer and ignores the clause).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from flask import current_app, render_template
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from clock import rfc3339
from extensions import db
from models import AlertDelivery, Edition, Paper, Persona, Piece, Section, Subscriber
from services import mail, subscriptions, urls, webhooks

# A window never reaches further back than this (a reader who was silent for months gets the
# recent news, not the whole archive).
MAX_LOOKBACK = timedelta(days=31)
CHUNK = 1000
# Consecutive failed messages after which the run stops trying (the SMTP server is down).
GIVE_UP_AFTER = 5


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


def window_content(subscriber: Subscriber, start: datetime, end: datetime) -> tuple[list, list]:
    """(pieces, editions) of the window (start, end]: pieces on air in the subscriber's
    sections, oldest first, as dict rows; editions published in it when `cast` is on."""
    query = (select(Piece.id, Piece.slug, Piece.headline, Piece.dek, Piece.on_air_at,
                    Section.name.label("section"), Persona.name.label("byline"))
             .join(Section, Section.id == Piece.section_id).join(Persona, Persona.id == Piece.persona_id)
             .where(Piece.paper_id == subscriber.paper_id, Piece.on_air.is_(True),
                    Piece.on_air_at > start, Piece.on_air_at <= end)
             .order_by(Piece.on_air_at, Piece.id))
    if subscriber.sections is not None:
        query = query.where(Section.name.in_(subscriber.sections))
    pieces = [row._asdict() for row in db.session.execute(query)]
    editions = []
    if subscriber.cast:
        editions = list(db.session.scalars(select(Edition).where(
            Edition.paper_id == subscriber.paper_id, Edition.published_at > start,
            Edition.published_at <= end).order_by(Edition.published_at)))
    return pieces, editions


def alert_data(paper: Paper, subscriber: Subscriber, alert: AlertDelivery, pieces, editions) -> dict:
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


@dataclass
class PlanReport:
    recorded: int = 0
    skipped: int = 0


def plan_alerts(now: datetime) -> PlanReport:
    """Record the due alert window of every confirmed subscriber (and its webhook delivery).

    A subscriber is skipped when its cadence slot for `now` is already recorded or nothing
    went on air in its sections (nor an edition, with cast) since its last window. Commits
    per chunk of subscribers; a concurrent planner's row wins (unique constraints)."""
    report = PlanReport()
    papers: dict[int, Paper] = {}
    last_id = 0
    while True:
        chunk = list(db.session.scalars(select(Subscriber).where(
            Subscriber.id > last_id, Subscriber.confirmed_at.is_not(None),
            Subscriber.unsubscribed_at.is_(None)).order_by(Subscriber.id).limit(CHUNK)))
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
        for sub in chunk:
            start = max(last_end.get(sub.id) or sub.confirmed_at, now - MAX_LOOKBACK)
            if (sub.id, periods[sub.id]) in taken or start >= now:
                report.skipped += 1
                continue
            pieces, editions = window_content(sub, start, now)
            if not pieces and not editions:
                report.skipped += 1
                continue
            if sub.paper_id not in papers:
                papers[sub.paper_id] = db.session.get(Paper, sub.paper_id)
            if _record(papers[sub.paper_id], sub, periods[sub.id], start, now, pieces, editions):
                report.recorded += 1
            else:
                report.skipped += 1
        db.session.commit()
    return report


def _record(paper, sub, period, start, now, pieces, editions) -> bool:
    try:
        with db.session.begin_nested():
            alert = AlertDelivery(subscriber_id=sub.id, period=period, window_start=start,
                                  window_end=now, created_at=now, attempts=0)
            db.session.add(alert)
            db.session.flush()
            if sub.webhook_url:
                with paper_context(paper):
                    data = alert_data(paper, sub, alert, pieces, editions)
                webhooks.enqueue(sub, "alert", data, now, alert_id=alert.id)
        return True
    except IntegrityError:  # another run recorded this slot first
        return False


@dataclass
class SendReport:
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)


def unsent_count() -> int:
    return db.session.scalar(select(func.count()).select_from(AlertDelivery)
                             .where(AlertDelivery.sent_at.is_(None))) or 0


def _claim(tried: set[int]) -> AlertDelivery | None:
    query = (select(AlertDelivery).where(AlertDelivery.sent_at.is_(None))
             .order_by(AlertDelivery.id).limit(1).with_for_update(skip_locked=True))
    if tried:
        query = query.where(AlertDelivery.id.not_in(tried))
    return db.session.scalar(query)


def compose_alert(paper: Paper, sub: Subscriber, alert: AlertDelivery, pieces, editions, now):
    """The alert email (multipart, List-Id, List-Unsubscribe + One-Click). Needs a request
    context on the paper's host."""
    data = alert_data(paper, sub, alert, pieces, editions)
    unsubscribe = subscriptions.unsubscribe_url(sub)
    count = len(pieces)
    subject = (f"{paper.nameplate}: {count} new piece{'s' if count != 1 else ''}" if count
               else f"{paper.nameplate}: today's video edition")
    context = {"paper": paper, "data": data, "unsubscribe": unsubscribe, "home": urls.home(),
               "subscriber": sub}
    return mail.compose(from_name=paper.nameplate, from_addr=subscriptions.sender_address(paper),
                        to=sub.email, subject=subject, now=now, list_id=subscriptions.list_id(paper),
                        unsubscribe_url=unsubscribe,
                        text=render_template("mail/alert.txt", **context),
                        html=render_template("mail/alert.html", **context))


def send_recorded(now: datetime, mailer: mail.Mailer,
                  progress: Callable[[int], None] | None = None) -> SendReport:
    """Send every recorded, unsent alert, one row per transaction (claim, send, mark sent,
    commit). A failed message stays unsent for the next run; after GIVE_UP_AFTER failures in
    a row the run stops (the server is down). Rows of addresses that left the list are
    dropped."""
    report = SendReport()
    tried: set[int] = set()
    papers: dict[int, Paper] = {}
    streak = 0
    while streak < GIVE_UP_AFTER:
        alert = _claim(tried)
        if alert is None:
            db.session.commit()
            break
        tried.add(alert.id)
        sub = db.session.get(Subscriber, alert.subscriber_id)
        if sub.confirmed_at is None or sub.unsubscribed_at is not None:
            db.session.delete(alert)
            db.session.commit()
            report.skipped += 1
            progress and progress(1)
            continue
        if sub.paper_id not in papers:
            papers[sub.paper_id] = db.session.get(Paper, sub.paper_id)
        paper = papers[sub.paper_id]
        pieces, editions = window_content(sub, alert.window_start, alert.window_end)
        try:
            if pieces or editions:  # else everything was taken off air since: nothing to say
                with paper_context(paper):
                    message = compose_alert(paper, sub, alert, pieces, editions, now)
                mailer.send(message)
        except mail.MailError as exc:
            alert.attempts += 1
            alert.last_error = str(exc)[:1000]
            db.session.commit()
            report.failed += 1
            report.errors.append(str(exc))
            streak += 1
        else:
            alert.sent_at, sub.last_sent_at = now, now
            db.session.commit()
            report.sent += 1
            streak = 0
        progress and progress(1)
    return report
