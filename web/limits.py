"""Rate limits: which requests count against which limit, counted in one shared store.

Every limit counts per client address (`request.remote_addr`: the peer, or the address ProxyFix
takes from X-Forwarded-For when TRUSTED_PROXIES says how many proxies to trust) in the store
named by RATELIMIT_STORAGE_URI: Redis in production, so every gunicorn worker and every host
shares one count; `memory://` (the embedded default) counts in the host's shared file
(web/state.py), so the host's workers share one count.

| requests                                           | limit (config name, default)                  |
|----------------------------------------------------|-----------------------------------------------|
| every GET and HEAD of a client, all routes together | READ_RATELIMIT, "300/minute"                  |
| public subscribe: POST /api/v1/subscribers,         | SUBSCRIBE_RATELIMIT "5/minute;20/hour" per    |
| /api/v1/subscribe and the /subscribe form (keyless) | client, and SUBSCRIBE_ADDRESS_RATELIMIT       |
|                                                     | "3/hour;10/day" per address subscribed        |
| POST /subscribe/confirm, /subscribe/unsubscribe,    | SUBSCRIBE_LINK_RATELIMIT, "20/minute;200/hour"|
| /subscribe/preferences, PATCH .../preferences       |                                               |
| any other request (the keyed writes), per route     | RATELIMIT_DEFAULT, "600 per minute"           |
| /healthz, /readyz, static files, /favicon.ico       | none (load balancers and assets)              |

The counting is the `limits` library's (the engine under Flask-Limiter): one `incr` per limit
that applies, which is one round trip to Redis. Windows are fixed and aligned to the clock
(a "300/minute" window is a clock minute), so the reset time is known without asking the
store again. The pipeline (web/pipeline.py) calls `RateLimits.check` before the paper lookup, so a
refused request costs no database work, and `RateLimits.add_headers` after the view:
`X-RateLimit-Limit`, `-Remaining` and `-Reset` (unix seconds) of the limit nearest to running
out, on every counted answer. A 429 is a problem+json (the HTML error page on reader pages)
with `Retry-After` in seconds; no other answer carries Retry-After but a 503 and a 404 that
says when to ask again (a piece's log proof before its checkpoint is signed).

**Reserved counts.** With Redis, a worker does not ask Redis for every request: it reserves a
block of counts in a window (one INCRBY, in the round trip that also reads the deployment's
generation, web/state.py) and hands them out one per request until they are used up. The
counts are Redis's own numbers, so the limit is never exceeded, whatever the number of workers
and hosts; what a block costs is that a client whose counts sit reserved in another worker may be
refused up to that many requests early, and its X-RateLimit-Remaining is the number of the count
it was given (a client moving between workers may see it jump). A block is a sixteenth of what
the window had left when last seen, at most 64 (`Reservations.block`): a window near its limit,
and every small limit (the subscribe limits), is counted one request at a time, exactly as before.

A store that fails (Redis down) never fails a request: the worker counts in its own memory,
logs a warning, and tries the store again after STORE_RETRY_SECONDS. Redis calls time out
after a second (RATELIMIT_STORAGE_OPTIONS).

Why not Flask-Limiter's own hooks: they install themselves at `init_app` in an order of their
own, keep one process-wide state shared by every app, and ask the store a second time per
request for the headers. Here each app owns its `RateLimits` and the pipeline says where it runs.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

from email_validator import EmailNotValidError
from flask import Flask, Request, Response, current_app, request
from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage, RedisStorage, Storage, storage_from_string
from werkzeug.exceptions import TooManyRequests

from services.delivery.subscriptions import normalize_email
from web import policy, request_state, state
from web.headers import KEY_HEADERS, put
from web.steps import HAND_ON, Replayed, replays, runs_for

log = logging.getLogger("paperdesk.ratelimits")

READ_METHODS = frozenset({"GET", "HEAD"})
# How long a worker counts in memory after the shared store failed before it asks it again.
STORE_RETRY_SECONDS = 30.0
# One round trip reserves counts for a request's windows and reads the deployment's generation
# (web/state.py): KEYS are the windows' counters then the generation's key, ARGV each window's
# expiry in seconds then how many counts to reserve in it. Each counter is INCRBY'd and, when
# this call made it, given its expiry; the reply is each counter's new total, then the
# generation (nil when unset). A script, not a pipeline: redis-py checks a pipeline's scripts
# with SCRIPT EXISTS, a second round trip, on every execute.
COUNT_AND_GENERATION = """
local windows = #KEYS - 1
local reply = {}
for i = 1, windows do
  local amount = tonumber(ARGV[windows + i])
  local used = redis.call('INCRBY', KEYS[i], amount)
  if used == amount then redis.call('EXPIRE', KEYS[i], ARGV[i]) end
  reply[i] = used
end
reply[windows + 1] = redis.call('GET', KEYS[windows + 1])
return reply
"""
# Reserved counts (see `Reservations`): a block is at most this share of what a window has left
# as last seen, at most RESERVE_MAX counts, and at least one; a window's first block is at most
# RESERVE_FIRST_SHARE of its amount.
RESERVE_SHARE = 16
RESERVE_MAX = 64
RESERVE_FIRST_SHARE = 64
RESERVATIONS_KEPT = 4096  # windows a worker holds reservations in before it forgets them all
# Statuses on which a Retry-After means something (RFC 9110 10.2.3, RFC 6585 4; a 404 of
# something that will exist, as the log proof of a piece not yet in a signed checkpoint).
RETRY_AFTER_STATUSES = (404, 429, 503)
_EXTENSION = "paperdesk.ratelimits"
# environ: the counts web/replay.py took for a request it then handed on (its limit was used up).
COUNTED = "paperdesk.ratelimits.counted"


@dataclass(frozen=True)
class Limit:
    """One limit that applies to a request: `scope` (its counter's name), the parsed `item`
    (amount per window), and `who` (the client address, or the subscribed address)."""

    scope: str
    item: RateLimitItem
    who: str


@dataclass(frozen=True)
class Count:
    """What one `incr` told: the `limit`, how many requests remain in its window (never below
    0), and when the window resets (unix seconds)."""

    limit: Limit
    remaining: int
    reset_at: int

    @property
    def exceeded(self) -> bool:
        return self.remaining < 0


def client_address() -> str:
    """The rate-limit identity of the current client: its address (ProxyFix applied)."""
    return request.remote_addr or "127.0.0.1"


def subscribed_address(req: Request) -> str | None:
    """The address a public subscribe asks for (JSON body or form) in the form the subscriber
    row stores (`subscriptions.normalize_email`), so every spelling of one address shares one
    count; text that is not an address is counted stripped and lower-cased (the request is a
    422 anyway). None without an `email` string."""
    body = req.get_json(silent=True) if req.is_json else req.form
    email = body.get("email") if hasattr(body, "get") else None
    if isinstance(email, str) and email.strip():
        try:
            return normalize_email(email.strip())
        except EmailNotValidError:
            return email.strip().lower()
    return None


def _presents_key(req: Request) -> bool:
    # A key header that is not valid for this paper ends in 401/403 before anything is written,
    # so exempting keyed requests from the public subscribe limits opens nothing.
    return any(name in req.headers for name in KEY_HEADERS)


class RateLimits:
    """The limits of one app, with its store. Built from the app's config by `for_app`.

    `check()` counts the current request against every limit that applies (see the module's
    table) and raises werkzeug's TooManyRequests (429, with Retry-After) when one is used up;
    `add_headers(response)` puts the X-RateLimit headers on the answer.
    """

    def __init__(self, config: dict, host_counters=None):
        self.enabled = bool(config.get("RATELIMIT_ENABLED", True))
        self.prefix = config.get("RATELIMIT_KEY_PREFIX") or "paperdesk"
        self.uri = config.get("RATELIMIT_STORAGE_URI") or "memory://"
        self.options = dict(config.get("RATELIMIT_STORAGE_OPTIONS") or {})
        self.fallback_enabled = bool(config.get("RATELIMIT_IN_MEMORY_FALLBACK_ENABLED", True))
        self.read = parse_many(config.get("READ_RATELIMIT", "300/minute"))
        self.subscribe = parse_many(config.get("SUBSCRIBE_RATELIMIT", "5/minute;20/hour"))
        self.address = parse_many(config.get("SUBSCRIBE_ADDRESS_RATELIMIT", "3/hour;10/day"))
        self.links = parse_many(config.get("SUBSCRIBE_LINK_RATELIMIT", "20/minute;200/hour"))
        self.default = parse_many(config.get("RATELIMIT_DEFAULT", "600 per minute"))
        # memory:// is the host's shared counters (web/state.py) when the app has them.
        self._store: Storage | None = host_counters if self.uri.startswith("memory://") else None
        self._fallback: MemoryStorage | None = None  # made on the store's first failure
        self._store_failed_at: float | None = None
        self._lock = threading.Lock()
        self._scripts: dict[int, object] = {}  # id(redis client) -> its registered counting script
        self._reserved = Reservations()

    @classmethod
    def for_app(cls, app: Flask) -> RateLimits:
        """The app's RateLimits, made from its config on first use."""
        limits = app.extensions.get(_EXTENSION)
        if limits is None:
            shared = state.for_app(app)
            counters = shared.counters() if shared.kind != "off" else None
            limits = app.extensions[_EXTENSION] = cls(app.config, counters)
        return limits

    # ------------------------------------------------------------------ which limits apply

    def applicable(self, req: Request) -> list[Limit]:
        """Every limit that counts `req` (the module's table; each route's class is its
        policy's `limit`, web/policy.py), in no particular order."""
        endpoint = req.endpoint
        if not self.enabled or endpoint is None:
            return []
        route = policy.of(current_app, endpoint)
        if not policy.counted(route):
            return []
        kind = route.limit
        client = client_address()
        if req.method in READ_METHODS:
            return self.read_limits(client)
        if kind == "subscribe" and req.method == "POST":
            if _presents_key(req):
                return [Limit(f"route:{endpoint}", item, client) for item in self.default]
            found = [Limit("subscribe-client", item, client) for item in self.subscribe]
            address = subscribed_address(req)
            if address is not None:
                found += [Limit("subscribe-address", item, address) for item in self.address]
            return found
        if kind == "link" and req.method in ("POST", "PATCH"):
            return [Limit("subscribe-link", item, client) for item in self.links]
        return [Limit(f"route:{endpoint}", item, client) for item in self.default]

    def read_limits(self, client: str) -> list[Limit]:
        """The limits a GET or HEAD of `client` (its address) counts against."""
        return [Limit("read", item, client) for item in self.read]

    # ------------------------------------------------------------------ counting

    def _memory(self) -> MemoryStorage:
        if self._fallback is None:
            with self._lock:
                if self._fallback is None:
                    self._fallback = MemoryStorage()
        return self._fallback

    def _storage(self) -> Storage:
        if self._store_failed_at is not None:
            if time.monotonic() - self._store_failed_at < STORE_RETRY_SECONDS:
                return self._memory()
            self._store_failed_at = None
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._store = storage_from_string(self.uri, **self.options)
        return self._store

    def _window(self, limit: Limit, now: float) -> tuple[str, int, float]:
        """The counter of `limit`'s fixed window holding `now`: `(key, expiry seconds, reset_at)`.
        The key expires with its window (plus a second for clocks a little apart)."""
        period = limit.item.get_expiry()
        window = int(now // period)
        reset_at = (window + 1) * period
        key = f"{self.prefix}/{limit.scope}/{limit.item.amount}/{period}/{window}/{limit.who}"
        return key, int(math.ceil(reset_at - now)) + 1, reset_at

    def _count(self, store: Storage, limit: Limit, now: float) -> Count:
        key, expiry, reset_at = self._window(limit, now)
        used = store.incr(key, expiry)
        return Count(limit, limit.item.amount - used, int(reset_at))

    def count(self, limits: list[Limit], environ: dict | None = None, shared=None) -> list[Count]:
        """Count one request against each of `limits`; falls back to this worker's memory when
        the shared store fails (and with RATELIMIT_IN_MEMORY_FALLBACK_ENABLED off, counts
        nothing rather than fail the request). With the request's WSGI `environ` and the app's
        web/state.SharedState `shared` living in the same Redis, the deployment's generation
        travels in the same round trip (one script, COUNT_AND_GENERATION) and is kept in `environ` for the request."""
        now = time.time()
        store = self._storage()
        try:
            if (environ is not None and shared is not None and state.GENERATION not in environ
                    and isinstance(store, RedisStorage) and shared.shares_redis_with(self.uri)):
                return self._count_with_generation(store, limits, now, environ, shared)
            return [self._count(store, limit, now) for limit in limits]
        except Exception:  # noqa: BLE001 - a limiter outage must never become a site outage
            if store is self._fallback:
                raise
            log.warning("rate-limit store unreachable; counting in memory for %ss",
                        STORE_RETRY_SECONDS, exc_info=True)
            self._store_failed_at = time.monotonic()
            if not self.fallback_enabled:
                return []
            return [self._count(self._memory(), limit, now) for limit in limits]

    def _count_with_generation(self, store: RedisStorage, limits: list[Limit], now: float, environ: dict,
                               shared) -> list[Count]:
        windows = [self._window(limit, now) for limit in limits]
        with self._lock:
            positions = [self._reserved.take(key) for key, _expiry, _reset in windows]
        if all(position is not None for position in positions):
            gen = shared.leased()
            if gen is not None:  # every count reserved, the generation leased: no round trip
                environ[state.GENERATION] = gen
                return self._counts(limits, windows, positions)
        with self._lock:
            wanted = [(index, self._reserved.block(key, limit.item.amount))
                      for index, ((key, _expiry, _reset), limit, position)
                      in enumerate(zip(windows, limits, positions, strict=True)) if position is None]
        script = self._script_for(store, shared)
        keys = [store.prefixed_key(windows[index][0]) for index, _block in wanted]
        sent = shared.clock()
        try:
            *totals, generation = script(keys=[*keys, shared.key],
                                         args=[*(windows[index][1] for index, _block in wanted),
                                               *(block for _index, block in wanted)])
        except Exception:
            shared.failed()  # no generation from this round trip: none to trust
            environ[state.GENERATION] = None
            raise
        environ[state.GENERATION] = shared.accept(generation, sent)
        with self._lock:
            for (index, block), total in zip(wanted, totals, strict=True):
                positions[index] = self._reserved.add(windows[index][0], int(total), block)
        return self._counts(limits, windows, positions)

    @staticmethod
    def _counts(limits: list[Limit], windows: list, positions: list[int]) -> list[Count]:
        return [Count(limit, limit.item.amount - position, int(reset_at))
                for limit, (_key, _expiry, reset_at), position in zip(limits, windows, positions, strict=True)]

    def _script_for(self, store: RedisStorage, shared):
        """The counting script registered on `store`'s client (redis-py's Script: EVALSHA, and
        SCRIPT LOAD then again when the server answers NOSCRIPT). The client's connections
        read the store's lifetime when they connect, as the state's own do (`shared.watch`):
        the generation travels in this round trip."""
        client = store.storage
        script = self._scripts.get(id(client))
        if script is None:
            shared.watch(client)
            script = self._scripts[id(client)] = client.register_script(COUNT_AND_GENERATION)
        return script

    def check(self) -> None:
        """Pipeline step (before the paper lookup): count the current request; raise 429 with
        Retry-After when a limit is used up. Leaves the tightest count on the request state for
        `add_headers`."""
        current = request_state.current()
        current.rate_limit = None
        limits = self.applicable(request)
        if not limits:
            return
        # web/replay.py counted this request already when it found its limit used up.
        counts = request.environ.pop(COUNTED, None)
        if counts is None:
            counts = self.count(limits, request.environ, state.for_app(current_app))
        if not counts:
            return
        current.rate_limit = tightest = tightest_of(counts)
        if tightest.exceeded:
            exceeded = [c for c in counts if c.exceeded]
            # The client may retry once every used-up window has reset.
            reset_at = max(c.reset_at for c in exceeded)
            retry_after = max(1, int(math.ceil(reset_at - time.time())))
            item = tightest.limit.item
            error = TooManyRequests(description=str(item))  # "300 per 1 minute"
            error.data = {"headers": {"Retry-After": str(retry_after)}}
            current.rate_limit = Count(tightest.limit, -1, reset_at)
            log.info("rate limit %s (%s) used up by %s on %s", item, tightest.limit.scope,
                     tightest.limit.who, request.endpoint)
            raise error

    @staticmethod
    def add_headers(response: Response) -> Response:
        """Pipeline step (after): the X-RateLimit headers of the tightest limit counted, and
        no Retry-After but on 429 and 503."""
        counted = request_state.current().rate_limit
        put(response.headers, limit_headers(counted) if counted is not None else (),
            () if response.status_code in RETRY_AFTER_STATUSES else ("Retry-After",))
        return response


class Reservations:
    """The counts one worker holds reserved in Redis windows (see the module): per window key,
    the next count to hand out and the last one reserved, which is also the window's total as
    Redis last told it. Not thread-safe: the caller holds RateLimits' lock."""

    def __init__(self):
        self._held: dict[str, list[int]] = {}  # window key -> [next count, last count reserved]

    def take(self, key: str) -> int | None:
        """The next reserved count of window `key` (1-based: the request's number in the
        window), or None when none is left."""
        held = self._held.get(key)
        if held is None or held[0] > held[1]:
            return None
        held[0] += 1
        return held[0] - 1

    def block(self, key: str, amount: int) -> int:
        """How many counts to reserve next in window `key` of a limit of `amount`."""
        held = self._held.get(key)
        if held is None:
            return max(1, min(RESERVE_MAX, amount // RESERVE_FIRST_SHARE))
        return max(1, min(RESERVE_MAX, (amount - held[1]) // RESERVE_SHARE))

    def add(self, key: str, total: int, block: int) -> int:
        """Record that reserving `block` counts in window `key` brought its total to `total`;
        return the first of them (the one this request takes)."""
        if len(self._held) >= RESERVATIONS_KEPT and key not in self._held:
            self._held.clear()  # windows of past minutes and gone clients: forgetting costs a block each
        first = total - block + 1
        self._held[key] = [first + 1, total]
        return first


def tightest_of(counts: list[Count]) -> Count:
    """The count nearest to running out (the latest reset among equals): the one the
    X-RateLimit headers tell."""
    return min(counts, key=lambda c: (c.remaining, -c.reset_at))


def limit_headers(counted: Count) -> list[tuple[str, str]]:
    """`X-RateLimit-Limit`, `-Remaining` (never below 0) and `-Reset` (unix seconds) of
    `counted`, in that order."""
    return [("X-RateLimit-Limit", str(counted.limit.item.amount)),
            ("X-RateLimit-Remaining", str(max(0, counted.remaining))),
            ("X-RateLimit-Reset", str(counted.reset_at))]


def _replay_count(replayed: Replayed):
    """A kept answer sent again counts as the read it is; a used-up limit is handed on to the
    pipeline, which answers the 429 from this same count (COUNTED) without counting again."""
    rate = RateLimits.for_app(replayed.app)
    if not replayed.counted or not rate.enabled:
        return None
    counts = rate.count(rate.read_limits(replayed.environ.get("REMOTE_ADDR") or "127.0.0.1"),
                        replayed.environ, state.for_app(replayed.app))
    # Kept for the pipeline in case the replay hands the request on after all.
    replayed.environ[COUNTED] = counts
    if counts:
        tightest = tightest_of(counts)
        if tightest.exceeded:
            return HAND_ON
        replayed.rate_limit = tightest
    return None


def _replay_headers(replayed: Replayed, headers: list) -> None:
    if replayed.rate_limit is not None:
        headers += limit_headers(replayed.rate_limit)


@runs_for(policy.counted)
@replays(_replay_count)
def check_limits() -> None:
    """before_request step: `RateLimits.check` for the current app."""
    RateLimits.for_app(current_app).check()


@runs_for(policy.counted)
@replays(_replay_headers, per_request=("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"))
def add_limit_headers(response: Response) -> Response:
    """after_request step: `RateLimits.add_headers`."""
    return RateLimits.add_headers(response)

