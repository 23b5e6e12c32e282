"""The web layer's `Links`: absolute URLs on the host the current request was made to.

Views and schemas call `links()`; services never read the request and take the result as an
argument (services/links.py). The scheme is PUBLIC_URL_SCHEME (https in production
behind a proxy); the host is the request's own, port included, so every paper's answers point
at the host they were asked on.

`paper_links()` is the exception: ActivityPub ids, keyIds and everything a peer stores name the
paper's one canonical origin (services/links.py PaperOrigins, the origin the worker signs
with), whichever of the paper's hosts a request came in on.
"""
from __future__ import annotations

from flask import current_app, g

from services.links import Links, PaperOrigins
from web import request_state
from web.request_state import this_app, this_request


def links() -> Links:
    """The current request's `Links` (`{PUBLIC_URL_SCHEME}://{request.host}`), made once per
    request and kept on `g`. Needs a request context (RuntimeError outside one)."""
    # Lower-cased: host names are case-insensitive, and the response cache and the replay key
    # answers by the lower-cased host, so an answer must not spell the host as one client did.
    origin = f"{this_app().config['PUBLIC_URL_SCHEME']}://{this_request().host.lower()}"
    # Checked against the origin, not just present: a test that holds one app context open
    # shares one `g` across requests made to different hosts.
    state = request_state.current()
    found = state.links
    if found is None or found.origin != origin:
        found = state.links = Links(origin)
    return found


def paper_links() -> Links:
    """The `Links` of the request's paper's canonical origin (`PaperOrigins.links(g.paper)`,
    what the worker uses outside requests), whatever host the request was made to: a paper served
    on an alias host (`demo.papers.test` for the default paper at `papers.test`) hands out the
    same ids there. Needs `g.paper` (tenancy)."""
    return PaperOrigins.from_config(current_app.config).links(g.paper)
