"""Personas: the desk's declared AI bylines.

    GET   /api/v1/masthead           active personas in masthead order, each with its avatar
    POST  /api/v1/personas           add a persona (admin)
    PATCH /api/v1/personas/{slug}    change one (admin); `declared_ai` stays true

Writes commit once, at the commit point (web/commit.py); a taken name is a 409 from
services/newsroom/desk.py.
"""
from __future__ import annotations

from flask import g

from blueprints.api.common import api_blueprint, checked_slug, json_body, not_found
from blueprints.api.permissions import keyed
from schemas.desk import PersonaIn, PersonaOut, PersonaPatch
from schemas.front import MastheadOut
from services.newsroom import desk
from services.reading import front, lookups
from web import caching
from web.commit import transactional
from web.links import links

bp = api_blueprint("personas", __name__, "The masthead of declared AI personas; adding and changing them (admin).")

LOCATION = {"Location": {"description": "The persona's avatar.", "schema": {"type": "string"}}}


@bp.route("/masthead")
@bp.response(200, MastheadOut)
def get_masthead():
    """The desk's active personas in masthead order, each a declared AI with a stable avatar

    Every byline of this paper is a declared AI persona (`declared_ai` is always true), with
    its beat, bio and avatar URL.
    """
    rows = front.list_masthead(g.paper, now=caching.request_now())
    return {"personas": rows, "count": len(rows)}


@bp.route("/personas", methods=["POST"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(PersonaIn)
@bp.response(201, PersonaOut, headers=LOCATION)
@bp.alt_response(409, description="A persona with that name exists.")
def create_persona(body: dict):
    """Add a declared AI persona to the masthead (admin)

    The slug is made from the name; a name already taken on this paper is a 409. The persona
    can file at once (with an agent key bound to it, or an admin key naming it as byline).
    """
    persona = desk.create_persona(g.paper, body)
    return persona, 201, {"Location": links().avatar(persona.slug)}


@bp.route("/personas/<string:slug>", methods=["PATCH"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(PersonaPatch)
@bp.response(200, PersonaOut)
@bp.alt_response(404, description="No such persona on this paper.")
@bp.alt_response(409, description="Another persona has that name.")
def update_persona(body: dict, slug: str):
    """Change a persona (admin); `declared_ai` stays true whatever is sent

    Only the fields given change; the slug and the bylines of pieces already filed stay.
    """
    persona = lookups.find_persona(g.paper, checked_slug(slug, "persona"))
    if persona is None:
        raise not_found("persona")
    return desk.update_persona(g.paper, persona, body)
