"""The paper's transparency log, its JSON face (the log itself is served under `/log/`,
blueprints/log.py; docs/PROOFS.md "The transparency log").

    GET /api/v1/log                        origin, vkey, checkpoint and tile prefix URLs, size
    GET /api/v1/stories/{id}/log-proof     the piece's newest entry, proved (c2sp.org/tlog-proof@v1)

Public; a private paper's log is not served (404, even with a key). Public answers like any
other (an ETag, the response cache, the replay; web/caching.py): signing a checkpoint moves the
paper's version, so none outlives the checkpoint it shows; their route policy keeps them in
caches a few seconds.
"""
from __future__ import annotations

from flask import Response, current_app, g, jsonify

from blueprints.api.common import MAX_SLUG, api_blueprint
from models.clock import utcnow
from schemas.log import LogOut
from services.errors import NotFound
from services.transparency import entries, note, store, witness
from web import policy
from web.links import links

bp = api_blueprint("log", __name__, "The paper's public transparency log of every piece's content hashes "
                                    "(C2SP tlog-tiles), and per-piece inclusion proofs.")

SHORT = "public, max-age=5"
MAX_ID = 2**31 - 1  # ids are 32-bit integers: a larger number names no piece (and would not bind)
PROOF_TYPE = "text/plain; charset=utf-8"
PROOF_EXAMPLE = (
    "c2sp.org/tlog-proof@v1\n"
    "extra eyJhdCI6IjIwMjYtMTEtMjBUMTI6MDA6MDBaIiwiLi4uIjoiLi4uIn0=\n"
    "index 41\n"
    "gSKyXoYZUgZ6jduWYrkDOARinOMGJveXjgMkBTcdPlQ=\n"
    "B95lDa8R83lS8n0eG+o0buTxRKQTYFi//1U8anccXmA=\n"
    "\n"
    "demo.example.org/log\n"
    "1204\n"
    "sFodV/vSp5O8n9a8QpW6PRY97tfOSW5bsc2Xl/EQi08=\n"
    "\n"
    "\u2014 demo.example.org/log K1sONLxS0...\n")


def public_log(paper):
    """The paper's log when it is served: a public paper whose log exists; else NotFound."""
    row = store.get_log(paper.id) if paper.is_public else None
    if row is None:
        raise NotFound("This paper has no public transparency log (yet: the worker makes it within seconds).")
    return row


def _witnesses() -> list[dict]:
    try:
        found = witness.parse_config(current_app.config["LOG_WITNESSES"])
    except ValueError:
        return []
    return [{"name": w.name, "vkey": note.vkey(w.name, w.verifier.public_key, note.COSIGNATURE)} for w in found]


@bp.route("/log")
@policy.route(cache_control=SHORT)
@bp.response(200, LogOut, headers={"Cache-Control": {
    "description": "`public, max-age=5`: the size moves whenever the log signs a checkpoint.",
    "schema": {"type": "string"}}})
@bp.alt_response(404, description="The paper is private, or its log is not made yet.")
def log_index():
    """The paper's transparency log: origin, verifier key, checkpoint and tile URLs, size

    Every public change of a piece (aired, revised, unaired) is an entry of this C2SP tlog-tiles
    log, in change-feed order, and the log's signed checkpoints commit to all of them. Verify
    with any tlog client (Go's `golang.org/x/mod/sumdb/tlog` and `note`), or `flask log verify`.
    The log proves the paper never silently rewrote, deleted or backdated a piece's published
    hash; it never proves that a claim in a piece is true.
    """
    row = public_log(g.paper)
    here = links()
    body = {"origin": row.origin, "vkey": store.vkey_of(row), "checkpoint": here.absolute("/log/checkpoint"),
            "prefix": here.absolute("/log"), "size": row.signed_size, "entry_format": entries.FORMAT,
            "witnesses": _witnesses(), "proof": here.api("/stories/{id}/log-proof")}
    return jsonify(body)


@bp.route("/stories/<string(maxlength=200):id>/log-proof")
@policy.route(cache_control=SHORT)
@bp.response(200, description="The proof (c2sp.org/tlog-proof@v1): the entry as `extra`, its index, "
                              "the inclusion proof, then the checkpoint with its signatures.")
@bp.doc(responses={200: {"content": {"text/plain": {"schema": {"type": "string"}, "example": PROOF_EXAMPLE}}}})
@bp.alt_response(404, description="No piece with this id was ever public here (drafts are never logged), "
                                  "the paper is private, or the piece's newest change is not in a signed "
                                  "checkpoint yet (then `Retry-After` says when to try again).")
def story_log_proof(id: str):
    """A piece's newest log entry with its inclusion proof (c2sp.org/tlog-proof@v1)

    Proves that the piece's newest public change (its `aired`, `revised` or `unaired` entry,
    given base64 on the `extra` line) is in the log, against the newest checkpoint, whose
    signature lines follow. Works for a piece taken off air too (its `unaired` entry).
    """
    public_log(g.paper)
    now = utcnow()
    if id.isascii() and id.isdigit() and len(id) <= 12:
        piece_id = int(id)
    elif len(id) <= MAX_SLUG and "\x00" not in id:
        piece_id = store.ever_public_piece(g.paper, id, now)
    else:
        piece_id = None
    if piece_id is None or piece_id > MAX_ID:
        raise NotFound(store.NEVER_PUBLIC)  # every miss alike (store.NEVER_PUBLIC)
    interval = int(current_app.config["LOG_CHECKPOINT_SECONDS"]) + 1
    text = store.piece_proof(g.paper, piece_id, now, retry_after=interval)
    return Response(text, content_type=PROOF_TYPE)
