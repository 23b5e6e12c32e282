"""Cadence alerts: plan each confirmed subscriber's due alert window, then send the recorded
windows as the alert-mail queue (docs/API.md "subscribe", "webhooks"; docs/ALERTS.md).

Planning: cron's `send-alerts` plans every cadence (`plan_alerts`); the change feed's
`instant-alerts` consumers plan instant readers' windows as pieces air (`on_changes`).

Sending: `QUEUE` is a declaration run by the queue engine (services/delivery/queues.py), which
claims, leases, records, backs off, gives up and counts; this module keeps what an alert is
(`_load_many`: a claimed batch with its subscribers, each message made by
`alert_content.Composer`, rendered once per distinct alert) and what differs about its
failures (`_after`: a 5xx counts a bounce and may suppress the address; a 4xx given up says
after how many attempts; a connection-level failure is not counted: `counts`).

Crash safety rests on one rule: a window is recorded (an `AlertDelivery` row, unique per
subscriber and period and per window start) and committed BEFORE anything is sent, and marked
`sent_at` and committed right after the SMTP server accepted it, before its connection hands
over another message (the engine commits each group of results before it sends again). A run
killed midway leaves unsent rows that the next run sends; a sent row is never sent again. The
one gap is between the server's "250" and that commit: a crash there sends that message again
on the next run, with the same Message-ID (at-least-once). Concurrent runs: planning inserts
with ON CONFLICT DO NOTHING (the unique constraints decide); senders (any number of
send-alerts runs and workers, on any hosts with PostgreSQL) lease batches of BATCH rows
(`claims.claim`, FOR UPDATE SKIP LOCKED, `claimed_until`), so each row is sent by one of them,
and a killed sender's rows go to the others when its lease ends.

Throughput (docs/PERFORMANCE.md): planning inserts a chunk of windows with one INSERT;
sending claims BATCH rows per statement by keyset, reads them with their subscribers in one
query, sends over ALERT_CONNECTIONS SMTP connections (one per sending thread, kept for the run)
and commits the results that finish together in one transaction.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import Boolean, Integer, bindparam, case, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from extensions import db
from models import AlertDelivery, Paper, Subscriber
from models.types import UTCDateTime
from services import http
from services.delivery import mail, origins, queues, webhooks
from services.delivery.alert_content import MAX_LOOKBACK, Composer, Content, alert_data, period_for
from services.links import Links, PaperOrigins

CHUNK = 1000
# How far behind the run's clock a window ends (ALERT_SETTLE_SECONDS). A piece's `on_air_at`
# is taken before its transaction commits; a window ending `settle` ago only holds pieces
# whose transactions have committed by the time the run reads them, as long as no air
# transaction takes longer than that (a web worker is killed after GUNICORN_TIMEOUT, 30 s,
# and its transaction rolled back). A piece aired later lands in the next window.
SETTLE = timedelta(seconds=60)
# Connection-level failures in a row after which the run stops trying (the SMTP server is
# down). Refusals (4xx, 5xx) do not count: a server that answers is up.
GIVE_UP_AFTER = 5
# Permanent refusals (5xx) of an address, in a row, after which it is suppressed
# (ALERT_BOUNCE_LIMIT). A refusal with an enhanced status 5.1.x ("no such user", "bad
# domain": the address itself does not exist) suppresses it at once.
BOUNCE_LIMIT = 3
HARD_BOUNCE = re.compile(r"\b5\.1\.\d{1,3}\b")
# Temporary refusals (4xx): tries after which an alert is given up (ALERT_MAX_ATTEMPTS), and
# the backoff between them: RETRY_FIRST, doubling, at most RETRY_CAP.
MAX_ATTEMPTS = 8
RETRY_FIRST = timedelta(minutes=5)
RETRY_CAP = timedelta(hours=6)
# Unsent rows claimed and read per statement while sending.
BATCH = 200


# --- planning ------------------------------------------------------------------------------

@dataclass
class PlanReport:
    recorded: int = 0
    skipped: int = 0


_PLAN_COLUMNS = (Subscriber.id, Subscriber.paper_id, Subscriber.email, Subscriber.cadence,
                 Subscriber.sections, Subscriber.cast, Subscriber.confirmed_at, Subscriber.webhook_url,
                 Subscriber.paused_until)


def plan_alerts(now: datetime, *, origins: PaperOrigins, settle: timedelta = SETTLE, cadence: str | None = None,
                paper_id: int | None = None, commit: bool = True) -> PlanReport:
    """Record the due alert window of every confirmed subscriber (and its webhook delivery,
    whose payload's URLs are under the paper's origin from `origins`).

    Windows are half-open, [start, end), in the stored times' own precision: `end` is
    `now - settle` (see SETTLE), `start` the end of the subscriber's previous window (first
    window: its `confirmed_at`; never more than MAX_LOOKBACK before `end`; never before the
    end of a pause, `paused_until`). Consecutive windows share their boundary, so each piece on
    air falls in exactly one window of each subscriber. A paused reader (`paused_until` not
    before `end`) is not considered; after the pause, what aired during it is not sent (no
    backlog: docs/ALERTS.md "Managing alerts").

    A subscriber is skipped when its cadence slot for `now` is already recorded or nothing
    went on air in its sections (nor an edition, with cast) in its window; suppressed
    addresses are not considered at all. Per chunk of
    CHUNK subscribers: three reads, one multi-row insert that leaves out a slot another run
    recorded first (ON CONFLICT DO NOTHING), one commit. Rows with a webhook are recorded one by
    one, with their outbox delivery. `cadence` and `paper_id`, when given, plan only those
    subscribers (`on_changes` uses both). `commit` false: each chunk is flushed, not
    committed; the caller commits."""
    report = PlanReport()
    end = now - settle
    content = Content(end - MAX_LOOKBACK, end)
    papers: dict[int, tuple[Paper, Links]] = {}
    last_id = 0
    only = []
    if cadence is not None:
        only.append(Subscriber.cadence == cadence)
    if paper_id is not None:
        only.append(Subscriber.paper_id == paper_id)
    while True:
        chunk = db.session.execute(select(*_PLAN_COLUMNS).where(
            Subscriber.id > last_id, Subscriber.confirmed_at.is_not(None),
            Subscriber.unsubscribed_at.is_(None), Subscriber.suppressed_at.is_(None),
            or_(Subscriber.paused_until.is_(None), Subscriber.paused_until < end), *only)
            .order_by(Subscriber.id).limit(CHUNK)).all()
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
            start = max(last_end.get(sub.id) or sub.confirmed_at, end - MAX_LOOKBACK)
            if sub.paused_until is not None:  # the pause is over: nothing from during it
                start = max(start, sub.paused_until)
            if (sub.id, periods[sub.id]) in taken or start >= end:
                report.skipped += 1
                continue
            pieces, editions = content.window(sub, start, end)
            if not pieces and not editions:
                report.skipped += 1
                continue
            if not sub.webhook_url:
                rows.append({"subscriber_id": sub.id, "period": periods[sub.id], "window_start": start,
                             "window_end": end, "created_at": now, "attempts": 0})
                continue
            if sub.paper_id not in papers:
                paper = db.session.get(Paper, sub.paper_id)
                papers[sub.paper_id] = (paper, origins.links(paper))
            paper, links = papers[sub.paper_id]
            recorded = _record(paper, links, sub, periods[sub.id], start, end, now, pieces, editions)
            report.recorded += recorded
            report.skipped += not recorded
        if rows:
            inserted = _insert_new(rows)
            report.recorded += inserted
            report.skipped += len(rows) - inserted
        if commit:
            db.session.commit()
        else:
            db.session.flush()
    return report


CONSUMER = "instant-alerts"  # the change feed consumers' names: pieces, then editions
EDITIONS_CONSUMER = "instant-edition-alerts"


def on_changes(paper: Paper, changes: list, now: datetime) -> None:
    """change_stream consumer (`instant-alerts` on the pieces feed, `instant-edition-alerts`
    on the editions feed): record the due window of every confirmed `instant` subscriber of
    `paper`, ending at `now` rather than ALERT_SETTLE_SECONDS ago, so an instant alert leaves
    within a poll or two of its piece airing (docs/ALERTS.md "Instant alerts"). Nothing is
    planned when alert links have no origin (services/delivery/origins.py); the windows catch
    up at the next change or cron run, since a window starts where the reader's last one ended.

    Why no settle is needed: the change stream hands a consumer only changes before `now`
    (`Consumer.before_now`), after the paper's write barrier (`changes.settle_writes`): every
    write that took its time before `now` has committed, every later one takes a time after
    it. Each piece therefore falls in exactly one window; cron's `send-alerts` ends its windows
    elsewhere, and the chain of windows (unique per subscriber and window start) stays single.
    The windows are written in the transaction that moves the consumer's cursor (no commit
    here): a worker killed midway plans them again, once."""
    try:
        paper_origins = origins.for_alerts(current_app)
    except origins.NoOrigin:
        return  # the worker said so when it started
    plan_alerts(now, origins=paper_origins, settle=timedelta(0), cadence="instant", paper_id=paper.id,
                commit=False)


def _insert_new(rows: list[dict]) -> int:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING id of `rows` (one executemany, batched by
    SQLAlchemy into multi-row statements); returns how many were new (not recorded by another
    run first)."""
    conn = db.session.connection()
    statement = _INSERT_NEW["postgresql" if conn.dialect.name == "postgresql" else "sqlite"]
    return len(conn.execute(statement, rows).all())


_TABLE = AlertDelivery.__table__
# Built once (compiling a thousand-row VALUES per chunk cost more than the rest of planning).
_INSERT_NEW = {"postgresql": pg_insert(_TABLE).on_conflict_do_nothing().returning(_TABLE.c.id),
               "sqlite": sqlite_insert(_TABLE).on_conflict_do_nothing().returning(_TABLE.c.id)}


def _record(paper, links, sub, period, start, end, now, pieces, editions) -> bool:
    try:
        with db.session.begin_nested():
            alert = AlertDelivery(subscriber_id=sub.id, period=period, window_start=start,
                                  window_end=end, created_at=now, attempts=0)
            db.session.add(alert)
            db.session.flush()
            data = alert_data(paper, sub, alert, pieces, editions, links=links)
            webhooks.enqueue(sub, "alert", data, now, alert_id=alert.id)
        return True
    except IntegrityError:  # another run recorded this slot first
        return False


# --- sending: the alert-mail queue ---------------------------------------------------------

# How long a claim holds its alert rows (ALERT_LEASE_SECONDS). A sender hands out none of
# them once less than one message's longest send (mail.SMTP_STEPS x the SMTP timeout) is left,
# so a row is never in flight when another sender may take it; rows it could not send go back
# at once. A sender killed mid-batch leaves its rows to the others when the lease ends.
LEASE = timedelta(minutes=5)

# Built once: statement construction is a visible share of a message's cost at this rate.
# The claimed rows with their subscribers.
_ROWS = (select(AlertDelivery.id, AlertDelivery.subscriber_id, AlertDelivery.period,
                AlertDelivery.window_start, AlertDelivery.window_end, AlertDelivery.attempts,
                Subscriber.paper_id, Subscriber.email, Subscriber.cadence, Subscriber.sections,
                Subscriber.cast, Subscriber.confirmed_at, Subscriber.unsubscribed_at,
                Subscriber.suppressed_at, Subscriber.paused_until)
         .join(Subscriber, Subscriber.id == AlertDelivery.subscriber_id)
         .where(AlertDelivery.id.in_(bindparam("ids", expanding=True))))
_MARK_READERS = (update(Subscriber).where(Subscriber.id.in_(bindparam("subscriber_ids", expanding=True)))
                 .values(last_sent_at=bindparam("now", type_=UTCDateTime()), bounces=0))
# A permanent refusal of the address: one more bounce; suppressed at the limit (or at once).
_SUPPRESS = or_(bindparam("suppress", type_=Boolean()), Subscriber.bounces + 1 >= bindparam("limit", type_=Integer()))
_BOUNCE = (update(Subscriber).where(Subscriber.id == bindparam("subscriber_id"))
           .values(bounces=Subscriber.bounces + 1,
                   suppressed_at=case((_SUPPRESS, func.coalesce(Subscriber.suppressed_at,
                                                                bindparam("now", type_=UTCDateTime()))),
                                      else_=Subscriber.suppressed_at),
                   suppressed_reason=case((_SUPPRESS, bindparam("error")), else_=Subscriber.suppressed_reason))
           .returning(Subscriber.suppressed_at))


@dataclass(frozen=True)
class _Job:
    id: int
    attempts: int
    subscriber_id: int
    message: mail.Outgoing | None  # None: everything in the window went off air since: nothing to say
    target: str = ""  # one relay for all: no per-host circuit (queues.Queue.stop_after)


def _load_many(composer: Composer, rows: list) -> list:
    """Each claimed row's job, or why it is not sent (queues.NotNeeded, GiveUp)."""
    found = {r.id: r for r in db.session.execute(_ROWS, {"ids": [row.id for row in rows]})}
    loaded: list = []
    for claimed in rows:
        row = found.get(claimed.id)
        if row is None:  # its reader was deleted meanwhile, and the row with it
            loaded.append(queues.NotNeeded("not sent: the reader is gone"))
        elif (row.confirmed_at is None or row.unsubscribed_at is not None
              or (row.paused_until is not None and row.paused_until > composer.now)):
            # Left the list, or paused since this window was recorded (the reader asked for
            # quiet: the pause's floor keeps the next window from sending it later).
            loaded.append(queues.NotNeeded("not sent: the reader left or paused", delete=True))
        elif row.suppressed_at is not None:  # suppressed after this row was recorded
            loaded.append(queues.NotNeeded("address suppressed"))
        else:
            try:
                loaded.append(_Job(row.id, row.attempts, row.subscriber_id, composer.message(row)))
            except SQLAlchemyError:
                raise  # the database, not the row: stop the run
            except Exception as exc:  # noqa: BLE001 - bad data in this row's alert: give it up, go on
                loaded.append(queues.GiveUp(f"cannot build the message: {type(exc).__name__}: {exc}"))
    return loaded


def _unbound(rows: list) -> list:
    raise RuntimeError("alert mail is run as alerts.queue_for(now, origins), with its Composer")


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime],
          connection: mail.Mailer) -> http.Attempt:
    # The connection's own timeouts bound the attempt (ALERT_SMTP_TIMEOUT a step).
    if job.message is None:
        return http.Attempt(True, None, None)
    return mail.attempt(connection, job.message)


def _sent(jobs: list[_Job], at: datetime) -> None:
    # The readers' last mail, and an address that takes mail has no bounces in a row.
    db.session.execute(_MARK_READERS, {"subscriber_ids": [job.subscriber_id for job in jobs], "now": at})


def _after(job: _Job, attempt: http.Attempt, values: dict, at: datetime, report: queues.Report) -> None:
    if attempt.ok:
        return
    if attempt.status < 500:
        if "failed_at" in values:
            values["last_error"] = f"gave up after {values['attempts']} attempts: {attempt.error}"[:1000]
        return
    suppressed = db.session.execute(_BOUNCE, {
        "subscriber_id": job.subscriber_id, "now": at, "error": attempt.error,
        "suppress": bool(HARD_BOUNCE.search(attempt.error or "")),
        "limit": current_app.config.get("ALERT_BOUNCE_LIMIT", BOUNCE_LIMIT)}).scalar()
    report.disabled += suppressed == at


QUEUE = queues.Queue(
    name="alert-mail", model=AlertDelivery, settings_prefix="ALERT", max_attempts=MAX_ATTEMPTS,
    returning=(), load=None, load_many=_unbound, send=_send, after=_after, sent=_sent, connection=mail.connection_for,
    # A 5xx refuses it for good (and counts a bounce); a 4xx backs off; a connection-level
    # failure says nothing about the message: not counted, due again, 5 in a row stop the run.
    gives_up=lambda job, attempt, attempts, at: attempt.status >= 500,
    counts=lambda attempt: attempt.status is not None,
    first_backoff=RETRY_FIRST, backoff_cap=RETRY_CAP, lease=LEASE, done_column="sent_at",
    stop_after=GIVE_UP_AFTER, batch=BATCH, lease_column="claimed_until",
    lease_margin=lambda settings: timedelta(seconds=mail.SMTP_STEPS * settings.timeout),
    concurrency=8, concurrency_setting="CONNECTIONS", timeout_setting="SMTP_TIMEOUT", fallback_prefix="",
    budget=float("inf"))
"""The alert-mail queue as declared (what `describe` and the counts read); a run needs its
Composer: `queue_for`. ALERT_CONNECTIONS, ALERT_SMTP_TIMEOUT, ALERT_MAX_ATTEMPTS,
ALERT_LEASE_SECONDS; a run goes on until nothing is due (no budget)."""


def queue_for(now: datetime, origins: PaperOrigins) -> queues.Queue:
    """The alert-mail queue for a run at `now`: its messages made by one `Composer` (rendered
    once per distinct alert), links under each paper's origin from `origins`."""
    return dataclasses.replace(QUEUE, load_many=functools.partial(_load_many, Composer(now, origins)))
