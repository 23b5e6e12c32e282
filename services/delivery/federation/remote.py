"""Fetching a remote actor's documents: the one outside call Paper Desk makes on a request path
(an inbox POST's HTTP signature is checked against the key its `keyId` names), made only after
every check that needs no fetch has passed (services/delivery/federation/inbox.py).

Bounded every way:
- the one HTTP client's target rules (https only, every address public unless
  WEBHOOK_ALLOW_PRIVATE, the connection pinned to the checked address: no DNS rebinding;
  services/http.py), no redirects, at most MAX_BYTES of answer;
- one deadline for everything a POST fetches, DNS included: the name is resolved in a small
  pool of resolver threads (RESOLVERS) and waited for only until the deadline (a silent
  resolver costs the budget, never more), then connect, send and answer get what is left;
- at most PER_ORIGIN fetches to one origin at once in this process, and at most
  ACTIVITYPUB_FETCH_SLOTS fetches at once among all the web workers of the machine (`FetchSlots`:
  sync workers serve one request each, so this is what keeps workers free for the desk while
  strangers' servers are slow); past either, refused at once, never queued (`busy`);
- the negative cache: what failed for want of an answer is not asked again for FAILURE_SECONDS.
  Strangers choose the URLs an inbox POST fetches, so what a failure marks is only what it
  proves down: a URL that timed out or answered 5xx marks that URL (a stranger naming a slow
  or broken path of someone's server blocks that path, never the server's actors); only an
  origin that took no connection at all (its name did not resolve in time, the connection
  refused or timed out) is marked as a whole. And only a request's first fetch, which has the
  whole budget, marks anything: the actor's fetch after a key published apart gets what the
  keyId's fetch left, which its sender decides;
- keys are cached in the process by keyId for CACHE_SECONDS (at most CACHE_SIZE of them); a
  signature that fails against a cached key refetches it once (a key the sender rotated), when
  that key was fetched at least REFRESH_SECONDS ago: bad signatures naming someone's keyId
  cannot make us ask that server more than once a minute.
"""
from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from urllib.parse import urldefrag, urlsplit

from services import http as desk_http

MAX_BYTES = 256 * 1024
CACHE_SECONDS = 600
REFRESH_SECONDS = 60
CACHE_SIZE = 2048
FAILURE_SECONDS = 60
PER_ORIGIN = 2
RESOLVERS = 8
FAIR_CONNECT_SECONDS = 1.0  # a connection not made in this long counts against its origin
ACCEPT = 'application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams"'
USER_AGENT = "PaperDesk-ActivityPub/1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchError(Exception):
    """The document could not be fetched or read; `str()` is the reason (no secrets in it),
    `status` the HTTP status when there was an answer (410: the actor is gone), `down` what
    the failure proves not answering ("origin": it took no connection; "url": it took one but
    gave this request no answer; None: nothing, e.g. a refused target or our own budget spent),
    `retry_after` the seconds after which asking again may succeed when nothing was asked now
    (too many fetches at once, or in the negative cache), else None."""

    def __init__(self, reason: str, status: int | None = None, *, down: str | None = None,
                 retry_after: int | None = None):
        super().__init__(reason)
        self.status = status
        self.down = down
        self.retry_after = retry_after


class FetchSlots:
    """At most `count` fetches at once among every process sharing `directory` (the web workers
    of one deployment on one machine): a fetch holds an exclusive `flock` on one of `count`
    files there, taken without waiting; a process that dies lets go of its lock."""

    def __init__(self, directory: str, count: int):
        self.directory, self.count = directory, count

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold a free slot for the block. Raises FetchError (`retry_after` set) when none is."""
        os.makedirs(self.directory, exist_ok=True)
        for n in range(self.count):
            fd = os.open(os.path.join(self.directory, f"slot-{n}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            return
        raise FetchError(f"all {self.count} key fetches of this server are under way", retry_after=5)


@dataclass(frozen=True)
class RemoteKey:
    """A sender's key bound to its actor: the PEM, the `owner` actor (which lists the key), and
    that actor's `inbox` and `sharedInbox` as the actor document gives them (None when absent)."""

    key_id: str
    pem: str
    owner: str
    inbox: str | None
    shared_inbox: str | None


_cache: dict[str, tuple[float, RemoteKey]] = {}
# ("origin", origin) or ("url", url) -> monotonic instant until which it is not asked
_failed: dict[tuple[str, str], float] = {}
_busy: dict[str, int] = {}  # origin -> fetches to it under way in this process
_lock = threading.Lock()
# Names resolve here, so that waiting for one is bounded by the caller's deadline: a resolver
# that never answers holds one of these threads, never a request.
_resolvers = ThreadPoolExecutor(max_workers=RESOLVERS, thread_name_prefix="ap-resolve")


def origin_of(url: str) -> str | None:
    """`scheme://host[:port]` of an http(s) URL, lower-cased, the scheme's default port left
    out (`HTTPS://A.example:443/x` -> `https://a.example`); None for anything else."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + ("" if port in (None, _DEFAULT_PORTS[scheme]) else f":{port}")


def _addresses(url: str, *, allow_private: bool, seconds: float) -> list[str]:
    """desk_http.check_url within `seconds`, resolution included. Raises FetchError."""
    try:
        desk_http.check_url(url, allow_private=allow_private, resolve=False)  # refused without a lookup
    except desk_http.TargetError as exc:
        raise FetchError(str(exc)) from None
    if seconds <= 0:
        raise FetchError("no time left to resolve the name")
    began: list[float] = []

    def lookup_now() -> list[str]:
        began.append(time.monotonic())
        # A second past the caller's wait: the caller's timeout, not this one, ends a silent lookup.
        return desk_http.check_url(url, allow_private=allow_private, seconds=seconds + 1)

    submitted = time.monotonic()
    lookup = _resolvers.submit(lookup_now)
    try:
        return lookup.result(timeout=seconds)
    except TimeoutError:
        lookup.cancel()
        # Waiting behind other lookups proves nothing about this name: only one that ran for
        # most of its time counts against the origin.
        ran = bool(began) and began[0] - submitted <= seconds / 2
        raise FetchError(f"the name did not resolve within {seconds:.1f}s", down="origin" if ran else None) from None
    except desk_http.TargetError as exc:
        raise FetchError(str(exc)) from None


def exchange(method: str, url: str, *, headers: dict, body: bytes | None, allow_private: bool,
             seconds: float, max_bytes: int = MAX_BYTES) -> tuple[int, bytes]:
    """One HTTP request to `url` within `seconds` in all (name resolution, connect, send,
    answer), to the address the target check resolved (desk_http.check_url); returns (status,
    at most `max_bytes` + 1 of the answer). `headers` are sent as given (a `Host` among them
    replaces the default). Never follows a redirect. Raises FetchError for a refused target or
    network trouble (`down` set for the latter: "origin" when no connection was made, "url"
    when one was but no answer came)."""
    started = time.monotonic()
    addresses = _addresses(url, allow_private=allow_private, seconds=seconds)
    seconds -= time.monotonic() - started
    if seconds <= 0.05:
        raise FetchError("no time left after resolving the name")
    try:
        answer = desk_http.send_to(addresses[0], method, url, headers={"User-Agent": USER_AGENT, **headers},
                                   body=body, seconds=seconds, max_bytes=max_bytes)
    except desk_http.FetchError as exc:
        # No connection within a fair time is the origin's doing; within the sliver a slow
        # lookup left, it proves nothing.
        down = "url" if exc.connected else "origin" if seconds >= FAIR_CONNECT_SECONDS else None
        raise FetchError(str(exc), down=down) from None
    return answer.status, answer.body


@contextmanager
def _slot(origin: str, url: str) -> Iterator[None]:
    """One of PER_ORIGIN fetches to `origin` at once, unless it or `url` failed to answer
    lately. Raises FetchError at once otherwise (nothing waits)."""
    now = time.monotonic()
    with _lock:
        for what, until in ((origin, _failed.get(("origin", origin), 0.0)), (url, _failed.get(("url", url), 0.0))):
            if until > now:
                wait = int(until - now) + 1
                raise FetchError(f"{what} did not answer lately; it is not asked again for {wait}s",
                                 retry_after=wait)
        if _busy.get(origin, 0) >= PER_ORIGIN:
            raise FetchError(f"{PER_ORIGIN} fetches to {origin} are already under way", retry_after=5)
        _busy[origin] = _busy.get(origin, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _busy[origin] -= 1
            if not _busy[origin]:
                del _busy[origin]


def _failing(kind: str, what: str) -> None:
    with _lock:
        if len(_failed) >= CACHE_SIZE:
            _failed.clear()
        _failed[(kind, what)] = time.monotonic() + FAILURE_SECONDS


def get_json(url: str, *, allow_private: bool, seconds: float, marks: bool = True) -> dict:
    """GET `url` for an ActivityStreams document within `seconds` in all (DNS included);
    returns the JSON object. Raises FetchError (refused target, the origin or `url` busy or
    failing lately, network trouble, non-200, too large, not JSON). With `marks`, a failure
    goes in the negative cache for FAILURE_SECONDS (see the module): no answer or a 5xx marks
    `url`, no connection at all its origin."""
    origin = origin_of(url)
    if origin is None:
        raise FetchError("the URL is not http(s)")
    with _slot(origin, url):
        try:
            status, raw = exchange("GET", url, headers={"Accept": ACCEPT}, body=None, allow_private=allow_private,
                                   seconds=seconds)
        except FetchError as exc:
            if marks and exc.down:
                _failing(exc.down, origin if exc.down == "origin" else url)
            raise
    if status >= 500 and marks:
        _failing("url", url)
    if status != 200:
        raise FetchError(f"HTTP {status}", status)
    if len(raw) > MAX_BYTES:
        raise FetchError("the document is too large")
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise FetchError("the document is not JSON") from None
    if not isinstance(document, dict):
        raise FetchError("the document is not a JSON object")
    return document


def _text(value) -> str | None:
    """An http(s) URL given as a string or an object's `id`, at most 2000 characters; else None."""
    if isinstance(value, dict):
        value = value.get("id")
    ok = isinstance(value, str) and value.startswith(("http://", "https://")) and len(value) <= 2000
    return value if ok else None


def _keys(document: dict) -> list[dict]:
    """The key objects `document` publishes: its `publicKey` (an object or a list) if it has
    one, else the document itself (a key published on its own)."""
    found = document.get("publicKey") if "publicKey" in document else document
    return [key for key in (found if isinstance(found, list) else [found]) if isinstance(key, dict)]


def _inboxes(actor: dict) -> tuple[str | None, str | None]:
    endpoints = actor.get("endpoints") if isinstance(actor.get("endpoints"), dict) else {}
    return _text(actor.get("inbox")), _text(endpoints.get("sharedInbox"))


def read_key(key_id: str, actor: str, document: dict) -> tuple[str, bool]:
    """The PEM of the key `key_id` in `document` (what the keyId's URL, fragment dropped,
    answered) and whether that document is the actor `actor` itself. It is only when it was
    fetched from the actor's own id (the keyId is `actor#...`) and says it is `actor`: a
    document found at any other URL, even on the actor's origin and claiming to be the actor
    (an upload, a stub), is a key published apart, whose owner must be `actor` in so many words
    and whose actor must still be fetched from its id and list it. Raises FetchError."""
    if "publicKey" in document and _text(document.get("id")) != actor:
        raise FetchError("the key document is another actor's")
    own = urldefrag(key_id)[0] == actor
    if own and "publicKey" not in document:
        raise FetchError("the actor's document publishes no key")
    for key in _keys(document):
        if key.get("id") == key_id and isinstance(key.get("publicKeyPem"), str):
            if (_text(key.get("owner")) or (actor if own else None)) != actor:
                raise FetchError("the key's owner is not the activity's actor")
            return key["publicKeyPem"], own
    raise FetchError("the document holds no such key")


def fetch_key(key_id: str, actor: str, *, allow_private: bool, deadline: float, fresh: bool = False,
              slots: FetchSlots | None = None) -> tuple[RemoteKey, bool]:
    """The key `key_id` bound to `actor`, as Mastodon binds them (the caller has checked that
    both share one origin): the keyId's document (its fragment dropped) publishes the key as
    owned by `actor`; when that document is not the actor's own (fetched from the actor's id:
    `read_key`), `actor`'s document is fetched from its id too and must list the key. Inbox
    and shared inbox come from the actor's document only. From the cache unless `fresh` (a
    cached key bound to another actor is refused without a fetch); every fetch ends by
    `deadline` (time.monotonic()), holding one of `slots` when given. Returns (key, whether
    it may be fetched afresh when a signature fails under it: a cached key at least
    REFRESH_SECONDS old). Raises FetchError."""
    if not fresh:
        with _lock:
            hit = _cache.get(key_id)
        age = time.time() - hit[0] if hit is not None else CACHE_SECONDS
        if hit is not None and 0 <= age < CACHE_SECONDS:
            if hit[1].owner != actor:
                # Bound to its owner when fetched, and a key does not change owners: refused
                # here, or every forged activity naming a cached keyId would make us fetch it.
                raise FetchError("the key is another actor's (it was bound to its owner when fetched)")
            return hit[1], age >= REFRESH_SECONDS
    with slots.hold() if slots is not None else nullcontext():
        document = get_json(urldefrag(key_id)[0], allow_private=allow_private, seconds=deadline - time.monotonic())
        pem, is_actor = read_key(key_id, actor, document)
        if not is_actor:
            # Marks nothing: its time is what the keyId's fetch left, and the sender chose that URL.
            document = get_json(actor, allow_private=allow_private, seconds=deadline - time.monotonic(), marks=False)
            if _text(document.get("id")) != actor or not any(k.get("id") == key_id for k in _keys(document)):
                raise FetchError("the actor does not list that key")
    key = RemoteKey(key_id, pem, actor, *_inboxes(document))
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[key_id] = (time.time(), key)  # the wall clock: tests travel in time
    return key, False


def forget_all() -> None:
    """Empty the key cache and the negative cache (tests)."""
    with _lock:
        _cache.clear()
        _failed.clear()
