"""Days: the day-by-day archive (a day is the UTC date a piece went on air).

    GET /api/v1/days          days with pieces on air, newest first, a page (`limit`, `cursor`) at a time
    GET /api/v1/days/{day}    story rows of one day, a page at a time; `day` is a real YYYY-MM-DD (else 400)

Paging: docs/API.md "Paging and filters" (blueprints/api/paging.py).
"""
from __future__ import annotations

from datetime import date

from flask import g

from blueprints.api import paging
from blueprints.api.common import api_blueprint
from schemas.archive import DayListOut, DayPath, DaysQuery, DayStoriesOut, DayStoriesQuery
from services.errors import BadRequest
from services.reading import archive, cursors, stories

bp = api_blueprint("days", __name__, "The day-by-day archive.")

CURSOR_400 = "A malformed or foreign `cursor`."


@bp.route("/days")
@bp.arguments(DaysQuery(), location="query", as_kwargs=True)
@bp.response(200, DayListOut, headers=paging.LINK)
@bp.alt_response(400, description=CURSOR_400)
def list_days(limit: int, cursor: str | None = None):
    """Days with pieces on air, newest first, with counts and back-issue URLs, a page at a time

    `limit` is clamped to 1-366 (default 366); follow `next_cursor` (or `Link`) for older days.
    """
    after = paging.read("days", {}, cursor, 1)
    before = None if after is None else cursors.parse_day(after[0])
    size = stories.clamp(limit, 1, archive.MAX_DAYS)
    rows = archive.list_days(g.paper, size + 1, before)
    last = [rows[size - 1]["day"]] if len(rows) > size else None
    body, headers = paging.answer({"days": rows[:size], "count": len(rows[:size])}, "days", {}, last)
    return body, 200, headers


@bp.route("/days/<string:day>")
@bp.arguments(DayPath(), location="path", as_kwargs=True)
@bp.arguments(DayStoriesQuery(), location="query", as_kwargs=True)
@bp.response(200, DayStoriesOut, headers=paging.LINK)
@bp.alt_response(400, description="Not a real day, or a malformed or foreign `cursor`.")
def get_day(day: date, limit: int, cursor: str | None = None):
    """Story rows of the pieces that went on air on a UTC day, newest first, a page at a time

    `day` must be a real date written YYYY-MM-DD (else 400). A day with nothing on air answers
    200 with an empty list. `limit` is clamped to 1-200 (default 200).
    """
    filters = {"day": day.isoformat()}
    after = paging.read("day", filters, cursor, 3)
    if after is not None:
        if after[0] != 1:
            raise BadRequest("The cursor cannot be used here.", errors={"cursor": ["The cursor is malformed."]})
        after = [1, cursors.parse_moment(after[1]), cursors.parse_id(after[2])]
    rows, last = archive.day_page(g.paper, day, stories.clamp(limit, 1, 200), after)
    body, headers = paging.answer({"day": day, "stories": rows, "count": len(rows)}, "day", filters, last)
    return body, 200, headers
