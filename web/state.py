"""What every worker of a deployment shares on the request path: the papers' generation, and
the rate-limit counts of the embedded default.

**The generation.** A worker keeps a snapshot of each paper it served (tenancy.PaperSnapshot:
version, visibility, the row) so that a 304, a stored answer or a replayed one needs no
database round trip. A snapshot is trusted only while the deployment's *generation* is the one
it was taken under: a number every commit that changes a paper moves (`after_commit`, before
the writer's answer leaves), and that a reader reads *before* it reads the paper from the
database. So a read that starts after a write was answered sees a generation the snapshot does
not hold, and goes to the database: no read ever lags an answered write, on any worker or host
(docs/ARCHITECTURE.md "Never stale").

**Where it lives** (`SHARED_STATE`, default `auto`):

- `redis://...`: a Redis key (`{prefix}:generation`) that every host shares. `auto` picks the
  Redis of RATELIMIT_STORAGE_URI or CACHE_REDIS_URL when either is one. A Redis that fails or
  is slow (SHARED_STATE_TIMEOUT, 0.25 s) gives no generation: reads go to the database for
  STATE_RETRY_SECONDS, and this worker drops its snapshots (it may have missed a write).
- `host`: a small file in the instance folder, memory-mapped by every worker of the host
  (`paperdesk-state.shm`): a read is a few hundred nanoseconds. `auto` picks it without Redis.
  Right for the embedded default (SQLite: one host); several hosts must share Redis.
- `off`: no generation; every public read asks the database for its paper.

**Host counters.** With RATELIMIT_STORAGE_URI `memory://` the limits are counted in the same
file (fixed windows, `HostCounters.incr`), so the host's workers share one count, as Redis makes
every host share one in production.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import mmap
import os
import secrets
import struct
import threading
import time
from itertools import chain

from flask import Flask, current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.orm import Session

from models import Paper

log = logging.getLogger("paperdesk.state")

STATE_RETRY_SECONDS = 1.0
FILE_NAME = "paperdesk-state.shm"
_MAGIC = b"PDSTATE1"
_GENERATION_AT = 8            # uint64 after the magic
_SLOTS_AT = 64
_SLOTS = 16384                # rate-limit counters: (key hash, window end, count) each
_SLOT = struct.Struct("<QQQQ")
_PROBE = 16                   # slots looked at per key before the stalest is taken over
_SIZE = _SLOTS_AT + _SLOTS * _SLOT.size
_EXTENSION = "paperdesk.state"
_U64 = struct.Struct("<Q")
_CHANGED = "paperdesk.paper_changed"  # Session.info: this transaction wrote a paper's row


class HostFile:
    """The host's shared file, memory-mapped (see the module). Opened lazily per process, so
    a gunicorn worker forked from a master that opened it maps it again for itself. Writers
    take an exclusive `flock` for a read-modify-write; readers of the generation take none (an
    aligned 8-byte load)."""

    def __init__(self, path: str):
        self.path = path
        self._pid: int | None = None
        self._map: mmap.mmap | None = None
        self._fd: int | None = None
        self._lock = threading.Lock()  # threads of one worker: flock is per open file

    def _open(self) -> mmap.mmap:
        if self._pid == os.getpid() and self._map is not None:
            return self._map
        with self._lock:
            if self._pid == os.getpid() and self._map is not None:
                return self._map
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size < _SIZE:
                    os.ftruncate(fd, _SIZE)
                mapped = mmap.mmap(fd, _SIZE)
                if mapped[:8] != _MAGIC:
                    # A random start: a file made again (deleted while running) never repeats
                    # a generation a snapshot could hold.
                    _U64.pack_into(mapped, _GENERATION_AT, secrets.randbits(62))
                    mapped[:8] = _MAGIC
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            self._fd, self._map, self._pid = fd, mapped, os.getpid()
            return mapped

    def generation(self) -> int:
        """The host's generation (a read of shared memory)."""
        return _U64.unpack_from(self._open(), _GENERATION_AT)[0]

    def bump(self) -> int:
        """Move the generation; returns the new one."""
        mapped = self._open()
        with self._locked():
            value = (_U64.unpack_from(mapped, _GENERATION_AT)[0] + 1) & 0xFFFF_FFFF_FFFF_FFFF
            _U64.pack_into(mapped, _GENERATION_AT, value)
            return value

    def incr(self, key: str, expiry: int) -> int:
        """Count one hit of `key` in a window ending `expiry` seconds from now (fixed: the
        first hit of a window sets its end); returns the count in the window, 1 for the
        first. A key whose slots are all taken displaces the one whose window ends first."""
        mapped = self._open()
        digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") or 1
        now = time.time()
        start = digest % _SLOTS
        with self._locked():
            victim, victim_end = None, None
            for i in range(_PROBE):
                at = _SLOTS_AT + ((start + i) % _SLOTS) * _SLOT.size
                slot_key, window_end, count, _ = _SLOT.unpack_from(mapped, at)
                if slot_key == digest:
                    if window_end <= now:
                        count, window_end = 0, int(now + expiry)
                    _SLOT.pack_into(mapped, at, digest, window_end, count + 1, 0)
                    return count + 1
                if slot_key == 0 or window_end <= now:
                    victim, victim_end = at, -1
                    break
                if victim_end is None or window_end < victim_end:
                    victim, victim_end = at, window_end
            _SLOT.pack_into(mapped, victim, digest, int(now + expiry), 1, 0)
            return 1

    def _locked(self):
        return _Flock(self._fd, self._lock)


class _Flock:
    def __init__(self, fd: int, lock: threading.Lock):
        self.fd, self.lock = fd, lock

    def __enter__(self):
        self.lock.acquire()
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.lock.release()


class HostCounters:
    """The rate-limit store of `memory://` (web/limits.py calls `incr(key, expiry)` only, as on
    the `limits` library's storages): counts in the host file, shared by its workers."""

    def __init__(self, host_file: HostFile):
        self.file = host_file

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        count = 0
        for _ in range(amount):
            count = self.file.incr(key, expiry)
        return count


class SharedState:
    """The app's shared state (see the module). `generation()` is the current generation, or
    None when there is none to trust (off, or Redis failing); `bump()` moves it."""

    def __init__(self, app: Flask):
        config = app.config
        choice = (config.get("SHARED_STATE") or "auto").strip()
        if choice == "auto":
            redis_url = _redis_url(config)
        else:
            redis_url = choice if choice.startswith(("redis://", "rediss://", "unix://")) else ""
        self.kind = "redis" if redis_url else ("off" if choice == "off" else "host")
        self.host_file = HostFile(os.path.join(app.instance_path, FILE_NAME))
        self.timeout = float(config.get("SHARED_STATE_TIMEOUT", 0.25))
        self._redis_url, self._redis, self._redis_pid = redis_url, None, None
        self.key = f"{config.get('RATELIMIT_KEY_PREFIX') or 'paperdesk'}:generation"
        self._failed_at: float | None = None
        self._extensions = app.extensions

    # ------------------------------------------------------------------ the generation

    def generation(self) -> int | None:
        if self.kind == "host":
            return self.host_file.generation()
        if self.kind == "off":
            return None
        client = self._client()
        if client is None:
            return None
        try:
            value = client.get(self.key)
            if value is None:
                # A Redis that lost the key (restarted, flushed): start again from a random
                # generation, never one a snapshot could hold.
                client.set(self.key, secrets.randbits(62), nx=True)
                value = client.get(self.key)
            return int(value)
        except Exception:  # noqa: BLE001 - no generation: reads go to the database
            self._failed("read")
            return None

    def bump(self) -> None:
        """Move the generation after a commit that changed a paper. A Redis that fails is
        retried twice, then logged: readers that could not reach it either ask the database."""
        if self.kind == "host":
            self.host_file.bump()
        elif self.kind == "redis":
            for _ in range(3):
                client = self._client(force=True)
                try:
                    if client is not None:
                        client.incr(self.key)
                        return
                except Exception:  # noqa: BLE001 - retried, then logged below
                    self._failed("write")
            log.error("the shared generation could not be moved; other workers may serve a "
                      "paper's previous version until Redis answers again")

    def _client(self, force: bool = False):
        if not force and self._failed_at is not None and time.monotonic() - self._failed_at < STATE_RETRY_SECONDS:
            return None
        if self._redis is None or self._redis_pid != os.getpid():
            import redis  # only deployments with Redis need the client library loaded

            self._redis = redis.Redis.from_url(self._redis_url, socket_timeout=self.timeout,
                                               socket_connect_timeout=self.timeout)
            self._redis_pid = os.getpid()
        return self._redis

    def _failed(self, what: str) -> None:
        if self._failed_at is None or time.monotonic() - self._failed_at >= STATE_RETRY_SECONDS:
            log.warning("shared state (Redis) %s failed; public reads ask the database for %ss",
                        what, STATE_RETRY_SECONDS)
        self._failed_at = time.monotonic()
        # This worker may have missed a write while Redis was away: its snapshots go.
        self._extensions.pop("paperdesk.paper_snapshots", None)

    def shares_redis_with(self, url: str) -> bool:
        """True when the generation lives in the Redis at `url` (so one round trip reaches both)."""
        return self.kind == "redis" and self._redis_url == url

    def accept(self, value) -> int | None:
        """The generation from a GET of `key` made elsewhere (a pipeline): an int, or None when
        the key is missing (then made, as `generation` does, by a read of our own)."""
        return int(value) if value is not None else self.generation()

    def failed(self) -> None:
        """Tell the state that a pipeline holding its GET failed (see `_failed`)."""
        self._failed("read")

    # ------------------------------------------------------------------ host counters

    def counters(self) -> HostCounters:
        """The host's shared rate-limit counters (for RATELIMIT_STORAGE_URI `memory://`)."""
        return HostCounters(self.host_file)


GENERATION = "paperdesk.generation"  # environ: the generation this request read
_UNREAD = object()


def generation_for(app: Flask, environ: dict) -> int | None:
    """The deployment's generation as the request with this WSGI `environ` first read it: read
    once per request, at its first use (before any paper is read from the database; or in the
    rate limit's round trip to Redis, web/limits.py), and kept in the environ so the replay and
    the pipeline judge one request by one reading."""
    gen = environ.get(GENERATION, _UNREAD)
    if gen is _UNREAD:
        gen = environ[GENERATION] = for_app(app).generation()
    return gen


def _redis_url(config) -> str:
    for url in (config.get("RATELIMIT_STORAGE_URI") or "", config.get("CACHE_REDIS_URL") or ""):
        if url.startswith(("redis://", "rediss://")):
            return url
    return ""


def for_app(app: Flask) -> SharedState:
    """The app's SharedState, made on first use."""
    state = app.extensions.get(_EXTENSION)
    if state is None:
        state = app.extensions[_EXTENSION] = SharedState(app)
    return state


# Every write moves its paper's version (Paper.bump), so "a paper's row was written" is "a
# public answer may have changed". The listeners are the session's, not a request's: writes by
# the CLI and the outbox worker move the generation too.
@event.listens_for(Session, "after_flush")
def _note_paper_writes(session: Session, _context) -> None:
    if any(isinstance(obj, Paper) for obj in chain(session.new, session.dirty, session.deleted)):
        session.info[_CHANGED] = True


@event.listens_for(Session, "after_commit")
def _move_generation(session: Session) -> None:
    # Runs inside commit(), so before the writer's answer is sent.
    if session.info.pop(_CHANGED, False) and has_app_context():
        for_app(current_app._get_current_object()).bump()


@event.listens_for(Session, "after_rollback")
def _forget_paper_writes(session: Session) -> None:
    session.info.pop(_CHANGED, None)
