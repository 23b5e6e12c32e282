"""Queries only the reader pages need (blueprints/pages.py); the rest come from front.py,
archive.py, stories.py and lookups.py beside this module. On-air pieces only, always: drafts
never reach a page. Each function issues one SQL statement whatever the number of rows (a
search page: search.search_pieces' few).

Lists are paged by number (`?page=N`, 1-based, newest first): a page of `size` asks for
`size + 1` rows at offset `(N - 1) * size`, and the extra row only says an older page exists,
so no count is ever taken. Every list is built on stories.rows_query (or search.search_pieces),
which holds the one definition of "on air", judged at the `now` each function takes.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from operator import itemgetter

from sqlalchemy import bindparam, func, select

from extensions import db
from models import Edition, Paper, Persona, Piece, Section
from services.reading import memo, search, stories, visibility

SECTION_PAGE_SIZE = 50
DAY_PAGE_SIZE = 50
PERSONA_PAGE_SIZE = 30
SEARCH_PAGE_SIZE = 20
# A search page N asks the index for N * size + 1 matches (search.py has no keyset), so the
# pages stop here: 200 matches, past which a reader adds a word rather than turning pages.
SEARCH_MAX_PAGES = 10
# `?page=` beyond this is refused before any query (an OFFSET is a bigint on both databases).
MAX_PAGE = 100_000
RELATED_SIZE = 4


@dataclass(frozen=True)
class Page:
    """One page of a list, newest first: `items` (at most the page size), `number` (1-based),
    `has_older` (a page `number + 1` exists). `has_newer` is `number > 1`."""

    items: list
    number: int
    has_older: bool

    @property
    def has_newer(self) -> bool:
        """A page `number - 1` exists (every page but the first)."""
        return self.number > 1


def parse_page(text: str | None) -> int | None:
    """`?page=` as a page number: None (absent) or `''` -> 1; `'2'` -> 2. None for anything
    else: not ASCII digits, a leading zero, 0, or above MAX_PAGE. Never raises."""
    if text is None or text == "":
        return 1
    if not (text.isascii() and text.isdigit()) or text[0] == "0" or len(text) > len(str(MAX_PAGE)):
        return None
    number = int(text)
    return number if number <= MAX_PAGE else None


def _page(query, number: int, size: int, now: datetime) -> Page:
    """`query` (a SELECT of Pieces in list order) cut to page `number` of `size`, judged at
    `now`: one statement."""
    rows = list(db.session.scalars(query.limit(size + 1).offset((number - 1) * size), visibility.at(now)))
    return Page(rows[:size], number, len(rows) > size)


def section_pieces(paper: Paper, section: Section, page: int = 1, size: int = SECTION_PAGE_SIZE, *,
                   now: datetime) -> Page:
    """Page `page` of the pieces on air by `now` in `section`, newest first, as story items
    (stories.ITEM_LOADS: section and persona loaded, no prose or facts; anything else raises)."""
    return _item_page(_SECTION_ITEMS, {"paper_id": paper.id, "section_id": section.id}, page, size, now)


def persona_pieces(paper: Paper, persona: Persona, page: int = 1, size: int = PERSONA_PAGE_SIZE, *,
                   now: datetime) -> Page:
    """Page `page` of the pieces on air by `now` under `persona`'s byline, newest first, as story
    items (stories.ITEM_LOADS)."""
    return _item_page(_PERSONA_ITEMS, {"paper_id": paper.id, "persona_id": persona.id}, page, size, now)


def _item_page(statement, params: dict, number: int, size: int, now: datetime) -> Page:
    """`statement` (built once: one of the *_ITEMS below) cut to page `number` of `size` at `now`."""
    rows = list(db.session.scalars(statement, {**params, "limit": size + 1, "offset": (number - 1) * size,
                                               **visibility.at(now)}))
    return Page(rows[:size], number, len(rows) > size)


# Built once: a section's page of 50 loaded 50 proses it never shows, and building the
# statement cost about as much as running it (cold /sections/world: see docs/PERFORMANCE.md).
_SECTION_ITEMS, _PERSONA_ITEMS = (
    stories.items_query_for(bindparam("paper_id")).where(column == bindparam(name))
    .limit(stories.limit_param()).offset(stories.limit_param("offset"))
    for column, name in ((Piece.section_id, "section_id"), (Piece.persona_id, "persona_id")))


def search_page(paper: Paper, terms: list[str], page: int = 1, size: int = SEARCH_PAGE_SIZE, *,
                now: datetime) -> Page:
    """Page `page` of the pieces on air by `now` matching every term of `terms` (search.parse_query's),
    newest first, as `GET /api/v1/search` matches them. Pages stop at SEARCH_MAX_PAGES: that
    page says no older one, whatever more the index holds, and a page past it is empty without
    a query. No terms: an empty page."""
    if page > SEARCH_MAX_PAGES:
        return Page([], page, False)
    found = search.search_pieces(paper, terms, limit=page * size + 1, now=now)
    start = (page - 1) * size
    return Page(found[start:start + size], page, len(found) > page * size and page < SEARCH_MAX_PAGES)


@dataclass(frozen=True, slots=True)
class Named:
    """A section or persona as a story item shows it: `name` and `slug`."""

    name: str
    slug: str


@dataclass(frozen=True, slots=True)
class StoryItem:
    """What a story item of a page shows of a piece on air (templates/pages/_macros.html
    `story_item`, and the front's lead with its share card), as plain data a worker may keep
    across requests: `on_air_at` aware UTC, `section` and `persona` as `Named`, `rev` the
    revision (the share card's version, services/links.py `card_version`)."""

    id: int
    slug: str
    headline: str
    dek: str
    image: str | None
    on_air_at: object
    section: Named
    persona: Named
    rev: int


# A story item's columns, for Core statements (joined with sections and personas): no ORM
# objects are made for what is shown as plain data. `story_item` reads a row of them.
ITEM_COLUMNS = (Piece.id, Piece.slug, Piece.headline, Piece.dek, Piece.image, Piece.on_air_at,
                Section.name, Section.slug, Persona.name, Persona.slug, Piece.rev)


def story_item(row) -> StoryItem:
    """The StoryItem of a row that begins with ITEM_COLUMNS."""
    id_, slug, headline, dek, image, on_air_at, section, section_slug, byline, persona_slug, rev = row[:11]
    return StoryItem(id_, slug, headline, dek, image, on_air_at, Named(section, section_slug),
                     Named(byline, persona_slug), rev)


def items_joined(*extra):
    """SELECT of ITEM_COLUMNS (and `extra` columns) from pieces joined with their section and
    persona; the caller adds where, order and limit."""
    return (select(*ITEM_COLUMNS, *extra).join(Section, Section.id == Piece.section_id)
            .join(Persona, Persona.id == Piece.persona_id))


@dataclass(frozen=True, slots=True)
class PageStory:
    """A piece on air as its page shows it (blueprints/pages.py `story`): what the page, its
    JSON-LD, share card and embed snippet read of a Piece, by the same names, as plain data from
    one Core statement (`story_page`) instead of ORM objects. `section` and `persona` are
    `Named`, `cited_facts` rows of stories.FACT_COLUMNS in `n` order, `notices` the piece's
    notices (services/reading/revisions.py), datetimes aware UTC."""

    id: int
    slug: str
    headline: str
    dek: str
    prose: str
    image: str | None
    rev: int
    content_hash: str
    on_air_at: object
    updated_at: object
    notices: list | None
    section_id: int
    section: Named
    persona: Named
    cited_facts: list


def story_page(paper: Paper, id_or_slug: str, *, now: datetime) -> PageStory | None:
    """The piece on air by `now` (aware UTC) with id or slug `id_or_slug`, for its page, or
    None (as stories.find would be). One statement (stories.find_page_row)."""
    found = stories.find_page_row(paper, id_or_slug, now=now)
    if found is None:
        return None
    row, facts = found
    (id_, slug, headline, dek, prose, image, rev, content_hash, on_air_at, updated_at, notices, section_id,
     section, section_slug, byline, persona_slug) = _PAGE_FIELDS(row)
    return PageStory(id_, slug, headline, dek, prose, image, rev, content_hash, on_air_at, updated_at, notices,
                     section_id, Named(section, section_slug), Named(byline, persona_slug), facts)


# A page row's fields by position, found once from PAGE_COLUMNS' names (a Core Row's attribute
# lookup fails a normal lookup first, with a formatted AttributeError: many times an index).
_PAGE_FIELDS = itemgetter(*({column.key: at for at, column in enumerate(stories.PAGE_COLUMNS)}[name] for name in (
    "id", "slug", "headline", "dek", "prose", "image", "rev", "content_hash", "on_air_at", "updated_at",
    "notices", "section_id", "section", "section_slug", "byline", "persona_slug")))


def related_pieces(paper: Paper, piece: Piece | PageStory, limit: int = RELATED_SIZE,
                   version_state: str | None = None, *, now: datetime) -> list[StoryItem]:
    """Up to `limit` newest other pieces on air by `now` in `piece`'s section ("more in this section"),
    as StoryItems. The section's newest `limit + 1` are kept per paper version in this worker
    (services/reading/memo.py; `version_state` as caching.paper_state gives it, None asks
    afresh): every story of a section shows the same rail but itself, so a cold story page
    asks the database for its piece alone."""
    newest = memo.per_version(f"related:{piece.section_id}:{limit}", version_state, lambda: [
        story_item(row) for row in stories.core_rows(_SECTION_NEWEST, {
            "paper_id": paper.id, "section_id": piece.section_id, "limit": limit + 1, **visibility.at(now)})])
    return [item for item in newest if item.id != piece.id][:limit]


# Built once (building it cost as much as running it; docs/PERFORMANCE.md), as Core rows of a
# StoryItem's fields: the rail is plain data, so no ORM objects are made for it.
_SECTION_NEWEST = (items_joined()
                   .where(Piece.paper_id == bindparam("paper_id"), visibility.on_air(),
                          Piece.section_id == bindparam("section_id"))
                   .order_by(Piece.on_air_at.desc(), Piece.id.desc()).limit(stories.limit_param()))


def day_pieces(paper: Paper, day: date, page: int = 1, size: int = DAY_PAGE_SIZE, *, now: datetime) -> Page:
    """Page `page` of the pieces that went on air on UTC `day` (and are on air by `now`),
    newest first, section and persona loaded."""
    return _page(stories.rows_query(paper).where(Piece.on_air_day == day), page, size, now)


def neighbour_days(paper: Paper, day: date, *, now: datetime) -> tuple[date | None, date | None]:
    """(the latest day before `day`, the earliest day after it) with pieces on air by `now`;
    None where there is none. One statement of two scalar subqueries on the indexed `on_air_day`."""
    aired = (Piece.paper_id == paper.id) & visibility.on_air()
    before = select(func.max(Piece.on_air_day)).where(aired, Piece.on_air_day < day)
    after = select(func.min(Piece.on_air_day)).where(aired, Piece.on_air_day > day)
    row = db.session.execute(select(before.scalar_subquery(), after.scalar_subquery()), visibility.at(now)).one()
    return row[0], row[1]


def find_edition(paper: Paper, day: date) -> Edition | None:
    """The video edition of UTC `day`, or None."""
    return db.session.scalar(select(Edition).where(Edition.paper_id == paper.id, Edition.day == day))
