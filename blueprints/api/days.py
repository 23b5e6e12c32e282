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
from services.reading import archive, cursors
from web import caching

bp = api_blueprint("days", __name__, "The day-by-day archive.")

CURSOR_400 = "A malformed or foreign `cursor`."


@bp.route("/days")
@bp.arguments(DaysQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, DayListOut, "days", bad_cursor=CURSOR_400, limit=(1, archive.MAX_DAYS))
def list_days(page: paging.Page):
    """Days with pieces on air, newest first, with counts and back-issue URLs, a page at a time

    `limit` is clamped to 1-366 (default 366); follow `next_cursor` (or `Link`) for older days.
    """
    after = page.after({}, cursors.parse_day)
    size = page.size
    rows = archive.list_days(g.paper, size + 1, None if after is None else after[0], now=caching.request_now())
    last = [rows[size - 1]["day"]] if len(rows) > size else None
    return {"days": rows[:size], "count": len(rows[:size])}, last


@bp.route("/days/<string:day>")
@bp.arguments(DayPath(), location="path", as_kwargs=True)
@bp.arguments(DayStoriesQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, DayStoriesOut, "day", bad_cursor="Not a real day, or a malformed or foreign `cursor`.",
                  limit=(1, 200))
def get_day(day: date, page: paging.Page):
    """Story rows of the pieces that went on air on a UTC day, newest first, a page at a time

    `day` must be a real date written YYYY-MM-DD (else 400). A day with nothing on air answers
    200 with an empty list. `limit` is clamped to 1-200 (default 200).
    """
    after = page.after({"day": day.isoformat()}, paging.phase(1), cursors.parse_moment, cursors.parse_id)
    rows, last = archive.day_page(g.paper, day, page.size, after, now=caching.request_now())
    return {"day": day, "stories": rows, "count": len(rows)}, last
