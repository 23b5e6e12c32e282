"""Replay: a worker answers a public GET it has answered before without building a Flask request.

The pipeline (web/pipeline.py) serves a stored public answer in a fraction of a cold one's time, but
every hit still pays for what Flask and the after-steps cost: a request context, URL matching,
a `Response`, ten header edits, the log record. For a public read of a paper whose version this
worker knows (tenancy's snapshot, younger than PAPER_SNAPSHOT_SECONDS) nothing of that can
change the answer, so this WSGI middleware, ahead of Flask, keeps each final answer the
pipeline produced (status, every header, body) and sends it again while the paper's state is
the same:

- **What is kept.** Public 200 answers the response cache stored or served, and the pipeline's
  304s, marked by web/caching.py (REPLAY_MARK in the WSGI environ) with the paper state they were made for. Kept per
  scheme, Host, method, script root, path, raw query, and the request headers that select a
  representation: gzip accepted or not (web/compression.py), whether an `Origin` came, and for a
  304 whether the client's tag was weak. Nothing else in a public read's request reaches its
  answer (no cookies, no content negotiation on `Accept`).
- **When it is sent.** A GET or HEAD without a body and without a key header (`Authorization`,
  `X-Desk-Key`), on a host whose paper this worker looked at less than PAPER_SNAPSHOT_SECONDS
  ago and is public, whose state (version, birth, scheduled instants passed: http_cache
  `paper_state`) equals the answer's. A write in this worker forgets the snapshot at once;
  one in another worker or process is seen within PAPER_SNAPSHOT_SECONDS, as for every 304
  and stored answer (http_cache.answer_from_recent_paper).
- **What is still done per request.** The rate limit (one count in the shared store, as in
  limits.py; a used-up limit goes on to Flask, which answers 429 from the same count
  without counting again), the X-RateLimit headers, the request id and the request log line
  (request_log.log_request): a replayed answer's headers are the pipeline's, byte for byte,
  but for those. An `If-None-Match` holding the current tag gets the pipeline's 304.

Off when every cache is off (`CACHE_TYPE=NullCache`) or RESPONSE_CACHE_LOCAL_BYTES is 0; bounded
by RESPONSE_CACHE_LOCAL_BYTES of bodies (least recently used first out). tests/test_replay.py
proves a replay equal to the pipeline's answer for every kind of public URL.
"""
from __future__ import annotations

import logging
import time
from typing import NamedTuple

from flask import Flask
from werkzeug.http import parse_etags
from werkzeug.wsgi import get_path_info

from web import compression, limits, request_log, tenancy
from web.caching import FORMAT_SALT, LocalAnswers, state_of
from web.caching import REPLAY_MARK as MARK

STATS = "paperdesk.replay.stats"
# Headers that are the request's own, not the answer's: never kept, made again per request.
PER_REQUEST = frozenset({"x-request-id", "x-ratelimit-limit", "x-ratelimit-remaining",
                         "x-ratelimit-reset"})
_KEY_HEADERS = ("HTTP_AUTHORIZATION", "HTTP_X_DESK_KEY")
_ENTRY_OVERHEAD = 512  # bytes counted per entry besides its body (headers, key)
log = logging.getLogger("paperdesk.replay")


class Kept(NamedTuple):
    """One final answer: the paper `state` it holds, WSGI `status` line, `headers` (without
    PER_REQUEST ones), `body` (empty for a 304 or a HEAD), the paper's `slug` (log line) and whether it is
    `counted` against the rate limits."""

    state: str
    status: str
    headers: list
    body: bytes
    slug: str
    counted: bool  # the pipeline counted it against the read limit (exempt routes are not)


def _cost(entry: Kept) -> int:
    return len(entry.body) + _ENTRY_OVERHEAD


class Replay:
    """WSGI middleware around `app.wsgi_app` (see the module). `stats` counts `replayed`,
    `kept` and `refused` (a used-up rate limit handed to Flask) answers of this worker."""

    def __init__(self, app: Flask, wsgi_app):
        self.app, self.wsgi_app = app, wsgi_app
        capacity = app.config["RESPONSE_CACHE_LOCAL_BYTES"]
        off = app.config["CACHE_TYPE"] in ("NullCache", "null") or capacity <= 0
        self.kept = None if off else LocalAnswers(capacity, cost=_cost)
        self.stats = app.extensions[STATS] = {"replayed": 0, "kept": 0, "refused": 0}

    def __call__(self, environ, start_response):
        if self.kept is None or not _eligible(environ):
            return self.wsgi_app(environ, start_response)
        started = time.perf_counter()
        key, state = self._key(environ)
        if state is not None:
            entry = self.kept.get(key)
            if entry is not None and entry.state == state:
                answered = self._send(environ, start_response, entry, started)
                if answered is not None:
                    return answered
        return self._keep(environ, start_response, key)

    # ------------------------------------------------------------------ the key

    def _key(self, environ: dict) -> tuple[tuple, str | None]:
        """The kept answer's key for this request, and the paper state it would have to hold
        (None when this worker has no recent snapshot of a public paper on the host)."""
        host = environ.get("HTTP_HOST", "")
        snap = tenancy.recent_snapshot(self.app, host, environ)
        state = state_of(snap) if snap is not None and snap.is_public else None
        variant = "identity"
        tags = environ.get("HTTP_IF_NONE_MATCH")
        if tags and state is not None:
            etags, etag = parse_etags(tags), f"{state}.{FORMAT_SALT}"
            if etags.contains_weak(etag):
                variant = "304-weak" if etags.is_weak(etag) and not etags.contains(etag) else "304"
        if variant == "identity" and compression.gzip_accepted(environ.get("HTTP_ACCEPT_ENCODING")):
            variant = "gzip"
        key = (environ.get("wsgi.url_scheme"), host.lower(), environ["REQUEST_METHOD"],
               environ.get("SCRIPT_NAME", ""), environ.get("PATH_INFO", ""),
               environ.get("QUERY_STRING", ""), variant, "HTTP_ORIGIN" in environ)
        return key, state

    # ------------------------------------------------------------------ sending a kept answer

    def _send(self, environ, start_response, entry: Kept, started: float):
        rate = limits.RateLimits.for_app(self.app)
        tightest = None
        if entry.counted and rate.enabled:
            counts = rate.count(rate.read_limits(environ.get("REMOTE_ADDR") or "127.0.0.1"))
            if counts:
                tightest = limits.tightest_of(counts)
                if tightest.exceeded:
                    # Flask answers the 429 (problem+json or the HTML page) from this count.
                    environ[limits.COUNTED] = counts
                    self.stats["refused"] += 1
                    return None
        request_id = request_log.request_id_from(environ.get("HTTP_X_REQUEST_ID"))
        headers = list(entry.headers)
        if tightest is not None:
            headers += limits.limit_headers(tightest)
        headers.append((request_log.REQUEST_ID_HEADER, request_id))
        start_response(entry.status, headers)
        self.stats["replayed"] += 1
        request_log.log_request(
            request_id=request_id, method=environ["REQUEST_METHOD"],
            path="/" + get_path_info(environ).lstrip("/"),  # request.path's spelling
            query=environ.get("QUERY_STRING", ""), status=int(entry.status[:3]),
            started=started, paper=entry.slug, remote_addr=environ.get("REMOTE_ADDR"))
        return [entry.body]

    # ------------------------------------------------------------------ keeping a new one

    def _keep(self, environ, start_response, key: tuple):
        seen = {}

        def capture(status, headers, exc_info=None):
            seen["status"], seen["headers"] = status, headers
            return start_response(status, headers, exc_info)

        answer = self.wsgi_app(environ, capture)
        marked = environ.get(MARK)
        status = seen.get("status", "")
        if marked is None or not status.startswith(("200", "304")):
            return answer
        try:
            body = b"".join(answer)
        finally:
            if hasattr(answer, "close"):
                answer.close()
        state, slug = marked
        if key[6].startswith("304") != status.startswith("304"):
            return [body]  # the tag the key expected was not the one the pipeline judged
        headers = [(name, value) for name, value in seen["headers"]
                   if name.lower() not in PER_REQUEST]
        counted = any(name.lower() == "x-ratelimit-limit" for name, _ in seen["headers"])
        self.kept.put(key, Kept(state, status, headers, body, slug, counted))
        self.stats["kept"] += 1
        return [body]


def _eligible(environ: dict) -> bool:
    """A public read: GET or HEAD, no body, no key header, a Host."""
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD") or "HTTP_HOST" not in environ:
        return False
    if environ.get("CONTENT_LENGTH") not in (None, "", "0") or "HTTP_TRANSFER_ENCODING" in environ:
        return False
    return not any(name in environ for name in _KEY_HEADERS)


def install(app: Flask) -> None:
    """Put the replay middleware around `app.wsgi_app` (inside ProxyFix, which create_app adds
    after, so the client address and scheme it sees are the ones the pipeline sees)."""
    app.wsgi_app = Replay(app, app.wsgi_app)
