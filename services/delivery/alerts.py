"""Cadence alerts: plan each confirmed subscriber's due alert window, then send the recorded
windows (docs/API.md "subscribe", "webhooks"; docs/ALERTS.md).

Crash safety rests on one rule: a window is recorded (an `AlertDelivery` row, unique per
subscriber and period and per window start) and committed BEFORE anything is sent, and marked
`sent_at` and committed right after the SMTP server accepted it, before its connection hands
over another message. A run killed midway leaves unsent rows that the next run sends; a sent
row is never sent again. The one gap is between the server's "250" and that commit: a crash
there sends that message again on the next run, with the same Message-ID (at-least-once).
Concurrent runs: planning inserts with ON CONFLICT DO NOTHING (the unique constraints decide);
sending holds `send_lock()` (a PostgreSQL advisory lock, an SQLite `flock`), so one run sends.

Throughput (docs/PERFORMANCE.md): planning inserts a chunk of windows with one INSERT;
sending reads unsent rows in batches, makes each message with `alert_content.Composer`
(rendered once per distinct alert), hands it to one of several SMTP connections
(`mail.SenderPool`) and records it as sent in one statement (a group commit when several
connections finished at once) before that connection sends again.
"""
from __future__ import annotations

import fcntl
import os
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import bindparam, delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import AlertDelivery, Paper, Subscriber
from models.types import UTCDateTime
from services.delivery import mail, webhooks
from services.delivery.alert_content import MAX_LOOKBACK, Composer, Content, alert_data, period_for
from services.rendering.links import Links, PaperOrigins

CHUNK = 1000
# Consecutive failed messages after which the run stops trying (the SMTP server is down).
GIVE_UP_AFTER = 5
# Unsent rows read per query while sending.
BATCH = 200


# --- planning ------------------------------------------------------------------------------

@dataclass
class PlanReport:
    recorded: int = 0
    skipped: int = 0


_PLAN_COLUMNS = (Subscriber.id, Subscriber.paper_id, Subscriber.email, Subscriber.cadence,
                 Subscriber.sections, Subscriber.cast, Subscriber.confirmed_at, Subscriber.webhook_url)


def plan_alerts(now: datetime, *, origins: PaperOrigins) -> PlanReport:
    """Record the due alert window of every confirmed subscriber (and its webhook delivery,
    whose payload's URLs are under the paper's origin from `origins`).

    A subscriber is skipped when its cadence slot for `now` is already recorded or nothing
    went on air in its sections (nor an edition, with cast) since its last window. Per chunk of
    CHUNK subscribers: three reads, one multi-row insert that leaves out a slot another run
    recorded first (ON CONFLICT DO NOTHING), one commit. Rows with a webhook are recorded one by
    one, with their outbox delivery."""
    report = PlanReport()
    content = Content(now - MAX_LOOKBACK, now)
    papers: dict[int, tuple[Paper, Links]] = {}
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
                paper = db.session.get(Paper, sub.paper_id)
                papers[sub.paper_id] = (paper, origins.links(paper))
            paper, links = papers[sub.paper_id]
            recorded = _record(paper, links, sub, periods[sub.id], start, now, pieces, editions)
            report.recorded += recorded
            report.skipped += not recorded
        if rows:
            inserted = _insert_new(rows)
            report.recorded += inserted
            report.skipped += len(rows) - inserted
        db.session.commit()
    return report


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


def _record(paper, links, sub, period, start, now, pieces, editions) -> bool:
    try:
        with db.session.begin_nested():
            alert = AlertDelivery(subscriber_id=sub.id, period=period, window_start=start,
                                  window_end=now, created_at=now, attempts=0)
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
    sent: int = 0
    failed: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    streak: int = 0  # failures in a row
    stopped: bool = False  # GIVE_UP_AFTER failures in a row
    deferred: bool = False  # another run held the send lock


def unsent_count() -> int:
    return db.session.scalar(select(func.count()).select_from(AlertDelivery)
                             .where(AlertDelivery.sent_at.is_(None))) or 0


# pg_advisory_lock key of the send phase: "PDALERTS" as a 63-bit integer.
SEND_LOCK_KEY = int.from_bytes(b"PDALERTS", "big") & (2 ** 63 - 1)


@contextmanager
def send_lock() -> Iterator[bool]:
    """Yield True when this run holds the send lock of the database, False when another run
    does. One run sends at a time, so it may read unsent rows in batches without row locks.
    PostgreSQL: a session advisory lock on a connection of its own; SQLite: an exclusive
    `flock` on `<database file>.send-lock`. Both go when the holder dies (the server ends the
    session; the kernel closes the file), so a killed run never blocks the next one."""
    with _send_lock() as (mine, _):
        yield mine


@contextmanager
def _send_lock():
    """`send_lock()`, yielding (mine, writer): on PostgreSQL `writer` is the lock's own
    connection in autocommit mode, so marking a message sent is one round trip (statement and
    commit at once); on SQLite it is None (the session writes, in-process)."""
    url = db.engine.url
    if url.get_backend_name() == "postgresql":
        with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            mine = bool(conn.execute(select(func.pg_try_advisory_lock(SEND_LOCK_KEY))).scalar())
            try:
                yield mine, conn
            finally:
                if mine:
                    try:
                        conn.execute(select(func.pg_advisory_unlock(SEND_LOCK_KEY)))
                    except Exception:
                        conn.invalidate()  # never hand a connection holding the lock back to the pool
                        raise
        return
    if not url.database or url.database == ":memory:":
        yield True, None
        return
    with open(os.path.abspath(url.database) + ".send-lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False, None
            return
        yield True, None  # closing the file releases the lock


# Built once: statement construction is a visible share of a message's cost at this rate.
# _BATCH: the next `n` unsent rows after id `after`, with their subscribers.
_BATCH = (select(AlertDelivery.id, AlertDelivery.subscriber_id, AlertDelivery.period,
                 AlertDelivery.window_start, AlertDelivery.window_end, Subscriber.paper_id,
                 Subscriber.email, Subscriber.cadence, Subscriber.sections, Subscriber.cast,
                 Subscriber.confirmed_at, Subscriber.unsubscribed_at)
          .join(Subscriber, Subscriber.id == AlertDelivery.subscriber_id)
          .where(AlertDelivery.sent_at.is_(None), AlertDelivery.id > bindparam("after"))
          .order_by(AlertDelivery.id).limit(bindparam("n")))
_ANY_AFTER = (select(AlertDelivery.id).where(AlertDelivery.sent_at.is_(None), AlertDelivery.id > bindparam("after"))
              .limit(1))
_MARK_SENT = (update(AlertDelivery).where(AlertDelivery.id.in_(bindparam("ids", expanding=True)))
              .values(sent_at=bindparam("now", type_=UTCDateTime()), attempts=AlertDelivery.attempts + 1))
_MARK_READERS = (update(Subscriber).where(Subscriber.id.in_(bindparam("subscriber_ids", expanding=True)))
                 .values(last_sent_at=bindparam("now", type_=UTCDateTime())))
# PostgreSQL: both in one statement, committed on the spot (autocommit): one round trip.
_MARK_SENT_PG = text(
    "WITH sent AS (UPDATE alert_deliveries SET sent_at = :now, attempts = attempts + 1"
    " WHERE id = ANY(CAST(:ids AS integer[])) RETURNING subscriber_id)"
    " UPDATE subscribers SET last_sent_at = :now FROM sent WHERE subscribers.id = sent.subscriber_id"
).bindparams(bindparam("now", type_=UTCDateTime()))
_MARK_FAILED = (update(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))
                .values(attempts=AlertDelivery.attempts + 1, last_error=bindparam("error")))
_DROP = delete(AlertDelivery).where(AlertDelivery.id == bindparam("alert_id"))


def send_recorded(now: datetime, mailer: mail.Mailer, progress: Callable[[int], None] | None = None,
                  *, origins: PaperOrigins, connections: int = 1,
                  open_mailer: Callable[[], mail.Mailer] | None = None) -> SendReport:
    """Send every recorded, unsent alert, holding `send_lock()`. Rows are read BATCH at a time;
    each message goes out on one of `connections` SMTP connections (`mailer`, plus more from
    `open_mailer()`), and is marked sent and committed as soon as the server accepted it,
    before its connection hands over another. A failed message stays unsent for the next run;
    after GIVE_UP_AFTER failures in a row the run stops (the server is down). Rows of addresses
    that left the list are dropped. When another run holds the lock, `deferred` is set and
    this run sends nothing: the holder sends what this one recorded (it looks again after
    letting the lock go). Links in the messages are under each paper's origin from `origins`.
    Needs an app context (templates, SECRET_KEY)."""
    report = SendReport()
    composer = Composer(now, origins)
    pool = mail.SenderPool(mailer, open_mailer or (lambda: mailer), connections if open_mailer else 1)
    after = 0
    try:
        while True:
            with _send_lock() as (mine, writer):
                if not mine:
                    report.deferred = True
                    break
                after = _send_batches(now, pool, composer, report, after, progress, writer)
            db.session.commit()
            # Rows a concurrent run recorded while this one held the lock: it gave up sending.
            if report.stopped or db.session.scalar(_ANY_AFTER, {"after": after}) is None:
                break
    finally:
        pool.close()
        db.session.commit()
    return report


def _send_batches(now, pool: mail.SenderPool, composer: Composer, report: SendReport, after: int,
                  progress, writer) -> int:
    """Send the unsent rows after id `after`, keeping every connection busy; return the last
    id read. On the way out (an error, Ctrl-C) it still records what is in flight."""
    rows: deque = deque()
    exhausted = False
    try:
        while True:
            while pool.free and not report.stopped:
                if not rows and not exhausted:
                    batch = db.session.execute(_BATCH, {"after": after, "n": BATCH}).all()
                    db.session.commit()
                    rows.extend(batch)
                    after, exhausted = (batch[-1].id, False) if batch else (after, True)
                if not rows:
                    break
                row = rows.popleft()
                if row.confirmed_at is None or row.unsubscribed_at is not None:
                    _write(writer, (_DROP, {"alert_id": row.id}))
                    report.skipped += 1
                    progress and progress(1)
                    continue
                message = composer.message(row)
                if message is None:  # everything in the window went off air since: nothing to say
                    _outcomes([(row, None)], now, report, writer)
                    progress and progress(1)
                    continue
                pool.submit(row, message)
            if not pool.busy:
                return after
            results = pool.results()
            _outcomes(results, now, report, writer)
            progress and progress(len(results))
    finally:
        while pool.busy:  # never leave a message the server accepted unrecorded
            _outcomes(pool.results(), now, report, writer)


def _write(writer, *statements) -> None:
    """Run `statements` ((statement, params) pairs) and commit them: on PostgreSQL through the
    autocommit `writer` (one statement, one round trip); on SQLite in a session transaction.
    Core execution: the ORM's bulk-UPDATE layer costs more than the statement at this rate,
    and nothing of these rows is loaded in the session."""
    if writer is not None:
        for statement, params in statements:
            writer.execute(statement, params)
        return
    conn = db.session.connection()
    for statement, params in statements:
        conn.execute(statement, params)
    db.session.commit()


def _mark_sent(rows: list, now: datetime, writer) -> None:
    ids = [row.id for row in rows]
    if writer is not None:
        _write(writer, (_MARK_SENT_PG, {"ids": ids, "now": now}))
    else:
        _write(None, (_MARK_SENT, {"ids": ids, "now": now}),
               (_MARK_READERS, {"subscriber_ids": [row.subscriber_id for row in rows], "now": now}))


def _outcomes(results: list, now: datetime, report: SendReport, writer) -> None:
    """Record finished messages (`(row, error)` pairs): the accepted ones marked sent in one
    statement and commit (a group commit when several connections finished at once), the
    refused ones left unsent with their error. Raises, after that, what is not a MailError."""
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
            _write(writer, (_MARK_FAILED, {"alert_id": row.id, "error": str(error)[:1000]}))
            report.failed += 1
            report.errors.append(str(error))
            report.streak += 1
            report.stopped = report.stopped or report.streak >= GIVE_UP_AFTER
        else:
            unexpected = error
    if unexpected is not None:
        raise unexpected
