"""`/api/v1/sections`, `/api/v1/days` and `/api/v1/days/{day}`: the paper's sections and its
day-by-day archive (spec "Endpoints"; CONTRACT.md "status codes" for a bad `day`)."""
from __future__ import annotations

from datetime import date

from flask import g

from blueprints.api.common import api_blueprint
from schemas.archive import DayListOut, DayPath, DayStoriesOut, SectionListOut
from services.reading import archive

bp = api_blueprint("archive", __name__, "Sections and the day-by-day archive.")


@bp.route("/sections")
@bp.response(200, SectionListOut)
def list_sections():
    """Active sections in the paper's own order, each with its count on air and page URL"""
    rows = archive.list_sections(g.paper)
    return {"sections": rows, "count": len(rows)}


@bp.route("/days")
@bp.response(200, DayListOut)
def list_days():
    """Every day with pieces on air, newest first, with counts and back-issue URLs (at most 366)"""
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
