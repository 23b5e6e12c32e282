"""Cadence alerts: plan each confirmed subscriber's due alert window, then send the recorded
windows (docs/API.md "subscribe", "webhooks"; docs/ALERTS.md).

Crash safety rests on one rule: a window is recorded (an `AlertDelivery` row, unique per
subscriber and period and per window start) and committed BEFORE anything is sent, and marked
`sent_at` and committed right after the SMTP server accepted it, before its connection hands
over another message. A run killed midway leaves unsent rows that the next run sends; a sent
row is never sent again. The one gap is between the server's "250" and that commit: a crash
there sends that message again on the next run, with the same Message-ID (at-least-once).
Concurrent runs: planning inserts with ON CONFLICT DO NOTHING (the unique constraints decide);
senders (any number of send-alerts runs and workers, on any hosts with
PostgreSQL) lease batches of rows (`claims.claim`, FOR UPDATE SKIP LOCKED), so each row is
sent by one of them, and a killed sender's rows go to the others when its lease ends.

Throughput (docs/PERFORMANCE.md): planning inserts a chunk of windows with one INSERT;
sending claims unsent rows in batches, makes each message with `alert_content.Composer`
(rendered once per distinct alert), hands it to one of several SMTP connections
(`mail.SenderPool`) and records it as sent in one statement (a group commit when several
connections finished at once) before that connection sends again.
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import Boolean, Integer, bindparam, case, delete, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from extensions import db
from models import AlertDelivery, Paper, Subscriber
from models.types import UTCDateTime
from services import retry
from services.delivery import claims, mail, origins, webhooks
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
# Unsent rows read per query while sending.
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


# --- sending -------------------------------------------------------------------------------

@dataclass
class SendReport:
    """What a send phase did. `failed` = refused + retrying + unreachable + unbuildable:
    refused for good (5xx, or temporary refusals given up), refused for now (4xx, retried
    later), not handed over (connection-level, retried by the next run), not built (bad data,
    never retried). `suppressed`: addresses put on the suppression list by this run."""

    sent: int = 0
    failed: int = 0
    skipped: int = 0
    refused: int = 0
    retrying: int = 0
    unreachable: int = 0
    unbuildable: int = 0
    suppressed: int = 0
    errors: list[str] = field(default_factory=list)
    streak: int = 0  # connection-level failures in a row
    stopped: bool = False  # GIVE_UP_AFTER connection-level failures in a row


@dataclass(frozen=True)
class FailurePolicy:
    """When refusals end an alert or an address: `bounce_limit` permanent refusals in a row
    suppress an address (a 5.1.x one at once); `max_attempts` temporary refusals give an alert
    up, retried after `retry_first`, doubling, at most `retry_cap` apart."""

    bounce_limit: int = BOUNCE_LIMIT
    max_attempts: int = MAX_ATTEMPTS
    retry_first: timedelta = RETRY_FIRST
    retry_cap: timedelta = RETRY_CAP

    def backoff(self, attempts: int) -> timedelta:
        """The wait after the `attempts`-th try (1-based)."""
        return retry.backoff(attempts, self.retry_first, self.retry_cap)


def _pending(now):
    """Rows still to send at `now`: neither sent nor given up, and due."""
    return (AlertDelivery.sent_at.is_(None), AlertDelivery.failed_at.is_(None),
            or_(AlertDelivery.next_attempt_at.is_(None), AlertDelivery.next_attempt_at <= now))


def unsent_count(now: datetime) -> int:
    """Rows due to be sent at `now` (aware UTC)."""
    return db.session.scalar(select(func.count()).select_from(AlertDelivery).where(*_pending(now))) or 0


# How long a claim holds its alert rows (ALERT_LEASE_SECONDS). A sender hands out none of
# them once less than one message's longest send (mail.SMTP_STEPS x the SMTP timeout) is left,
# so a row is never in flight when another sender may take it; rows it could not send go back
# at once. A sender killed mid-batch leaves its rows to the others when the lease ends.
LEASE = timedelta(minutes=5)


@contextmanager
def _writer() -> Iterator:
    """PostgreSQL: a connection of its own in autocommit mode, so claiming a batch or marking
    a message sent is one round trip (statement and commit at once). SQLite: None (the
    session writes, in-process, and commits)."""
    if db.engine.url.get_backend_name() != "postgresql":
        yield None
        return
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        yield conn


# Built once: statement construction is a visible share of a message's cost at this rate.
# _ROWS: claimed rows with their subscribers. Rows waiting for their next attempt, and rows
# given up, are never claimed: a failing row never stands in front of the others.
_ROWS = (select(AlertDelivery.id, AlertDelivery.subscriber_id, AlertDelivery.period,
                AlertDelivery.window_start, AlertDelivery.window_end, AlertDelivery.attempts,
                Subscriber.paper_id, Subscriber.email, Subscriber.cadence, Subscriber.sections,
                Subscriber.cast, Subscriber.confirmed_at, Subscriber.unsubscribed_at,
                Subscriber.suppressed_at, Subscriber.paused_until)
         .join(Subscriber, Subscriber.id == AlertDelivery.subscriber_id)
         .where(AlertDelivery.id.in_(bindparam("ids", expanding=True)))
         .order_by(AlertDelivery.id))
_MARK_SENT = (update(AlertDelivery).where(AlertDelivery.id.in_(bindparam("ids", expanding=True)))
              .values(sent_at=bindparam("now", type_=UTCDateTime()), attempts=AlertDelivery.attempts + 1))
_MARK_READERS = (update(Subscriber).where(Subscriber.id.in_(bindparam("subscriber_ids", expanding=True)))
                 .values(last_sent_at=bindparam("now", type_=UTCDateTime()), bounces=0))
# PostgreSQL: both in one statement, committed on the spot (autocommit): one round trip.
_MARK_SENT_PG = text(
    "WITH sent AS (UPDATE alert_deliveries SET sent_at = :now, attempts = attempts + 1"
    " WHERE id = ANY(CAST(:ids AS integer[])) RETURNING subscriber_id)"
    " UPDATE subscribers SET last_sent_at = :now, bounces = 0 FROM sent WHERE subscribers.id = sent.subscriber_id"
).bindparams(bindparam("now", type_=UTCDateTime()))
# A connection-level failure: the server said nothing about the message, so `attempts` (the
# answers about it) stays and the row stays due for the next run.
_MARK_UNREACHED = (update(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
                   .values(last_error=bindparam("error"), claimed_until=None))
_MARK_RETRY = (update(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
               .values(attempts=AlertDelivery.attempts + 1, last_error=bindparam("error"),
                       next_attempt_at=bindparam("next", type_=UTCDateTime())))
# Given up: refused for good, too many temporary refusals, not buildable, address suppressed.
_MARK_GIVEN_UP = (update(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
                  .values(attempts=AlertDelivery.attempts + bindparam("tried"), last_error=bindparam("error"),
                          failed_at=bindparam("now", type_=UTCDateTime())))
# A permanent refusal of the address: one more bounce; suppressed at the limit (or at once).
_SUPPRESS = or_(bindparam("suppress", type_=Boolean()), Subscriber.bounces + 1 >= bindparam("limit", type_=Integer()))
_BOUNCE = (update(Subscriber).where(Subscriber.id == bindparam("subscriber_id"))
           .values(bounces=Subscriber.bounces + 1,
                   suppressed_at=case((_SUPPRESS, func.coalesce(Subscriber.suppressed_at,
                                                                bindparam("now", type_=UTCDateTime()))),
                                      else_=Subscriber.suppressed_at),
                   suppressed_reason=case((_SUPPRESS, bindparam("error")), else_=Subscriber.suppressed_reason))
           .returning(Subscriber.suppressed_at))
_DROP = delete(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))


def send_recorded(now: datetime, mailer: mail.Mailer | None = None, progress: Callable[[int], None] | None = None,
                  *, origins: PaperOrigins, connections: int = 1,
                  open_mailer: Callable[[], mail.Mailer] | None = None,
                  policy: FailurePolicy = FailurePolicy(), clock: Callable[[], datetime] | None = None,
                  lease: timedelta = LEASE, smtp_timeout: float = mail.SMTP_TIMEOUT,
                  should_stop: Callable[[], bool] | None = None) -> SendReport:
    """Send every recorded alert that is due, sharing the work with any other sender running
    at once (no lock: `claims.claim` leases BATCH rows at a time, `lease` long, to this run).
    Each message goes out on one of `connections` SMTP connections (`mailer` if given, plus
    more from `open_mailer()`, each opened when first needed), and is marked sent and
    committed as soon as the server accepted it, before its connection hands over another.
    Claimed rows are handed out only while the lease has more than one message's longest
    send (mail.SMTP_STEPS x `smtp_timeout` seconds) left; the rest go back at once.

    `clock()` (default: `now` for ever) times the claims and the marks. Each failure is
    classified (`mail.MailError.kind`, docs/ALERTS.md "When a message fails"): a permanent
    refusal gives the row up and counts a bounce on its address (suppressed per `policy`); a
    temporary one backs the row off to `next_attempt_at` (given up after
    `policy.max_attempts`); a connection-level one leaves it due for the next run, and after
    GIVE_UP_AFTER of them in a row the run stops (the server is down). A message that cannot
    be built is given up with its reason. Rows of addresses that left the list or are paused
    are dropped,
    rows of suppressed addresses given up. The run ends when no row is due or claimable,
    or `should_stop()` turns true (what is in flight is recorded first). Links in the
    messages are under each paper's origin from `origins`. Needs an app context (templates,
    SECRET_KEY)."""
    report = SendReport()
    clock = clock or (lambda: now)
    composer = Composer(now, origins)
    if open_mailer is None:
        connections = 1
    first = mailer
    pool = mail.SenderPool(first, open_mailer or (lambda: mailer), connections)
    margin = timedelta(seconds=mail.SMTP_STEPS * smtp_timeout)
    try:
        with _writer() as writer:
            _send_claimed(clock, pool, composer, report, progress, writer, policy, lease, margin, should_stop)
    finally:
        pool.close()
        db.session.commit()
    return report


def _claim(clock, after: int, writer, lease: timedelta, margin: timedelta) -> tuple[list, claims.Lease | None]:
    """Lease the next BATCH due rows with ids above `after` (each sender moves forward, so
    a row that failed on the connection is not tried twice in one run); return them with
    their subscribers, and the lease."""
    now = clock()
    terms = claims.Lease.starting(now, lease, margin)
    executor = writer if writer is not None else db.session
    claimed = claims.claim(executor, AlertDelivery,
                           due=(*_pending(now), AlertDelivery.id > after,
                                or_(AlertDelivery.claimed_until.is_(None), AlertDelivery.claimed_until <= now)),
                           order_by=(AlertDelivery.id,), limit=BATCH, lease={"claimed_until": terms.until},
                           returning=(AlertDelivery.id,))
    if writer is None:
        db.session.commit()
    if not claimed:
        return [], None
    rows = db.session.execute(_ROWS, {"ids": [row.id for row in claimed]}).all()
    db.session.commit()
    return rows, terms


def _send_claimed(clock, pool: mail.SenderPool, composer: Composer, report: SendReport, progress, writer,
                  policy: FailurePolicy, lease: timedelta, margin: timedelta, should_stop) -> None:
    """Claim and send batches until nothing is left to claim, keeping every connection busy.
    On the way out (an error, Ctrl-C, a stop) it still records what is in flight and gives
    back what it claimed and did not try."""
    rows: deque = deque()
    terms: claims.Lease | None = None
    after, exhausted = 0, False
    try:
        while True:
            while pool.free and not report.stopped:
                if rows and not terms.usable():
                    _give_back(rows, terms, writer)  # the lease is running out: let others have them
                if not rows and not exhausted and not (should_stop and should_stop()):
                    batch, terms = _claim(clock, after, writer, lease, margin)
                    rows.extend(batch)
                    after, exhausted = (batch[-1].id, False) if batch else (after, True)
                if not rows:
                    break
                row = rows.popleft()
                now = clock()
                # Left the list, or paused since this window was recorded (the reader asked
                # for quiet: the pause's floor keeps the next window from sending it later).
                if (row.confirmed_at is None or row.unsubscribed_at is not None
                        or (row.paused_until is not None and row.paused_until > now)):
                    _write(writer, (_DROP, {"alert_id": row.id}))
                    report.skipped += 1
                    progress and progress(1)
                    continue
                if row.suppressed_at is not None:  # suppressed after this row was recorded
                    _write(writer, (_MARK_GIVEN_UP, {"alert_id": row.id, "tried": 0, "now": now,
                                                     "error": "address suppressed"}))
                    report.skipped += 1
                    progress and progress(1)
                    continue
                try:
                    message = composer.message(row)
                except SQLAlchemyError:
                    raise  # the database, not the row: stop the run
                except Exception as exc:  # noqa: BLE001 - bad data in this row's alert: give it up, go on
                    _unbuildable(row, exc, now, report, writer)
                    progress and progress(1)
                    continue
                if message is None:  # everything in the window went off air since: nothing to say
                    _outcomes([(row, None)], now, report, writer, policy)
                    progress and progress(1)
                    continue
                pool.submit(row, message)
            if not pool.busy:
                return
            results = pool.results()
            _outcomes(results, clock(), report, writer, policy)
            progress and progress(len(results))
    finally:
        while pool.busy:  # never leave a message the server accepted unrecorded
            _outcomes(pool.results(), clock(), report, writer, policy)
        if rows:
            _give_back(rows, terms, writer)


def _give_back(rows: deque, terms: claims.Lease, writer) -> None:
    ids = [row.id for row in rows]
    rows.clear()
    executor = writer if writer is not None else db.session
    claims.release(executor, AlertDelivery, ids, column=AlertDelivery.claimed_until, until=terms.until)
    if writer is None:
        db.session.commit()


def _write(writer, *statements) -> None:
    """Run `statements` ((statement, params) pairs) and commit them: on PostgreSQL through the
    autocommit `writer` (one statement, one round trip); on SQLite in a session transaction.
    Core execution: the ORM's bulk-UPDATE layer costs more than the statement at this rate,
    and nothing of these rows is loaded in the session. Returns the last statement's result."""
    result = None
    if writer is not None:
        for statement, params in statements:
            result = writer.execute(statement, params)
        return result
    conn = db.session.connection()
    for statement, params in statements:
        result = conn.execute(statement, params)
    if result is not None and result.returns_rows:
        result = result.all()
    db.session.commit()
    return result


def _mark_sent(rows: list, now: datetime, writer) -> None:
    ids = [row.id for row in rows]
    if writer is not None:
        _write(writer, (_MARK_SENT_PG, {"ids": ids, "now": now}))
    else:
        _write(None, (_MARK_SENT, {"ids": ids, "now": now}),
               (_MARK_READERS, {"subscriber_ids": [row.subscriber_id for row in rows], "now": now}))


def _unbuildable(row, exc: Exception, now: datetime, report: SendReport, writer) -> None:
    error = f"cannot build the message: {type(exc).__name__}: {exc}"[:1000]
    _write(writer, (_MARK_GIVEN_UP, {"alert_id": row.id, "tried": 0, "now": now, "error": error}))
    report.failed += 1
    report.unbuildable += 1
    report.errors.append(f"{row.email}: {error}")


def _failed(row, error: mail.MailError, now: datetime, report: SendReport, writer, policy: FailurePolicy) -> None:
    """Record one refused or undelivered message by the kind of its failure."""
    text = str(error)[:1000]
    report.failed += 1
    report.errors.append(f"{row.email}: {text}")
    if error.kind == mail.CONNECTION:
        _write(writer, (_MARK_UNREACHED, {"alert_id": row.id, "error": text}))
        report.unreachable += 1
        report.streak += 1
        report.stopped = report.stopped or report.streak >= GIVE_UP_AFTER
        return
    report.streak = 0  # the server answered: it is up
    if error.kind == mail.TEMPORARY and row.attempts + 1 < policy.max_attempts:
        _write(writer, (_MARK_RETRY, {"alert_id": row.id, "error": text,
                                      "next": now + policy.backoff(row.attempts + 1)}))
        report.retrying += 1
        return
    report.refused += 1
    if error.kind == mail.TEMPORARY:
        _write(writer, (_MARK_GIVEN_UP, {"alert_id": row.id, "tried": 1, "now": now,
                                         "error": f"gave up after {row.attempts + 1} attempts: {text}"[:1000]}))
        return
    suppressed = _write(writer, (_MARK_GIVEN_UP, {"alert_id": row.id, "tried": 1, "now": now, "error": text}),
                        (_BOUNCE, {"subscriber_id": row.subscriber_id, "now": now, "error": text,
                                   "suppress": bool(HARD_BOUNCE.search(text)), "limit": policy.bounce_limit}))
    if any(r[0] == now for r in suppressed):
        report.suppressed += 1


def _outcomes(results: list, now: datetime, report: SendReport, writer, policy: FailurePolicy) -> None:
    """Record finished messages (`(row, error)` pairs): the accepted ones marked sent in one
    statement and commit (a group commit when several connections finished at once), the
    failed ones by the kind of failure (`_failed`). Raises, after that, what is not a MailError."""
    sent = [row for row, error in results if error is None]
    if sent:
        # Nothing between the server's "250" and this commit but one statement (two on
        # SQLite): the gap in which a crash would send a message again is minimal.
        _mark_sent(sent, now, writer)
        report.sent += len(sent)
    unexpected = None
    for row, error in results:
        if error is None:
            report.streak = 0
        elif isinstance(error, mail.MailError):
            _failed(row, error, now, report, writer, policy)
        else:
            unexpected = error
    if unexpected is not None:
        raise unexpected
