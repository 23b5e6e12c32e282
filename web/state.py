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

**Scopes.** Beside the generation, a commit moves the versions of the scopes it changed
(`Scopes`, from what the session flushed: `piece:<id>`, `section:<id>`, `lists:<id>` for
any piece or edition, `paper:<id>` for settings, sections and personas, `rest:<id>` for any
write of the paper; ALL when it cannot
tell, or when the move was owed): each takes the new generation as its version, before the
generation itself moves. An answer stored or replayed under the versions of the scopes it
depends on (web/caching.py `answer_state`) survives the writes that changed none of them. A
request reads the versions after the generation (`scopes_for`) and trusts none newer than it
(the data it read may be from before or after that move), so a read after an answered write
never finds an answer kept before it. They live where the generation does: SCOPE_SLOTS words in
the host file, or a Redis hash `{prefix}:scopes`; scopes share slots by hash (two in one slot
move together).

**Where it lives** (`SHARED_STATE`, default `auto`):

- `redis://...`: a Redis key (`{prefix}:generation`) that every host shares. `auto` picks the
  Redis of RATELIMIT_STORAGE_URI or CACHE_REDIS_URL when either is one. A Redis that fails or
  is slow (SHARED_STATE_TIMEOUT, 0.25 s) gives no generation: reads go to the database for
  STATE_RETRY_SECONDS, and this worker drops its snapshots (it may have missed a write).
  **The lease.** A worker trusts a generation it read from Redis for SHARED_STATE_LEASE
  (0.010 s), counted from the moment it *sent* the read, and reads again after that; so a
  busy worker asks Redis about once per lease, not once per request. In exchange a write
  that moved the generation is not answered until a lease has passed since the move was
  made (`wait_visible`, as a request's or a CLI command's app context ends: `install`). Why that
  is never stale: a reader whose value predates the move sent its read before the move, so
  its lease ends before the writer's answer leaves; any read that starts after the answer
  finds its lease over and reads again. Both sides measure the lease as a duration on their
  own clock (CLOCK_BOOTTIME, which also counts a host's suspend), never as a time of day, so
  hosts need no synchronised clocks. A lease of 0 reads Redis on every request.
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
import functools
import hashlib
import logging
import os
import secrets
import struct
import threading
import time
from datetime import datetime, timezone
from itertools import chain
from typing import NamedTuple

import click
from flask import Flask, current_app, has_app_context, has_request_context
from sqlalchemy import and_, bindparam, event, func, literal, or_, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import Session
from sqlalchemy.sql import operators
from sqlalchemy.sql.elements import BindParameter

from models import Paper, Piece
from models.clock import utcnow
from services.reading import visibility
from services.reading.reader import RELATED_SIZE

log = logging.getLogger("paperdesk.state")


def _clock() -> float:
    """Seconds on a clock that never goes back and keeps counting while the host is suspended
    (a lease measured on CLOCK_MONOTONIC would outlive a suspend of its reader)."""
    return time.clock_gettime(_CLOCK)


_CLOCK = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)

STATE_RETRY_SECONDS = 1.0
# Margin added to the writer's wait over a reader's lease: the two clocks are different hosts'
# (rates within a few parts per million: microseconds over a lease).
LEASE_MARGIN_SECONDS = 0.001
FILE_NAME = "paperdesk-state.shm"
_MAGIC = b"PDSTATE1"
_GENERATION_AT = 8            # uint64 after the magic
_SLOTS_AT = 64
_SLOTS = 16384                # rate-limit counters: (key hash, window end, count) each
_SLOT = struct.Struct("<QQQQ")
_PROBE = 16                   # slots looked at per key before the stalest is taken over
_SCOPES_AT = _SLOTS_AT + _SLOTS * _SLOT.size
SCOPE_SLOTS = 4096            # scope versions: uint64 each, slot 0 is ALL (see `scope_slot`)
_SIZE = _SCOPES_AT + SCOPE_SLOTS * 8
_EXTENSION = "paperdesk.state"
_U64 = struct.Struct("<Q")
_CHANGED = "paperdesk.paper_changed"  # Session.info: this transaction wrote a paper's row
_SCOPES = "paperdesk.scopes_changed"  # Session.info: what it wrote, as scopes (see `Scopes`)
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
                    start = _U64.pack(secrets.randbits(62))
                    os.pwrite(fd, start, _GENERATION_AT)
                    # The scopes start where the generation does: keys of a file made again
                    # are new ones (and carry its inode besides).
                    os.pwrite(fd, start, _SCOPES_AT)
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

    def bump(self, slots: tuple[int, ...] = (0,)) -> int:
        """Move the generation; returns the new stored number. The scope `slots` (indexes,
        `scope_slot`; default ALL) take the new number first, so a reader that sees it sees
        them moved. Bumps the file the path names when it is done (a file deleted meanwhile
        made again: it is bumped too)."""
        while True:
            fd = self._current()
            with self._locked(fd):
                value = ((self._read_generation(fd) or 0) + 1) & 0xFFFF_FFFF_FFFF_FFFF
                packed = _U64.pack(value)
                for slot in slots:
                    os.pwrite(fd, packed, _SCOPES_AT + 8 * slot)
                os.pwrite(fd, packed, _GENERATION_AT)
            if self._current() == fd:
                return value

    def scope_values(self) -> tuple[int, PackedSlots] | None:
        """(the file's inode, the SCOPE_SLOTS stored numbers), read without a lock (each an
        aligned 8-byte word) in one `pread`; None when the file is cut short under us."""
        fd = self._current()
        inode = self._identity[1]
        raw = os.pread(fd, SCOPE_SLOTS * 8, _SCOPES_AT)
        if len(raw) < SCOPE_SLOTS * 8:
            return None
        return inode, PackedSlots(raw)

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
redis.call('INCR', KEYS[1])
-- As the stored string: a Lua number (a double) would lose the low bits of a 62-bit generation.
local g = redis.call('GET', KEYS[1])
if redis.call('HEXISTS', KEYS[2], '0') == 0 then redis.call('HSET', KEYS[2], '0', g) end
for i = 2, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], g) end
return g
"""
# The scopes of a Redis that lost them (restarted, flushed, evicted) start again at ALL = the
# generation now, a number no earlier key of this lifetime holds.
READ_SCOPES = """
local g = redis.call('GET', KEYS[1])
if not g then redis.call('SET', KEYS[1], ARGV[1]); g = ARGV[1] end
if redis.call('HEXISTS', KEYS[2], '0') == 0 then redis.call('HSET', KEYS[2], '0', g) end
return redis.call('HGETALL', KEYS[2])
"""
_U63 = 0x7FFF_FFFF_FFFF_FFFF


ALL = "all"  # the scope every answer depends on: moved when what changed is unknown
_MASK = 0xFFFF_FFFF_FFFF_FFFF


@functools.lru_cache(maxsize=65536)  # asked per replayed answer: a hash once per name
def scope_slot(name: str) -> int:
    """The slot of scope `name` among SCOPE_SLOTS: 0 for ALL, else one of the others by hash.
    Two scopes that share a slot move together (more answers go cold, none goes stale)."""
    if name == ALL:
        return 0
    return 1 + int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little") % (SCOPE_SLOTS - 1)


class PackedSlots:
    """The SCOPE_SLOTS stored numbers as the host file holds them (little-endian uint64s, one
    read), each decoded when asked for: `slots[i]`, an int, IndexError past the last. A request
    asks for two or three of them; decoding all 4096 into a tuple of ints was 5% of a cold
    story JSON (docs/PERFORMANCE.md), once per generation, so after every write."""

    __slots__ = ("_raw",)

    def __init__(self, raw: bytes):
        self._raw = raw

    def __getitem__(self, slot: int) -> int:
        if not 0 <= slot < len(self._raw) // 8:
            raise IndexError(slot)
        return _U64.unpack_from(self._raw, slot * 8)[0]

    def __len__(self) -> int:
        return len(self._raw) // 8


class ScopeTable(NamedTuple):
    """The scope versions as read after the deployment's generation `gen` was (full, with its
    lifetime or inode above 64 bits): `values`, one stored generation per slot (indexed by
    slot: a list, or the host file's PackedSlots), the one of the last commit that changed a
    scope of that slot."""

    gen: int
    values: list[int] | PackedSlots

    def state(self, names) -> str | None:
        """The version state of an answer that depends on the scopes `names` (and ALL): a
        string that moves whenever one of them does; None when one moved after `gen` (the
        answer's data may be older or newer than that move: not to be keyed)."""
        top = self.gen & _MASK
        slots = self.values
        values = [slots[0], *(slots[scope_slot(name)] for name in names)]
        if any(value > top for value in values):
            return None
        return f"{self.gen >> 64:x}." + ".".join(f"{value:x}" for value in values)


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
        # The defaults are config.py's alone: create_app loads every setting before this is built.
        self.timeout = float(config["SHARED_STATE_TIMEOUT"])
        self._redis_url, self._redis, self._redis_pid = redis_url, None, None
        self.key = f"{config.get('RATELIMIT_KEY_PREFIX') or 'paperdesk'}:generation"
        self.scopes_key = f"{config.get('RATELIMIT_KEY_PREFIX') or 'paperdesk'}:scopes"
        self._table: ScopeTable | None = None  # the last scope table read (`scopes_for`)
        self._failed_at: float | None = None
        self._extensions = app.extensions
        self.owed = False          # a move this process could not make yet (GenerationNotMoved)
        self._run_id: str | None = None
        self._lifetime = 0         # the Redis lifetime (from its run_id) generations carry
        self.lease = max(0.0, float(config["SHARED_STATE_LEASE"]))
        self._leased: tuple[int, float] | None = None  # (generation, trusted until, on _clock)
        self._visible_at = 0.0     # on _clock: when this process's last move is safe to answer

    # ------------------------------------------------------------------ the generation

    def generation(self) -> int | None:
        if self.kind == "host":
            return self.host_file.generation()
        if self.kind == "off":
            return None
        leased = self.leased()
        if leased is not None:
            return leased
        client = self._client()
        if client is None:
            return None
        try:
            if self.owed and not self._move(client):
                return None  # still owed: nothing this worker holds is to be trusted
            sent = _clock()
            value = client.get(self.key)
            if value is None:
                # A Redis that lost the key (restarted, flushed): start again from a random
                # generation, never one a snapshot could hold.
                client.set(self.key, secrets.randbits(62), nx=True)
                value = client.get(self.key)
            return self._lease_from(self._of(value), sent)
        except Exception:  # noqa: BLE001 - no generation: reads go to the database
            self._failed("read")
            return None

    def leased(self) -> int | None:
        """The generation last read from Redis while its lease runs (see the module), else
        None: none read yet, the lease over, a move owed, or not the Redis kind."""
        leased = self._leased
        if leased is not None and not self.owed and _clock() < leased[1]:
            return leased[0]
        return None

    def _lease_from(self, gen: int, sent: float) -> int:
        """Trust `gen`, read by a request sent at `sent` (on _clock), for the lease."""
        if self.lease > 0:
            self._leased = (gen, sent + self.lease)
        return gen

    def wait_visible(self) -> None:
        """Return once this process's last move of the generation is visible to every reader
        (a lease after it was made: see the module); at once when there is none pending. The
        request's commit and a CLI command's end call it before answering."""
        wait = self._visible_at - _clock()
        if wait > 0:
            time.sleep(wait)

    def bump(self, scopes=None) -> bool:
        """Move the generation after a commit that changed a paper; True when it moved.
        `scopes` (names, see `Scopes`) are what the commit changed: they take the new
        generation as their version; None moves ALL, every answer of every paper. A
        Redis that fails is retried twice, then the move is owed (`owed`, made at this
        process's next contact with Redis, as a move of ALL) and False returned: the caller
        must not report the write as visible (GenerationNotMoved)."""
        slots = (0,) if scopes is None else tuple(sorted(set(map(scope_slot, scopes))))
        if self.kind == "host":
            self.host_file.bump(slots)
        elif self.kind == "redis":
            for _ in range(3):
                client = self._client(force=True)
                if client is not None and self._move(client, slots):
                    return True
            self.owed = True
            log.error("the shared generation could not be moved; other workers may serve a "
                      "paper's previous version until Redis answers again (the write is answered 503)")
            return False
        return True

    def _move(self, client, slots: tuple[int, ...] = (0,)) -> bool:
        self._leased = None  # this worker's next read must see its own write
        try:
            client.eval(BUMP, 2, self.key, self.scopes_key, secrets.randbits(62), *slots)
        except Exception:  # noqa: BLE001 - the caller retries, then owes the move
            self._failed("write")
            return False
        if self.lease > 0:  # readers that leased the generation before it moved: see the module
            self._visible_at = _clock() + self.lease + LEASE_MARGIN_SECONDS
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
            self._leased = None
            self._extensions.pop("paperdesk.paper_snapshots", None)

    def _failed(self, what: str) -> None:
        if self._failed_at is None or time.monotonic() - self._failed_at >= STATE_RETRY_SECONDS:
            log.warning("shared state (Redis) %s failed; public reads ask the database for %ss",
                        what, STATE_RETRY_SECONDS)
        self._failed_at = time.monotonic()
        self._leased = None
        # This worker may have missed a write while Redis was away: its snapshots go.
        self._extensions.pop("paperdesk.paper_snapshots", None)

    def scopes_for(self, gen: int | None) -> ScopeTable | None:
        """The scope versions as they stand for a request that read generation `gen` (read
        after it, once per generation in this worker), or None: no generation, the store
        failing, or moved to another lifetime or file meanwhile. Raises nothing."""
        if gen is None:
            return None
        table = self._table
        if table is not None and table.gen == gen:
            return table  # read after `gen` was seen: it holds every move up to `gen`
        try:
            if self.kind == "host":
                read = self.host_file.scope_values()
                if read is None or read[0] != gen >> 64:
                    return None
                values = read[1]
            else:
                client = self._client()
                if client is None:
                    return None
                flat = client.eval(READ_SCOPES, 2, self.key, self.scopes_key, secrets.randbits(62))
                if self._lifetime != gen >> 64:
                    return None  # a new lifetime since `gen` was read: its numbers are others
                values = [0] * SCOPE_SLOTS
                for slot, value in zip(flat[::2], flat[1::2], strict=True):
                    values[int(slot)] = _stored_number(value)
        except Exception:  # noqa: BLE001 - no scopes: answers are keyed by the paper's whole version
            log.warning("shared state: the scope versions could not be read", exc_info=True)
            return None
        table = self._table = ScopeTable(gen, values)  # never changed once made
        return table

    def shares_redis_with(self, url: str) -> bool:
        """True when the generation lives in the Redis at `url` (so one round trip reaches both)."""
        return self.kind == "redis" and self._redis_url == url

    def accept(self, value, sent: float) -> int | None:
        """The generation from a GET of `key` made elsewhere (a script on a client `watch`ed)
        and sent at `sent` (on `clock()`), leased as `generation` leases its own: an int, or
        None when the key is missing (then made, as `generation` does, by a read of our own)
        or a move is owed (then made first, as `generation` does)."""
        if value is None or self.owed:
            self._leased = None
            return self.generation()
        return self._lease_from(self._of(value), sent)

    @staticmethod
    def clock() -> float:
        """The clock leases are measured on (seconds; see `accept`)."""
        return _clock()

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


def _stored_number(value) -> int:
    """A scope version as Redis holds it; one that is not a whole number (written by hand, or
    by an older script) reads as newer than any generation, so the answers that depend on it
    are keyed by their paper's whole version (ScopeTable.state) until a commit moves it."""
    try:
        return int(value)
    except ValueError:
        return _MASK + 1


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


# Tables a piece's own answers read besides the paper's (web/caching.py `depends_on_piece`;
# tests/test_keyed_answers.py checks the list against the statements those answers run): a
# change of a row of them moves that piece's scope when the row names its piece, the whole
# paper's otherwise. The paper's own tables move the whole paper.
PIECE_TABLES = frozenset(("pieces", "cited_facts", "piece_revisions", "piece_changes"))
PAPER_TABLES = frozenset(("papers", "personas", "sections"))
# Tables the paper's lists, front, feeds and search read besides the paper's
# (web/caching.py `depends_on_lists`): a change of any row of them moves the lists.
LIST_TABLES = PIECE_TABLES | frozenset(("editions", "pieces_fts"))


class Scopes:
    """What one transaction changed, as the scopes answers are keyed by (ScopeTable.state):
    `piece:<id>` (the piece's row, cited facts, revisions, changes), `section:<id>` (the
    related rail of its story pages: moved only when a piece written is, or was, among the
    section's newest RAIL_DEPTH on air, `rails_moved`), `lists:<id>` (any row of LIST_TABLES of
    the paper but those of a piece off air before and after: its lists, front, feeds and
    search), `paper:<id>` (the paper's settings, sections,
    personas, or anything of it not told apart), and `rest:<id>`, every answer of the paper
    that declares nothing narrower, moved by every commit that wrote the paper. Rows of other
    tables (the transparency log's checkpoints, say) move only `rest:` of the papers the
    transaction wrote: no narrower answer reads them."""

    def __init__(self):
        self.names: set[str] = set()
        self.papers: set[int] = set()
        self.lists = False    # a row of LIST_TABLES changed that may be on a list (see `_listed`)
        self.unknown = False  # a change of the tables above that names no piece or paper
        # Pieces with a row of theirs in PIECE_TABLES written, and the on_air values seen of
        # those whose own row was flushed: a piece off air before and after is on no list.
        self.listed: set = set()
        self.on_air: dict = {}
        # (paper, section, on_air_at, piece) of every piece written, before and after: the
        # section's rail moved if one of them is among its newest (`rails_moved`).
        self.places: set[tuple] = set()

    def note(self, obj, new: bool) -> None:
        """Count an ORM object flushed as new, changed or deleted."""
        table = getattr(obj, "__tablename__", None)
        if isinstance(obj, Paper):
            self.papers.add(obj.id)
            if new or _changed_beyond_version(obj):
                self.names.add(f"paper:{obj.id}")
        elif table == "pieces":
            self.names.add(f"piece:{obj.id}")
            self.on_air.setdefault(obj.id, set()).update(_values(obj, "on_air"))
            self._listed(table, obj.id)
            self._places(obj)
        elif table in PIECE_TABLES:
            self._named("piece", getattr(obj, "piece_id", None))
            self._listed(table, getattr(obj, "piece_id", None))
        elif table in PAPER_TABLES:
            self._named("paper", getattr(obj, "paper_id", None))
        elif table in LIST_TABLES:
            self.lists = True

    def _listed(self, table: str, piece_id) -> None:
        # A row of a piece's own (its row, facts, revisions) shows on a list only while the
        # piece is on air; a change-feed row, or one naming no piece, may show regardless.
        if table == "piece_changes" or piece_id is None:
            self.lists = True
        else:
            self.listed.add(piece_id)

    def _places(self, obj) -> None:
        """Where in its section's newest a piece written in this flush stood and stands: every
        (paper, section, on-air instant, piece) its values held (before and after), for
        `rails_moved` to judge once the transaction is committed."""
        aired = {at for on_air in _values(obj, "on_air") if on_air for at in _values(obj, "on_air_at")}
        for section in _values(obj, "section_id"):
            for at in aired:
                self.places.add((obj.paper_id, section, at, obj.id))

    def note_statement(self, table: str, piece_id) -> None:
        """Count an INSERT, UPDATE or DELETE run as a statement on `table`, narrowed to
        `piece_id` by its WHERE clause (None: not narrowed to one piece)."""
        if table in PIECE_TABLES:
            self._named("piece", piece_id)
            self._listed(table, piece_id)
        elif table in PAPER_TABLES:
            self.unknown = True
        elif table in LIST_TABLES:
            self.lists = True

    def _named(self, kind: str, id_) -> None:
        if id_ is None:
            self.unknown = True
        else:
            self.names.add(f"{kind}:{id_}")

    def moved(self) -> set[str] | None:
        """The scope names the commit moves, or None for ALL (a change it cannot place). The
        lists move for a row of LIST_TABLES unless every such row is a piece's own and each of
        those pieces was seen off air before and after (a draft filed or revised)."""
        names = self.names | {f"rest:{paper}" for paper in self.papers}
        if self.lists or any(self.on_air.get(piece) != {False} for piece in self.listed):
            names |= {f"lists:{paper}" for paper in self.papers}
        if self.unknown:
            if not self.papers:
                return None
            names |= {f"paper:{paper}" for paper in self.papers}
        return names


def _values(obj, attr: str) -> set:
    """The values `attr` of `obj` held in this flush: the current one and any replaced."""
    history = sa_inspect(obj).attrs[attr].history
    return {value for value in chain(history.added, history.unchanged, history.deleted) if value is not None}


# Columns of a paper whose change moves no scope of its own: the version moves with every
# write, and the schedule changes only with the pieces it schedules (their own scopes), while
# the passing of its instants is in every answer's state (web/caching.py `answer_state`).
_PAPER_BOOKKEEPING = frozenset(("version", "air_schedule"))


def _changed_beyond_version(paper: Paper) -> bool:
    """True when a paper's row changed in more than its bookkeeping (a value set, even to the
    same one whose earlier value was not loaded, counts as changed)."""
    state = sa_inspect(paper)
    if state.deleted or state.was_deleted:
        return True
    for attr in state.attrs:
        if attr.key in _PAPER_BOOKKEEPING:
            continue
        history = attr.history
        if history.added and list(history.added) != list(history.deleted):
            return True
    return False


def _scopes(session: Session) -> Scopes:
    scopes = session.info.get(_SCOPES)
    if scopes is None:
        scopes = session.info[_SCOPES] = Scopes()
    return scopes


# Every write moves its paper's version (Paper.bump), so "a paper's row was written" is "a
# public answer may have changed". The listeners are the session's, not a request's: writes by
# the CLI and the outbox worker move the generation too.
@event.listens_for(Session, "after_flush")
def _note_paper_writes(session: Session, _context) -> None:
    scopes = _scopes(session)
    for obj in session.new:
        scopes.note(obj, True)
    for obj in chain(session.dirty, session.deleted):
        scopes.note(obj, False)
    if any(isinstance(obj, Paper) for obj in chain(session.new, session.dirty, session.deleted)):
        session.info[_CHANGED] = True


@event.listens_for(Session, "do_orm_execute")
def _note_statements(execute) -> None:
    # Statements run through the session (a bulk DELETE of cited facts, an UPDATE of pending
    # changes) change rows the flush never sees.
    if execute.is_insert or execute.is_update or execute.is_delete:
        statement = execute.statement
        table = getattr(getattr(statement, "table", None), "name", None)
        if table is None:
            _scopes(execute.session).unknown = True
        elif table in LIST_TABLES or table in PAPER_TABLES:
            _scopes(execute.session).note_statement(table, _one_piece(statement))


def _one_piece(statement):
    """The piece id a statement's WHERE clause pins with `piece_id = <value>` (alone or ANDed),
    else None."""
    where = getattr(statement, "whereclause", None)
    clauses = list(getattr(where, "clauses", ())) if getattr(where, "operator", None) is operators.and_ else [where]
    for clause in clauses:
        left, right = getattr(clause, "left", None), getattr(clause, "right", None)
        if (getattr(clause, "operator", None) is operators.eq and getattr(left, "name", None) == "piece_id"
                and isinstance(right, BindParameter) and right.value is not None):
            return right.value
    return None


@event.listens_for(Session, "after_commit")
def _move_generation(session: Session) -> None:
    # Runs inside commit(), so before the writer's answer is sent. It must not raise (the
    # session would be left half-closed): a move that fails is owed, and `check_moved` (the
    # request's commit, the CLI's end) turns it into GenerationNotMoved.
    scopes = session.info.pop(_SCOPES, None)
    if session.info.pop(_CHANGED, False) and has_app_context():
        moved = scopes.moved() if scopes is not None else None
        if not for_app(current_app._get_current_object()).bump(moved):
            session.info[_UNMOVED] = True


# A story page's rail shows the RELATED_SIZE newest other pieces of its section: the newest
# RELATED_SIZE + 1 on air, less the page's own piece.
RAIL_DEPTH = RELATED_SIZE + 1
RAIL_PLACES = 32  # places judged one by one at most; a transaction that wrote more moves them all
# How many pieces of the section are on air ahead of a place (at most RAIL_DEPTH counted).
_AHEAD = select(func.count()).select_from(
    select(literal(1)).where(
        Piece.paper_id == bindparam("paper_id"), Piece.section_id == bindparam("section_id"),
        Piece.id != bindparam("piece_id"), visibility.on_air(),
        or_(Piece.on_air_at > bindparam("at"), and_(Piece.on_air_at == bindparam("at"),
                                                     Piece.id > bindparam("piece_id"))))
    .limit(RAIL_DEPTH).subquery())


def rails_moved(connection, places) -> set[str]:
    """The `section:<id>` scopes whose rail a transaction changes: the section of each place
    (paper, section, on-air instant, piece) of a piece it wrote, before or after, that is among
    the section's newest RAIL_DEPTH on air now (fewer than RAIL_DEPTH others ahead of it). A
    place not yet on air (scheduled) is in no rail until its instant, which moves every answer
    of the paper (caching.answer_state). More than RAIL_PLACES places (a bulk load) move every
    section named, unread. Runs on `connection` inside the transaction, once it holds its
    paper's write lock (`_judge_rails`), so no other write of the paper commits between this
    read and the commit: what it finds is what the commit changes."""
    named = {f"section:{section_id}" for _paper, section_id, _at, _piece in places}
    if len(places) > RAIL_PLACES:
        return named
    now = utcnow()
    moved = set()
    for paper_id, section_id, at, piece_id in places:
        if f"section:{section_id}" in moved or at is None or _aware(at) > now:
            continue
        ahead = connection.execute(_AHEAD, {"paper_id": paper_id, "section_id": section_id,
                                            "piece_id": piece_id, "at": at, **visibility.at(now)}).scalar()
        if ahead < RAIL_DEPTH:
            moved.add(f"section:{section_id}")
    return moved


@event.listens_for(Session, "before_commit")
def _judge_rails(session: Session) -> None:
    # Every write of a paper updates the paper's row (Paper.bump), so once the transaction is
    # flushed it holds the paper's write lock (the row's on PostgreSQL, the database's on
    # SQLite): no other write of the paper can commit before this one, and the rail judged
    # here is the one this commit leaves. Judged after the commit, a write committed in
    # between could push the piece off the rail and move its own scope too late.
    session.flush()  # a no-op when clean; commit() would flush after this hook otherwise
    scopes = session.info.get(_SCOPES)
    if scopes is None or not scopes.places:
        return
    if session.info.get(_CHANGED):
        scopes.names |= rails_moved(session.connection(), scopes.places)
    scopes.places.clear()


def _aware(at: datetime) -> datetime:
    """A stored instant as aware UTC (SQLite hands back naive datetimes)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


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
    session.info.pop(_SCOPES, None)


def install(app: Flask) -> None:
    """Nothing this process moved is reported before every reader sees it: a request's answer
    and a CLI command's end wait out the lease of the last move (`SharedState.wait_visible`;
    the app context ends before the WSGI server sends a byte). A CLI command (or the worker)
    that committed a paper's change it could not make visible (the move of the generation
    owed, see GenerationNotMoved) tries once more as it ends, and ends with status 1 and the
    reason when the move is still owed."""

    @app.teardown_appcontext
    def _visible_at_end(exc) -> None:
        shared = app.extensions.get(_EXTENSION)
        if shared is None:
            return
        # `owed` first: almost never true, and the rest (click's context, which raises and
        # catches inside when there is none) is asked of every request's context otherwise.
        if shared.owed and exc is None and not has_request_context() \
                and click.get_current_context(silent=True) is not None:
            shared.settle()
            if shared.owed:
                raise GenerationNotMoved()
        shared.wait_visible()
