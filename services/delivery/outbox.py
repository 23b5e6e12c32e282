"""The mail outbox (docs/ALERTS.md "The outbox"): a request writes a row
(`enqueue_confirm`), `flask worker` sends it (`drain`). No request ever waits for SMTP.

The drainer claims due rows in small batches (one commit sets `claimed_until`, a lease; on
PostgreSQL the claiming SELECT is `FOR UPDATE SKIP LOCKED`, so drainers running at once each
take other rows), then sends each and commits its result at once: sent, retried later
(`next_attempt_at`, backing off), or given up (`failed_at`, `last_error`). A drainer killed
mid-batch leaves its rows to whoever drains once the lease ends. Delivery is at-least-once,
like send-alerts: a kill between the server's "250" and the `sent_at` commit resends.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.message import EmailMessage

from flask import current_app
from sqlalchemy import Boolean, and_, delete, func, literal, or_, select, update
from sqlalchemy import insert as sql_insert

from extensions import db
from models import OutboxMessage, Subscriber
from services import retry
from services.delivery import claims, mail
from services.links import Links

log = logging.getLogger("paperdesk.outbox")

BATCH = 20
# At least this long, and longer than a batch can take (see `lease_for`), so a row is never
# sent by two drainers while the first is still at it.
LEASE = timedelta(minutes=10)
BACKOFF_FIRST = timedelta(seconds=30)
BACKOFF_CAP = timedelta(hours=1)


def enqueue_confirm(paper_id: int, subscriber_id: int, now: datetime, *, links: Links, when: bool = True) -> None:
    """Write the confirm email of `subscriber_id` to the outbox, due at `now`, its links under
    `links.origin`. Exactly one INSERT statement whether `when` is true or not (`INSERT ...
    SELECT ... WHERE :when`): a request costs the same whatever the address's state. Needs
    the session's transaction; the caller commits."""
    table = OutboxMessage.__table__
    values = {"paper_id": paper_id, "kind": "confirm", "subscriber_id": subscriber_id,
              "payload": {"origin": links.origin}, "created_at": now, "next_attempt_at": now, "attempts": 0}
    columns = list(values)
    row = select(*(literal(values[name], type_=table.c[name].type) for name in columns)).where(
        literal(bool(when), type_=Boolean()))
    db.session.execute(sql_insert(table).from_select(columns, row))


@dataclass
class DrainReport:
    """What one `drain()` did: counts of rows sent, retried later and given up, and the first
    errors (`"message <id>: <reason>"`). `stopped`: the SMTP server could not be reached, the
    rest waits for the next pass."""
    sent: int = 0
    retrying: int = 0
    failed: int = 0
    skipped: int = 0  # no longer needed (the address confirmed or left meanwhile)
    stopped: bool = False
    errors: list[str] = field(default_factory=list)


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed try: 30 s, 1, 2, 4 ... minutes, at most an hour."""
    return retry.backoff(attempts, BACKOFF_FIRST, BACKOFF_CAP)


def lease_for(smtp_timeout: float) -> timedelta:
    """How long a claim holds its rows: LEASE, or longer when a whole batch at the worst SMTP
    timing (every step of every message waiting `smtp_timeout` seconds) could outlast it."""
    return max(LEASE, timedelta(seconds=2 * BATCH * mail.SMTP_STEPS * smtp_timeout))


def _claim(now: datetime, limit: int, lease: timedelta) -> list[int]:
    """Lease up to `limit` due rows to this drainer and commit; their ids, oldest due first
    (`claims.claim`: drainers running at once, on any hosts, never take one row twice)."""
    claimed = claims.claim(
        db.session, OutboxMessage,
        due=(OutboxMessage.sent_at.is_(None), OutboxMessage.failed_at.is_(None), OutboxMessage.next_attempt_at <= now,
             or_(OutboxMessage.claimed_until.is_(None), OutboxMessage.claimed_until <= now)),
        order_by=(OutboxMessage.next_attempt_at, OutboxMessage.id), limit=limit,
        lease={"claimed_until": now + lease}, returning=(OutboxMessage.id, OutboxMessage.next_attempt_at))
    db.session.commit()
    return [row.id for row in claimed]


class Unbuildable(Exception):
    """The row cannot become a message (its subscriber or paper is gone, bad data)."""


class NotNeeded(Exception):
    """The message has no reason to go any more (the address confirmed or left)."""


def _record(row_id: int, now: datetime, error: Exception | None, max_attempts: int) -> str:
    row = db.session.get(OutboxMessage, row_id)
    row.claimed_until = None
    if error is None:
        row.sent_at, outcome = now, "sent"
    elif isinstance(error, NotNeeded):
        # Done with, not failed: nothing to retry and nothing to report as an error.
        row.failed_at, row.last_error, outcome = now, str(error), "skipped"
    else:
        row.attempts += 1
        row.last_error = str(error)[:1000]
        permanent = isinstance(error, Unbuildable) or getattr(error, "kind", None) == mail.PERMANENT
        if permanent or row.attempts >= max_attempts:
            row.failed_at, outcome = now, "failed"
            # Given up: the reader may ask for a confirm email again at once.
            if row.subscriber_id:
                db.session.execute(update(Subscriber).where(
                    Subscriber.id == row.subscriber_id, Subscriber.confirm_sent_at == row.created_at)
                    .values(confirm_sent_at=None).execution_options(synchronize_session=False))
        else:
            row.next_attempt_at, outcome = now + backoff(row.attempts), "retrying"
    db.session.commit()
    return outcome


def drain(now: Callable[[], datetime], *, build: Callable[[OutboxMessage], EmailMessage],
          open_mailer: Callable[[], mail.Mailer] | None = None,
          max_attempts: int | None = None, deadline: float | None = None,
          should_stop: Callable[[], bool] | None = None) -> DrainReport:
    """Send every outbox row due at `now()` (called per batch), oldest first, each made a message
    by `build(row)` (raising Unbuildable or NotNeeded when it cannot or need not go; for the
    `confirm` kind, subscriptions.confirm_message), until none is due,
    the SMTP server cannot be reached (`stopped`; the row that found it so is retried later,
    the others stay due), `time.monotonic()` passes `deadline` (seconds), or `should_stop()`
    turns true (a drainer asked to stop finishes the message in hand and gives the rest of its
    claim back at once). Each result is
    committed as soon as it is known. A row that fails (refused, cannot be built) never stops
    the rows behind it. Needs an app context: `open_mailer()` defaults to `mail.open_mailer`
    with `OUTBOX_SMTP_TIMEOUT` (seconds per SMTP read or connect), `max_attempts` to
    `OUTBOX_MAX_ATTEMPTS`."""
    config = current_app.config
    if max_attempts is None:
        max_attempts = config["OUTBOX_MAX_ATTEMPTS"]
    if open_mailer is None:
        def open_mailer():
            return mail.open_mailer(config, timeout=config["OUTBOX_SMTP_TIMEOUT"])
    report = DrainReport()
    lease = lease_for(config["OUTBOX_SMTP_TIMEOUT"])

    def must_end() -> bool:
        return (report.stopped or (deadline is not None and time.monotonic() >= deadline)
                or (should_stop is not None and should_stop()))

    mailer = None
    try:
        while not must_end():
            ids = _claim(now(), BATCH, lease)
            if not ids:
                break
            for position, row_id in enumerate(ids):
                if must_end():
                    # Not tried: give the rest back at once rather than at the lease's end.
                    db.session.execute(update(OutboxMessage).where(OutboxMessage.id.in_(ids[position:]))
                                       .values(claimed_until=None).execution_options(synchronize_session=False))
                    db.session.commit()
                    break
                row = db.session.get(OutboxMessage, row_id)
                error: Exception | None = None
                try:
                    message = build(row)
                    if mailer is None:
                        mailer = open_mailer()
                    mailer.send(message)
                except (Unbuildable, NotNeeded, mail.MailError, ValueError) as exc:
                    error = exc
                except Exception as exc:  # noqa: BLE001 - one bad row must not stop the others
                    log.exception("outbox message %s could not be built", row_id)
                    error = Unbuildable(f"cannot build the message: {type(exc).__name__}: {exc}")
                outcome = _record(row_id, now(), error, max_attempts)
                if outcome in ("sent", "skipped"):
                    setattr(report, outcome, getattr(report, outcome) + 1)
                else:
                    setattr(report, outcome, getattr(report, outcome) + 1)
                    if len(report.errors) < 20:
                        report.errors.append(f"message {row_id}: {error}")
                    log.warning("outbox message %s: %s (%s)", row_id, error, outcome)
                    if getattr(error, "kind", None) == mail.CONNECTION:
                        report.stopped = True
    finally:
        if mailer is not None:
            mailer.close()
        db.session.rollback()
    return report


def prune(before: datetime) -> int:
    """Delete confirm mail sent or given up before `before` (aware UTC): its work is done, and
    the table would otherwise grow for ever. Returns how many rows went; the caller commits."""
    done = (or_(OutboxMessage.sent_at < before, OutboxMessage.failed_at < before))
    return db.session.execute(delete(OutboxMessage).where(done)).rowcount or 0


def pending_count() -> int:
    """Rows neither sent nor given up."""
    return db.session.scalar(select(func.count(OutboxMessage.id)).where(
        and_(OutboxMessage.sent_at.is_(None), OutboxMessage.failed_at.is_(None))))
