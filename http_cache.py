"""HTTP caching and CORS policy for public and keyed answers (CONTRACT.md "caching", "CORS").

A public GET's ETag is derived from the paper's `version`, which every write moves, so a matching
`If-None-Match` is answered 304 before the view runs: no piece is loaded. Keyed answers are
`private, no-store` and never carry CORS headers.
"""
from __future__ import annotations

from flask import Flask, Response, g, request

# Bump when the wire format changes, so clients holding old ETags refetch after a deploy.
FORMAT_SALT = "f1"
PUBLIC_CACHE_CONTROL = "public, max-age=60, stale-while-revalidate=300"


def no_etag(view):
    """Mark a view whose GET answer is personal or one-off (confirm links): no ETag, no 304."""
    view.no_etag = True
    return view


def _cacheable() -> bool:
    if request.method not in ("GET", "HEAD") or g.get("key") is not None or "paper" not in g:
        return False
    view = request.url_rule and request.endpoint and _view_function()
    return view is not None and not getattr(view, "no_etag", False)


def _view_function():
    from flask import current_app

    return current_app.view_functions.get(request.endpoint)


def current_etag() -> str:
    """The (unquoted) strong ETag of every public answer of the current paper at its version."""
    return f"{g.paper.id}.{g.paper.version}.{FORMAT_SALT}"


def answer_not_modified():
    """before_request: a public GET whose If-None-Match holds the current ETag gets 304 at once."""
    if not _cacheable():
        return None
    etag = current_etag()
    if request.if_none_match.contains_weak(etag):
        response = Response(status=304)
        response.set_etag(etag)
        response.headers["Cache-Control"] = PUBLIC_CACHE_CONTROL
        response.headers["Vary"] = "Authorization, X-Desk-Key"
        return response
    return None


def decorate(response: Response) -> Response:
    """after_request: cache headers on public GETs; keyed answers private and without CORS."""
    if g.get("key") is not None:
        response.headers["Cache-Control"] = "private, no-store"
        for name in [h for h in response.headers.keys() if h.lower().startswith("access-control-")]:
            del response.headers[name]
        return response
    if response.status_code == 200 and _cacheable():
        if "ETag" not in response.headers:
            response.set_etag(current_etag())
        response.headers.setdefault("Cache-Control", PUBLIC_CACHE_CONTROL)
        response.vary.update(["Authorization", "X-Desk-Key"])
    return response


def register(app: Flask) -> None:
    """Install the hooks. Call before CORS is initialised: after_request hooks run in reverse
    order, so `decorate` then runs after flask-cors and can strip its headers from keyed answers."""
    app.before_request(answer_not_modified)
    app.after_request(decorate)
