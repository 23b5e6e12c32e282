"""`/api/v1/stories` and `/api/v1/stories/{id}`: the public story list and full stories.

With a key of the paper (read level), the list also shows that desk's drafts, marked
`on_air: false`, and drafts can be read by id (spec "Endpoints"; issue #3 adds the writes).
"""
from __future__ import annotations

from flask import g

import http_cache
from blueprints.api.common import OPTIONAL_SECURITY, api_blueprint, not_found
from schemas.story import StoriesQuery, StoryListOut, StoryOut
from services.reading import stories

bp = api_blueprint("stories", __name__, "Pieces: newest-first lists and full stories.")


@bp.route("/stories")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.arguments(StoriesQuery, location="query", as_kwargs=True)
@bp.response(200, StoryListOut)
def list_stories(limit: int):
    """Newest pieces first, on air only (with a read key: drafts too)

    `limit` is clamped to 1-200 (default 50).
    """
    rows = stories.latest(g.paper, stories.clamp(limit, 1, 200), include_drafts=g.key is not None)
    return {"stories": rows, "count": len(rows)}


@bp.route("/stories/<string(maxlength=200):id>")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.response(200, StoryOut)
@bp.alt_response(404, description="No such piece on air on this paper.")
def get_story(id: str):
    """A full story by id or slug: prose with `[^N]` markers, cited facts, persona, disclosure"""
    piece = stories.find(g.paper, id, include_drafts=g.key is not None)
    if piece is None:
        not_found()
    http_cache.tag_piece(piece)
    return piece
