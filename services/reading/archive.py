"""Sections with their on-air counts and the day-by-day archive (`/sections`, `/days`,
`/days/{day}`). Each function issues one SQL statement whatever the number of rows."""
from __future__ import annotations

from datetime import date

from sqlalchemy import and_, func, or_, select, true

from extensions import db
from models import Paper, Piece, Section
from services.reading import stories

MAX_DAYS = 366


def list_sections(paper: Paper, limit: int | None = None, after: list | None = None) -> tuple[list[dict], list | None]:
    """Active sections in the paper's order (position, then id), each
    `{"name", "slug", "description", "count"}` where count is its pieces on air: `(rows, last)`.
    With `limit`, at most that many after the keyset position `after` (`[position, id]`; None:
    from the first), and `last` the position of the last row when more follow, else None.
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
    if after is not None:
        position, id_ = after
        query = query.where(or_(Section.position > position, and_(Section.position == position, Section.id > id_)))
    if limit is not None:
        query = query.limit(limit + 1)
    found = db.session.execute(query).all()
    more = limit is not None and len(found) > limit
    found = found[:limit] if limit is not None else found
    rows = [{"name": name, "slug": slug, "description": description or "", "count": n}
            for name, slug, description, n, _, _ in found]
    return rows, [found[-1].position, found[-1].id] if more else None


def list_days(paper: Paper, limit: int = MAX_DAYS, before: date | None = None) -> list[dict]:
    """Every UTC day with pieces on air, newest first, at most `limit` (366) rows:
    `[{"day": date, "count": int}]`; with `before`, only days before it (the keyset of the next
    page). One GROUP BY on the indexed `on_air_day`."""
    query = (
        # count(*), not count(id): the GROUP BY then reads ix_pieces_paper_air_day alone.
        select(Piece.on_air_day, func.count())
        .where(Piece.paper_id == paper.id, stories.on_air_clause(), Piece.on_air_day.is_not(None))
        .where(Piece.on_air_day < before if before is not None else true())
        .group_by(Piece.on_air_day)
        .order_by(Piece.on_air_day.desc())
        .limit(limit)
    )
    return [{"day": day, "count": n} for day, n in db.session.execute(query)]


def pieces_on_day(paper: Paper, day: date) -> list[Piece]:
    """Pieces on air that went on air on UTC date `day`, newest first, section and persona
    loaded. An empty list for a day with nothing on air (not an error)."""
    query = stories.rows_query(paper).where(Piece.on_air_day == day)
    return list(db.session.scalars(query))


def day_page(paper: Paper, day: date, limit: int, after: list | None = None) -> tuple[list[Piece], list | None]:
    """A page of `pieces_on_day`: `(pieces, last)`, at most `limit` pieces after the keyset
    position `after` (`[1, on_air_at, id]`, None: from the newest); `last` is the position of the
    page's last piece when more follow, else None. One statement."""
    rows, more = stories.page(paper, limit, stories.PageFilter(), after, core=False, day=day)
    return rows, stories.position(rows[-1]) if more else None
