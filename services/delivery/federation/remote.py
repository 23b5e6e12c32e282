"""Fetching a remote actor's public key: the one outside call Paper Desk makes on a request path
(an inbox POST's HTTP signature is checked against the key its `keyId` names).

Bounded every way by the one HTTP client (services/http.py: https only, the name
resolved and every address public unless WEBHOOK_ALLOW_PRIVATE, the connection pinned to the
checked address: no DNS rebinding), no redirects, one deadline for the whole fetch (resolve,
connect, send, answer: ACTIVITYPUB_KEY_FETCH_SECONDS, 3 s by default), at most MAX_BYTES of
answer. Keys are cached in the process by keyId for CACHE_SECONDS (a bad signature refetches
once, for a key the sender rotated), at most CACHE_SIZE of them.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import urldefrag

from services import http

MAX_BYTES = 256 * 1024
CACHE_SECONDS = 600
CACHE_SIZE = 2048
ACCEPT = 'application/activity+json, application/ld+json; profile="https://www.w3.org/ns/activitystreams"'
USER_AGENT = "PaperDesk-ActivityPub/1"


# The one client's error, under the name this module's callers know.
FetchError = http.FetchError


@dataclass(frozen=True)
class RemoteKey:
    """A sender's key as its `keyId` document gives it: the PEM, the `owner` actor, and that
    actor's `inbox` and `sharedInbox` when the document is the actor itself (else None)."""

    key_id: str
    pem: str
    owner: str
    inbox: str | None
    shared_inbox: str | None


_cache: dict[str, tuple[float, RemoteKey]] = {}
_lock = threading.Lock()


def exchange(method: str, url: str, *, headers: dict, body: bytes | None, allow_private: bool,
             seconds: float, max_bytes: int = MAX_BYTES) -> tuple[int, bytes]:
    """One ActivityPub request to `url` by the one HTTP client (services/http.py
    `request`: within `seconds` in all, name resolution included, to the checked address, no
    redirects); returns (status, at most `max_bytes` + 1 of the answer). `headers` are sent as
    given over the ActivityPub `User-Agent`. Raises FetchError for a refused target or network
    trouble."""
    answer = http.request(method, url, headers={"User-Agent": USER_AGENT, **headers}, body=body,
                          allow_private=allow_private, seconds=seconds, max_bytes=max_bytes)
    return answer.status, answer.body


def get_json(url: str, *, allow_private: bool, seconds: float) -> dict:
    """GET `url` for an ActivityStreams document within `seconds` in all; returns the JSON
    object. Raises FetchError (refused target, network trouble, non-200, too large, not JSON)."""
    status, raw = exchange("GET", url, headers={"Accept": ACCEPT}, body=None, allow_private=allow_private,
                           seconds=seconds)
    if status != 200:
        raise FetchError(f"HTTP {status}", status)
    if len(raw) > MAX_BYTES:
        raise FetchError("the document is too large")
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
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


def read_key(key_id: str, document: dict) -> RemoteKey:
    """The key `key_id` from its document: an actor with `publicKey` (an object or a list of
    them) holding one whose `id` is `key_id`, or a key object itself. Raises FetchError."""
    candidates = document.get("publicKey") if "publicKey" in document else document
    candidates = candidates if isinstance(candidates, list) else [candidates]
    for key in candidates:
        if isinstance(key, dict) and key.get("id") == key_id and isinstance(key.get("publicKeyPem"), str):
            owner = _text(key.get("owner")) or _text(document.get("id"))
            if owner is None:
                break
            is_actor = _text(document.get("id")) == owner
            endpoints = document.get("endpoints") if isinstance(document.get("endpoints"), dict) else {}
            return RemoteKey(key_id, key["publicKeyPem"], owner,
                             _text(document.get("inbox")) if is_actor else None,
                             _text(endpoints.get("sharedInbox")) if is_actor else None)
    raise FetchError("the document holds no such key")


def fetch_key(key_id: str, *, allow_private: bool, seconds: float, fresh: bool = False) -> RemoteKey:
    """The key named `key_id` (its fragment dropped for the fetch), from the cache unless
    `fresh`. Raises FetchError."""
    now = time.monotonic()
    if not fresh:
        with _lock:
            hit = _cache.get(key_id)
        if hit is not None and now - hit[0] < CACHE_SECONDS:
            return hit[1]
    key = read_key(key_id, get_json(urldefrag(key_id)[0], allow_private=allow_private, seconds=seconds))
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[key_id] = (now, key)
    return key


def forget_all() -> None:
    """Empty the key cache (tests)."""
    with _lock:
        _cache.clear()
