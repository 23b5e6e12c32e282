"""Posts: ready-to-post short forms of the pieces on air.

    GET /api/v1/posts    newest first; `limit` 1-100 (default 20), `since` an RFC 3339 time
"""
from __future__ import annotations

from datetime import datetime

from flask import g

from blueprints.api.common import api_blueprint
from schemas.front import PostListOut, PostsQuery
from services.reading import posts
from weblinks import links

bp = api_blueprint("posts", __name__, "Short-form posts of the pieces on air.")


@bp.route("/posts")
@bp.arguments(PostsQuery, location="query", as_kwargs=True)
@bp.response(200, PostListOut)
def list_posts(limit: int, since: datetime | None = None):
    """Ready-to-post short forms (at most 280 characters) of pieces on air, newest first

    Deterministic: no model writes them. `limit` is 1-100 (default 20); `since` keeps pieces
    that went on air strictly after that time.
    """
    rows = posts.list_posts(g.paper, limit, since, links=links())
    return {"posts": rows, "count": len(rows)}
