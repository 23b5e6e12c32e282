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
- **A 304 is the pipeline's, kept for the If-None-Match that asked**: filed under the URL, the
  304's own `Vary` values and the request's If-None-Match as sent, and sent again while the
  state it holds stands (the pipeline's 304 is a function of those and nothing else). A request
  with a tag but no 304 kept for it gets the kept 200 only when caching.not_modified_tag, the
  pipeline's own rule, says the tag is not the 200's; else the pipeline judges it (and its
  304 is kept).
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

With every cache off (`CACHE_TYPE=NullCache`) it keeps only 304s: a 304 holds no
representation, only which tag is current at which state, so a revalidation is answered ahead
of Flask with no copy of any answer kept. Off when RESPONSE_CACHE_LOCAL_BYTES is 0; bounded by
RESPONSE_CACHE_LOCAL_BYTES of bodies (least recently used first out, 512 bytes counted per
entry besides its body): the one store of kept answers in a worker (the response cache behind
it is the shared one). tests/test_replay.py
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
_NOT_MODIFIED = object()  # in a 304's key, after its URL's: equal to no header value


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
        self.kept = None if capacity <= 0 else LocalAnswers(capacity, _cost)
        # With every cache off, only 304s are kept (caching.py marks no 200 then).
        self.bodies = app.config["CACHE_TYPE"] not in ("NullCache", "null")
        # URL key -> the environ names its 200s vary on; URL key + (_NOT_MODIFIED,) -> its 304s'.
        self.vary: dict[tuple, tuple] = {}
        self.steps = app.extensions["pipeline"]
        self.shared = state.for_app(app)
        self.stats = app.extensions[STATS] = {"replayed": 0, "kept": 0, "refused": 0, "stale": 0}
        app.extensions["paperdesk.replay"] = self

    def __call__(self, environ, start_response):
        if self.kept is None or not _eligible(environ):
            return self.wsgi_app(environ, start_response)
        held = environ.get("HTTP_IF_NONE_MATCH")
        if not (self.bodies or held):
            return self.wsgi_app(environ, start_response)  # only 304s are kept: none is asked for
        url = _url_key(environ)
        entry = self._find(environ, url, held)
        if entry is not None:
            answered = self._send(environ, start_response, entry)
            if answered is not None:
                return answered
        return self._keep(environ, start_response, url, held)

    # ------------------------------------------------------------------ finding a kept answer

    def _find(self, environ: dict, url: tuple, held: str | None) -> Kept | None:
        """The kept answer for this request, current as far as the paper's snapshot can tell
        (`_send` then checks the snapshot is the request's generation): the 304 kept for its
        If-None-Match `held`, else the 200 unless `held` names the 200's tag."""
        if held:
            key = _key(url + (_NOT_MODIFIED, held), self.vary.get(url + (_NOT_MODIFIED,)), environ)
            if key is not None:
                kept = self.kept.get(key)
                if kept is not None and self._holds(environ, kept):
                    return kept
        if not self.bodies:
            return None
        key = _key(url, self.vary.get(url), environ)
        full = self.kept.get(key) if key is not None else None
        if full is None or not self._holds(environ, full):
            return None
        if held and full.etag is not None and caching.not_modified_tag(held, full.etag) is not None:
            environ.pop(_SNAPSHOT)
            return None  # the pipeline makes this tag's 304 (and it is kept then)
        return full

    def _holds(self, environ: dict, entry: Kept) -> bool:
        """Whether `entry` holds the paper as this worker's snapshot of it stands (its scopes'
        versions under the snapshot's generation, or the paper's whole state); if so, the
        snapshot is left in `environ` for `_send`."""
        # Whether the snapshot is current is asked after the rate count (`_send`): on Redis the
        # generation travels in the count's round trip.
        snap = tenancy.kept_snapshot(self.app, environ.get("HTTP_HOST", ""))
        if snap is None or not snap.is_public:
            return False
        # A kept answer whose scopes no write moved outlives other writes.
        table = self.shared.scopes_for(snap.gen) if entry.names is not None else None
        if entry.state != caching.answer_state(snap, entry.names, table):
            return False
        environ[_SNAPSHOT] = snap
        return True

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

    def _keep(self, environ, start_response, url: tuple, held: str | None):
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
        state, slug, names = marked
        per_request = self.steps.per_request
        headers = [(name, value) for name, value in seen["headers"] if name.lower() not in per_request]
        found = {name.lower(): value for name, value in seen["headers"]}
        varies = tuple(environ_name(name.strip()) for name in found.get("vary", "").split(",") if name.strip())
        etag = unquote_etag(found["etag"])[0] if "etag" in found else None
        counted = any(name.lower() == "x-ratelimit-limit" for name, _ in seen["headers"])
        entry = Kept(state, status, headers, body, slug, counted, etag, names)
        if status.startswith("304"):
            if not held:
                return [body]
            # Filed under the If-None-Match as sent and the 304's own Vary: the same request
            # under the same state is the same 304 (the tag form it names included).
            url = url + (_NOT_MODIFIED, held)
            vary_key = url[:-1]
        else:
            vary_key = url
        if len(self.vary) >= MAX_URLS and vary_key not in self.vary:
            # A client chooses the raw query: never let it grow this without bound (the
            # answers themselves are bounded by bytes). Relearnt at each URL's next answer.
            self.vary.clear()
        self.vary[vary_key] = varies
        self.kept.put(_key(url, varies, environ), entry)
        self.stats["kept"] += 1
        return [body]


def _key(url: tuple, varies: tuple | None, environ: dict) -> tuple | None:
    """The representation key of `url` (a `_url_key`, perhaps with a 304's suffix) for the
    request `environ`: the values of the environ names `varies` (None: not learnt yet) after it."""
    if varies is None:
        return None
    return url + tuple(environ.get(name) for name in varies)


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

