"""The front page as JSON.

    GET /api/v1/front    paper, newsroom, and one rail of six stories per section
"""
from __future__ import annotations

from flask import g, jsonify

from blueprints.api.common import api_blueprint
from schemas.front import FrontOut, front_wire
from services.reading import front
from web import caching
from web.links import links

bp = api_blueprint("front", __name__, "The front page.")


@bp.route("/front")
@bp.response(200, FrontOut)
def get_front():
    """The front page as JSON: paper, newsroom, and one rail of six stories per section

    The same front the home page shows: the paper's public settings, the newsroom (masthead),
    the latest edition, and a rail of the six newest pieces on air per active section.
    """
    # Built and answered here exactly as /front.json does, so the two stay byte for byte equal:
    # Core rows straight into FrontOut's shape (schemas/front.py `front_wire`).
    caching.depends_on_lists()
    here = links()
    now = caching.request_now()
    document = front.build_front(g.paper, caching.paper_state(), now=now, links=here, rows=True)
    return jsonify(front_wire(document, here, now))
