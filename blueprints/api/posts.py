"""Posts: ready-to-post short forms of the pieces on air.

    GET /api/v1/posts    newest first; `limit` 1-100 (default 20), `cursor`; with `since` (an RFC 3339
                         time) the pieces after it, oldest first
"""
from __future__ import annotations

from datetime import datetime

from flask import g

from blueprints.api import paging
from blueprints.api.common import api_blueprint
from schemas.front import PostListOut, PostsQuery
from services.reading import cursors, posts
from web import caching
from web.links import links

bp = api_blueprint("posts", __name__, "Short-form posts of the pieces on air.")


@bp.route("/posts")
@bp.arguments(PostsQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, PostListOut, "posts",
                  bad_cursor="A malformed `since`, a `limit` outside 1-100, or a malformed or foreign `cursor`.")
def list_posts(page: paging.Page, since: datetime | None = None):
    """Ready-to-post short forms (at most 280 characters) of pieces on air, a page at a time

    Deterministic: no model writes them. `limit` is 1-100 (default 20). Without `since`, newest
    first. With `since`, pieces that went on air strictly after that time, oldest first: a bot
    that follows `next_cursor`, or advances `since` to the last post's `on_air_at`, misses
    nothing however many pieces arrived.
    """
    after = page.after({"since": None if since is None else cursors.moment(since)},
                       paging.phase(1), cursors.parse_moment, cursors.parse_id)
    rows, last = posts.list_posts(g.paper, page.size, since, now=caching.request_now(), links=links(), after=after)
    return {"posts": rows, "count": len(rows)}, last
