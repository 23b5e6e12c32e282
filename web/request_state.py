"""The request path's own state of one request, typed, in one place.

Views read `g.paper`, `g.key` and `g.paper_snapshot` (tenancy sets them: the views' API); every
other fact a step keeps for a later step lives here, on `current()`, made anew by the first step
of each request (`request_log.start_request`), so a test that holds one app context across
requests never sees the last request's state.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from flask.globals import _cv_app, _cv_request, _no_app_msg, _no_req_msg

_NAME = "request_state"


def this_request():
    """The current request object itself (what `flask.request` stands for). werkzeug's proxy
    finds no attribute on itself: each attribute read through it raises and catches an
    AttributeError before it looks up the request (about 1 µs, dozens of times in every
    request's steps), so the steps every request passes read the request once through this.
    Raises RuntimeError outside a request, as the proxy does."""
    ctx = _cv_request.get(None)
    if ctx is None:
        raise RuntimeError(_no_req_msg)
    return ctx.request


def _app_context():
    ctx = _cv_app.get(None)
    if ctx is None:
        raise RuntimeError(_no_app_msg)
    return ctx


def this_app():
    """The current app itself (what `flask.current_app` stands for; see `this_request`).
    Raises RuntimeError outside an app context, as the proxy does."""
    return _app_context().app


def this_g():
    """The current app context's `g` itself (what `flask.g` stands for; see `this_request`).
    Raises RuntimeError outside an app context, as the proxy does."""
    return _app_context().g


@dataclass(slots=True)
class RequestState:
    """`request_id` (X-Request-ID) and `started` (time.perf_counter(), seconds) for the log line;
    `now`, the request's one instant (aware UTC, fixed at its first use; caching.request_now);
    `rate_limit`, the tightest count taken (limits.Count); for the response cache: `public_get`
    (a public GET of a paper by a cacheable route), `cache_key`, `cache_hit`, `cache_missed` (a
    key already asked for), `url_key` (caching.response_cache_key, computed once),
    `answer` (the state and scope names the current public answer is keyed by, once a step
    computed them: caching.answer_etag names them), `not_modified_checked` (the paper state
    already judged for 304),
    `surrogate_keys` (besides `paper-<id>`), `gzip_body` (a stored answer's compressed body);
    `read_autocommit` (tenancy: a public read's autocommit connection to give back); `links`
    (the request's web.links.Links)."""

    request_id: str = ""
    started: float = 0.0
    now: datetime | None = None
    rate_limit: object = None
    public_get: bool = False
    cache_key: str | None = None
    cache_hit: bool = False
    cache_missed: str | None = None
    url_key: str | None = None
    answer: tuple | None = None
    not_modified_checked: str | None = None
    surrogate_keys: list[str] = field(default_factory=list)
    gzip_body: bytes | None = None
    read_autocommit: bool = False
    links: object = None


def begin() -> RequestState:
    """A fresh state for the current request (the pipeline's first step calls it)."""
    state = RequestState()
    setattr(this_g(), _NAME, state)
    return state


def current() -> RequestState:
    """The current request's state (a fresh one if no step made it yet: a request that failed
    before the pipeline's first step). Needs a request context."""
    state = this_g().get(_NAME)
    return state if state is not None else begin()


def started() -> bool:
    """True once the pipeline's first step ran for the current app context's `g`."""
    return _NAME in this_g()
