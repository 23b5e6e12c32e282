"""Stories: the pieces of a paper, read and written.

    GET    /api/v1/stories               newest first; with a key of the paper, drafts too
    GET    /api/v1/stories/{id}          a full story by id or slug (drafts with a key)
    POST   /api/v1/stories               file a draft (admin, or agent with `file`)
    PATCH  /api/v1/stories/{id}          revise (admin, or agent with `revise`: own drafts)
    PUT    /api/v1/stories/{id}/air      on air now, or at `{"at": RFC 3339}` (admin, or agent with `air`: own pieces)
    DELETE /api/v1/stories/{id}/air      take off air, or cancel a schedule (admin, or agent with `air`)
    GET    /api/v1/stories/{id}/proof    the provenance record (read key)
    GET    /api/v1/stories/{id}/revisions        the public history, newest first
    GET    /api/v1/stories/{id}/revisions/{rev}  one public revision's full text and receipt

Writes take a JSON body (415 otherwise) parsed by a schema that refuses unknown fields (422
with per-field `errors`), and commit once, at the commit point (web/commit.py): any 4xx writes
nothing. Who may write what is blueprints/api/permissions.py. A proof proves which paper's desk
filed a revision and that it is unchanged since; it never proves that the piece's claims are
true (docs/PROOFS.md verifies one offline).
"""
from __future__ import annotations

import functools

from flask import abort, g, jsonify, request
from webargs.core import is_json

from blueprints.api import paging, permissions
from blueprints.api.common import OPTIONAL_SECURITY, api_blueprint, json_body, not_found
from blueprints.api.permissions import keyed, writer
from extensions import db
from models import DeskKey, Piece
from models.clock import utcnow
from schemas.desk import AirIn, StoryIn, StoryPatch
from schemas.proof import ProofOut
from schemas.revision import RevisionListOut, RevisionsQuery, RevisionTextOut
from schemas.story import FiledStoryOut, StoriesQuery, StoryListOut, StoryOut, story_row_wire, story_wire
from services.errors import BadRequest, Unauthorized
from services.newsroom import filing, provenance
from services.reading import cursors, revisions, stories
from web import caching
from web.commit import transactional
from web.links import links

bp = api_blueprint("stories", __name__, "Pieces: newest-first lists and full stories; filing, "
                                        "revising, airing and proofs (keyed).")

LOCATION = {"Location": {"description": "The new story's API URL.", "schema": {"type": "string"}}}


def filer_for(key: DeskKey) -> str:
    """Who filed, as bound into the receipt: the key's kind and display prefix."""
    return f"{key.kind} key {key.prefix}"


def _piece(id: str) -> Piece:
    """Any piece of the paper (drafts too) by id or slug, with what StoryOut needs; NotFound."""
    piece = stories.find(g.paper, id, now=caching.request_now(), include_drafts=True)
    if piece is None:
        raise not_found()
    return piece


def _as_filed(piece: Piece) -> Piece:
    # A filing sets the piece's section and persona ids and replaces its cited facts; its
    # relationships never lazy-load (raise_on_sql), so read it back in one statement, inside
    # the still open transaction.
    db.session.expire(piece)
    return _piece(str(piece.id))


# ----------------------------------------------------------------------------- reading


@bp.route("/stories")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.arguments(StoriesQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, StoryListOut, "stories", limit=(1, 200), wire=True,
                  bad_cursor="A malformed or foreign `cursor`, or a `section` or `persona` the paper lacks.")
@bp.alt_response(401, description="`status=draft` or `status=all` without a key.")
def list_stories(page: paging.Page, section: str | None = None, persona: str | None = None,
                 status: str | None = None, full: bool = False):
    """Pieces newest first, a page at a time; filter by section, persona and (keyed) status

    `limit` is clamped to 1-200 (default 50). Follow `next_cursor` (or the `Link` header) for the
    next page: the walk visits every piece exactly once, newest first, even while pieces air
    meanwhile (those are newer than the walk and not in it). `status`: `on_air` (the default
    without a key), `draft`, `all` (the default with a key: on air first, then drafts); an agent
    key sees only its own persona's drafts. `full=true`: each row is the full story, as
    `/stories/{id}` answers it (for mirrors and log monitors).
    """
    caching.depends_on_lists()
    if status is None:
        status = "all" if permissions.sees_drafts(g.key) else "on_air"
    elif status != "on_air" and not permissions.sees_drafts(g.key):
        raise Unauthorized("Drafts need a desk key: `status=draft` and `status=all` are keyed.")
    scope, filters = _story_filters(status, section, persona)
    # The phases a position can have on this status's lane (stories.position).
    phases = (1,) if status == "on_air" else (0,) if status == "draft" else (0, 1)
    after = page.after(filters, paging.phase(*phases), cursors.parse_moment, cursors.parse_id)
    now = caching.request_now()
    rows, more = stories.page(g.paper, page.size, scope, after, now=now)
    here = links()
    # Straight from Core rows to StoryListOut's shape (schemas/story.py says why).
    if full:
        nameplate = g.paper.nameplate
        listed = [story_wire(story, facts, here, nameplate, now)
                  for story, facts in stories.full_rows(g.paper, rows, now=now, public=status == "on_air")]
    else:
        listed = [story_row_wire(row, here, now) for row in rows]
    return {"stories": listed, "count": len(listed)}, stories.position(rows[-1]) if more else None


def _story_filters(status: str, section: str | None, persona: str | None) -> tuple[stories.PageFilter, dict]:
    """(the page filter, the filter values a cursor binds) of a `/stories` request; BadRequest
    (400, per field) for a section or persona the paper does not have."""
    section_id = persona_id = None
    if section is not None:
        section_id = stories.section_id_named(g.paper, section)
        if section_id is None:
            raise BadRequest("No such section on this paper.", errors={"section": [f"No section named {section!r}."]})
    if persona is not None:
        persona_id = stories.persona_id_named(g.paper, persona)
        if persona_id is None:
            raise BadRequest("No such persona on this paper.", errors={"persona": [f"No persona {persona!r}."]})
    drafts_of = permissions.drafts_of(g.key)
    scope = stories.PageFilter(status, drafts_of, section_id, persona_id)
    return scope, {"status": status, "section": section_id, "persona": persona_id, "drafts_of": drafts_of}


@bp.route("/stories/<string(maxlength=200):id>")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on air on this paper.")
def get_story(id: str):
    """A full story by id or slug: prose with `[^N]` markers, cited facts, persona, disclosure

    A piece on air to everyone; with a key of the paper, drafts too (an agent key only its own
    persona's). Each `[^N]` marker in the prose has cited fact N, with its source.
    """
    now = caching.request_now()
    paper, key = g.paper, g.key  # once: each read of `g` is a context lookup
    found = stories.find_row(paper, id, now=now, include_drafts=permissions.sees_drafts(key),
                             drafts_of=permissions.drafts_of(key))
    if found is None:
        raise not_found()
    story, facts = found
    caching.tag_piece(story)
    caching.depends_on_piece(story)
    # Straight from Core rows to StoryOut's shape (schemas/story.py says why).
    return jsonify(story_wire(story, facts, links(), paper.nameplate, now))


@bp.route("/stories/<string(maxlength=200):id>/proof")
@keyed(bp, "key")
@bp.response(200, ProofOut)
@bp.alt_response(404, description="No such piece on this paper.")
def story_proof(id: str):
    """The provenance record of a piece (drafts too): basis, content hash, receipt, chain

    A signature proves who filed a piece and that it has not changed; it never proves that a
    claim is true.
    """
    piece = stories.find(g.paper, id, now=caching.request_now(), include_drafts=True,
                         drafts_of=permissions.drafts_of(g.key))
    if piece is None:
        raise not_found()
    proof = provenance.proof_for(piece)
    proof["receipt_verify"]["keys_url"] = links().api("/receipt-keys")
    return proof


def _history(id: str) -> revisions.History:
    history = revisions.history_of(g.paper, id, now=caching.request_now())
    if history is None:
        raise not_found()
    return history


@bp.route("/stories/<string(maxlength=200):id>/revisions")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.arguments(RevisionsQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, RevisionListOut, "revisions", bad_cursor="A malformed or foreign `cursor`.", limit=(1, 200))
@bp.alt_response(404, description="No such piece, or one never public.")
def list_revisions(id: str, page: paging.Page):
    """A piece's public history: its revisions newest first, each kind, note, hashes and receipt

    From the revision the piece first aired with (a draft's earlier revisions stay private); a
    piece taken off air keeps this list, not its texts. Each revision's full text is at its
    `url`, and hashes to its `content_hash` (docs/CORRECTIONS.md).
    """
    history = _history(id)
    after = page.after({"piece": history.piece.id}, cursors.parse_id)
    rows, more = revisions.page(history, page.size, None if after is None else after[0])
    here = links()
    listed = [{**revisions.record(row), "url": here.api(f"/stories/{history.piece.id}/revisions/{row.rev}")}
              for row in rows]
    return {"revisions": listed, "count": len(listed)}, [rows[-1].rev] if more else None


@bp.route("/stories/<string(maxlength=200):id>/revisions/<int(max=2147483647):rev>")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.response(200, RevisionTextOut)
@bp.alt_response(404, description="No such piece or revision, or one not public (a draft's).")
@bp.alt_response(410, description="The piece was taken off air: its history's hashes stay public, its texts do not.")
def get_revision(id: str, rev: int):
    """One public revision's full text (its hash basis), with its receipt to verify offline

    `basis` hashes to `content_hash` (RFC 8785, SHA-256), the hash the transparency log holds
    for this revision; `flask verify-proof URL` checks it and its receipt.
    """
    history = _history(id)
    row = revisions.revision(history, rev)
    if row is None:
        raise not_found()
    return provenance.revision_proof(row, links().api("/receipt-keys"))


# ----------------------------------------------------------------------------- writing


def optional_json_body(view):
    """Like common.json_body, for a write whose body is optional (`PUT .../air`): no body at
    all passes (as before bodies were read); a body that is there must be JSON (415 otherwise)
    and well-formed (DeskParser's 400)."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        if request.get_data(cache=True) and not is_json(request.mimetype):
            abort(415, description="The request body must be JSON (Content-Type: application/json).")
        return view(*args, **kwargs)

    documented = bp.alt_response(415, description="A body was sent and is not JSON.")(wrapper)
    return bp.alt_response(400, description="The body is not well-formed JSON.")(documented)


@bp.route("/stories", methods=["POST"])
@transactional
@writer(bp, "file")
@json_body(bp)
@bp.arguments(StoryIn)
@bp.response(201, FiledStoryOut, headers=LOCATION)
def file_story(body: dict):
    """File a draft (admin, or an agent key with `file`, which files as its own persona)

    The draft gets rev 1, a content hash and a signed receipt; it is not on air until
    `PUT /stories/{id}/air`. `unsupported_figures` lists each figure (a number with a unit,
    percent or currency sign) of headline, dek and prose that no cited fact states; a paper
    whose config sets `refuse_unsupported_figures` refuses the filing instead (422, each named).
    """
    filing.lock_paper(g.paper)
    fields = permissions.check_file(g.key, body)
    draft = filing.build_draft(g.paper, fields)
    piece = filing.file_piece(g.paper, draft, filer=filer_for(g.key), now=utcnow(), key_id=g.key.id)
    return _as_filed(piece), 201, {"Location": links().api(f"/stories/{piece.id}")}


@bp.route("/stories/<string(maxlength=200):id>", methods=["PATCH"])
@transactional
@writer(bp, "revise")
@json_body(bp)
@bp.arguments(StoryPatch)
@bp.response(200, FiledStoryOut)
@bp.alt_response(404, description="No such piece on this paper.")
def revise_story(body: dict, id: str):
    """Revise a piece: new rev, content hash and receipt chained to the previous one

    Only the fields given change. A piece readers have seen is revised as a `correction`,
    `clarification`, `update` (the default) or `retraction`, with a public `note` (required but
    for an update); one never public as an `edit` (docs/CORRECTIONS.md). An agent key
    (capability `revise`) may revise only its own persona's drafts, never a piece on air. A body
    that changes nothing files nothing; one that names its `kind` files its notice.
    """
    filing.lock_paper(g.paper)  # before the read the revision is built on
    piece = _piece(id)
    permissions.check_revise(g.key, piece, body)
    fields = {k: v for k, v in body.items() if k not in ("kind", "note")}
    draft = filing.build_draft(g.paper, fields, base=piece)
    now = utcnow()
    filing.type_revision(piece, draft, body.get("kind"), body.get("note"), now)
    if filing.same_content(g.paper, piece, draft, with_notice="kind" in body):
        return piece
    filing.revise_piece(g.paper, piece, draft, filer=filer_for(g.key), now=now)
    return _as_filed(piece)


@bp.route("/stories/<string(maxlength=200):id>/air", methods=["PUT"])
@transactional
@writer(bp, "air")
@optional_json_body
@bp.arguments(AirIn, required=False, example={"at": "2026-11-25T07:00:00Z"})
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on this paper.")
def air_story(body: dict, id: str):
    """Put a piece on air now, or schedule it (admin, or an agent key with `air`: its own persona's)

    Without a body (or without `at`, or with `at` not in the future) the piece airs now; a
    body, when sent, is JSON (415 otherwise). With
    `{"at": "<RFC 3339>"}` in the future it is scheduled: on no public surface (API, pages,
    feeds, sitemaps, search, embeds, oEmbed) until that instant and on all of them after, with
    `air_at` showing the instant on keyed reads. Already public: unchanged. Already scheduled:
    scheduled again for `at`, or aired now without it. Once public, subscribers' alerts,
    content webhooks and the CDN purge follow.
    """
    filing.lock_paper(g.paper)
    piece = _piece(id)
    permissions.check_air(g.key, piece)
    return filing.put_on_air(g.paper, piece, utcnow(), (body or {}).get("at"))


@bp.route("/stories/<string(maxlength=200):id>/air", methods=["DELETE"])
@transactional
@writer(bp, "air")
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on this paper.")
def unair_story(id: str):
    """Take a piece off air, or cancel its schedule (admin, or an agent key with `air`: its own persona's)

    A public piece leaves every public list, feed and page (the change feed lists an `unaired`
    tombstone). A scheduled piece goes back to being a draft and never airs. Keyed reads still show
    it; taking a draft off air changes nothing.
    """
    filing.lock_paper(g.paper)
    piece = _piece(id)
    permissions.check_air(g.key, piece)
    return filing.take_off_air(g.paper, piece, utcnow())
