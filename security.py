"""Security headers on every answer (issue 5: "framing forbidden everywhere else"), and the
request body limit (issue 7: 64 KiB, 413).

Everything: `X-Frame-Options: DENY` and a Content-Security-Policy with `frame-ancestors 'none'`,
`X-Content-Type-Options: nosniff`, `Referrer-Policy: strict-origin-when-cross-origin`, HSTS when
the request itself came over https, and no version in `Server`.

A frameable answer opts in through `allow_framing(response, kind)` in its view: "embed" (the
story card, `/embed/{id}`) or "player" (a video edition's `?embed=1` page). It gets a locked-down
policy with `frame-ancestors *` and no X-Frame-Options; nothing else may be framed (Redash's
pattern). The mark travels on the response itself, never in `g`, so it cannot leak to another
answer.
"""
from __future__ import annotations

import re

from flask import Response, current_app, request
from werkzeug.exceptions import NotFound, RequestEntityTooLarge

PAGE_CSP = ("default-src 'self'; img-src 'self' https: data:; media-src 'self' https:; "
            "style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'self'; "
            "form-action 'self'; frame-ancestors 'none'")
# The card loads only its own inline CSS and one picture; no script, no form, no fetch.
EMBED_CSP = ("default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; "
             "frame-ancestors *; base-uri 'none'; form-action 'none'")
PLAYER_CSP = ("default-src 'none'; img-src 'self' https: data:; media-src 'self' https:; "
              "style-src 'unsafe-inline'; frame-ancestors *; base-uri 'none'; form-action 'none'")
FRAMEABLE = {"embed": EMBED_CSP, "player": PLAYER_CSP}
HSTS = "max-age=31536000; includeSubDomains"
_VERSION = re.compile(r"/\S*")


def allow_framing(response: Response, kind: str) -> Response:
    """Let any site frame `response` under the locked-down policy for `kind` ("embed" or
    "player"). Raises KeyError for another kind."""
    response.headers["Content-Security-Policy"] = FRAMEABLE[kind]
    return response


def add_headers(response: Response) -> Response:
    """Pipeline step (after the view, on every answer): the headers above. A policy the view set is kept; unless it is one of the
    frameable ones, framing is still denied. A 304 gets no policy of its own (see below)."""
    # A 304 carries no body, and a browser merges its headers into the stored answer's: framing
    # headers on it would overwrite a frameable card's policy (the view did not run to say so).
    if response.status_code != 304:
        policy = response.headers.get("Content-Security-Policy")
        if policy is None:
            response.headers["Content-Security-Policy"] = PAGE_CSP
        elif policy not in FRAMEABLE.values() and "frame-ancestors" not in policy:
            # A view's own policy (the avatar SVG's) still forbids framing.
            response.headers["Content-Security-Policy"] = f"{policy}; frame-ancestors 'none'"
        if policy in FRAMEABLE.values():
            response.headers.pop("X-Frame-Options", None)
        else:
            response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "strict-origin-when-cross-origin"
    if request.is_secure:
        response.headers["Strict-Transport-Security"] = HSTS
    server = response.headers.get("Server")
    if server:
        response.headers["Server"] = " ".join(_VERSION.sub("", server).split()) or "paperdesk"
    return response


def refuse_large_bodies() -> None:
    """Pipeline step (before the paper lookup): 413 for a body larger than MAX_CONTENT_LENGTH (64 KiB) on any route,
    whether or not its view reads the body.

    A declared Content-Length is checked at once. A chunked body has none: werkzeug reads it
    through a stream capped at the limit, which stops *silently* at the cap (a form would be
    parsed from its first 64 KiB), so it is read here, into the request's cache where the view's
    parser finds it, and one byte more is asked for: the capped stream raises the 413 then. A
    chunked body of exactly the limit is refused too (nothing tells it from a longer one).
    """
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    if limit is None:
        return
    if request.content_length is not None:
        if request.content_length > limit:
            raise RequestEntityTooLarge()
        return
    if "chunked" in request.headers.get("Transfer-Encoding", "").lower():
        if len(request.get_data(cache=True)) >= limit:
            request.stream.read(1)
            raise RequestEntityTooLarge()  # a stream that did not raise at its cap


def refuse_nul_in_path() -> None:
    """Pipeline step (first refusal): a path holding a NUL (`%00`) names nothing here (and PostgreSQL cannot
    compare text holding one): 404 before any view looks it up."""
    if "\x00" in request.path:
        raise NotFound()

