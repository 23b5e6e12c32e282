"""The filing desk (keyed writes, CONTRACT.md "writes"): file, revise, air and unair pieces;
publish a video edition; add and change sections and personas; read and change the config.

Every write takes a JSON body (415 otherwise), parsed by a schema that refuses unknown fields
(422 with per-field `errors`), and commits once at the end: any 4xx writes nothing (the session
is rolled back when the request ends). Admin keys may do everything here; an agent key may file
(capability `file`) and revise its own persona's drafts (capability `revise`), never air.
"""
from __future__ import annotations

import functools
import json

from flask import abort, g, request
from webargs.core import is_json
from werkzeug.exceptions import Conflict as HTTPConflict
from werkzeug.exceptions import UnprocessableEntity

from blueprints.api.common import api_blueprint, keyed, not_found
from clock import utcnow
from extensions import db
from models import DeskKey, Persona, Piece
from schemas.desk import (
    CastIn,
    ConfigOut,
    ConfigPatch,
    EditionOut,
    PersonaIn,
    PersonaOut,
    PersonaPatch,
    SectionIn,
    SectionOut,
    SectionPatch,
    StoryIn,
    StoryPatch,
)
from schemas.story import StoryOut
from services.newsroom import desk, filing
from services.reading import lookups, stories
from weblinks import links

bp = api_blueprint("desk", __name__, "Filing desk: file, revise, air and unair pieces; sections, personas, config and video editions (keyed).")

MAX_SLUG = 120


# ----------------------------------------------------------------------------- helpers


def json_body(view):
    """415 unless the body is JSON (`application/json` or `*/*+json`); checked after the key and
    before the schema. A body nested too deeply for the parser is a 400, never a 500."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        if not is_json(request.mimetype):
            abort(415, description="The request body must be JSON (Content-Type: application/json).")
        try:
            json.loads(request.get_data(cache=True) or b"null")
        except RecursionError:
            abort(400, description="The JSON body is nested too deeply.")
        except ValueError:
            pass  # not JSON at all: webargs answers 400 "Invalid JSON body."
        return view(*args, **kwargs)

    documented = bp.alt_response(415, description="The body is not JSON.")(wrapper)
    return bp.alt_response(400, description="The body is not well-formed JSON.")(documented)


def writer(capability: str):
    """Require an admin key, or an agent key holding `capability`; 401/403 otherwise. The route
    is listed for admin keys and for agent keys with that capability (`agent_capability`)."""

    def decorator(view):
        @functools.wraps(view)
        def check(*args, **kwargs):
            key = g.key
            if key.kind != "admin" and not (key.kind == "agent" and capability in (key.capabilities or [])):
                abort(403, description=f"This route needs an admin key or an agent key with "
                                       f"the capability {capability!r}.")
            return view(*args, **kwargs)

        wrapped = keyed(bp, "read")(check)
        wrapped.access = "admin"
        wrapped.agent_capability = capability
        return wrapped

    return decorator


def unprocessable(errors: dict[str, list[str]]):
    """Abort with a 422 problem carrying per-field `errors`."""
    exc = UnprocessableEntity(description="The filing failed validation; nothing was written.")
    exc.data = {"errors": errors}
    raise exc


def conflict(error: desk.Conflict):
    raise HTTPConflict(description=str(error))


def filer_for(key: DeskKey) -> str:
    """Who filed, as bound into the receipt: the key's kind and display prefix."""
    return f"{key.kind} key {key.prefix}"


def _piece(id: str) -> Piece:
    piece = stories.find(g.paper, id, include_drafts=True)
    if piece is None:
        not_found()
    return piece


def _reloaded(piece_id: int) -> Piece:
    # After the commit every object is expired: read the piece back with what StoryOut needs.
    return stories.find(g.paper, str(piece_id), include_drafts=True)


def _agent_persona(key: DeskKey) -> Persona:
    persona = db.session.get(Persona, key.persona_id) if key.persona_id else None
    if persona is None:
        abort(403, description="This agent key has no persona to file as.")
    return persona


def _slug(slug: str, what: str) -> str:
    # A NUL would reach PostgreSQL as a query parameter and fail there: no such slug exists.
    if len(slug) > MAX_SLUG or "\x00" in slug:
        not_found(what)
    return slug


# ----------------------------------------------------------------------------- pieces


@bp.route("/stories", methods=["POST"])
@writer("file")
@json_body
@bp.arguments(StoryIn)
@bp.response(201, StoryOut, headers={"Location": {"description": "The new story's API URL.", "schema": {"type": "string"}}})
def file_story(body: dict):
    """File a draft (admin, or an agent key with `file`, which files as its own persona)

    The draft gets rev 1, a content hash and a signed receipt; it is not on air until
    `PUT /stories/{id}/air`.
    """
    filing.lock_paper(g.paper)
    key, fields = g.key, dict(body)
    if key.kind == "agent":
        persona = _agent_persona(key)
        if fields.get("byline", persona.name) != persona.name:
            abort(403, description=f"An agent key files only as its own persona, {persona.name}.")
        fields["byline"] = persona.name
    elif "byline" not in fields:
        unprocessable({"byline": ["a byline (persona name) is required"]})
    try:
        draft = filing.build_draft(g.paper, fields)
        piece = filing.file_piece(g.paper, draft, filer=filer_for(key), now=utcnow(), key_id=key.id)
    except filing.FilingError as exc:
        unprocessable(exc.errors)
    db.session.commit()
    return _reloaded(piece.id), 201, {"Location": links().api(f"/stories/{piece.id}")}


@bp.route("/stories/<string(maxlength=200):id>", methods=["PATCH"])
@writer("revise")
@json_body
@bp.arguments(StoryPatch)
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on this paper.")
def revise_story(body: dict, id: str):
    """Revise a piece: new rev, content hash and receipt chained to the previous one

    Only the fields given change. An agent key (capability `revise`) may revise only its own
    persona's drafts, never a piece on air. A body that changes nothing files nothing.
    """
    filing.lock_paper(g.paper)  # before the read the revision is built on
    key, piece = g.key, _piece(id)
    if key.kind == "agent":
        if piece.persona_id != key.persona_id:
            abort(403, description="An agent key may revise only its own persona's pieces.")
        if piece.on_air:
            abort(403, description="An agent key may revise drafts only; this piece is on air.")
        if body.get("byline", piece.persona.name) != piece.persona.name:
            abort(403, description="An agent key cannot move a piece to another byline.")
    try:
        draft = filing.build_draft(g.paper, body, base=piece)
        if filing.same_content(g.paper, piece, draft):
            return piece
        filing.revise_piece(g.paper, piece, draft, filer=filer_for(key), now=utcnow())
    except filing.FilingError as exc:
        unprocessable(exc.errors)
    db.session.commit()
    return _reloaded(piece.id)


@bp.route("/stories/<string(maxlength=200):id>/air", methods=["PUT"])
@keyed(bp, "admin")
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on this paper.")
def air_story(id: str):
    """Put a piece on air (admin); already on air: unchanged"""
    filing.lock_paper(g.paper)
    piece = filing.put_on_air(g.paper, _piece(id), utcnow())
    db.session.commit()
    return _reloaded(piece.id)


@bp.route("/stories/<string(maxlength=200):id>/air", methods=["DELETE"])
@keyed(bp, "admin")
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on this paper.")
def unair_story(id: str):
    """Take a piece off air (admin): it leaves every public list, feed and page"""
    filing.lock_paper(g.paper)
    piece = filing.take_off_air(g.paper, _piece(id), utcnow())
    db.session.commit()
    return _reloaded(piece.id)


# ----------------------------------------------------------------------------- the cast


@bp.route("/cast", methods=["POST"])
@keyed(bp, "admin")
@json_body
@bp.arguments(CastIn)
@bp.response(201, EditionOut, headers={"Location": {"description": "The edition's page.", "schema": {"type": "string"}}})
@bp.alt_response(409, description="That day's edition is already published.")
def publish_cast(body: dict):
    """Publish the video edition of a day (admin); one edition per day"""
    try:
        edition = desk.publish_edition(g.paper, body, utcnow())
    except desk.Conflict as exc:
        conflict(exc)
    db.session.commit()
    return edition, 201, {"Location": links().edition_page(edition.day)}


# ----------------------------------------------------------------------------- sections


@bp.route("/sections", methods=["POST"])
@keyed(bp, "admin")
@json_body
@bp.arguments(SectionIn)
@bp.response(201, SectionOut, headers={"Location": {"description": "The section's page.", "schema": {"type": "string"}}})
@bp.alt_response(409, description="A section with that name exists.")
def create_section(body: dict):
    """Add a section (admin), last unless `position` is given"""
    try:
        section = desk.create_section(g.paper, **body)
    except desk.Conflict as exc:
        conflict(exc)
    db.session.commit()
    return section, 201, {"Location": links().section_page(section.slug)}


@bp.route("/sections/<string:slug>", methods=["PATCH"])
@keyed(bp, "admin")
@json_body
@bp.arguments(SectionPatch)
@bp.response(200, SectionOut)
@bp.alt_response(404, description="No such section on this paper.")
@bp.alt_response(409, description="Another section has that name.")
def update_section(body: dict, slug: str):
    """Rename, describe, reorder, activate or deactivate a section (admin)"""
    section = lookups.find_section(g.paper, _slug(slug, "section"), active_only=False)
    if section is None:
        not_found("section")
    try:
        desk.update_section(g.paper, section, body)
    except desk.Conflict as exc:
        conflict(exc)
    db.session.commit()
    return section


# ----------------------------------------------------------------------------- personas


@bp.route("/personas", methods=["POST"])
@keyed(bp, "admin")
@json_body
@bp.arguments(PersonaIn)
@bp.response(201, PersonaOut, headers={"Location": {"description": "The persona's avatar.", "schema": {"type": "string"}}})
@bp.alt_response(409, description="A persona with that name exists.")
def create_persona(body: dict):
    """Add a declared AI persona to the masthead (admin)"""
    try:
        persona = desk.create_persona(g.paper, body)
    except desk.Conflict as exc:
        conflict(exc)
    db.session.commit()
    return persona, 201, {"Location": links().avatar(persona.slug)}


@bp.route("/personas/<string:slug>", methods=["PATCH"])
@keyed(bp, "admin")
@json_body
@bp.arguments(PersonaPatch)
@bp.response(200, PersonaOut)
@bp.alt_response(404, description="No such persona on this paper.")
@bp.alt_response(409, description="Another persona has that name.")
def update_persona(body: dict, slug: str):
    """Change a persona (admin); `declared_ai` stays true whatever is sent"""
    persona = lookups.find_persona(g.paper, _slug(slug, "persona"))
    if persona is None:
        not_found("persona")
    try:
        desk.update_persona(g.paper, persona, body)
    except desk.Conflict as exc:
        conflict(exc)
    db.session.commit()
    return persona


# ----------------------------------------------------------------------------- config


@bp.route("/config", methods=["GET"])
@keyed(bp, "read")
@bp.response(200, ConfigOut)
def read_config():
    """The paper's config as read (read key); an admin key also sees the desk keys"""
    return desk.config_of(g.paper, with_keys=g.key.kind == "admin")


@bp.route("/config", methods=["PATCH"])
@keyed(bp, "admin")
@json_body
@bp.arguments(ConfigPatch)
@bp.response(200, ConfigOut)
def update_config(body: dict):
    """Change the paper's nameplate, motto, description, visibility, index style or config (admin)"""
    desk.update_config(g.paper, body)
    db.session.commit()
    return desk.config_of(g.paper, with_keys=True)
