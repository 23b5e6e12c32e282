"""Story queries for the public and keyed lanes. Every list loads its rows' section and persona
in the same query (no N+1). Whatever lists or finds pieces on air takes `now`, the instant it
judges at (services/reading/visibility.py); a query this module returns is run with
`visibility.at(now)` among its parameters.

Drafts: `include_drafts` lets drafts in; `drafts_of` (a persona id) then lets in only that
persona's drafts (an agent key's own: blueprints/api/permissions.py `drafts_of`), None every
draft. Each shape's statement is built once."""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from datetime import datetime
from functools import cache

from sqlalchemy import Integer, Select, and_, bindparam, case, func, or_, select, union_all
from sqlalchemy.orm import joinedload, load_only, raiseload

from extensions import db
from models import CitedFact, Paper, Persona, Piece, Section
from services.reading import visibility

MAX_ID_LENGTH = 200
MAX_ID = 2**31 - 1  # pieces.id is an INTEGER column


def clamp(value: int, low: int, high: int) -> int:
    """`value` forced into [low, high]."""
    return max(low, min(high, value))


def limit_param(name: str = "limit"):
    """The bound parameter of a list's LIMIT, for statements built once: bound at each
    execution but written into the SQL text (SQLAlchemy's `literal_execute`), so a statement
    text is one (shape, page size). Why: PostgreSQL plans a prepared statement generically
    (once per connection) only when the generic plan does not look dearer than the
    parameters' own, and a `LIMIT $n` it cannot see looks dearer, so every execution was
    planned anew (0.2-0.3 ms a list, more than running it); with the size in the text the
    generic plan, the same index scan, is taken (docs/PERFORMANCE.md "PostgreSQL")."""
    return bindparam(name, type_=Integer(), literal_execute=True)


def rows_query(paper: Paper, *, include_drafts: bool = False) -> Select:
    """SELECT of a paper's pieces, newest on air first, with section and persona joined in.
    Drafts (never on air) sort after aired pieces, newest filed first. Run it with
    `visibility.at(now)` among its parameters."""
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
           .limit(limit_param()) for drafts in (True, False) for one in (True, False)}


def latest(paper: Paper, limit: int, *, now: datetime, include_drafts: bool = False,
           drafts_of: int | None = None) -> list[Piece]:
    """The `limit` newest pieces (on air by `now` only unless `include_drafts`; with
    `drafts_of`, only that persona's drafts)."""
    one, extra = _scope(include_drafts, drafts_of)
    return list(db.session.scalars(_LATEST[include_drafts, one],
                                   {"paper_id": paper.id, "limit": limit, **extra, **visibility.at(now)}))


# --- rows for the wire, without the ORM ------------------------------------------------------
# The hottest reads (`/stories`, `/stories/{id}`) need a few columns straight into JSON:
# building ORM objects, identity-mapping them and walking their relationships cost more than
# the query (docs/PERFORMANCE.md). These return Core rows; schemas/story.py shapes them exactly
# as StoryRowOut and StoryOut would (tests/test_fast_paths.py compares the two on every lane).
ROW_COLUMNS = (Piece.id, Piece.slug, Piece.headline, Piece.dek, Section.name.label("section"),
               Persona.name.label("byline"), Piece.rev, Piece.on_air_at, Piece.on_air)
STORY_COLUMNS = (*ROW_COLUMNS, Piece.prose, Piece.image, Piece.content_hash,
                 Persona.slug.label("persona_slug"), Persona.title.label("persona_title"), Piece.notices)
FACT_COLUMNS = (CitedFact.n, CitedFact.statement, CitedFact.source, CitedFact.instrument, CitedFact.claim_key)
# A cited fact as the story reads hand it on: FACT_COLUMNS' values, by their names or positions.
# A tuple's field is read at C speed; a Core Row's attribute first fails a normal lookup (a
# formatted AttributeError) and then searches its keys, and a story's facts were read by name
# five times each.
Fact = namedtuple("Fact", [column.key for column in FACT_COLUMNS])


# --- pages: keyset paging and filters (docs/API.md "Paging and filters") ----------------------
# A page is the `limit` rows after a keyset position, in one statement built once per shape.
# `status` picks the lane and its order:
#   on_air  pieces on air, (on_air_at, id) descending
#   draft   pieces not on air, (filed_at, id) descending: filed_at never changes, so a walk
#           stays exact while drafts are revised (updated_at would move them mid-walk)
#   all     on air first in the on_air order, then drafts in the draft order
# A position is `(phase, at, id)`: phase 1 for a piece on air (at = on_air_at), 0 for a draft
# (at = filed_at). A piece that airs during a walk sorts before the walk's position and is not in
# this walk; a draft aired after the walk passed it was seen as a draft.
STATUSES = ("on_air", "draft", "all")


def on_air_clause():
    """The public predicate "this piece is on air", in one place for every page statement:
    services/reading/visibility.py's (on air, and its scheduled instant has come)."""
    return visibility.on_air()


@dataclass(frozen=True)
class PageFilter:
    """What a page lists: `status` (STATUSES), `drafts_of` (an agent's persona id: only its
    drafts; None every draft), `section_id` and `persona_id` (None: any)."""

    status: str = "on_air"
    drafts_of: int | None = None
    section_id: int | None = None
    persona_id: int | None = None


def position(row) -> list:
    """The keyset position `[phase, at, id]` of a page row (Core row or Piece): at is a datetime."""
    if row.on_air:
        return [1, row.on_air_at, row.id]
    return [0, row.filed_at, row.id]


def _after(column, ascending: bool):
    # The plain bound (`<=`/`>=`) repeats what the OR says so that it is an index condition on
    # ix_pieces_paper_air: without it a page deep in the walk would scan every newer row.
    at, id_ = bindparam("after_at"), bindparam("after_id")
    if ascending:
        return and_(column >= at, or_(column > at, and_(column == at, Piece.id > id_)))
    return and_(column <= at, or_(column < at, and_(column == at, Piece.id < id_)))


@cache
def _page_statement(core: bool, status: str, one_persona: bool, by_section: bool, by_persona: bool,
                    after_phase: int | None, ascending: bool = False, since: bool = False,
                    by_day: bool = False) -> Select:
    if core and status == "all" and not ascending:
        return _both_lanes_statement(one_persona, by_section, by_persona, after_phase, since, by_day)
    if core:
        query = (select(*ROW_COLUMNS, Piece.filed_at).join(Section, Section.id == Piece.section_id)
                 .join(Persona, Persona.id == Piece.persona_id))
    else:
        query = select(Piece).options(joinedload(Piece.section), joinedload(Piece.persona))
    query = query.where(Piece.paper_id == bindparam("paper_id"))
    if status == "on_air":
        query = query.where(on_air_clause())
    elif status == "draft":
        query = query.where(Piece.on_air.is_(False))
    if status != "on_air" and one_persona:
        query = _one_persona(query)
    if by_section:
        query = query.where(Piece.section_id == bindparam("section_id"))
    if by_persona:
        query = query.where(Piece.persona_id == bindparam("by_persona_id"))
    if since:
        query = query.where(Piece.on_air_at > bindparam("since"))
    if by_day:
        query = query.where(Piece.on_air_day == bindparam("day"))
    if after_phase == 1:
        aired = _after(Piece.on_air_at, ascending)
        # The keyed `all` lane lists scheduled pieces too (first: their instant is the newest).
        query = query.where(aired if status == "on_air" else or_(and_(Piece.on_air.is_(True), aired),
                                                                 Piece.on_air.is_(False)))
    elif after_phase == 0:
        query = query.where(Piece.on_air.is_(False), _after(Piece.filed_at, False))
    if ascending:  # /posts?since=T: oldest first, on air only
        return query.order_by(Piece.on_air_at.asc(), Piece.id.asc()).limit(limit_param())
    if status == "on_air":
        order = (Piece.on_air_at.desc(), Piece.id.desc())
    elif status == "draft":
        order = (Piece.filed_at.desc(), Piece.id.desc())
    else:
        sort_at = case((Piece.on_air.is_(True), Piece.on_air_at), else_=Piece.filed_at)
        order = (Piece.on_air.desc(), sort_at.desc(), Piece.id.desc())
    return query.order_by(*order).limit(limit_param())


def _both_lanes_statement(one_persona: bool, by_section: bool, by_persona: bool, after_phase: int | None,
                          since: bool, by_day: bool) -> Select:
    """The `all` lane as two index-ordered lanes: the page's first rows on air (newest
    `on_air_at` first, ix_pieces_paper_air) and the first drafts (newest `filed_at` first,
    ix_pieces_paper_filed), each cut at the page's size, then merged in the `all` order. Ordering
    the paper by `on_air DESC, CASE ... DESC, id DESC` in one statement matches no index: it
    sorted every piece of the paper (110 ms at 100 000 pieces on PostgreSQL); this reads at most
    twice the page and sorts only that. Same rows and columns as the one-statement form."""
    def lane(aired: bool):
        at = Piece.on_air_at if aired else Piece.filed_at
        query = (select(*ROW_COLUMNS, Piece.filed_at, at.label("sort_at"))
                 .join(Section, Section.id == Piece.section_id).join(Persona, Persona.id == Piece.persona_id)
                 .where(Piece.paper_id == bindparam("paper_id"), Piece.on_air.is_(aired)))
        if one_persona:
            query = _one_persona(query)
        if by_section:
            query = query.where(Piece.section_id == bindparam("section_id"))
        if by_persona:
            query = query.where(Piece.persona_id == bindparam("by_persona_id"))
        if since:
            query = query.where(Piece.on_air_at > bindparam("since"))
        if by_day:
            query = query.where(Piece.on_air_day == bindparam("day"))
        if after_phase == (1 if aired else 0):
            query = query.where(_after(at, False))
        # Wrapped: SQLite refuses ORDER BY and LIMIT on a bare member of a compound select.
        return select(query.order_by(at.desc(), Piece.id.desc()).limit(limit_param()).subquery())

    # After a draft, no piece on air is left to list.
    lanes = [lane(False)] if after_phase == 0 else [lane(True), lane(False)]
    both = union_all(*lanes).subquery() if len(lanes) > 1 else lanes[0].subquery()
    columns = [both.c[name] for name in ("id", "slug", "headline", "dek", "section", "byline", "rev",
                                         "on_air_at", "on_air", "filed_at")]
    return (select(*columns).order_by(both.c.on_air.desc(), both.c.sort_at.desc(), both.c.id.desc())
            .limit(limit_param()))


def page(paper: Paper, limit: int, scope: PageFilter, after: list | None = None, *, now: datetime,
         core: bool = True, ascending: bool = False, since=None, day=None) -> tuple[list, bool]:
    """One page judged at `now`: `(rows, more)`, at most `limit` rows after the position `after`
    (`[phase, at, id]` from `position`, at an aware datetime; None: from the start) and whether
    rows follow. Rows are Core rows of ROW_COLUMNS plus `filed_at` (`core`), else Pieces with
    section and persona loaded. `ascending` (on air only) lists oldest first; `since` (aware
    datetime) keeps pieces on air strictly after it; `day` (a date) those that went on air that UTC
    day. One statement."""
    one, extra = _scope(scope.status != "on_air", scope.drafts_of)
    params = {"paper_id": paper.id, "limit": limit + 1, **extra, **visibility.at(now)}
    if scope.section_id is not None:
        params["section_id"] = scope.section_id
    if scope.persona_id is not None:
        params["by_persona_id"] = scope.persona_id
    if since is not None:
        params["since"] = since
    if day is not None:
        params["day"] = day
    phase = None
    if after is not None:
        phase, params["after_at"], params["after_id"] = after
    statement = _page_statement(core, scope.status, one, scope.section_id is not None,
                                scope.persona_id is not None, phase, ascending, since is not None,
                                day is not None)
    if core:
        rows = core_rows(statement, params).all()
    else:
        rows = list(db.session.scalars(statement, params))
    return rows[:limit], len(rows) > limit


def section_id_named(paper: Paper, name: str) -> int | None:
    """The id of the paper's section called `name` (its name as rows carry it, or its slug;
    active or not), else None."""
    if not name or len(name) > MAX_ID_LENGTH or "\x00" in name:
        return None
    return db.session.scalar(select(Section.id).where(
        Section.paper_id == paper.id, or_(Section.name == name, Section.slug == name)).order_by(Section.id).limit(1))


def persona_id_named(paper: Paper, name: str) -> int | None:
    """The id of the paper's persona with slug or name `name` (as the masthead shows both),
    else None."""
    if not name or len(name) > MAX_ID_LENGTH or "\x00" in name:
        return None
    return db.session.scalar(select(Persona.id).where(
        Persona.paper_id == paper.id, or_(Persona.slug == name, Persona.name == name)).order_by(Persona.id).limit(1))


def _stories_with_facts(*where, columns: tuple = STORY_COLUMNS) -> Select:
    """SELECT of `columns` (STORY_COLUMNS, or PAGE_COLUMNS) and FACT_COLUMNS for the paper bound
    as `paper_id` and `where`: the facts joined in, one row per fact (one row with NULL facts for
    a piece without any), ordered by piece id, then `n`. `find_row`, `find_page_row` and
    `full_rows` read stories through it."""
    return (select(*columns, *FACT_COLUMNS).join(Section, Section.id == Piece.section_id)
            .join(Persona, Persona.id == Piece.persona_id).outerjoin(CitedFact, CitedFact.piece_id == Piece.id)
            .where(Piece.paper_id == bindparam("paper_id"), *where).order_by(Piece.id, CitedFact.n))


def _find_row_statement(by_id: bool, include_drafts: bool, one_persona: bool,
                        columns: tuple = STORY_COLUMNS) -> Select:
    query = _stories_with_facts(Piece.id == bindparam("id") if by_id else Piece.slug == bindparam("slug"),
                                columns=columns)
    return _drafts(query, include_drafts, one_persona)


def _drafts(query: Select, include_drafts: bool, one_persona: bool) -> Select:
    if not include_drafts:
        return query.where(visibility.on_air())
    return _one_persona(query) if one_persona else query


_FIND_ROW = {(by_id, drafts, one): _find_row_statement(by_id, drafts, one)
             for by_id in (True, False) for drafts in (True, False) for one in (True, False)}
# What a story page shows besides the full story (its section's slug and id, the last change).
PAGE_COLUMNS = (*STORY_COLUMNS, Section.slug.label("section_slug"), Piece.section_id, Piece.updated_at)
_FIND_PAGE_ROW = {by_id: _find_row_statement(by_id, False, False, PAGE_COLUMNS) for by_id in (True, False)}


def core_rows(statement, params: dict):
    """Run a Core `statement` (columns, not entities) on the session's connection: the same
    transaction (or a public read's autocommit) as the session, without the ORM's execution
    layer, which costs about as much as the query itself for a one-row answer. Unlike
    `session.execute` it does not autoflush: use it only for reads in a request that has
    written nothing yet (every caller is a GET). Returns the CursorResult."""
    return db.session.connection().execute(statement, params)


def find_row(paper: Paper, id_or_slug: str, *, now: datetime, include_drafts: bool = False,
             drafts_of: int | None = None) -> tuple | None:
    """`find()` as Core rows, in one statement: `(story, facts)`, the story a row holding
    STORY_COLUMNS and the facts rows holding FACT_COLUMNS in `n` order (none for a piece
    without facts); None as `find()` would be."""
    lookup = _lookup(id_or_slug)
    if lookup is None:
        return None
    by_id, value = lookup
    one, extra = _scope(include_drafts, drafts_of)
    return _story_and_facts(_FIND_ROW[by_id, include_drafts, one], _STORY_FACTS_AT,
                            {"paper_id": paper.id, "id" if by_id else "slug": value, **extra, **visibility.at(now)})


def find_page_row(paper: Paper, id_or_slug: str, *, now: datetime) -> tuple | None:
    """`find_row` of a piece on air at `now` (aware UTC) for its page: the story row holds
    PAGE_COLUMNS (STORY_COLUMNS, then `section_slug`, `section_id`, `updated_at`). One
    statement."""
    lookup = _lookup(id_or_slug)
    if lookup is None:
        return None
    by_id, value = lookup
    return _story_and_facts(_FIND_PAGE_ROW[by_id], _PAGE_FACTS_AT,
                            {"paper_id": paper.id, "id" if by_id else "slug": value, **visibility.at(now)})


# Where FACT_COLUMNS begin in a row of `_stories_with_facts` (after STORY_COLUMNS or PAGE_COLUMNS).
_STORY_FACTS_AT, _PAGE_FACTS_AT = len(STORY_COLUMNS), len(PAGE_COLUMNS)
_FACTS_END = len(FACT_COLUMNS)


def _facts(rows, at: int) -> list:
    """The Facts of a piece's rows of `_stories_with_facts` whose FACT_COLUMNS begin at `at`
    (none on the one row of a piece without facts, whose `n` is NULL)."""
    return [Fact._make(row[at:at + _FACTS_END]) for row in rows if row[at] is not None]


def _story_and_facts(statement, at: int, params: dict) -> tuple | None:
    rows = core_rows(statement, params).all()
    if not rows:
        return None
    return rows[0], _facts(rows, at)


def full_rows(paper: Paper, rows: list, *, now: datetime, public: bool = True) -> list[tuple]:
    """The full stories of a page's `rows` (ROW_COLUMNS rows, as `page` returns them), in their
    order, in one statement: `[(story, facts), ...]` as `find_row` gives one (the story a row of
    STORY_COLUMNS, its facts rows of FACT_COLUMNS in `n` order). `public`: the page is the public
    lane (judged at `now`), so a piece that left the air between the two statements is left out."""
    if not rows:
        return []
    found: dict[int, list] = {}
    params = {"paper_id": paper.id, "ids": [row[0] for row in rows], **visibility.at(now)}
    for row in core_rows(_FULL_ROWS[public], params):
        found.setdefault(row[0], []).append(row)  # STORY_COLUMNS begin with the id
    return [(got[0], _facts(got, _STORY_FACTS_AT))
            for got in (found.get(row[0]) for row in rows) if got]


_FULL_ROWS = {public: _stories_with_facts(Piece.id.in_(bindparam("ids", expanding=True)),
                                          *([visibility.on_air()] if public else []))
              for public in (True, False)}


def _lookup(id_or_slug: str) -> tuple[bool, int | str] | None:
    """(True, id) for a numeric id, (False, slug) for a slug, None for what names nothing."""
    if not id_or_slug or len(id_or_slug) > MAX_ID_LENGTH or "\x00" in id_or_slug:
        return None  # PostgreSQL refuses NUL in text: such an id names nothing
    if id_or_slug.isascii() and id_or_slug.isdigit():  # not "²"
        # Ids are 32-bit; PostgreSQL refuses to compare one with a larger number (and a slug
        # always holds a letter), so such a number names nothing.
        return None if int(id_or_slug) > MAX_ID else (True, int(id_or_slug))
    return False, id_or_slug


# What a story card and its oEmbed record show of a piece (blueprints/embed.py): the rest is
# never read, and an attribute outside it raises rather than costing a statement.
CARD_LOADS = (load_only(Piece.id, Piece.paper_id, Piece.slug, Piece.headline, Piece.image, Piece.rev,
                        Piece.on_air, Piece.on_air_at, Piece.notices, raiseload=True),
              joinedload(Piece.section).load_only(Section.name, raiseload=True),
              joinedload(Piece.persona).load_only(Persona.name, Persona.slug, raiseload=True),
              raiseload("*"))


# What a story item of a page's list shows of a piece (templates/pages/_macros.html
# `story_item`: headline, dek, art, time, section, byline; `rev` for a lead's share card):
# no prose, no facts, no hashes; an attribute outside it raises rather than costing a statement.
ITEM_LOADS = (load_only(Piece.id, Piece.paper_id, Piece.section_id, Piece.persona_id, Piece.slug,
                        Piece.headline, Piece.dek, Piece.image, Piece.rev, Piece.on_air, Piece.on_air_at,
                        raiseload=True),
              joinedload(Piece.section).load_only(Section.name, Section.slug, raiseload=True),
              joinedload(Piece.persona).load_only(Persona.name, Persona.slug, raiseload=True),
              raiseload("*"))


def items_query_for(paper_id) -> Select:
    """SELECT of a paper's pieces on air, newest first, loading only ITEM_LOADS (a story item's
    fields), for a paper id or a bound parameter standing for one (statements built once). Run
    it with `visibility.at(now)` among its parameters."""
    return (select(Piece).where(Piece.paper_id == paper_id, visibility.on_air()).options(*ITEM_LOADS)
            .order_by(Piece.on_air_at.desc(), Piece.id.desc()))


def _find_statement(by_id: bool, include_drafts: bool, one_persona: bool, card: bool = False) -> Select:
    # Built once per shape: building the expression and its loader options cost about as much
    # as running it (docs/PERFORMANCE.md). Facts are joined in, so a story is one statement.
    loads = CARD_LOADS if card else (joinedload(Piece.section), joinedload(Piece.persona),
                                     joinedload(Piece.cited_facts))
    query = select(Piece).where(Piece.paper_id == bindparam("paper_id")).options(*loads)
    query = query.where(Piece.id == bindparam("id") if by_id else Piece.slug == bindparam("slug"))
    return _drafts(query, include_drafts, one_persona)


_FIND = {(by_id, drafts, one): _find_statement(by_id, drafts, one)
         for by_id in (True, False) for drafts in (True, False) for one in (True, False)}
_FIND_CARD = {by_id: _find_statement(by_id, False, False, card=True) for by_id in (True, False)}


def find(paper: Paper, id_or_slug: str, *, now: datetime, include_drafts: bool = False,
         drafts_of: int | None = None) -> Piece | None:
    """A piece by numeric id or slug, with section, persona and cited facts loaded (one
    statement); None when it does not exist, is not this paper's, or is not on air by `now`
    and drafts are not allowed (with `drafts_of`, a draft of another persona)."""
    lookup = _lookup(id_or_slug)
    if lookup is None:
        return None
    by_id, value = lookup
    one, extra = _scope(include_drafts, drafts_of)
    params = {"paper_id": paper.id, "id" if by_id else "slug": value, **extra, **visibility.at(now)}
    return db.session.execute(_FIND[by_id, include_drafts, one], params).unique().scalar_one_or_none()


def find_card(paper: Paper, id_or_slug: str, *, now: datetime) -> Piece | None:
    """`find()` of a piece on air for its story card: only what a card shows is loaded (id,
    slug, headline, image, rev, on air, its notices (a card says "corrected"); the section's
    name; the persona's name and slug; no facts, no prose: one row of 14 columns instead of one
    per fact of 33), and reading
    anything else raises `sqlalchemy.exc.InvalidRequestError`. None as `find()`."""
    lookup = _lookup(id_or_slug)
    if lookup is None:
        return None
    by_id, value = lookup
    params = {"paper_id": paper.id, "id" if by_id else "slug": value, **visibility.at(now)}
    return db.session.execute(_FIND_CARD[by_id], params).scalar_one_or_none()


def unsupported_by_persona(paper: Paper, persona_id: int | None = None) -> list[dict]:
    """Per persona (by name), how many of the paper's pieces, drafts too, have figures no cited
    fact states in their current revision, and how many figures in all: `[{persona, pieces,
    figures}]`, most figures first; only `persona_id`'s with one given. One query."""
    query = (select(Persona.name, func.count(Piece.id), func.sum(Piece.unsupported_figures))
             .join(Persona, Persona.id == Piece.persona_id)
             .where(Piece.paper_id == paper.id, Piece.unsupported_figures > 0)
             .group_by(Persona.name).order_by(func.sum(Piece.unsupported_figures).desc(), Persona.name))
    if persona_id is not None:
        query = query.where(Piece.persona_id == persona_id)
    return [{"persona": name, "pieces": pieces, "figures": int(total)}
            for name, pieces, total in db.session.execute(query)]
