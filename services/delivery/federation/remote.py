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
  strangers' servers are slow); past either, refused at once, never queued (`busy`); an origin
  whose fetch failed for want of an answer (network trouble, a timeout, a 5xx) is not asked
  again for FAILURE_SECONDS (the negative cache);
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
ACCEPT = 'application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams"'
USER_AGENT = "PaperDesk-ActivityPub/1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FetchError(Exception):
    """The document could not be fetched or read; `str()` is the reason (no secrets in it),
    `status` the HTTP status when there was an answer (410: the actor is gone), `retry_after`
    the seconds after which asking again may succeed when nothing was asked now (too many
    fetches at once, or the origin in the negative cache), else None."""

    def __init__(self, reason: str, status: int | None = None, *, unanswered: bool = False,
                 retry_after: int | None = None):
        super().__init__(reason)
        self.status = status
        self.unanswered = unanswered  # no answer at all (network trouble, time out): the origin is down
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
_failed: dict[str, float] = {}  # origin -> monotonic instant until which it is not asked
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
        raise FetchError("no time left to resolve the name", unanswered=True)
    lookup = _resolvers.submit(desk_http.check_url, url, allow_private=allow_private)
    try:
        return lookup.result(timeout=seconds)
    except TimeoutError:
        lookup.cancel()
        raise FetchError(f"the name did not resolve within {seconds:.1f}s", unanswered=True) from None
    except desk_http.TargetError as exc:
        raise FetchError(str(exc)) from None


def exchange(method: str, url: str, *, headers: dict, body: bytes | None, allow_private: bool,
             seconds: float, max_bytes: int = MAX_BYTES) -> tuple[int, bytes]:
    """One HTTP request to `url` within `seconds` in all (name resolution, connect, send,
    answer), to the address the target check resolved (desk_http.check_url); returns (status,
    at most `max_bytes` + 1 of the answer). `headers` are sent as given (a `Host` among them
    replaces the default). Never follows a redirect. Raises FetchError for a refused target or
    network trouble (`unanswered` set for the latter)."""
    started = time.monotonic()
    addresses = _addresses(url, allow_private=allow_private, seconds=seconds)
    seconds -= time.monotonic() - started
    if seconds <= 0.05:
        raise FetchError("no time left after resolving the name", unanswered=True)
    try:
        answer = desk_http.send_to(addresses[0], method, url, headers={"User-Agent": USER_AGENT, **headers},
                                   body=body, seconds=seconds, max_bytes=max_bytes)
    except desk_http.FetchError as exc:
        raise FetchError(str(exc), unanswered=True) from None
    return answer.status, answer.body


@contextmanager
def _slot(origin: str) -> Iterator[None]:
    """One of PER_ORIGIN fetches to `origin` at once, unless it failed to answer lately.
    Raises FetchError at once otherwise (nothing waits)."""
    now = time.monotonic()
    with _lock:
        until = _failed.get(origin, 0.0)
        if until > now:
            wait = int(until - now) + 1
            raise FetchError(f"{origin} did not answer lately; it is not asked again for {wait}s", retry_after=wait)
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


def _failing(origin: str) -> None:
    with _lock:
        if len(_failed) >= CACHE_SIZE:
            _failed.clear()
        _failed[origin] = time.monotonic() + FAILURE_SECONDS


def get_json(url: str, *, allow_private: bool, seconds: float) -> dict:
    """GET `url` for an ActivityStreams document within `seconds` in all (DNS included);
    returns the JSON object. Raises FetchError (refused target, the origin busy or failing
    lately, network trouble, non-200, too large, not JSON); no answer or a 5xx puts the origin
    in the negative cache for FAILURE_SECONDS."""
    origin = origin_of(url)
    if origin is None:
        raise FetchError("the URL is not http(s)")
    with _slot(origin):
        try:
            status, raw = exchange("GET", url, headers={"Accept": ACCEPT}, body=None, allow_private=allow_private,
                                   seconds=seconds)
        except FetchError as exc:
            if exc.unanswered:
                _failing(origin)
            raise
    if status >= 500:
        _failing(origin)
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
    `read_key`), `actor`'s document is fetched from its id too and must list the key. Inbox and shared inbox come from the actor's document only.
    From the cache unless `fresh` (a cached key bound to another actor is refused without a
    fetch); every fetch ends by `deadline` (time.monotonic()), holding
    one of `slots` when given. Returns (key, whether it may be fetched afresh when a signature
    fails under it: a cached key at least REFRESH_SECONDS old). Raises FetchError."""
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
            document = get_json(actor, allow_private=allow_private, seconds=deadline - time.monotonic())
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
