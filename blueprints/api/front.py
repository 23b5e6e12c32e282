"""The front page as JSON.

    GET /api/v1/front    paper, newsroom, and one rail of six stories per section
"""
from __future__ import annotations

from flask import g, jsonify

from blueprints.api.common import api_blueprint
from schemas.front import FrontOut
from services import front

bp = api_blueprint("front", __name__, "The front page.")


@bp.route("/front")
@bp.response(200, FrontOut)
def get_front():
    """The front page as JSON: paper, newsroom, and one rail of six stories per section"""
    # build_front already returns the wire document (shared with /front.json): no second dump.
    return jsonify(front.build_front(g.paper))
