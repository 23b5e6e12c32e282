"""`/masthead/{slug}/avatar.svg` (persona portraits) and `/cards/{slug}.png` (share cards).

Plain routes (not in the OpenAPI document): the URLs the masthead's `avatar` and the posts'
`image` point at. Both answers are deterministic, so they carry their own content ETag and a
long Cache-Control.
"""
from __future__ import annotations

import hashlib

from flask import Blueprint, Response, abort, current_app, g, request

import http_cache
from services.reading import lookups
from services.rendering import media

bp = Blueprint("media", __name__)

LONG_CACHE = "public, max-age=604800, stale-while-revalidate=86400"


@bp.route("/masthead/<string:slug>/avatar.svg")
def avatar(slug: str):
    """A persona's SVG portrait (initials on a colour from its slug); 404 for an unknown one."""
    persona = lookups.find_persona(g.paper, slug)
    if persona is None:
        abort(404, description="No such persona on this paper.")
    body = media.avatar_svg(persona).encode("utf-8")
    response = Response(body, mimetype="image/svg+xml")
    response.set_etag(hashlib.sha256(body).hexdigest()[:32])
    response.headers["Cache-Control"] = LONG_CACHE
    # An SVG opened directly is a document: let it run nothing and load nothing.
    response.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response.make_conditional(request)


@bp.route("/cards/<string:slug>.png")
def share_card(slug: str):
    """A piece's 1200x630 PNG share card; 404 for an unknown piece or one not on air."""
    piece = media.find_card_piece(g.paper, slug)
    if piece is None:
        abort(404, description="No such piece on air on this paper.")
    http_cache.tag_piece(piece)
    path = media.card_path(current_app.instance_path, g.paper, piece)
    # Read whole (tens of KiB) rather than streamed: no open file outlives the request.
    response = Response(path.read_bytes(), mimetype="image/png")
    response.set_etag(media.card_key(g.paper, piece))
    response.headers["Cache-Control"] = LONG_CACHE
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response.make_conditional(request)
