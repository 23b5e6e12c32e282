"""Days: the day-by-day archive (a day is the UTC date a piece went on air).

    GET /api/v1/days          every day with pieces on air, newest first (at most 366)
    GET /api/v1/days/{day}    story rows of one day; `day` is a real YYYY-MM-DD (else 400)
"""
from __future__ import annotations

from datetime import date

from flask import g

from blueprints.api.common import api_blueprint
from schemas.archive import DayListOut, DayPath, DayStoriesOut
from services.reading import archive

bp = api_blueprint("days", __name__, "The day-by-day archive.")


@bp.route("/days")
@bp.response(200, DayListOut)
def list_days():
    """Every day with pieces on air, newest first, with counts and back-issue URLs (at most 366)

    A day is the UTC date a piece went on air. Each day links to its back-issue page and to
    `/api/v1/days/{day}`.
    """
    rows = archive.list_days(g.paper)
    return {"days": rows, "count": len(rows)}


@bp.route("/days/<string:day>")
@bp.arguments(DayPath, location="path", as_kwargs=True)
@bp.response(200, DayStoriesOut)
def get_day(day: date):
    """Story rows of the pieces that went on air on a UTC day, newest first

    `day` must be a real date written YYYY-MM-DD (else 400). A day with nothing on air answers
    200 with an empty list.
    """
    rows = archive.pieces_on_day(g.paper, day)
    return {"day": day, "stories": rows, "count": len(rows)}
