"""The confirm-mail queue (docs/ALERTS.md "The outbox"): confirm emails written by requests
(subscriptions.subscribe) and correction alerts written by the change feed's
`correction-alerts` consumer (services/delivery/corrections.py), one `OutboxMessage` row each,
sent by `flask worker` through the queue engine (services/delivery/queues.py). No request ever
waits for SMTP.

What differs from the other queues is only what a message is and how it goes: a row becomes an
email by its `kind` (`build`), handed to the relay over one SMTP connection per sending thread,
reused for the run (OUTBOX_CONCURRENCY connections, default 1; each connect and read bounded
by OUTBOX_SMTP_TIMEOUT seconds, a message by mail.SMTP_STEPS of them). A refusal for good (5xx)
or a row that cannot be built is given up at once; anything else is retried after 30 s,
doubling, at most an hour apart, up to OUTBOX_MAX_ATTEMPTS. One connection-level failure ends
the run (the relay is down: `stop_after`), the rest stays due for the next poll. A given-up
confirm email puts `confirm_sent_at` back, so the reader may ask again at once. Delivery is
at-least-once, like alert mail: a kill between the server's "250" and the `sent_at` commit
resends.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage

from sqlalchemy import update

from extensions import db
from models import OutboxMessage, Subscriber
from services import http
from services.delivery import corrections, mail, queues, subscriptions

MAX_ATTEMPTS = 8  # OUTBOX_MAX_ATTEMPTS overrides it


def build(row: OutboxMessage) -> EmailMessage:
    """The email an outbox row stands for, by its kind: `confirm` (subscriptions.confirm_message)
    or `correction` (corrections.correction_message). Raises queues.GiveUp (an unknown kind,
    something gone) or queues.NotNeeded (the reader confirmed or left meanwhile)."""
    if row.kind == corrections.KIND:
        return corrections.correction_message(row)
    if row.kind == "confirm":
        return subscriptions.confirm_message(row)
    raise queues.GiveUp(f"unknown kind {row.kind!r}")


@dataclass(frozen=True)
class _Job:
    id: int
    attempts: int
    subscriber_id: int | None
    created_at: datetime
    message: EmailMessage
    target: str = ""  # one relay for all: no per-host circuit (queues.Queue.stop_after)


def _load(row) -> _Job:
    message = db.session.get(OutboxMessage, row.id)
    return _Job(row.id, row.attempts, row.subscriber_id, row.created_at, build(message))


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime],
          connection: mail.Mailer) -> http.Attempt:
    # The connection's own timeouts bound the attempt (OUTBOX_SMTP_TIMEOUT a step).
    return mail.attempt(connection, job.message)


def _after(job: _Job, attempt: http.Attempt, values: dict, at: datetime, report: queues.Report) -> None:
    # Given up: the reader may ask for a confirm email again at once.
    if "failed_at" in values and job.subscriber_id:
        db.session.execute(update(Subscriber).where(
            Subscriber.id == job.subscriber_id, Subscriber.confirm_sent_at == job.created_at)
            .values(confirm_sent_at=None).execution_options(synchronize_session=False))


QUEUE = queues.Queue(
    name="confirm-mail", model=OutboxMessage, settings_prefix="OUTBOX", max_attempts=MAX_ATTEMPTS,
    returning=(OutboxMessage.attempts, OutboxMessage.subscriber_id, OutboxMessage.created_at),
    load=_load, send=_send, after=_after, connection=mail.connection_for,
    # A 5xx refuses this message for good; a 4xx or no answer may go later.
    gives_up=lambda job, attempt, attempts, at: attempt.status is not None and attempt.status >= 500,
    first_backoff=timedelta(seconds=30), backoff_cap=timedelta(hours=1),
    # Long enough for a message at the worst SMTP timing (every step waiting the timeout).
    lease=timedelta(minutes=10), lease_column="claimed_until", done_column="sent_at",
    stop_after=1, concurrency=1, timeout_setting="SMTP_TIMEOUT", fallback_prefix="")
"""The confirm-mail queue: OUTBOX_* settings (OUTBOX_SMTP_TIMEOUT bounds each SMTP step)."""
