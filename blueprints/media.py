"""`/masthead/{slug}/avatar.svg` (persona portraits), `/cards/{slug}.png` (share cards) and
`/media/{name}` (the paper's own stored media: art, posters, podcast artwork, captions).

Plain routes (not in the OpenAPI document): the URLs the masthead's `avatar`, the posts'
`image` and the demo's art point at. Avatars and cards are deterministic, so they carry their
own content ETag and a long Cache-Control; a media file is named by the hash of its bytes, so it
never changes under its name and is cached for a year as immutable.
"""
from __future__ import annotations

import hashlib

from flask import Blueprint, Response, abort, current_app, g, request

from services.reading import lookups
from services.rendering import media
from web import caching

bp = Blueprint("media", __name__)

LONG_CACHE = "public, max-age=604800, stale-while-revalidate=86400"
IMMUTABLE = "public, max-age=31536000, immutable"


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
    caching.tag_piece(piece)
    path = media.card_path(current_app.instance_path, g.paper, piece)
    # Read whole (tens of KiB) rather than streamed: no open file outlives the request.
    response = Response(path.read_bytes(), mimetype="image/png")
    response.set_etag(media.card_key(g.paper, piece))
    # Like every public answer: a corrected headline reaches caches within a minute, and a
    # revalidation is a 304 on the card's key (it names the piece's content hash).
    response.headers["Cache-Control"] = caching.PUBLIC_CACHE_CONTROL
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response.make_conditional(request)


@bp.route("/media/<string:name>")
def media_file(name: str):
    """A stored media file (`{sha256[:32]}.jpg|png|vtt|mp4`) with its Content-Type, cached for a
    year as immutable; 404 for any other name or a file not stored."""
    found = media.media_file(current_app.instance_path, name)
    if found is None:
        abort(404, description="No such media file on this paper.")
    path, mimetype = found
    # Read whole: the demo's files are tens of KiB (artwork ~120 KiB); no open file outlives
    # the request.
    response = Response(path.read_bytes(), content_type=mimetype)
    response.set_etag(name.split(".", 1)[0])
    response.headers["Cache-Control"] = IMMUTABLE
    response.headers["X-Content-Type-Options"] = "nosniff"
    # Captions opened directly are text: let them run nothing and load nothing.
    response.headers["Content-Security-Policy"] = "default-src 'none'"
    return response.make_conditional(request)
