"""Story queries for the public and keyed lanes. Every list loads its rows' section and persona
in the same query (no N+1)."""
from __future__ import annotations

from sqlalchemy import Select, select
from sqlalchemy.orm import joinedload, selectinload

from extensions import db
from models import Paper, Piece

MAX_ID_LENGTH = 200
MAX_ID = 2**31 - 1  # pieces.id is an INTEGER column


def clamp(value: int, low: int, high: int) -> int:
    """`value` forced into [low, high]."""
    return max(low, min(high, value))


def rows_query(paper: Paper, *, include_drafts: bool = False) -> Select:
    """SELECT of a paper's pieces, newest on air first, with section and persona joined in.
    Drafts (never on air) sort after aired pieces, newest filed first."""
    query = (
        select(Piece)
        .where(Piece.paper_id == paper.id)
        .options(joinedload(Piece.section), joinedload(Piece.persona))
    )
    if not include_drafts:
        query = query.where(Piece.on_air.is_(True))
        return query.order_by(Piece.on_air_at.desc(), Piece.id.desc())
    return query.order_by(Piece.on_air.desc(), Piece.on_air_at.desc(), Piece.filed_at.desc(),
                          Piece.id.desc())


def latest(paper: Paper, limit: int, *, include_drafts: bool = False) -> list[Piece]:
    """The `limit` newest pieces (on air only unless `include_drafts`)."""
    return list(db.session.scalars(rows_query(paper, include_drafts=include_drafts).limit(limit)))


def find(paper: Paper, id_or_slug: str, *, include_drafts: bool = False) -> Piece | None:
    """A piece by numeric id or slug, with section, persona and cited facts loaded; None when it
    does not exist, is not this paper's, or is not on air and drafts are not allowed."""
    if not id_or_slug or len(id_or_slug) > MAX_ID_LENGTH or "\x00" in id_or_slug:
        return None  # PostgreSQL refuses NUL in text: such an id names nothing
    query = select(Piece).where(Piece.paper_id == paper.id).options(
        joinedload(Piece.section), joinedload(Piece.persona), selectinload(Piece.cited_facts))
    if id_or_slug.isascii() and id_or_slug.isdigit():  # not "²"
        if int(id_or_slug) > MAX_ID:
            # Ids are 32-bit; PostgreSQL refuses to compare one with a larger number (and a
            # slug always holds a letter), so such a number names nothing.
            return None
        query = query.where(Piece.id == int(id_or_slug))
    else:
        query = query.where(Piece.slug == id_or_slug)
    if not include_drafts:
        query = query.where(Piece.on_air.is_(True))
    return db.session.scalar(query)
