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
import os
import secrets
import struct
import threading
import time
from itertools import chain

import click
from flask import Flask, current_app, has_app_context, has_request_context
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
_UNMOVED = "paperdesk.generation_unmoved"  # Session.info: its commit could not move the generation


class HostFile:
    """The host's shared file (see the module), read and written with `pread`/`pwrite` on a
    descriptor opened lazily per process (a gunicorn worker forked from a master that opened it
    opens it again for itself). Never memory-mapped: a map of a file someone truncates kills
    the process with SIGBUS on its next touch, a `pread` past the end just reads short.

    Every use first checks that the path still names the file this process holds open and
    that it is whole (one `stat`: a file deleted, replaced or truncated under the workers is
    opened again, and one made again or cut short starts from a random generation, so no
    worker keeps trusting a snapshot and no two workers count on different files for long).
    The generation a reader gets carries the file's inode besides the stored number. Writers
    take an exclusive `flock` for a read-modify-write; readers of the generation take none (an
    aligned 8-byte read)."""

    def __init__(self, path: str):
        self.path = path
        self._pid: int | None = None
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the open file
        self._lock = threading.Lock()  # threads of one worker: flock is per open file

    def _current(self) -> int:
        """The descriptor of the file the path names now, opened (and made whole) if needed."""
        if self._pid == os.getpid() and self._fd is not None:
            try:
                st = os.stat(self.path)
                if (st.st_dev, st.st_ino) == self._identity and st.st_size >= _SIZE:
                    return self._fd
            except FileNotFoundError:
                pass
        return self._reopen()

    def _reopen(self) -> int:
        with self._lock:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                st = os.fstat(fd)
                if st.st_size < _SIZE or os.pread(fd, 8, 0) != _MAGIC:
                    # Made again, cut short or overwritten: a random start, so that no
                    # generation a snapshot holds comes back; the counters start empty.
                    os.ftruncate(fd, 0)
                    os.ftruncate(fd, _SIZE)
                    os.pwrite(fd, _U64.pack(secrets.randbits(62)), _GENERATION_AT)
                    os.pwrite(fd, _MAGIC, 0)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            # The old descriptor stays open: another thread may be reading through it now
            # (one descriptor per fault, not per request).
            self._fd, self._identity, self._pid = fd, (st.st_dev, st.st_ino), os.getpid()
            return fd

    def _read_generation(self, fd: int) -> int | None:
        head = os.pread(fd, _GENERATION_AT + 8, 0)
        if len(head) < _GENERATION_AT + 8 or head[:8] != _MAGIC:
            return None  # cut short or wiped since the stat: opened again by the caller
        return _U64.unpack_from(head, _GENERATION_AT)[0]

    def generation(self) -> int:
        """The host's generation: the stored number, with the file's inode above its 64 bits
        (so a file made again never matches a snapshot of the old one)."""
        for _ in range(3):
            fd = self._current()
            value = self._read_generation(fd)
            if value is not None:
                return (self._identity[1] << 64) | value
            self._reopen()
        raise OSError(f"the host state file {self.path} keeps being cut short")

    def bump(self) -> int:
        """Move the generation; returns the new stored number. Bumps the file the path names
        when it is done (a file deleted meanwhile made again: it is bumped too)."""
        while True:
            fd = self._current()
            with self._locked(fd):
                value = ((self._read_generation(fd) or 0) + 1) & 0xFFFF_FFFF_FFFF_FFFF
                os.pwrite(fd, _U64.pack(value), _GENERATION_AT)
            if self._current() == fd:
                return value

    def incr(self, key: str, expiry: int) -> int:
        """Count one hit of `key` in a window ending `expiry` seconds from now (fixed: the
        first hit of a window sets its end); returns the count in the window, 1 for the
        first. A key whose slots are all taken displaces the one whose window ends first."""
        fd = self._current()
        digest = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little") or 1
        now = time.time()
        start = digest % _SLOTS
        with self._locked(fd):
            victim, victim_end = None, None
            for i in range(_PROBE):
                at = _SLOTS_AT + ((start + i) % _SLOTS) * _SLOT.size
                raw = os.pread(fd, _SLOT.size, at)
                if len(raw) < _SLOT.size:
                    return 1  # cut short under us: this hit goes uncounted, the next use reopens
                slot_key, window_end, count, _ = _SLOT.unpack(raw)
                if slot_key == digest:
                    if window_end <= now:
                        count, window_end = 0, int(now + expiry)
                    os.pwrite(fd, _SLOT.pack(digest, window_end, count + 1, 0), at)
                    return count + 1
                if slot_key == 0 or window_end <= now:
                    victim, victim_end = at, -1
                    break
                if victim_end is None or window_end < victim_end:
                    victim, victim_end = at, window_end
            os.pwrite(fd, _SLOT.pack(digest, int(now + expiry), 1, 0), victim)
            return 1

    def _locked(self, fd: int):
        return _Flock(fd, self._lock)


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


class GenerationNotMoved(click.ClickException):
    """A commit that changed a paper landed, but the shared generation could not be moved
    (Redis unreachable from this process): other workers and hosts may serve the paper's
    previous version until it is. The process owes the move and makes it at its next contact
    with Redis (`SharedState.owed`). A request answers it 503 (web/commit.py); a CLI command
    ends with status 1 and this message."""

    def __init__(self):
        super().__init__(NOT_YET_VISIBLE)


NOT_YET_VISIBLE = ("The write is committed but not yet visible everywhere: the shared store that tells "
                   "every worker and host to drop what they hold (Redis) could not be reached. Retry with "
                   "the same Idempotency-Key once it answers: the write is not made twice, and the retry "
                   "makes it visible.")
# A missing key (a Redis restarted empty, or flushed) starts from a random base, whoever reaches
# it first, a reader or a writer: INCR alone would count 1, 2, 3 again, numbers an earlier
# lifetime gave out and a snapshot may hold.
BUMP = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SET', KEYS[1], ARGV[1]) end
return redis.call('INCR', KEYS[1])
"""
_U63 = 0x7FFF_FFFF_FFFF_FFFF


class SharedState:
    """The app's shared state (see the module). `generation()` is the current generation, or
    None when there is none to trust (off, or Redis failing); `bump()` moves it.

    With Redis, a generation is the stored number with the Redis server's lifetime above it
    (its `run_id`, read once per connection, when it is made: a restart, whether empty or from
    a snapshot, breaks every connection). So numbers a restored snapshot gives out again never
    match a snapshot of the earlier lifetime, and the first connection to a new lifetime drops
    this worker's snapshots."""

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
        self.owed = False          # a move this process could not make yet (GenerationNotMoved)
        self._run_id: str | None = None
        self._lifetime = 0         # the Redis lifetime (from its run_id) generations carry

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
            if self.owed and not self._move(client):
                return None  # still owed: nothing this worker holds is to be trusted
            value = client.get(self.key)
            if value is None:
                # A Redis that lost the key (restarted, flushed): start again from a random
                # generation, never one a snapshot could hold.
                client.set(self.key, secrets.randbits(62), nx=True)
                value = client.get(self.key)
            return self._of(value)
        except Exception:  # noqa: BLE001 - no generation: reads go to the database
            self._failed("read")
            return None

    def bump(self) -> bool:
        """Move the generation after a commit that changed a paper; True when it moved. A
        Redis that fails is retried twice, then the move is owed (`owed`, made at this
        process's next contact with Redis) and False returned: the caller must not report the
        write as visible (GenerationNotMoved)."""
        if self.kind == "host":
            self.host_file.bump()
        elif self.kind == "redis":
            for _ in range(3):
                client = self._client(force=True)
                if client is not None and self._move(client):
                    return True
            self.owed = True
            log.error("the shared generation could not be moved; other workers may serve a "
                      "paper's previous version until Redis answers again (the write is answered 503)")
            return False
        return True

    def _move(self, client) -> bool:
        try:
            client.eval(BUMP, 1, self.key, secrets.randbits(62))
        except Exception:  # noqa: BLE001 - the caller retries, then owes the move
            self._failed("write")
            return False
        if self.owed:
            log.warning("the owed shared generation move is made")
        self.owed = False
        return True

    def _of(self, value) -> int:
        return (self._lifetime << 64) | (int(value) & 0xFFFF_FFFF_FFFF_FFFF)

    def _client(self, force: bool = False):
        if not force and self._failed_at is not None and time.monotonic() - self._failed_at < STATE_RETRY_SECONDS:
            return None
        if self._redis is None or self._redis_pid != os.getpid():
            import redis  # only deployments with Redis need the client library loaded

            self._redis = redis.Redis.from_url(self._redis_url, socket_timeout=self.timeout,
                                               socket_connect_timeout=self.timeout,
                                               redis_connect_func=self.connected)
            self._redis_pid = os.getpid()
        return self._redis

    def watch(self, client) -> None:
        """Have every connection `client` (a redis-py client of the same server, e.g. the rate
        limiter's, which carries the generation in its round trip) makes from now on read the
        server's lifetime when it connects (`connected`). Its pool is emptied so that none
        made before escapes."""
        kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None)
        if not isinstance(kwargs, dict):
            log.warning("shared state: the rate limiter's Redis client has no connection pool to watch; "
                        "a Redis restored from a snapshot is noticed by this state's own connections only")
            return
        if kwargs.get("redis_connect_func") is not self.connected:
            kwargs["redis_connect_func"] = self.connected
            client.connection_pool.reset()

    def connected(self, connection) -> None:
        """redis-py's `redis_connect_func`: the usual handshake, then the server's run_id
        (INFO server, once per connection). A run_id other than the one this process knew is
        a new lifetime of the store (restarted, empty or from a snapshot): the snapshots go."""
        from redis.exceptions import ResponseError

        connection.on_connect()
        connection.send_command("INFO", "server")
        try:
            info = connection.read_response()
        except ResponseError:  # a server that refuses INFO (some managed ones): the random base alone
            info = b""
        text = info.decode() if isinstance(info, bytes) else str(info)
        run_id = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                       if line.startswith("run_id:")), "")
        if run_id != self._run_id:
            if self._run_id is not None:
                log.warning("shared state: Redis is a new lifetime (run_id %s); this worker's snapshots go",
                            run_id[:8])
            self._lifetime = int(hashlib.blake2b(run_id.encode(), digest_size=8).hexdigest(), 16) & _U63
            self._run_id = run_id
            self._extensions.pop("paperdesk.paper_snapshots", None)

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
        """The generation from a GET of `key` made elsewhere (a pipeline on a client `watch`ed):
        an int, or None when the key is missing (then made, as `generation` does, by a read
        of our own) or a move is owed (then made first, as `generation` does)."""
        if value is None or self.owed:
            return self.generation()
        return self._of(value)

    def failed(self) -> None:
        """Tell the state that a pipeline holding its GET failed (see `_failed`)."""
        self._failed("read")

    def settle(self) -> None:
        """Make a move this process owes, if Redis answers (a long-running worker calls it
        on every pass). Raises nothing."""
        if self.owed:
            client = self._client(force=True)
            if client is not None:
                self._move(client)

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
    # Runs inside commit(), so before the writer's answer is sent. It must not raise (the
    # session would be left half-closed): a move that fails is owed, and `check_moved` (the
    # request's commit, the CLI's end) turns it into GenerationNotMoved.
    if session.info.pop(_CHANGED, False) and has_app_context():
        if not for_app(current_app._get_current_object()).bump():
            session.info[_UNMOVED] = True


def check_moved(session: Session) -> None:
    """After `session.commit()`: raise GenerationNotMoved when that commit changed a paper and
    the generation could not be moved (the write landed, other workers may not see it yet), or
    when this process still owes the move of an earlier commit (tried once more first): a
    success answered meanwhile, for any write, would tell its client that what this process
    committed is visible everywhere, and it is not yet."""
    unmoved = session.info.pop(_UNMOVED, False)
    if not unmoved and has_app_context():
        shared = current_app.extensions.get(_EXTENSION)
        if shared is not None and shared.owed:
            shared.settle()
            unmoved = shared.owed
    if unmoved:
        raise GenerationNotMoved()


@event.listens_for(Session, "after_rollback")
def _forget_paper_writes(session: Session) -> None:
    session.info.pop(_CHANGED, None)


def install(app: Flask) -> None:
    """A CLI command (or the worker) that committed a paper's change it could not make visible
    (the move of the generation owed, see GenerationNotMoved) tries once more as it ends, and
    ends with status 1 and the reason when the move is still owed."""

    @app.teardown_appcontext
    def _owed_at_command_end(exc) -> None:
        if exc is not None or has_request_context() or click.get_current_context(silent=True) is None:
            return
        shared = app.extensions.get(_EXTENSION)
        if shared is not None and shared.owed:
            shared.settle()
            if shared.owed:
                raise GenerationNotMoved()
