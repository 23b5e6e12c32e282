"""Sections with their on-air counts and the day-by-day archive (`/sections`, `/days`,
`/days/{day}`). Each function issues one SQL statement whatever the number of rows."""
from __future__ import annotations

from datetime import date

from sqlalchemy import and_, func, select

from extensions import db
from models import Paper, Piece, Section
from services.reading import stories, visibility

MAX_DAYS = 366


def list_sections(paper: Paper) -> list[dict]:
    """Active sections in the paper's order (position, then id), each
    `{"name", "slug", "description", "count"}` where count is its pieces on air.
    One aggregate query: sections LEFT JOIN on-air pieces, GROUP BY section."""
    # section_id, not id: PostgreSQL then counts from ix_pieces_section_air alone.
    count = func.count(Piece.section_id)
    query = (
        select(Section.name, Section.slug, Section.description, count.label("count"))
        .outerjoin(Piece, and_(Piece.section_id == Section.id, visibility.on_air()))
        .where(Section.paper_id == paper.id, Section.active.is_(True))
        .group_by(Section.id, Section.name, Section.slug, Section.description, Section.position)
        .order_by(Section.position, Section.id)
    )
    return [{"name": name, "slug": slug, "description": description or "", "count": n}
            for name, slug, description, n in db.session.execute(query)]


def list_days(paper: Paper, limit: int = MAX_DAYS) -> list[dict]:
    """Every UTC day with pieces on air, newest first, at most `limit` (366) rows:
    `[{"day": date, "count": int}]`. One GROUP BY on the indexed `on_air_day`."""
    query = (
        # count(*), not count(id): the GROUP BY then reads ix_pieces_paper_air_day alone.
        select(Piece.on_air_day, func.count())
        .where(Piece.paper_id == paper.id, visibility.on_air(), Piece.on_air_day.is_not(None))
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
