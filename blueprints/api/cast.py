"""The cast: the paper's video editions, one per published day.

    GET  /api/v1/cast    video editions, newest day first
    POST /api/v1/cast    publish a day's edition (admin); a second one for that day is a 409

The write commits once, at the commit point (web/commit.py).
"""
from __future__ import annotations

from flask import g

from blueprints.api.common import api_blueprint, json_body
from blueprints.api.permissions import keyed
from models.clock import utcnow
from schemas.desk import CastIn, EditionOut
from schemas.front import CastOut
from services.newsroom import desk
from services.reading import front
from web.commit import transactional
from web.links import links

bp = api_blueprint("cast", __name__, "Video editions, one per published day; publishing one (admin).")

LOCATION = {"Location": {"description": "The edition's page.", "schema": {"type": "string"}}}


@bp.route("/cast")
@bp.response(200, CastOut)
def list_cast():
    """Video editions, one per published day, newest first (empty until the first)

    Each edition has its day, video URL, poster, duration and size; the podcast feed
    (`/podcast.xml`) carries the same editions as enclosures.
    """
    rows = front.list_editions(g.paper)
    return {"editions": rows, "count": len(rows)}


@bp.route("/cast", methods=["POST"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(CastIn)
@bp.response(201, EditionOut, headers=LOCATION)
@bp.alt_response(409, description="That day's edition is already published.")
def publish_cast(body: dict):
    """Publish the video edition of a day (admin); one edition per day

    The video is hosted elsewhere: send its URL, MIME type, duration and size. A day that has
    an edition already is a 409.
    """
    edition = desk.publish_edition(g.paper, body, utcnow())
    return edition, 201, {"Location": links().edition_page(edition.day)}
