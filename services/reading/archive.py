"""Sections with their on-air counts and the day-by-day archive (`/sections`, `/days`,
`/days/{day}`). Each function issues at most one SQL statement whatever the number of rows
(the counts none once computed for the paper's version), judged at `now`, the instant its
caller passes (services/reading/visibility.py)."""
from __future__ import annotations

from bisect import bisect_right
from datetime import date, datetime

from sqlalchemy import and_, func, select

from extensions import db
from models import Paper, Piece, Section
from services.reading import memo, stories, visibility

MAX_DAYS = 366


def list_sections(paper: Paper, limit: int | None = None, after: list | None = None, *,
                  now: datetime) -> tuple[list[dict], list | None]:
    """Active sections in the paper's order (position, then id), each
    `{"name", "slug", "description", "count"}` where count is its pieces on air: `(rows, last)`.
    With `limit`, at most that many after the keyset position `after` (`[position, id]`; None:
    from the first), and `last` the position of the last row when more follow, else None.

    The counts grow with the archive (an index-only scan of every piece on air), so the whole
    ordered list is computed once per paper version in each worker (services/reading/memo.py)
    and paged from memory: one aggregate statement on the first read of a version, none after."""
    every = memo.per_version("sections", memo.paper_state(paper, now), lambda: _count_sections(paper, now))
    start = 0
    if after is not None:
        start = bisect_right([key for key, _ in every], tuple(after))
    kept = every[start:] if limit is None else every[start:start + limit + 1]
    more = limit is not None and len(kept) > limit
    kept = kept[:limit] if limit is not None else kept
    return [dict(row) for _, row in kept], list(kept[-1][0]) if more else None


def _count_sections(paper: Paper, now: datetime) -> list[tuple[tuple, dict]]:
    """Every active section with its count, in order, keyed by its position `(position, id)`.
    One aggregate query: sections LEFT JOIN on-air pieces, GROUP BY section."""
    # section_id, not id: PostgreSQL then counts from ix_pieces_section_air alone; the paper in
    # the join too, as that index leads with it (a section's pieces are its paper's anyway).
    count = func.count(Piece.section_id)
    query = (
        select(Section.name, Section.slug, Section.description, count.label("count"), Section.position, Section.id)
        .outerjoin(Piece, and_(Piece.paper_id == Section.paper_id, Piece.section_id == Section.id,
                               stories.on_air_clause()))
        .where(Section.paper_id == paper.id, Section.active.is_(True))
        .group_by(Section.id, Section.name, Section.slug, Section.description, Section.position)
        .order_by(Section.position, Section.id)
    )
    return [((position, id_), {"name": name, "slug": slug, "description": description or "", "count": n})
            for name, slug, description, n, position, id_ in db.session.execute(query, visibility.at(now))]


def list_days(paper: Paper, limit: int = MAX_DAYS, before: date | None = None, *, now: datetime) -> list[dict]:
    """Every UTC day with pieces on air, newest first, at most `limit` (366) rows:
    `[{"day": date, "count": int}]`; with `before`, only days before it (the keyset of the next
    page). The counts of every day are one GROUP BY in the order of ix_pieces_paper_air_day
    (an index-only scan of the paper's pieces on air), computed once per paper version in each
    worker (services/reading/memo.py) and paged from memory."""
    every = memo.per_version("days", memo.paper_state(paper, now), lambda: _count_days(paper, now))
    start = 0
    if before is not None:
        # Newest first: skip the days on or after `before`.
        start = bisect_right([-day.toordinal() for day, _ in every], -before.toordinal())
    return [{"day": day, "count": n} for day, n in every[start:start + limit]]


def _count_days(paper: Paper, now: datetime) -> list[tuple[date, int]]:
    query = (
        # count(*), not count(id): the GROUP BY then reads ix_pieces_paper_air_day alone.
        select(Piece.on_air_day, func.count())
        .where(Piece.paper_id == paper.id, stories.on_air_clause(), Piece.on_air_day.is_not(None))
        .group_by(Piece.on_air_day)
        .order_by(Piece.on_air_day.desc())
    )
    return [(day, n) for day, n in db.session.execute(query, visibility.at(now))]


def day_page(paper: Paper, day: date, limit: int, after: list | None = None, *,
             now: datetime) -> tuple[list[Piece], list | None]:
    """A page of the pieces aired on `day`: `(pieces, last)`, at most `limit` pieces after the keyset
    position `after` (`[1, on_air_at, id]`, None: from the newest); `last` is the position of the
    page's last piece when more follow, else None. One statement."""
    rows, more = stories.page(paper, limit, stories.PageFilter(), after, now=now, core=False, day=day)
    return rows, stories.position(rows[-1]) if more else None
