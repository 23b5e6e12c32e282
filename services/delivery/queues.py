"""The engine of the outgoing queues: one lifecycle (claim with a lease, send with bounded
concurrency within the queue's own time budget, record, back off, give up, prune, count) for
every table of things that leave the building.

A queue is a declaration (`Queue`): its name, its table, how a claimed row becomes a job
(`load`), how one job is sent (`send`, over a `connection` the queue may keep per sending
thread for a run: an SMTP session), what counts as given up, its attempts, its backoff, its
settings prefix (`<PREFIX>_CONCURRENCY`, `_RUN_SECONDS`, `_ALLOW_PRIVATE`, `_TIMEOUT_SECONDS`,
`_MAX_ATTEMPTS`, `_LEASE_SECONDS`; the first four read with the `fallback_prefix` ones,
WEBHOOK_*, as fallbacks; see `Queue`), its retention. The modules keep only what differs (what
a message is and how it is sent); `run`, `pending_count` and `prune` are the same for all:
HTTP POSTs (subscriber and content webhooks, ActivityPub, pings) and mail (confirm mail and
correction alerts: services/delivery/outbox.py; alert mail, claimed in batches:
services/delivery/alerts.py). The worker (commands/worker.py) runs each declared queue on its
own thread and budget, so no queue waits behind another.

Each table has one row per message: `attempts`, `next_attempt_at` (when it is due; also the
lease, a claimed row's `next_attempt_at` put `lease` ahead, unless the queue names a
`lease_column` of its own: the mail queues' `claimed_until`), the `done_column` (when it was
sent), `failed_at` (given up), `last_error`, and `last_status` when the model has one. A row
`load` cannot make a message of is closed without a send: `GiveUp` (it never can: its
subscriber gone, bad data) is given up and counted as failed; `NotNeeded` (the reader
confirmed or left meanwhile) is closed and counted as skipped. After an attempt:

- a success is done;
- a failure the queue says gives up (`gives_up`: e.g. a refusal, a 4xx but 408 and 429), or
  the `max_attempts`-th, is given up (`failed_at`);
- any other failure is tried again after `backoff(attempts)`.

Circuits. An HTTP queue sends to many hosts, some an attacker's or a tarpit: per-host circuit
breaking isolates them. CIRCUIT_FAILURES failures in a row to one host (no answer, or a 5xx)
open its circuit for CIRCUIT_SECONDS in this process: that host's rows claimed meanwhile are
put back until then, untried and uncounted, so a tarpit costs each run a few timeouts, not one
per row. The first attempt after the pause closes it again on a success.

A mail queue sends everything through one server, the operator's relay (SMTP_URL): there is
no other host to protect, and deferring each row behind an open circuit would write every
row of the queue once a pass while the relay is down. So its circuit is keyed on that one
server and scoped to a run (`stop_after`): that many connection-level failures in a row (the
server said nothing about the message) end the run; what is not yet claimed stays due,
untouched, for the next poll, which tries the relay again with one message (alert mail counts
no attempt against a message the relay said nothing about). Other queues are not affected
either way: each runs on its own thread and budget (the worker).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.exc import SQLAlchemyError

from extensions import db
from models.clock import utcnow
from services import http
from services.delivery import claims
from services.retry import backoff

log = logging.getLogger("paperdesk.queues")

# An attempt cut short by the end of the run's budget still gets this long.
MIN_TIMEOUT_SECONDS = 1.0
CIRCUIT_FAILURES = 3
CIRCUIT_SECONDS = 60.0


class GiveUp(Exception):
    """Raised by a queue's `load`: the row can never become a message (its subscriber or paper
    gone, bad data). It is given up with this reason, counted as a failed attempt."""


class NotNeeded(Exception):
    """Raised by a queue's `load`: the message has no reason to go any more (the address
    confirmed, left or paused). The row is closed with this reason, counted as skipped, not
    failed; with `delete`, the row is deleted instead (an alert window that must not count as
    one the reader had)."""

    def __init__(self, reason: str, *, delete: bool = False):
        super().__init__(reason)
        self.delete = delete


@dataclass
class Report:
    """What one run of a queue did: messages `delivered`, `failed` (given up ones included),
    `given_up` (those of `failed` closed for good, `unbuildable` ones included), `unanswered`
    (those of `failed` the receiver said nothing about), `unbuildable` (given up by `load`),
    `skipped` (closed unsent as no longer needed), `deferred` (put back untried behind an open
    circuit), `disabled` receivers (content webhook endpoints disabled, addresses suppressed),
    the first `errors`, `left`: the run's budget ran out with messages still due, and
    `stopped`: the queue's one server failed `stop_after` times in a row, the rest waits for
    the next run."""

    delivered: int = 0
    failed: int = 0
    given_up: int = 0
    unanswered: int = 0
    unbuildable: int = 0
    skipped: int = 0
    deferred: int = 0
    disabled: int = 0
    left: bool = False
    stopped: bool = False
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Settings:
    """A queue's run settings, read from the app config under its prefix (`settings_of`):
    sends at once, the run's budget (seconds), private targets allowed, attempts, one
    attempt's timeout (seconds) and the claim's lease."""

    concurrency: int
    budget: float
    allow_private: bool
    max_attempts: int
    timeout: float = http.TIMEOUT_SECONDS
    lease: timedelta = timedelta(minutes=2)


@dataclass(frozen=True)
class Queue:
    """One outgoing queue, declared. `load(row)` turns a claimed row (the `returning` columns)
    into a job with `id`, `attempts` and `target` (a URL or host name: the circuit's key; ""
    for none), running in the engine's thread with the database at hand, or raises GiveUp or
    NotNeeded; `send(job, allow_private=, timeout=, clock=)` runs in a worker thread and
    returns an http.Attempt, never raising; `gives_up(job, attempt, attempts, at)` says a
    failure ends the message before `max_attempts`; `counts(attempt)` false says a failure is
    not counted at all (the receiver said nothing about the message: the row stays due, its
    attempts unchanged); `after(job, attempt, values, at, report)` may add to or change the
    row's new column `values` (and write other rows) before they are committed; `sent(jobs,
    at)` writes what a group of messages delivered together changes beside their rows (in one
    statement: the results that finish together are committed together). `due()` adds
    conditions to what is claimable. `retention_setting` is the setting that says how long done
    rows are kept (OUTBOX_RETENTION_DAYS).

    `connection(settings)`, when declared, is called in the engine's thread at the start of a
    run and returns an opener: each sending thread opens one connection with it when it first
    sends, passes it to `send(..., connection=)` for the rest of the run, and the engine closes
    it (`.close()`) when the run ends. `stop_after` > 0 declares a queue whose messages all go
    through one server (mail): that many failures without an answer (`status` None) in a row
    end the run, and no per-host circuit applies (see the module).

    Batches (`batch` > 1, for queues of many small messages: alert mail): one statement claims
    up to `batch` rows in id order past the last one claimed (a keyset: a run never tries a row
    twice and never rereads what it tried), `load_many(rows)` makes their jobs at once (a list,
    each a job or the GiveUp or NotNeeded of that row), and rows are handed to senders only
    while the claim's lease has more than `lease_margin(settings)` (one message's longest
    send) left; the rest is given back at once. `lease_column` names the lease when it is not
    `next_attempt_at` (a nullable `next_attempt_at` then means due at once).

    Settings, each `<PREFIX>_<NAME>`: `concurrency_setting` (default `concurrency`),
    `RUN_SECONDS` (default `budget`), `ALLOW_PRIVATE`, `timeout_setting` (one attempt's
    bound), `MAX_ATTEMPTS` and `LEASE_SECONDS` (default `lease`); all but the last two fall
    back to the `fallback_prefix` setting of the same name when unset ("": none)."""

    name: str
    model: type
    settings_prefix: str
    returning: Sequence
    load: Callable
    send: Callable
    max_attempts: int
    gives_up: Callable = lambda job, attempt, attempts, at: False
    counts: Callable = lambda attempt: True
    after: Callable | None = None
    sent: Callable | None = None
    due: Callable[[], list] = lambda: []
    first_backoff: timedelta = timedelta(minutes=1)
    backoff_cap: timedelta = timedelta(hours=6)
    lease: timedelta = timedelta(minutes=2)
    done_column: str = "delivered_at"
    retention_setting: str = "OUTBOX_RETENTION_DAYS"
    connection: Callable | None = None
    stop_after: int = 0
    concurrency: int = 4
    budget: float = 120.0
    concurrency_setting: str = "CONCURRENCY"
    timeout_setting: str = "TIMEOUT_SECONDS"
    fallback_prefix: str = "WEBHOOK"
    batch: int = 1
    load_many: Callable | None = None
    lease_margin: Callable = lambda settings: timedelta(0)
    lease_column: str = "next_attempt_at"

    def backoff(self, attempts: int) -> timedelta:
        """This queue's wait before attempt `attempts + 1` (the one `backoff`)."""
        return backoff(attempts, self.first_backoff, self.backoff_cap)


def _unset_or(value, default):
    return default if value is None else value


def settings_of(queue: Queue, config) -> Settings:
    """`queue`'s settings from `config` (see `Queue`): each falls back to the
    `queue.fallback_prefix` setting of the same name, then to the queue's declared default,
    when unset or None (MAX_ATTEMPTS and LEASE_SECONDS to the declared value only)."""
    def read(name: str, default):
        value = config.get(f"{queue.settings_prefix}_{name}")
        if value is None and queue.fallback_prefix:
            value = config.get(f"{queue.fallback_prefix}_{name}")
        return _unset_or(value, default)
    prefix = queue.settings_prefix
    return Settings(concurrency=int(read(queue.concurrency_setting, queue.concurrency)),
                    budget=float(read("RUN_SECONDS", queue.budget)),
                    allow_private=bool(read("ALLOW_PRIVATE", False)),
                    max_attempts=int(_unset_or(config.get(f"{prefix}_MAX_ATTEMPTS"), queue.max_attempts)),
                    timeout=float(read(queue.timeout_setting, http.TIMEOUT_SECONDS)),
                    lease=timedelta(seconds=float(_unset_or(config.get(f"{prefix}_LEASE_SECONDS"),
                                                            queue.lease.total_seconds()))))


# ----------------------------------------------------------------------------- circuits


class _Circuits:
    """Per (queue, host) failure streaks and open-until instants (the queue's clock: aware
    UTC), shared by the process's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streak: dict[tuple[str, str], int] = {}
        self._open_until: dict[tuple[str, str], datetime] = {}

    def open_until(self, key: tuple[str, str], now: datetime) -> datetime | None:
        """When the circuit of `key` closes, if it is open at `now`; else None."""
        with self._lock:
            until = self._open_until.get(key)
        return until if until is not None and until > now else None

    def note(self, key: tuple[str, str], attempt: http.Attempt, now: datetime) -> None:
        """Count `attempt` (made at `now`) in the streak of `key`; open the circuit for
        CIRCUIT_SECONDS at CIRCUIT_FAILURES failures in a row (no answer, or a 5xx)."""
        broken = not attempt.ok and (attempt.status is None or attempt.status >= 500)
        with self._lock:
            if not broken:
                self._streak.pop(key, None)
                self._open_until.pop(key, None)
                return
            streak = self._streak[key] = self._streak.get(key, 0) + 1
            if streak >= CIRCUIT_FAILURES:
                self._open_until[key] = now + timedelta(seconds=CIRCUIT_SECONDS)

    def reset(self) -> None:
        """Close every circuit (tests)."""
        with self._lock:
            self._streak.clear()
            self._open_until.clear()


circuits = _Circuits()


def _host(target: str) -> str:
    if "/" not in target:
        return target
    try:
        return urlsplit(target).hostname or ""
    except ValueError:
        return ""


# ----------------------------------------------------------------------------- the engine


def _due(queue: Queue, now: datetime) -> list:
    model = queue.model
    due = [getattr(model, queue.done_column).is_(None), model.failed_at.is_(None), *queue.due()]
    if queue.lease_column == "next_attempt_at":
        due.append(model.next_attempt_at <= now)
    else:
        lease = getattr(model, queue.lease_column)
        due += [or_(model.next_attempt_at.is_(None), model.next_attempt_at <= now),
                or_(lease.is_(None), lease <= now)]
    return due


class _Claims:
    """The rows a run has claimed and not yet handed out, claimed one (or `queue.batch`) at a
    time, in the engine's thread."""

    def __init__(self, queue: Queue, settings: Settings, now: datetime, clock: Callable[[], datetime]):
        self.queue, self.settings, self.now, self.clock = queue, settings, now, clock
        self.tried: set[int] = set()
        self.after = 0
        self.held: deque = deque()  # (row id, job or the exception load gave)
        self.terms: claims.Lease | None = None
        self.exhausted = False

    def next(self):
        """The next claimed (row id, job or exception), or None when nothing more is due."""
        if self.held and not self.terms.usable():
            self.give_back()  # the lease is running out: let other senders have them
        if not self.held and not self.exhausted:
            self._claim()
        return self.held.popleft() if self.held else None

    def _claim(self) -> None:
        queue, model = self.queue, self.queue.model
        due = _due(queue, self.now)
        if queue.batch > 1:
            due.append(model.id > self.after)
        elif self.tried:
            due.append(model.id.not_in(self.tried))
        self.terms = claims.Lease.starting(self.clock(), self.settings.lease, queue.lease_margin(self.settings))
        rows = claims.claim(db.session, model, due=due, order_by=(model.id,), limit=queue.batch,
                            lease={queue.lease_column: self.terms.until}, returning=(model.id, *queue.returning))
        db.session.commit()  # the lease holds from here; `load` may write on a connection of its own
        if not rows:
            self.exhausted = True
            return
        self.after = rows[-1].id
        self.tried.update(row.id for row in rows)
        if queue.load_many is not None:
            loaded = _guarded(queue, lambda: queue.load_many(rows), rows)
        else:
            loaded = [_guarded(queue, lambda row=row: queue.load(row), [row])[0] for row in rows]
        db.session.commit()
        self.held.extend(zip((row.id for row in rows), loaded, strict=True))

    def again(self) -> None:
        """Something was recorded: a row held behind it may be due now (one-row claims)."""
        if self.queue.batch == 1:
            self.exhausted = False

    def give_back(self) -> None:
        """Hand the rows claimed and not sent back at once, not at the lease's end."""
        ids = [row_id for row_id, _ in self.held]
        self.held.clear()
        if not ids:
            return
        column = getattr(self.queue.model, self.queue.lease_column)
        if self.queue.lease_column == "next_attempt_at":  # due again at once
            db.session.execute(update(self.queue.model).where(self.queue.model.id.in_(ids), column == self.terms.until)
                               .values(next_attempt_at=self.now).execution_options(synchronize_session=False))
        else:
            claims.release(db.session, self.queue.model, ids, column=column, until=self.terms.until)
        db.session.commit()


def _guarded(queue: Queue, load: Callable[[], list | object], rows: list) -> list:
    """What `load()` gives, as a list of jobs or exceptions (one per row in `rows`): GiveUp and
    NotNeeded as they are, anything else but a database error (bad data in a row must not stop
    the rows behind it) as a GiveUp for each row; a database error ends the run."""
    try:
        loaded = load()
        return loaded if queue.load_many is not None else [loaded]
    except SQLAlchemyError:
        raise
    except (GiveUp, NotNeeded) as exc:
        db.session.rollback()
        return [exc] * len(rows)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        db.session.rollback()
        log.exception("%s %s could not be built", queue.name, [row.id for row in rows])
        return [GiveUp(f"cannot build the message: {type(exc).__name__}: {exc}")] * len(rows)


def _close(queue: Queue, row_id: int, closed: Exception, report: Report, at: datetime) -> None:
    """Close a row `load` could not make a message of (see GiveUp, NotNeeded); no commit."""
    reason = str(closed)[:1000]
    row = update(queue.model).where(queue.model.id == row_id)
    if isinstance(closed, NotNeeded):
        report.skipped += 1
        if closed.delete:
            db.session.execute(delete(queue.model).where(queue.model.id == row_id))
            return
        values: dict = {"failed_at": at, "last_error": reason}
    else:
        values = {"failed_at": at, "last_error": reason, "attempts": queue.model.attempts + 1}
        report.failed += 1
        report.given_up += 1
        report.unbuildable += 1
        if len(report.errors) < 20:
            report.errors.append(f"{queue.name} {row_id}: {reason}")
    if queue.lease_column != "next_attempt_at":
        values[queue.lease_column] = None
    db.session.execute(row.values(**values))


def _record(queue: Queue, settings: Settings, job, attempt: http.Attempt, report: Report, at: datetime,
            delivered: dict[tuple, list]) -> None:
    """Write the outcome of one attempt (and what `after` adds); the caller commits. A
    delivered message is not written here but added to `delivered` (its new column values ->
    the jobs with those values), for `_write_delivered` to write in one statement per group."""
    values: dict = {"last_error": attempt.error}
    if queue.lease_column != "next_attempt_at":
        values[queue.lease_column] = None
    if not attempt.ok and not queue.counts(attempt):
        # The receiver said nothing about this message: not an attempt of it; due again.
        report.failed += 1
        report.unanswered += 1
        if queue.lease_column == "next_attempt_at":
            values["next_attempt_at"] = at
        if len(report.errors) < 20:
            report.errors.append(f"{queue.name} {job.id}: {attempt.error}")
        db.session.execute(update(queue.model).where(queue.model.id == job.id).values(**values))
        return
    attempts = job.attempts + 1
    values["attempts"] = attempts
    if hasattr(queue.model, "last_status"):
        values["last_status"] = attempt.status
    if attempt.ok:
        values[queue.done_column] = at
        report.delivered += 1
        if queue.after is not None:
            queue.after(job, attempt, values, at, report)
        del values["attempts"]  # written as attempts + 1, so that rows with the same values group
        delivered.setdefault(tuple(sorted(values.items())), []).append(job)
        return
    report.failed += 1
    report.unanswered += attempt.status is None
    if len(report.errors) < 20:
        report.errors.append(f"{queue.name} {job.id}: {attempt.error}")
    if queue.gives_up(job, attempt, attempts, at) or attempts >= settings.max_attempts:
        values["failed_at"] = at
        report.given_up += 1
    else:
        values["next_attempt_at"] = at + queue.backoff(attempts)
    if queue.after is not None:
        queue.after(job, attempt, values, at, report)
    db.session.execute(update(queue.model).where(queue.model.id == job.id).values(**values))


def _write_delivered(queue: Queue, delivered: dict[tuple, list], at: datetime) -> None:
    """Mark the delivered messages: one UPDATE per set of new values (`_record`), then what
    `queue.sent` adds for them; the caller commits."""
    model = queue.model
    for values, jobs in delivered.items():
        db.session.execute(update(model).where(model.id.in_([job.id for job in jobs]))
                           .values({**dict(values), "attempts": model.attempts + 1})
                           .execution_options(synchronize_session=False))
    if queue.sent is not None and delivered:
        queue.sent([job for jobs in delivered.values() for job in jobs], at)


def _defer(queue: Queue, job, until: datetime, report: Report) -> None:
    db.session.execute(update(queue.model).where(queue.model.id == job.id).values(next_attempt_at=until))
    db.session.commit()
    report.deferred += 1


class _Connections:
    """The connections of one run's sending threads (`Queue.connection`): one per thread,
    opened when it first sends, all closed by `close()`."""

    def __init__(self, opener: Callable[[], object]) -> None:
        self._opener = opener
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list = []

    def get(self):
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._opener()
            with self._lock:
                self._open.append(connection)
        return connection

    def close(self) -> None:
        for connection in self._open:
            connection.close()


def _sender(queue: Queue, settings: Settings, connections: _Connections | None) -> Callable:
    """What a sending thread runs for one job: `queue.send`, over its connection when the
    queue keeps one; never raises (an error opening the connection is an attempt without an
    answer)."""
    def send(job, *, timeout: float, clock: Callable[[], datetime]) -> http.Attempt:
        if connections is None:
            return queue.send(job, allow_private=settings.allow_private, timeout=timeout, clock=clock)
        try:
            connection = connections.get()
        except Exception as exc:  # noqa: BLE001 - a bad setting or a refused connect: no answer
            return http.Attempt(False, None, f"cannot connect: {type(exc).__name__}: {exc}")
        return queue.send(job, allow_private=settings.allow_private, timeout=timeout, clock=clock,
                          connection=connection)
    return send


def run(queue: Queue, settings: Settings, now: datetime, *, clock: Callable[[], datetime] = utcnow,
        limit: int | None = None, should_stop: Callable[[], bool] | None = None,
        progress: Callable[[int], None] | None = None) -> Report:
    """Send every message of `queue` due at `now`, up to `settings.concurrency` at once (each
    send in a worker thread; claiming, loading and recording stay in the caller's thread),
    within `settings.budget` seconds of wall time: no message starts after it, and each
    attempt's timeout is cut to what is left (at least MIN_TIMEOUT_SECONDS), so a run lasts
    about the budget at most whatever the receivers do; what is still due waits for the next
    run (`report.left`). Results are committed as soon as they are known (those that finish
    together in one commit), before their sending thread is given another message. A message
    whose host's circuit is open is put back until it closes; a queue with `stop_after` ends
    the run after that many failures without an answer in a row (`report.stopped`). `limit`
    caps the messages tried; `should_stop()` true ends the run after the sends in flight;
    `progress(n)` is told of each `n` messages done. A message that becomes due while the run
    goes on (one held behind another, as ActivityPub holds an inbox's later activities) is
    taken in the same run. On the way out, an error (or Ctrl-C) included, what is in flight
    is recorded and what was claimed and not tried is given back. A run killed mid-send
    leaves its rows leased: they are tried again once the lease has passed."""
    report = Report()
    deadline = time.monotonic() + settings.budget
    running: dict[Future, object] = {}
    workers = max(1, settings.concurrency)
    streak = 0  # failures without an answer in a row (queues with `stop_after`)
    claimed = _Claims(queue, settings, now, clock)
    connections = _Connections(queue.connection(settings)) if queue.connection is not None else None
    send = _sender(queue, settings, connections)

    def record(finished) -> None:
        nonlocal streak
        at = clock()
        delivered: dict[tuple, list] = {}
        for future in finished:
            job, key = running.pop(future)
            attempt = future.result()
            if key[1]:
                circuits.note(key, attempt, at)
            if queue.stop_after:
                streak = streak + 1 if not attempt.ok and attempt.status is None else 0
                report.stopped = report.stopped or streak >= queue.stop_after
            _record(queue, settings, job, attempt, report, at, delivered)
        _write_delivered(queue, delivered, at)
        db.session.commit()

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"queue-{queue.name}")
    try:
        while True:
            while not report.stopped and len(running) < workers and (limit is None or len(claimed.tried) < limit):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    report.left = True
                    break
                if should_stop is not None and should_stop():
                    break
                held = claimed.next()
                if held is None:
                    break
                row_id, job = held
                if isinstance(job, Exception):
                    _close(queue, row_id, job, report, clock())
                    db.session.commit()
                    if progress is not None:
                        progress(1)
                    continue
                key = (queue.name, "" if queue.stop_after else _host(job.target))
                paused = circuits.open_until(key, clock()) if key[1] else None
                if paused is not None:
                    _defer(queue, job, paused, report)
                    continue
                timeout = max(MIN_TIMEOUT_SECONDS, min(settings.timeout, remaining))
                running[pool.submit(send, job, timeout=timeout, clock=clock)] = (job, key)
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            record(finished)
            if progress is not None:
                progress(len(finished))
            claimed.again()  # a recorded message may free one held behind it
    finally:
        try:
            if running:  # never leave a message the receiver accepted unrecorded
                finished, _ = wait(running)
                record(finished)
            claimed.give_back()
        finally:
            pool.shutdown(wait=True)
            if connections is not None:
                connections.close()
    return report


def pending_count(queue: Queue, due_at: datetime | None = None) -> int:
    """Messages of `queue` neither done nor given up; with `due_at`, only those due by then
    (and not under another sender's lease)."""
    model = queue.model
    pending = (_due(queue, due_at) if due_at is not None
               else [getattr(model, queue.done_column).is_(None), model.failed_at.is_(None)])
    return db.session.scalar(select(func.count()).select_from(model).where(*pending)) or 0


def prune(queue: Queue, before: datetime) -> int:
    """Delete the messages of `queue` done or given up before `before`; returns how many. The
    caller commits."""
    model = queue.model
    done = or_(getattr(model, queue.done_column) < before, model.failed_at < before)
    return db.session.execute(delete(model).where(done)).rowcount or 0
