"""The paper's transparency log as C2SP tlog-tiles static resources (docs/PROOFS.md "The
transparency log"):

    GET /log/checkpoint                    the newest signed checkpoint, with any cosignatures
    GET /log/tile/<L>/<N>[.p/<W>]          Merkle tree tiles (hashes, 32 bytes each)
    GET /log/tile/entries/<N>[.p/<W>]      entry bundles

Public papers only (a private paper or an unknown host: 404, as tenancy answers). They are
public answers like any other (an ETag, the response cache, the replay; web/caching.py): signing a
checkpoint or adding a cosignature moves the paper's version (services/transparency/store.py),
so none outlives what it shows. Their route policy sets their Cache-Control: the checkpoint a
few seconds' `max-age`; tiles and bundles never change once served (a partial tile's path names
its width), so they are cacheable for a year. A tile past the newest checkpoint is a 404 (it may
exist later). Tiles are gzipped for clients that accept it (the entry bundles shrink; hash tiles
do not, and go as they are), as tlog-tiles recommends. Any origin may read them (CORS `read`).
"""
from __future__ import annotations

from flask import Blueprint, Response, g

from blueprints.api.log import public_log
from services.errors import NotFound
from services.reading import memo
from services.transparency import store, tiles
from web import caching, policy

bp = policy.blueprint(Blueprint("transparency", __name__), problems=True)

CHECKPOINT_CACHE = "public, max-age=5"
TILE_CACHE = "public, max-age=31536000, immutable"
TEXT_TYPE = "text/plain; charset=utf-8"
BINARY_TYPE = "application/octet-stream"
# Every tile miss alike, a path that names no tile or one past the newest checkpoint.
NO_TILE = ("No such tile in the log's newest checkpoint: paths are tile/<L>/<N>[.p/<W>] and "
           "tile/entries/<N>[.p/<W>] (c2sp.org/tlog-tiles); a tile past the checkpoint may exist later.")


@bp.route("/log/checkpoint")
@policy.route(cors="read", cache_control=CHECKPOINT_CACHE)
def checkpoint():
    """The newest signed checkpoint (signed note), with the cosignatures witnesses returned.
    Read once per paper version in a worker (signing and cosigning move the version)."""
    served = memo.per_version("log checkpoint", memo.paper_state(g.paper, caching.request_now()), _newest_checkpoint)
    return Response(served.encode("utf-8"), content_type=TEXT_TYPE)


def _newest_checkpoint() -> str:
    # Raises rather than return "none yet", so that no absence is kept: the worker makes a new
    # paper's log, with its first checkpoint, in a transaction of its own.
    public_log(g.paper)
    newest = store.newest_checkpoint(g.paper.id)
    if newest is None:
        raise NotFound("This paper's log has no checkpoint yet.")
    return store.served(newest)


@bp.route("/log/tile/<path:path>")
@policy.route(cors="read", cache_control=TILE_CACHE, compress=True)
def tile(path: str):
    """A tile or an entry bundle of the tree of the newest checkpoint (404 past it)."""
    # A path that names no tile is refused before anything of the log is looked up (it costs
    # no statement), with the 404 of every tile miss.
    wanted = tiles.parse_path(path)
    if wanted is None:
        raise NotFound(NO_TILE)
    # The newest checkpoint's size, read once per paper version like the checkpoint itself.
    signed_size = memo.per_version("log signed size", memo.paper_state(g.paper, caching.request_now()),
                                   lambda: public_log(g.paper).signed_size)
    body = store.tile_bytes(g.paper.id, wanted, signed_size)
    if body is None:
        raise NotFound(NO_TILE)
    return Response(body, content_type=BINARY_TYPE)
