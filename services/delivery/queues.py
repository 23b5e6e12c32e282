"""The engine of the outgoing queues: one lifecycle (claim with a lease, send with bounded
concurrency within the queue's own time budget, record, back off, give up, prune, count) for
every table of things that leave the building.

A queue is a declaration (`Queue`): its name, its table, how a claimed row becomes a job
(`load`), how one job is sent (`send`), what counts as given up, its attempts, its backoff,
its settings prefix (`<PREFIX>_CONCURRENCY`, `_RUN_SECONDS`, `_ALLOW_PRIVATE`,
`_TIMEOUT_SECONDS`, `_MAX_ATTEMPTS`, read with the WEBHOOK_* values as fallbacks), its retention. The modules keep
only what differs (what a message is and how it is sent); `run`, `pending_count` and `prune`
are the same for all. The worker (commands/worker.py) runs each declared queue on its own
thread and budget, so no queue waits behind another.

Each table has one row per message: `attempts`, `next_attempt_at` (when it is due; the lease
too, unless the queue names a `lease_column`), the `done_column` (when it was sent),
`failed_at` (given up), `last_status`, `last_error`. After an attempt:

- a success is done;
- a failure the queue says gives up (`gives_up`: e.g. a refusal, a 4xx but 408 and 429), or
  the `max_attempts`-th, is given up (`failed_at`);
- any other failure is tried again after `backoff(attempts)`.

Per-host circuit breaking: CIRCUIT_FAILURES failures in a row to one host (no answer, or a 5xx)
open its circuit for CIRCUIT_SECONDS in this process: that host's rows claimed meanwhile are
put back until then, untried and uncounted, so a tarpit costs each run a few timeouts, not one
per row. The first attempt after the pause closes it again on a success.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import delete, func, or_, select, update

from extensions import db
from models.clock import utcnow
from services import http
from services.delivery import claims
from services.retry import backoff

# An attempt cut short by the end of the run's budget still gets this long.
MIN_TIMEOUT_SECONDS = 1.0
CIRCUIT_FAILURES = 3
CIRCUIT_SECONDS = 60.0


@dataclass
class Report:
    """What one run of a queue did: messages `delivered`, `failed` (given up ones included),
    `given_up`, `deferred` (put back untried behind an open circuit), endpoints `disabled`
    (content webhooks), the first `errors`, and `left`: the run's budget ran out with messages
    still due."""

    delivered: int = 0
    failed: int = 0
    given_up: int = 0
    deferred: int = 0
    disabled: int = 0
    left: bool = False
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Settings:
    """A queue's run settings, read from the app config under its prefix (`settings_of`)."""

    concurrency: int
    budget: float
    allow_private: bool
    max_attempts: int
    timeout: float = http.TIMEOUT_SECONDS


@dataclass(frozen=True)
class Queue:
    """One outgoing queue, declared. `load(row)` turns a claimed row (the `returning` columns)
    into a job with `id`, `attempts` and `target` (a URL or host name: the circuit's key; ""
    for none), running in the engine's thread with the database at hand;
    `send(job, allow_private=, timeout=, clock=)` runs in a worker thread and returns an
    http.Attempt, never raising; `gives_up(job, attempt, attempts, at)` says a failure ends
    the message before `max_attempts`; `after(job, attempt, values, at, report)` may add to
    or change the row's new column `values` (and write other rows) before they are committed.
    `due()` adds conditions to what is claimable. `retention_days` is the setting that says how
    long done rows are kept (OUTBOX_RETENTION_DAYS)."""

    name: str
    model: type
    settings_prefix: str
    returning: Sequence
    load: Callable
    send: Callable
    max_attempts: int
    gives_up: Callable = lambda job, attempt, attempts, at: False
    after: Callable | None = None
    due: Callable[[], list] = lambda: []
    first_backoff: timedelta = timedelta(minutes=1)
    backoff_cap: timedelta = timedelta(hours=6)
    lease: timedelta = timedelta(minutes=2)
    done_column: str = "delivered_at"
    retention_setting: str = "OUTBOX_RETENTION_DAYS"

    def backoff(self, attempts: int) -> timedelta:
        """This queue's wait before attempt `attempts + 1` (the one `backoff`)."""
        return backoff(attempts, self.first_backoff, self.backoff_cap)


def settings_of(queue: Queue, config) -> Settings:
    """`queue`'s settings from `config`: `<PREFIX>_CONCURRENCY`, `_RUN_SECONDS`,
    `_ALLOW_PRIVATE`, `_TIMEOUT_SECONDS` (each falling back to the WEBHOOK_* value when unset
    or None) and `_MAX_ATTEMPTS` (falling back to the queue's declared `max_attempts`)."""
    def read(name: str, fallback):
        value = config.get(f"{queue.settings_prefix}_{name}")
        return fallback if value is None else value
    return Settings(concurrency=int(read("CONCURRENCY", config.get("WEBHOOK_CONCURRENCY", 4))),
                    budget=float(read("RUN_SECONDS", config.get("WEBHOOK_RUN_SECONDS", 120.0))),
                    allow_private=bool(read("ALLOW_PRIVATE", config.get("WEBHOOK_ALLOW_PRIVATE", False))),
                    max_attempts=int(read("MAX_ATTEMPTS", queue.max_attempts)),
                    timeout=float(read("TIMEOUT_SECONDS",
                                       config.get("WEBHOOK_TIMEOUT_SECONDS") or http.TIMEOUT_SECONDS)))


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


def _claim(queue: Queue, now: datetime, tried: set[int], clock: Callable[[], datetime]):
    model = queue.model
    due = [getattr(model, queue.done_column).is_(None), model.failed_at.is_(None), model.next_attempt_at <= now,
           *queue.due()]
    if tried:
        due.append(model.id.not_in(tried))
    claimed = claims.claim(db.session, model, due=due, order_by=(model.id,), limit=1,
                           lease={"next_attempt_at": clock() + queue.lease}, returning=(model.id, *queue.returning))
    db.session.commit()  # the lease holds from here; `load` may write on a connection of its own
    if not claimed:
        return None
    job = queue.load(claimed[0])
    db.session.commit()
    return job


def _record(queue: Queue, settings: Settings, job, attempt: http.Attempt, report: Report, at: datetime) -> None:
    attempts = job.attempts + 1
    values: dict = {"attempts": attempts, "last_status": attempt.status, "last_error": attempt.error}
    if attempt.ok:
        values[queue.done_column] = at
        report.delivered += 1
    else:
        report.failed += 1
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
    db.session.commit()


def _defer(queue: Queue, job, until: datetime, report: Report) -> None:
    db.session.execute(update(queue.model).where(queue.model.id == job.id).values(next_attempt_at=until))
    db.session.commit()
    report.deferred += 1


def run(queue: Queue, settings: Settings, now: datetime, *, clock: Callable[[], datetime] = utcnow,
        limit: int | None = None, should_stop: Callable[[], bool] | None = None) -> Report:
    """Send every message of `queue` due at `now`, up to `settings.concurrency` at once (each
    send in a worker thread; claiming and recording stay in the caller's thread, each result
    committed as soon as it is known), within `settings.budget` seconds of wall time: no
    message starts after it, and each attempt's timeout is cut to what is left (at least
    MIN_TIMEOUT_SECONDS), so a run lasts about the budget at most whatever the receivers do;
    what is still due waits for the next run (`report.left`). A message whose host's circuit
    is open is put back until it closes. `limit` caps the messages tried; `should_stop()`
    true ends the run after the sends in flight. A message that becomes due while the run
    goes on (one held behind another, as ActivityPub holds an inbox's later activities) is
    taken in the same run. A run killed mid-send leaves its rows leased: they are tried again
    once the lease (`queue.lease`) has passed."""
    report = Report()
    tried: set[int] = set()
    deadline = time.monotonic() + settings.budget
    running: dict[Future, object] = {}
    workers = max(1, settings.concurrency)
    exhausted = False
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"queue-{queue.name}") as pool:
        while True:
            while not exhausted and len(running) < workers and (limit is None or len(tried) < limit):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    report.left = True
                    break
                if should_stop is not None and should_stop():
                    break
                job = _claim(queue, now, tried, clock)
                if job is None:
                    exhausted = True
                    break
                tried.add(job.id)
                key = (queue.name, _host(job.target))
                paused = circuits.open_until(key, clock()) if key[1] else None
                if paused is not None:
                    _defer(queue, job, paused, report)
                    continue
                timeout = max(MIN_TIMEOUT_SECONDS, min(settings.timeout, remaining))
                running[pool.submit(queue.send, job, allow_private=settings.allow_private, timeout=timeout,
                                    clock=clock)] = (job, key)
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                job, key = running.pop(future)
                attempt = future.result()
                if key[1]:
                    circuits.note(key, attempt, clock())
                _record(queue, settings, job, attempt, report, clock())
            exhausted = False  # a recorded message may free one held behind it
    return report


def pending_count(queue: Queue) -> int:
    """Messages of `queue` neither done nor given up."""
    model = queue.model
    return db.session.scalar(select(func.count()).select_from(model).where(
        getattr(model, queue.done_column).is_(None), model.failed_at.is_(None))) or 0


def prune(queue: Queue, before: datetime) -> int:
    """Delete the messages of `queue` done or given up before `before`; returns how many. The
    caller commits."""
    model = queue.model
    done = or_(getattr(model, queue.done_column) < before, model.failed_at < before)
    return db.session.execute(delete(model).where(done)).rowcount or 0
