"""Replay: a worker answers a public GET it has answered before without building a Flask request.

The pipeline (web/pipeline.py) serves a stored public answer in a fraction of a cold one's time,
but every hit still pays for what Flask and the after-steps cost: a request context, URL
matching, a `Response`, ten header edits. So this WSGI middleware, ahead of Flask, keeps each
final answer the pipeline marked as public (web/caching.py sets REPLAY_MARK with the paper state
the answer holds) and sends it again while that state stands. It holds no copy of any step's
knowledge:

- **The representation key is the answer's own `Vary`** (as Django's cache learns its key): per
  method, scheme, Host, script root, path and raw query, the request headers the answer's `Vary`
  names (the key headers, Accept-Encoding) are part of the key, with the values this request
  sent. A keyed request never matches a kept public answer (its Authorization or X-Desk-Key is
  in the key, and public answers are kept only without one).
- **A 304 is judged by caching.not_modified_tag**, the pipeline's own rule, against the kept
  200's `ETag`; the pipeline's 304 for that tag form is kept and sent again.
- **What happens per request is the steps' own** (web/steps.py): each step declares what it
  does for an answer sent again; the replay runs those parts in the pipeline's order (the
  request id, the rate count, which may hand a used-up limit on to the pipeline's 429, the
  rate-limit headers, the log line) and strips the headers the steps make per request.
- **When**: a GET or HEAD without a body, on a host whose paper this worker holds a snapshot
  of, under the deployment's current generation (web/tenancy.py, web/state.py: never after a
  write, on any worker or host, has been answered), whose state equals the kept answer's: the
  versions of the scopes the answer depends on (caching.answer_state: a story's own piece, or
  every write of its paper for an answer that declares nothing narrower) and the scheduled
  instants passed.

Off when every cache is off (`CACHE_TYPE=NullCache`) or RESPONSE_CACHE_LOCAL_BYTES is 0; bounded
by RESPONSE_CACHE_LOCAL_BYTES of bodies (least recently used first out): the one store of
kept answers in a worker (the response cache behind it is the shared one). tests/test_replay.py
proves a replay equal to the pipeline's answer for every kind of public URL.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from flask import Flask
from werkzeug.http import unquote_etag

from web import caching, state, tenancy
from web.caching import REPLAY_MARK
from web.headers import environ_name
from web.steps import HAND_ON, Replayed

STATS = "paperdesk.replay.stats"
_ENTRY_OVERHEAD = 512  # bytes counted per entry besides its body (headers, key)
MAX_URLS = 65536  # URLs whose Vary the replay remembers at most
_SNAPSHOT = "paperdesk.replay.snapshot"  # environ: the snapshot a kept answer was found under


class Kept(NamedTuple):
    """One final answer: the paper `state` it holds (caching.answer_state of the scopes
    `names`; None: the paper's whole state), WSGI `status` line, `headers` (without the
    steps' per-request ones), `body` (empty for a 304 or a HEAD), the paper's `slug` (log line),
    whether it is `counted` against the rate limits, and its strong `etag` (unquoted; None
    without one)."""

    state: str
    status: str
    headers: list
    body: bytes
    slug: str
    counted: bool
    etag: str | None
    names: tuple | None = None


class LocalAnswers:
    """A least-recently-used store of at most `capacity` bytes (`cost(entry)` each), safe for
    threaded workers."""

    def __init__(self, capacity: int, cost: Callable[[Kept], int]):
        self.capacity, self.size, self._cost = capacity, 0, cost
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key, entry) -> None:
        cost = self._cost(entry)
        if cost > self.capacity:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            self.size -= self._cost(old) if old else 0
            self._entries[key] = entry
            self.size += cost
            while self.size > self.capacity:
                _, dropped = self._entries.popitem(last=False)
                self.size -= self._cost(dropped)


def _cost(entry: Kept) -> int:
    return len(entry.body) + _ENTRY_OVERHEAD


class Replay:
    """WSGI middleware around `app.wsgi_app` (see the module). `stats` counts `replayed`,
    `kept`, `refused` (a used-up rate limit handed to the pipeline) and `stale` (a kept answer
    found out of date by the generation: handed to the pipeline) answers of this worker."""

    def __init__(self, app: Flask, wsgi_app):
        self.app, self.wsgi_app = app, wsgi_app
        capacity = app.config["RESPONSE_CACHE_LOCAL_BYTES"]
        off = app.config["CACHE_TYPE"] in ("NullCache", "null") or capacity <= 0
        self.kept = None if off else LocalAnswers(capacity, _cost)
        self.vary: dict[tuple, tuple] = {}  # URL key -> the environ names its answers vary on
        self.steps = app.extensions["pipeline"]
        self.shared = state.for_app(app)
        self.stats = app.extensions[STATS] = {"replayed": 0, "kept": 0, "refused": 0, "stale": 0}
        app.extensions["paperdesk.replay"] = self

    def __call__(self, environ, start_response):
        if self.kept is None or not _eligible(environ):
            return self.wsgi_app(environ, start_response)
        url = _url_key(environ)
        varies = self.vary.get(url)
        key = url + tuple(environ.get(name) for name in varies) if varies is not None else None
        if key is not None:
            entry = self._find(environ, key)
            if entry is not None:
                answered = self._send(environ, start_response, entry)
                if answered is not None:
                    return answered
        return self._keep(environ, start_response, url)

    # ------------------------------------------------------------------ finding a kept answer

    def _find(self, environ: dict, key: tuple) -> Kept | None:
        full = self.kept.get(key)
        if full is None:
            return None
        # Whether the snapshot is current is asked after the rate count (`_send`): on Redis the
        # generation travels in the count's round trip.
        snap = tenancy.kept_snapshot(self.app, environ.get("HTTP_HOST", ""))
        if snap is None or not snap.is_public:
            return None
        # The scopes as they stand under the snapshot's generation, which `_send` then checks
        # is the request's: a kept answer whose scopes no write moved outlives other writes.
        table = self.shared.scopes_for(snap.gen) if full.names is not None else None
        if full.state != caching.answer_state(snap, full.names, table):
            return None
        environ[_SNAPSHOT] = snap
        held = environ.get("HTTP_IF_NONE_MATCH")
        if held and full.etag is not None:
            form = caching.not_modified_tag(held, full.etag)
            if form is not None:
                # A 304 kept for an earlier 200 of this URL names that one's tag: the pipeline
                # makes one for this 200's (and keeps it in its place).
                kept = self.kept.get(key + ("304", form))
                return kept if kept is not None and kept.etag == full.etag else None
        return full

    # ------------------------------------------------------------------ sending one

    def _send(self, environ, start_response, entry: Kept):
        replayed = Replayed(self.app, environ, int(entry.status[:3]), entry.slug, entry.counted)
        for part in self.steps.replay_before:
            if part(replayed) == HAND_ON:
                self.stats["refused"] += 1
                return None
        if not tenancy.is_current(self.app, environ.pop(_SNAPSHOT), environ):
            self.stats["stale"] += 1  # a write was answered since: the pipeline answers afresh
            return None
        headers = list(entry.headers)
        for part in self.steps.replay_after:
            part(replayed, headers)
        start_response(entry.status, headers)
        self.stats["replayed"] += 1
        return [entry.body]

    # ------------------------------------------------------------------ keeping a new one

    def _keep(self, environ, start_response, url: tuple):
        seen = {}

        def capture(status, headers, exc_info=None):
            seen["status"], seen["headers"] = status, headers
            return start_response(status, headers, exc_info)

        answer = self.wsgi_app(environ, capture)
        marked = environ.get(REPLAY_MARK)
        status = seen.get("status", "")
        if marked is None or not status.startswith(("200", "304")):
            return answer
        try:
            body = b"".join(answer)
        finally:
            if hasattr(answer, "close"):
                answer.close()
        held, slug, names = marked
        per_request = self.steps.per_request
        headers = [(name, value) for name, value in seen["headers"] if name.lower() not in per_request]
        found = {name.lower(): value for name, value in seen["headers"]}
        varies = tuple(environ_name(name.strip()) for name in found.get("vary", "").split(",") if name.strip())
        etag = unquote_etag(found["etag"])[0] if "etag" in found else None
        counted = any(name.lower() == "x-ratelimit-limit" for name, _ in seen["headers"])
        entry = Kept(held, status, headers, body, slug, counted, etag, names)
        if status.startswith("304"):
            # Filed under the representation the client's tag names, in the form it holds.
            full_varies = self.vary.get(url)
            held = environ.get("HTTP_IF_NONE_MATCH")
            form = caching.not_modified_tag(held, etag) if held and etag else None
            if full_varies is None or form is None:
                return [body]
            self.kept.put(url + tuple(environ.get(name) for name in full_varies) + ("304", form), entry)
        else:
            if len(self.vary) >= MAX_URLS and url not in self.vary:
                # A client chooses the raw query: never let it grow this without bound (the
                # answers themselves are bounded by bytes). Relearnt at each URL's next answer.
                self.vary.clear()
            self.vary[url] = varies
            self.kept.put(url + tuple(environ.get(name) for name in varies), entry)
        self.stats["kept"] += 1
        return [body]


def _url_key(environ: dict) -> tuple:
    return (environ.get("wsgi.url_scheme"), environ.get("HTTP_HOST", ""), environ["REQUEST_METHOD"],
            environ.get("SCRIPT_NAME", ""), environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))


def _eligible(environ: dict) -> bool:
    """A read: GET or HEAD, no body, a Host."""
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD") or "HTTP_HOST" not in environ:
        return False
    return environ.get("CONTENT_LENGTH") in (None, "", "0") and "HTTP_TRANSFER_ENCODING" not in environ


def install(app: Flask) -> None:
    """Put the replay middleware around `app.wsgi_app` (inside ProxyFix, which create_app adds
    after, so the client address and scheme it sees are the ones the pipeline sees). Call after
    web/pipeline.py's `install`: the replay runs the parts its steps declared."""
    app.wsgi_app = Replay(app, app.wsgi_app)

