"""The paper's transparency log as C2SP tlog-tiles static resources (docs/PROOFS.md "The
transparency log"):

    GET /log/checkpoint                    the newest signed checkpoint, with any cosignatures
    GET /log/tile/<L>/<N>[.p/<W>]          Merkle tree tiles (hashes, 32 bytes each)
    GET /log/tile/entries/<N>[.p/<W>]      entry bundles

Public papers only (a private paper or an unknown host: 404, as tenancy answers). These answers
change when the worker signs, not when the paper's version moves, so they opt out of the
paper's ETag and response cache (`policy.route(cache=False)`) and carry their own validators: the checkpoint a
few seconds' `max-age` and an ETag of its bytes; tiles and bundles never change once served
(a partial tile's path names its width), so they are cacheable for a year. A tile past the
newest checkpoint is a 404 (it may exist later). Entry bundles are sent gzipped to clients
that accept it, as tlog-tiles recommends. Any origin may read them (CORS `read`), like the feeds.
"""
from __future__ import annotations

import hashlib

from flask import Blueprint, Response, g, request

from blueprints.api.log import public_log
from services.errors import NotFound
from services.transparency import store, tiles
from web import compression, policy
from web.headers import header

bp = Blueprint("transparency", __name__)

CHECKPOINT_CACHE = "public, max-age=5"
TILE_CACHE = "public, max-age=31536000, immutable"
TEXT_TYPE = "text/plain; charset=utf-8"
BINARY_TYPE = "application/octet-stream"


def _answer(body: bytes, content_type: str, cache_control: str, *, gzip_ok: bool = False) -> Response:
    """`body` with a strong ETag of its bytes; 304 when If-None-Match holds it."""
    etag = hashlib.sha256(body).hexdigest()[:32]
    if request.if_none_match.contains_weak(etag):
        response = Response(status=304)
    else:
        response = Response(body, content_type=content_type)
        if gzip_ok and compression.gzip_accepted(header("Accept-Encoding")):
            packed = compression.gzip_bytes(body)
            if packed is not None:
                response.set_data(packed)
                response.headers["Content-Encoding"] = "gzip"
    response.set_etag(etag, weak="Content-Encoding" in response.headers)
    response.headers["Cache-Control"] = cache_control
    if gzip_ok:
        response.headers["Vary"] = "Accept-Encoding"
    return response


@bp.route("/log/checkpoint")
@policy.route(cache=False, cors="read")
def checkpoint():
    """The newest signed checkpoint (signed note), with the cosignatures witnesses returned."""
    public_log(g.paper)
    newest = store.newest_checkpoint(g.paper.id)
    if newest is None:
        raise NotFound("This paper's log has no checkpoint yet.")
    return _answer(store.served(newest).encode("utf-8"), TEXT_TYPE, CHECKPOINT_CACHE)


@bp.route("/log/tile/<path:path>")
@policy.route(cache=False, cors="read")
def tile(path: str):
    """A tile or an entry bundle of the tree of the newest checkpoint (404 past it)."""
    row = public_log(g.paper)
    wanted = tiles.parse_path(path)
    if wanted is None:
        raise NotFound("No such tile: paths are tile/<L>/<N>[.p/<W>] and tile/entries/<N>[.p/<W>] "
                       "(c2sp.org/tlog-tiles).")
    body = store.tile_bytes(g.paper.id, wanted, row.signed_size)
    if body is None:
        raise NotFound("This tile is not in the log's newest checkpoint.")
    return _answer(body, BINARY_TYPE, TILE_CACHE, gzip_ok=wanted.level is None)
