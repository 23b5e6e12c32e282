"""Sections: the paper's departments, in its own order.

    GET   /api/v1/sections          active sections, each with its count on air and page URL (paged)
    POST  /api/v1/sections          add a section (admin)
    PATCH /api/v1/sections/{slug}   rename, describe, reorder, (de)activate one (admin)

Writes commit once, at the commit point (web/commit.py); a taken name is a 409 from
services/newsroom/desk.py.
"""
from __future__ import annotations

from flask import g

from blueprints.api import paging
from blueprints.api.common import api_blueprint, checked_slug, json_body, not_found
from blueprints.api.permissions import keyed
from schemas.archive import SectionListOut, SectionsQuery
from schemas.desk import SectionIn, SectionOut, SectionPatch
from services.newsroom import desk
from services.reading import archive, cursors, lookups
from web import caching
from web.commit import transactional
from web.links import links

bp = api_blueprint("sections", __name__, "The paper's sections, in order; adding and changing them (admin).")

LOCATION = {"Location": {"description": "The section's page.", "schema": {"type": "string"}}}


@bp.route("/sections")
@bp.arguments(SectionsQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, SectionListOut, "sections", bad_cursor="A malformed or foreign `cursor`.", limit=(1, 200))
def list_sections(page: paging.Page):
    """Active sections in the paper's own order, each with its count on air and page URL

    A page at a time in the paper's order (position, then id): `limit` is clamped to 1-200
    (default 200); follow `next_cursor` (or `Link`) for the rest.
    """
    after = page.after({}, cursors.parse_id, cursors.parse_id)
    rows, last = archive.list_sections(g.paper, page.size, after, now=caching.request_now())
    return {"sections": rows, "count": len(rows)}, last


@bp.route("/sections", methods=["POST"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(SectionIn)
@bp.response(201, SectionOut, headers=LOCATION)
@bp.alt_response(409, description="A section with that name exists.")
def create_section(body: dict):
    """Add a section (admin), last unless `position` is given

    The slug is made from the name. A name already taken on this paper is a 409. The answer's
    `Location` is the section's page.
    """
    section = desk.create_section(g.paper, **body)
    return section, 201, {"Location": links().section_page(section.slug)}


@bp.route("/sections/<string:slug>", methods=["PATCH"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(SectionPatch)
@bp.response(200, SectionOut)
@bp.alt_response(404, description="No such section on this paper.")
@bp.alt_response(409, description="Another section has that name.")
def update_section(body: dict, slug: str):
    """Rename, describe, reorder, activate or deactivate a section (admin)

    Only the fields given change; the slug stays. A name another section has is a 409.
    """
    section = lookups.find_section(g.paper, checked_slug(slug, "section"), active_only=False)
    if section is None:
        raise not_found("section")
    return desk.update_section(g.paper, section, body)
