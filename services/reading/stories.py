"""Story queries for the public and keyed lanes. Every list loads its rows' section and persona
in the same query (no N+1).

Drafts: `include_drafts` lets drafts in; `drafts_of` (a persona id) then lets in only that
persona's drafts (an agent key's own: blueprints/api/permissions.py `drafts_of`), None every
draft. Each shape's statement is built once."""
from __future__ import annotations

from sqlalchemy import Select, bindparam, or_, select
from sqlalchemy.orm import joinedload

from extensions import db
from models import CitedFact, Paper, Persona, Piece, Section
from services.reading import visibility

MAX_ID_LENGTH = 200
MAX_ID = 2**31 - 1  # pieces.id is an INTEGER column


def clamp(value: int, low: int, high: int) -> int:
    """`value` forced into [low, high]."""
    return max(low, min(high, value))


def rows_query(paper: Paper, *, include_drafts: bool = False) -> Select:
    """SELECT of a paper's pieces, newest on air first, with section and persona joined in.
    Drafts (never on air) sort after aired pieces, newest filed first."""
    return _rows_query(Piece.paper_id == paper.id, include_drafts)


def _one_persona(query: Select) -> Select:
    # Pieces on air, and the drafts of the persona bound as `persona_id` (an agent key's own).
    return query.where(or_(visibility.on_air(), Piece.persona_id == bindparam("persona_id")))


def _scope(include_drafts: bool, drafts_of: int | None) -> tuple[bool, dict]:
    """(one persona's drafts only?, the extra bound parameters) for a lookup."""
    one = include_drafts and drafts_of is not None
    return one, ({"persona_id": drafts_of} if one else {})


def _rows_query(of_paper, include_drafts: bool, one_persona: bool = False) -> Select:
    query = select(Piece).where(of_paper).options(joinedload(Piece.section), joinedload(Piece.persona))
    if include_drafts and one_persona:
        query = _one_persona(query)
    if not include_drafts:
        query = query.where(visibility.on_air())
        return query.order_by(Piece.on_air_at.desc(), Piece.id.desc())
    return query.order_by(Piece.on_air.desc(), Piece.on_air_at.desc(), Piece.filed_at.desc(),
                          Piece.id.desc())


# `/stories` is the hottest list: its statement is built once (see _find_statement).
_LATEST = {(drafts, one): _rows_query(Piece.paper_id == bindparam("paper_id"), drafts, one)
           .limit(bindparam("limit")) for drafts in (True, False) for one in (True, False)}


def latest(paper: Paper, limit: int, *, include_drafts: bool = False,
           drafts_of: int | None = None) -> list[Piece]:
    """The `limit` newest pieces (on air only unless `include_drafts`; with `drafts_of`, only
    that persona's drafts)."""
    one, extra = _scope(include_drafts, drafts_of)
    return list(db.session.scalars(_LATEST[include_drafts, one], {"paper_id": paper.id, "limit": limit, **extra}))


# --- rows for the wire, without the ORM ------------------------------------------------------
# The hottest reads (`/stories`, `/stories/{id}`) need a few columns straight into JSON:
# building ORM objects, identity-mapping them and walking their relationships cost more than
# the query (docs/PERFORMANCE.md). These return Core rows; schemas/story.py shapes them exactly
# as StoryRowOut and StoryOut would (tests/test_fast_paths.py compares the two on every lane).
ROW_COLUMNS = (Piece.id, Piece.slug, Piece.headline, Piece.dek, Section.name.label("section"),
               Persona.name.label("byline"), Piece.rev, Piece.on_air_at, Piece.on_air)
STORY_COLUMNS = (*ROW_COLUMNS, Piece.prose, Piece.image, Piece.content_hash,
                 Persona.slug.label("persona_slug"), Persona.title.label("persona_title"))
FACT_COLUMNS = (CitedFact.n, CitedFact.statement, CitedFact.source, CitedFact.instrument, CitedFact.claim_key)


def _core(columns, of_paper, include_drafts: bool, one_persona: bool = False) -> Select:
    query = (select(*columns).join(Section, Section.id == Piece.section_id)
             .join(Persona, Persona.id == Piece.persona_id).where(of_paper))
    if include_drafts and one_persona:
        query = _one_persona(query)
    if not include_drafts:
        return query.where(visibility.on_air()).order_by(Piece.on_air_at.desc(), Piece.id.desc())
    return query.order_by(Piece.on_air.desc(), Piece.on_air_at.desc(), Piece.filed_at.desc(), Piece.id.desc())


_LATEST_ROWS = {(drafts, one): _core(ROW_COLUMNS, Piece.paper_id == bindparam("paper_id"), drafts, one)
                .limit(bindparam("limit")) for drafts in (True, False) for one in (True, False)}


def latest_rows(paper: Paper, limit: int, *, include_drafts: bool = False, drafts_of: int | None = None) -> list:
    """`latest()` as Core rows of ROW_COLUMNS (`id, slug, headline, dek, section, byline, rev,
    on_air_at, on_air`): one statement, no ORM objects."""
    one, extra = _scope(include_drafts, drafts_of)
    return db.session.execute(_LATEST_ROWS[include_drafts, one],
                              {"paper_id": paper.id, "limit": limit, **extra}).all()


def _find_row_statement(by_id: bool, include_drafts: bool, one_persona: bool) -> Select:
    # The facts joined in: one row per fact (one row with NULL facts when there are none).
    query = (select(*STORY_COLUMNS, *FACT_COLUMNS).join(Section, Section.id == Piece.section_id)
             .join(Persona, Persona.id == Piece.persona_id).outerjoin(CitedFact, CitedFact.piece_id == Piece.id)
             .where(Piece.paper_id == bindparam("paper_id")).order_by(CitedFact.n))
    query = query.where(Piece.id == bindparam("id") if by_id else Piece.slug == bindparam("slug"))
    return _drafts(query, include_drafts, one_persona)


def _drafts(query: Select, include_drafts: bool, one_persona: bool) -> Select:
    if not include_drafts:
        return query.where(visibility.on_air())
    return _one_persona(query) if one_persona else query


_FIND_ROW = {(by_id, drafts, one): _find_row_statement(by_id, drafts, one)
             for by_id in (True, False) for drafts in (True, False) for one in (True, False)}


def find_row(paper: Paper, id_or_slug: str, *, include_drafts: bool = False,
             drafts_of: int | None = None) -> tuple | None:
    """`find()` as Core rows, in one statement: `(story, facts)`, the story a row holding
    STORY_COLUMNS and the facts rows holding FACT_COLUMNS in `n` order (none for a piece
    without facts); None as `find()` would be."""
    lookup = _lookup(id_or_slug)
    if lookup is None:
        return None
    by_id, value = lookup
    one, extra = _scope(include_drafts, drafts_of)
    rows = db.session.execute(_FIND_ROW[by_id, include_drafts, one],
                              {"paper_id": paper.id, "id" if by_id else "slug": value, **extra}).all()
    if not rows:
        return None
    return rows[0], [row for row in rows if row.n is not None]


def _lookup(id_or_slug: str) -> tuple[bool, int | str] | None:
    """(True, id) for a numeric id, (False, slug) for a slug, None for what names nothing."""
    if not id_or_slug or len(id_or_slug) > MAX_ID_LENGTH or "\x00" in id_or_slug:
        return None  # PostgreSQL refuses NUL in text: such an id names nothing
    if id_or_slug.isascii() and id_or_slug.isdigit():  # not "²"
        # Ids are 32-bit; PostgreSQL refuses to compare one with a larger number (and a slug
        # always holds a letter), so such a number names nothing.
        return None if int(id_or_slug) > MAX_ID else (True, int(id_or_slug))
    return False, id_or_slug


def _find_statement(by_id: bool, include_drafts: bool, one_persona: bool) -> Select:
    # Built once per shape: building the expression and its loader options cost about as much
    # as running it (docs/PERFORMANCE.md). Facts are joined in, so a story is one statement.
    query = select(Piece).where(Piece.paper_id == bindparam("paper_id")).options(
        joinedload(Piece.section), joinedload(Piece.persona), joinedload(Piece.cited_facts))
    query = query.where(Piece.id == bindparam("id") if by_id else Piece.slug == bindparam("slug"))
    return _drafts(query, include_drafts, one_persona)


_FIND = {(by_id, drafts, one): _find_statement(by_id, drafts, one)
         for by_id in (True, False) for drafts in (True, False) for one in (True, False)}


def find(paper: Paper, id_or_slug: str, *, include_drafts: bool = False,
         drafts_of: int | None = None) -> Piece | None:
    """A piece by numeric id or slug, with section, persona and cited facts loaded (one
    statement); None when it does not exist, is not this paper's, or is not on air and drafts
    are not allowed (with `drafts_of`, a draft of another persona)."""
    lookup = _lookup(id_or_slug)
    if lookup is None:
        return None
    by_id, value = lookup
    one, extra = _scope(include_drafts, drafts_of)
    params = {"paper_id": paper.id, "id" if by_id else "slug": value, **extra}
    return db.session.execute(_FIND[by_id, include_drafts, one], params).unique().scalar_one_or_none()
