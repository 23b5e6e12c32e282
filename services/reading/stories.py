"""Story queries for the public and keyed lanes. Every list loads its rows' section and persona
in the same query (no N+1)."""
from __future__ import annotations

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import joinedload

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
    return _rows_query(Piece.paper_id == paper.id, include_drafts)


def _drafts_of_one_persona(query: Select) -> Select:
    # Pieces on air, and the drafts of the persona bound as `persona_id` (an agent key's own).
    return query.where(or_(Piece.on_air.is_(True), Piece.persona_id == bindparam("persona_id")))


def _rows_query(of_paper, include_drafts: bool, one_persona: bool = False) -> Select:
    query = select(Piece).where(of_paper).options(joinedload(Piece.section), joinedload(Piece.persona))
    if include_drafts and one_persona:
        query = _drafts_of_one_persona(query)
    if not include_drafts:
        query = query.where(Piece.on_air.is_(True))
        return query.order_by(Piece.on_air_at.desc(), Piece.id.desc())
    return query.order_by(Piece.on_air.desc(), Piece.on_air_at.desc(), Piece.filed_at.desc(),
                          Piece.id.desc())


# `/stories` is the hottest list: its statement is built once (see _find_statement).
_LATEST = {(drafts, one): _rows_query(Piece.paper_id == bindparam("paper_id"), drafts, one)
           .limit(bindparam("limit")) for drafts in (True, False) for one in (True, False)}


def latest(paper: Paper, limit: int, *, include_drafts: bool = False,
           drafts_of: int | None = None) -> list[Piece]:
    """The `limit` newest pieces (on air only unless `include_drafts`). With `include_drafts`,
    `drafts_of` (a persona id) keeps only that persona's drafts; None keeps every draft."""
    one = include_drafts and drafts_of is not None
    params = {"paper_id": paper.id, "limit": limit, **({"persona_id": drafts_of} if one else {})}
    return list(db.session.scalars(_LATEST[include_drafts, one], params))


def _find_statement(by_id: bool, include_drafts: bool, one_persona: bool = False) -> Select:
    # Built once per shape: building the expression and its loader options cost about as much
    # as running it (docs/PERFORMANCE.md). Facts are joined in, so a story is one statement.
    query = select(Piece).where(Piece.paper_id == bindparam("paper_id")).options(
        joinedload(Piece.section), joinedload(Piece.persona), joinedload(Piece.cited_facts))
    query = query.where(Piece.id == bindparam("id") if by_id else Piece.slug == bindparam("slug"))
    if include_drafts:
        return _drafts_of_one_persona(query) if one_persona else query
    return query.where(Piece.on_air.is_(True))


_FIND = {(by_id, drafts, one): _find_statement(by_id, drafts, one)
         for by_id in (True, False) for drafts in (True, False) for one in (True, False)}


def find(paper: Paper, id_or_slug: str, *, include_drafts: bool = False,
         drafts_of: int | None = None) -> Piece | None:
    """A piece by numeric id or slug, with section, persona and cited facts loaded (one
    statement); None when it does not exist, is not this paper's, or is not on air and drafts
    are not allowed. With `include_drafts`, `drafts_of` (a persona id) allows only that
    persona's drafts; None allows every draft."""
    if not id_or_slug or len(id_or_slug) > MAX_ID_LENGTH or "\x00" in id_or_slug:
        return None  # PostgreSQL refuses NUL in text: such an id names nothing
    if id_or_slug.isascii() and id_or_slug.isdigit():  # not "²"
        if int(id_or_slug) > MAX_ID:
            # Ids are 32-bit; PostgreSQL refuses to compare one with a larger number (and a
            # slug always holds a letter), so such a number names nothing.
            return None
        params = {"paper_id": paper.id, "id": int(id_or_slug)}
        by_id = True
    else:
        params = {"paper_id": paper.id, "slug": id_or_slug}
        by_id = False
    one = include_drafts and drafts_of is not None
    if one:
        params["persona_id"] = drafts_of
    return db.session.execute(_FIND[by_id, include_drafts, one], params).unique().scalar_one_or_none()
