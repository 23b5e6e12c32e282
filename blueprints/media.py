"""`/masthead/{slug}/avatar.svg` and `.png` (persona portraits), `/cards/{slug}/{version}.png` (share
cards; `/cards/{slug}.png` redirects to the current one) and `/media/{name}` (the paper's own
stored media: art, posters, podcast artwork, captions).

Plain routes (not in the OpenAPI document): the URLs the masthead's `avatar`, the posts'
`image` and the demo's art point at. Avatars are deterministic, so they carry their own content
ETag and a long Cache-Control. A share card's URL names its version (the piece's revision and
what else is drawn) and a media file's name the hash of its bytes: neither changes under its
URL, so both are cached for a year as immutable.
"""
from __future__ import annotations

import hashlib

from flask import Blueprint, Response, abort, current_app, g, redirect, request

from services.links import card_version
from services.reading import lookups
from services.rendering import media
from web import caching, policy
from web.links import links

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


@bp.route("/masthead/<string:slug>/avatar.png")
def avatar_png(slug: str):
    """A persona's portrait as a 256x256 PNG (the fediverse actor's icon: many servers refuse
    SVG), rendered once into the media folder and read from there; its content ETag and a long
    Cache-Control as the SVG's; 404 for an unknown persona."""
    persona = lookups.find_persona(g.paper, slug)
    if persona is None:
        abort(404, description="No such persona on this paper.")
    path = media.avatar_png_file(current_app.instance_path, persona)
    response = Response(path.read_bytes(), mimetype="image/png")
    response.set_etag(path.stem)  # the name is the hash of the bytes
    response.headers["Cache-Control"] = LONG_CACHE
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response.make_conditional(request)


@bp.route("/cards/<string:slug>/<string:version>.png")
@policy.route(cache_control=IMMUTABLE)
def share_card(slug: str, version: str):
    """A piece's 1200x630 PNG share card at one version (`card_version`, `3-5f2a9c1e`):
    200 for the current one, cached as immutable (the URL names everything drawn, so its bytes
    never change); 302 to the current one's URL for any other version (an earlier revision,
    or a nameplate, section or byline renamed since), never that version's picture; 404 for
    an unknown piece or one not on air."""
    piece = _card_piece(slug)
    if version != card_version(g.paper.nameplate, piece):
        return _to_current(piece)
    path = media.card_path(current_app.instance_path, g.paper, piece)
    # Read whole (tens of KiB) rather than streamed: no open file outlives the request. No ETag
    # or Cache-Control of its own: the pipeline gives it an ETag (web/caching.py) and this
    # route's immutable policy, and stores and replays it like any public answer, under the
    # paper's state, so a pull answers 404 at once.
    response = Response(path.read_bytes(), mimetype="image/png")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


@bp.route("/cards/<string:slug>.png")
def current_share_card(slug: str):
    """The URL of a piece's share card before cards had versions, kept for links already
    shared: 302 to the current version's URL (a short public cache, as every public answer);
    404 for an unknown piece or one not on air."""
    piece = _card_piece(slug)
    return _to_current(piece)


def _card_piece(slug: str):
    piece = media.find_card_piece(g.paper, slug, now=caching.request_now())
    if piece is None:
        abort(404, description="No such piece on air on this paper.")
    caching.tag_piece(piece)
    return piece


def _to_current(piece) -> Response:
    """302 to the current card; the pipeline caches it briefly, as every public redirect
    (web/caching.py `decorate`): it moves at the piece's next revision."""
    return redirect(links().share_card(piece, g.paper.nameplate), code=302)


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
