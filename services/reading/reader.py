"""Queries only the reader pages need (blueprints/pages.py); the rest come from front.py,
archive.py, stories.py and lookups.py beside this module. On-air pieces only, always: drafts
never reach a page. Each function issues one SQL statement whatever the number of rows.
"""
from __future__ import annotations

from datetime import date

from sqlalchemy import func, select

from extensions import db
from models import Edition, Paper, Piece, Section
from services.reading import stories, visibility

SECTION_PAGE_SIZE = 50
DAY_PAGE_SIZE = 200
RELATED_SIZE = 4


def section_pieces(paper: Paper, section: Section, limit: int = SECTION_PAGE_SIZE) -> list[Piece]:
    """The `limit` newest pieces on air in `section`, section and persona loaded."""
    query = stories.rows_query(paper).where(Piece.section_id == section.id).limit(limit)
    return list(db.session.scalars(query))


def related_pieces(paper: Paper, piece: Piece, limit: int = RELATED_SIZE) -> list[Piece]:
    """Up to `limit` newest other pieces on air in `piece`'s section ("more in this section")."""
    query = (stories.rows_query(paper)
             .where(Piece.section_id == piece.section_id, Piece.id != piece.id).limit(limit))
    return list(db.session.scalars(query))


def day_pieces(paper: Paper, day: date, limit: int = DAY_PAGE_SIZE) -> list[Piece]:
    """Up to `limit` pieces that went on air on UTC `day`, newest first, section and persona
    loaded (a back issue longer than that shows its newest `limit`)."""
    query = stories.rows_query(paper).where(Piece.on_air_day == day).limit(limit)
    return list(db.session.scalars(query))


def neighbour_days(paper: Paper, day: date) -> tuple[date | None, date | None]:
    """(the latest day before `day`, the earliest day after it) with pieces on air; None where
    there is none. One statement of two scalar subqueries on the indexed `on_air_day`."""
    aired = (Piece.paper_id == paper.id) & visibility.on_air()
    before = select(func.max(Piece.on_air_day)).where(aired, Piece.on_air_day < day)
    after = select(func.min(Piece.on_air_day)).where(aired, Piece.on_air_day > day)
    row = db.session.execute(select(before.scalar_subquery(), after.scalar_subquery())).one()
    return row[0], row[1]


def find_edition(paper: Paper, day: date) -> Edition | None:
    """The video edition of UTC `day`, or None."""
    return db.session.scalar(select(Edition).where(Edition.paper_id == paper.id, Edition.day == day))
