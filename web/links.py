"""The web layer's `Links`: absolute URLs on the host the current request was made to.

Views and schemas call `links()`; services never read the request and take the result as an
argument (services/links.py). The scheme is PUBLIC_URL_SCHEME (https in production
behind a proxy); the host is the request's own, port included, so every paper's answers point
at the host they were asked on.
"""
from __future__ import annotations

from flask import current_app, request

from services.links import Links
from web import request_state


def links() -> Links:
    """The current request's `Links` (`{PUBLIC_URL_SCHEME}://{request.host}`), made once per
    request and kept on `g`. Needs a request context (RuntimeError outside one)."""
    # Lower-cased: host names are case-insensitive, and the response cache and the replay key
    # answers by the lower-cased host, so an answer must not spell the host as one client did.
    origin = f"{current_app.config['PUBLIC_URL_SCHEME']}://{request.host.lower()}"
    # Checked against the origin, not just present: a test that holds one app context open
    # shares one `g` across requests made to different hosts.
    state = request_state.current()
    found = state.links
    if found is None or found.origin != origin:
        found = state.links = Links(origin)
    return found
