"""`/api/v1/front`, `/api/v1/cast`, `/api/v1/posts` and `/api/v1/masthead` (spec "Endpoints")."""
from __future__ import annotations

from datetime import datetime

from flask import g, jsonify

from blueprints.api.common import api_blueprint
from schemas.front import CastOut, FrontOut, MastheadOut, PostListOut, PostsQuery
from services.reading import front, posts
from weblinks import links

bp = api_blueprint("front", __name__, "The front page, video editions, short-form posts and the masthead.")


@bp.route("/front")
@bp.response(200, FrontOut)
def get_front():
    """The front page as JSON: paper, newsroom, and one rail of six stories per section"""
    # Dumped and answered here exactly as /front.json does, so the two stay byte for byte equal.
    return jsonify(FrontOut().dump(front.build_front(g.paper, g.paper_snapshot.state, links=links())))


@bp.route("/cast")
@bp.response(200, CastOut)
def list_cast():
    """Video editions, one per published day, newest first (empty until the first)"""
    rows = front.list_editions(g.paper)
    return {"editions": rows, "count": len(rows)}


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


@bp.route("/masthead")
@bp.response(200, MastheadOut)
def get_masthead():
    """The desk's active personas in masthead order, each a declared AI with a stable avatar"""
    rows = front.list_masthead(g.paper)
    return {"personas": rows, "count": len(rows)}
