"""The front document, the cast and the masthead (`/api/v1/front`, `/api/v1/cast`,
`/api/v1/masthead`; `/front.json` serves the same document as `/api/v1/front`).

Every function issues a fixed number of SQL statements, whatever the number of sections,
pieces, editions or personas. Those that count or list pieces on air take `now`, the instant
they judge at (services/reading/visibility.py). The front document's absolute URL comes from the `links` it is
given; the wire shape (schemas/front.py `FrontOut`) is the web layer's to apply.
"""
from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from sqlalchemy import and_, bindparam, func, select, union_all
from sqlalchemy.orm import joinedload

from extensions import db
from models import Edition, Paper, Persona, Piece, Section
from services.errors import Invalid
from services.links import Links
from services.reading import memo, reader, stories, visibility

RAIL_SIZE = 6
# The config keys shown publicly, each one a public surface already reads: the rest of the
# config (integrations, credentials, anything nested) is the desk's own. An allow-list, because
# a deny-list of secret-sounding names misses the secret it did not foresee.
PUBLIC_CONFIG = (
    "timezone",       # the paper's home timezone (IANA name)
    "language",       # RSS and Google News language tag (services/rendering/feeds.py)
    "help_desk",      # mailto: or http(s) URL; the API index's `search_help` points there
    "contact_email",  # the podcast feed's owner address, already public there
    "podcast_image",  # the podcast artwork URL, already public there
)


def public_config(paper: Paper) -> dict:
    """The public part of the paper's config: `{key: str}` for each key of PUBLIC_CONFIG the
    config holds as a string; anything else (other keys, non-string or nested values) is left
    out."""
    config = paper.config if isinstance(paper.config, dict) else {}
    return {key: config[key] for key in PUBLIC_CONFIG if isinstance(config.get(key), str)}


def active_sections(paper: Paper) -> list:
    """The paper's active sections in its own order (position, then id): rows with `id`, `name`
    and `slug` (Core rows of a statement built once: building the expression and the ORM's
    Section objects cost more than running it)."""
    return stories.core_rows(_ACTIVE_SECTIONS, {"paper_id": paper.id}).all()


_ACTIVE_SECTIONS = (select(Section.id, Section.name, Section.slug)
                    .where(Section.paper_id == bindparam("paper_id"), Section.active.is_(True))
                    .order_by(Section.position, Section.id))


class NavSection(NamedTuple):
    """A section as the pages' nav shows it."""

    slug: str
    name: str


class RailSection(NamedTuple):
    """An active section as the front's rails need it."""

    id: int
    name: str
    slug: str


def rail_sections(paper: Paper, version_state: str | None) -> list[RailSection]:
    """`active_sections` for the front's rails, kept per paper version in this worker like
    `nav_sections`: a cold front then costs one round trip to the database (the rails), not two."""
    return memo.per_version("rail_sections", version_state,
                            lambda: [RailSection(s.id, s.name, s.slug) for s in active_sections(paper)])


def nav_sections(paper: Paper, version_state: str | None) -> list[NavSection]:
    """`active_sections` as the nav needs them, kept per paper version in this worker
    (services/reading/memo.py: `version_state` as `newsroom` takes it; None asks afresh). Made
    from `rail_sections`' list, so a story page and the front of one version read the sections
    once between them."""
    return memo.per_version("nav_sections", version_state,
                            lambda: [NavSection(s.slug, s.name) for s in rail_sections(paper, version_state)])


def rail_pieces(paper: Paper, sections: list[Section] | list[RailSection],
                size: int = RAIL_SIZE, *, now: datetime) -> dict[int, list[Piece]]:
    """Up to `size` newest pieces on air by `now` per section, newest first: `{section_id: [Piece]}`,
    section and persona loaded. One statement: a UNION ALL of per-section `LIMIT size`
    subqueries, each an index range scan on ix_pieces_section_air, so its cost follows the rail
    size, not the archive's (a window function would rank every piece on air)."""
    rails: dict[int, list[Piece]] = {section.id: [] for section in sections}
    if not sections:
        return rails
    for piece in db.session.scalars(_rail_statement(_RAIL_PIECES, _rail_pieces_statement, len(sections)),
                                    _rail_params(paper, sections, size, now)):
        rails[piece.section_id].append(piece)
    return rails


def rail_items(paper: Paper, sections: list[Section] | list[RailSection],
               size: int = RAIL_SIZE, *, now: datetime) -> dict[int, list[reader.StoryItem]]:
    """`rail_pieces` (on air by `now`) as story items (services/reading/reader.py StoryItem: what a page shows of
    a piece), read as Core rows of the same one statement's rails: the front page's rails are
    plain data, and building ORM pieces for them was a fifth of a cold front page."""
    rails: dict[int, list[reader.StoryItem]] = {section.id: [] for section in sections}
    if not sections:
        return rails
    statement = _rail_statement(_RAIL_ITEMS, _rail_items_statement, len(sections))
    for row in stories.core_rows(statement, _rail_params(paper, sections, size, now)):
        rails[row.section_id].append(reader.story_item(row))
    return rails


def _rail_ids(count: int):
    """The ids of the rails of `count` sections (bound as `s0 .. s{count-1}`, with `paper_id` and
    `size`): a UNION ALL of per-section `LIMIT size` subqueries."""
    parts = []
    for n in range(count):
        top = (select(Piece.id)
               .where(Piece.paper_id == bindparam("paper_id"), Piece.section_id == bindparam(f"s{n}"),
                      visibility.on_air())
               .order_by(Piece.on_air_at.desc(), Piece.id.desc()).limit(stories.limit_param("size")).subquery())
        parts.append(select(top.c.id))  # wrapped: SQLite refuses LIMIT in a bare compound member
    return union_all(*parts).subquery() if len(parts) > 1 else parts[0].subquery()


def _rail_pieces_statement(count: int):
    """`rail_pieces`' statement for `count` sections: Pieces, section and persona loaded."""
    ids = _rail_ids(count)
    return (select(Piece).where(Piece.id.in_(select(ids.c.id)))
            .options(joinedload(Piece.section), joinedload(Piece.persona))
            .order_by(Piece.on_air_at.desc(), Piece.id.desc()))


def _rail_items_statement(count: int):
    """`rail_items`' statement for `count` sections: Core rows of reader.ITEM_COLUMNS and the
    section id."""
    ids = _rail_ids(count)
    return (reader.items_joined(Piece.section_id).where(Piece.id.in_(select(ids.c.id)))
            .order_by(Piece.on_air_at.desc(), Piece.id.desc()))


def _rail_rows_statement(count: int):
    """The rails of `count` sections as one statement of Core rows (stories.ROW_COLUMNS and the
    section id)."""
    ids = _rail_ids(count)
    return (select(*stories.ROW_COLUMNS, Piece.section_id)
            .join(Section, Section.id == Piece.section_id).join(Persona, Persona.id == Piece.persona_id)
            .where(Piece.id.in_(select(ids.c.id))).order_by(Piece.on_air_at.desc(), Piece.id.desc()))


def _rail_statement(built: dict, build, count: int):
    """The statement `build(count)`, built once per count of sections: building the expression
    cost more than running it."""
    statement = built.get(count)
    if statement is None:
        statement = built[count] = build(count)
    return statement


def _rail_params(paper: Paper, sections: list[Section] | list[RailSection], size: int, now: datetime) -> dict:
    return {"paper_id": paper.id, "size": size, **{f"s{n}": s.id for n, s in enumerate(sections)},
            **visibility.at(now)}


_RAIL_PIECES: dict[int, object] = {}
_RAIL_ITEMS: dict[int, object] = {}
_RAIL_ROWS: dict[int, object] = {}


def rail_rows(paper: Paper, sections: list[Section] | list[RailSection], size: int = RAIL_SIZE, *,
              now: datetime) -> dict[int, list]:
    """`rail_pieces` as Core rows of stories.ROW_COLUMNS (plus `section_id`), for the wire:
    `{section_id: [row]}`, newest first, one statement."""
    rails: dict[int, list] = {section.id: [] for section in sections}
    if not sections:
        return rails
    statement = _rail_statement(_RAIL_ROWS, _rail_rows_statement, len(sections))
    for row in stories.core_rows(statement, _rail_params(paper, sections, size, now)):
        rails[row[_SECTION_ID_AT]].append(row)  # by position: a Row's lookup by name raises inside
    return rails


_SECTION_ID_AT = len(stories.ROW_COLUMNS)  # `_rail_rows_statement`'s section id, after ROW_COLUMNS


def newsroom(paper: Paper, version_state: str | None, *, now: datetime) -> dict:
    """Counts about the desk at `now`: active `personas` and `sections`, pieces `on_air`, `days` with
    pieces on air, `editions`, `latest_on_air_at` (aware UTC or None) and `latest_edition`
    (date or None). Counting pieces and days grows with the archive, so the statement runs
    once per paper version in each worker (services/reading/memo.py): `version_state` is the
    paper's state as the request resolved it at `now` (web/caching.py `paper_state`, which
    counts the scheduled instants come by then); None counts afresh."""
    return dict(memo.per_version("newsroom", version_state, lambda: _count_newsroom(paper, now)))


def _count_newsroom(paper: Paper, now: datetime) -> dict:
    """One statement of scalar subqueries for `newsroom`."""
    return _newsroom_of(stories.core_rows(_NEWSROOM, {"paper_id": paper.id, **visibility.at(now)}).one())


def _newsroom_of(row) -> dict:
    """`newsroom`'s dict from a row holding `_NEWSROOM`'s labelled columns."""
    return {"personas": row.personas, "sections": row.section_count, "on_air": row.on_air, "days": row.days,
            "editions": row.editions, "latest_on_air_at": row.latest_on_air_at,
            "latest_edition": row.latest_edition}


def _newsroom_statement():
    # Built once (at import), for the paper bound as `paper_id`: building it cost more than
    # running it once the counts are memoised.
    paper_id = bindparam("paper_id")
    on_air = and_(Piece.paper_id == paper_id, visibility.on_air())
    return select(
        select(func.count(Persona.id))
        .where(Persona.paper_id == paper_id, Persona.active.is_(True)).scalar_subquery().label("personas"),
        select(func.count(Section.id))
        .where(Section.paper_id == paper_id, Section.active.is_(True)).scalar_subquery().label("section_count"),
        # count(*), not count(id): PostgreSQL then counts from the index alone.
        select(func.count()).select_from(Piece).where(on_air).scalar_subquery().label("on_air"),
        _days_on_air(paper_id).label("days"),
        select(func.max(Piece.on_air_at)).where(on_air).scalar_subquery().label("latest_on_air_at"),
        select(func.count(Edition.id)).where(Edition.paper_id == paper_id).scalar_subquery().label("editions"),
        select(func.max(Edition.day)).where(Edition.paper_id == paper_id).scalar_subquery().label("latest_edition"),
    )


def _days_on_air(paper_id):
    """`count(DISTINCT on_air_day)` of the pieces public at AIR_NOW, as a scalar subquery that
    hops the (paper_id, on_air, on_air_day) index from one day to the next (a recursive CTE:
    one index seek a day, a loose index scan), then keeps the days whose first airing has come
    by AIR_NOW. The plain DISTINCT reads every piece on air: with 100 000 pieces about 70 ms
    on SQLite, paid by each worker after every write that moves the front, while the hops
    cost one seek a day (a year's archive: about 1 ms)."""
    aired = and_(Piece.paper_id == paper_id, Piece.on_air.is_(True))
    days = visibility.air_days(paper_id)
    first_airing = (select(func.min(Piece.on_air_at)).where(aired, Piece.on_air_day == days.c.day)
                    .scalar_subquery())
    return (select(func.count()).select_from(days)
            .where(days.c.day.is_not(None), first_airing <= visibility.AIR_NOW).scalar_subquery())


_NEWSROOM = _newsroom_statement()


def _sections_and_newsroom_statement():
    # The counts' one row, joined with the active sections (none: one row of NULL section
    # columns), in the sections' order: `_ACTIVE_SECTIONS` and `_NEWSROOM` in one round trip.
    counts = _NEWSROOM.subquery("newsroom")
    return (select(counts, Section.id, Section.name, Section.slug).select_from(counts)
            .outerjoin(Section, and_(Section.paper_id == bindparam("paper_id"), Section.active.is_(True)))
            .order_by(Section.position, Section.id))


_SECTIONS_AND_NEWSROOM = _sections_and_newsroom_statement()


def sections_and_newsroom(paper: Paper, version_state: str | None, *,
                          now: datetime) -> tuple[list[RailSection], dict]:
    """`(rail_sections(...), newsroom(...))`, what the front (JSON and page) needs first, judged
    at `now` (aware UTC, the instant `version_state` was taken at). When this worker keeps
    neither for `version_state` (the first front after a write), one statement reads both and
    keeps each as those two would (a round trip fewer on PostgreSQL); otherwise each is taken as
    kept or read alone."""
    if not memo.known("rail_sections", version_state) and not memo.known("newsroom", version_state) \
            and version_state is not None:
        rows = stories.core_rows(_SECTIONS_AND_NEWSROOM, {"paper_id": paper.id, **visibility.at(now)}).all()
        memo.per_version("rail_sections", version_state,
                         lambda: [RailSection(row.id, row.name, row.slug) for row in rows if row.id is not None])
        memo.per_version("newsroom", version_state, lambda: _newsroom_of(rows[0]))
    return rail_sections(paper, version_state), newsroom(paper, version_state, now=now)


def build_front(paper: Paper, version_state: str | None, *, now: datetime, links: Links,
                rows: bool = False) -> dict:
    """The front document as plain data, for schemas.front.FrontOut to dump: `{"paper": {slug,
    nameplate, motto, description, home, config}, "newsroom": {...} (see `newsroom`),
    "rails": [{section, slug, stories: [Piece, section and persona loaded]}], "lead": Piece |
    None, "lead_chosen": bool, "top_stories": [Piece]}`, one rail per active section in section
    order, at most six newest pieces on air each; the lead and top stories as `choose_lead`
    picks them out of those rails (the rails still hold them); `home` is `links.home()`. Served
    by `GET /api/v1/front` and `/front.json` alike. Two SQL statements whatever the paper's
    size (`sections_and_newsroom`, then the rails; the rails alone when the sections and the
    newsroom counts are memoised for `version_state`), one more when the editor has chosen a
    lead. With `rows`, the stories are
    Core rows of stories.ROW_COLUMNS instead of Pieces (the chosen lead a row of STORY_COLUMNS;
    schemas/front.py `front_wire` shapes them). Judged at `now`, the instant `version_state`
    was taken at."""
    sections, counts = sections_and_newsroom(paper, version_state, now=now)
    rails = rail_rows(paper, sections, now=now) if rows else rail_pieces(paper, sections, now=now)
    document = {
        "paper": {
            "slug": paper.slug,
            "nameplate": paper.nameplate,
            "motto": paper.motto or "",
            "description": paper.description or "",
            "home": links.home(),
            "config": public_config(paper),
        },
        "newsroom": counts,
        "rails": [{"section": s.name, "slug": s.slug, "stories": rails[s.id]} for s in sections],
    }
    document["lead"], document["lead_chosen"], document["top_stories"] = choose_lead(
        paper, rails.values(), now=now, rows=rows)
    return document


def list_editions(paper: Paper) -> list[Edition]:
    """The paper's video editions, newest day first (one per day by constraint)."""
    return list(db.session.scalars(
        select(Edition).where(Edition.paper_id == paper.id).order_by(Edition.day.desc())
    ))


def list_masthead(paper: Paper, *, now: datetime) -> list[dict]:
    """Active personas in masthead order (position, then id), each `{"name", "slug", "title",
    "beat", "bio", "pieces"}` where pieces counts their pieces on air by `now`. One aggregate query on
    the first read of a paper version in each worker, none after (services/reading/memo.py:
    the counts grow with the archive)."""
    return [dict(row) for row in memo.per_version("masthead", memo.paper_state(paper, now),
                                                  lambda: _count_masthead(paper, now))]


def _count_masthead(paper: Paper, now: datetime) -> list[dict]:
    # persona_id, not id: each persona's count then reads ix_pieces_persona_air alone (an
    # index-only scan of its range; the paper in the join, as the index leads with it) instead
    # of every piece of the paper.
    count = func.count(Piece.persona_id)
    query = (
        select(Persona.name, Persona.slug, Persona.title, Persona.beat, Persona.bio,
               count.label("pieces"))
        .outerjoin(Piece, and_(Piece.paper_id == Persona.paper_id, Piece.persona_id == Persona.id,
                               visibility.on_air()))
        .where(Persona.paper_id == paper.id, Persona.active.is_(True))
        .group_by(Persona.id, Persona.name, Persona.slug, Persona.title, Persona.beat,
                  Persona.bio, Persona.position)
        .order_by(Persona.position, Persona.id)
    )
    return [{"name": name, "slug": slug, "title": title or "", "beat": beat or "",
             "bio": bio or "", "pieces": pieces}
            for name, slug, title, beat, bio, pieces in db.session.execute(query, visibility.at(now))]


# --- the lead and the top stories ------------------------------------------------------------
# The front's hierarchy: a lead (the editor's choice, config key LEAD_STORY, while it is on air;
# else the newest piece on air), then the next TOP_SIZE newest pieces across sections. Both are
# read out of the rails, so they cost no statement of their own: each active section's newest
# TOP_SIZE + 1 pieces hold the paper's newest TOP_SIZE + 1 of those sections (RAIL_SIZE is more).
# Only the editor's choice takes one lookup, and only when there is one.

TOP_SIZE = 4
LEAD_STORY = "lead_story"


def lead_story_choice(paper: Paper) -> str | None:
    """The editor's choice of lead as stored (`config.lead_story`: a piece id or slug as text),
    or None when none is chosen (or the stored value is not a non-empty string)."""
    config = paper.config if isinstance(paper.config, dict) else {}
    value = config.get(LEAD_STORY)
    return value if isinstance(value, str) and value else None


def check_lead_story(paper: Paper, value: str, *, now: datetime) -> None:
    """Refuse a lead that names no piece of `paper`: raises services.errors.Invalid (422, field
    `lead_story`). A draft is a piece of the paper, so it may be chosen before it airs: the
    front leads with it once it is on air and with the newest piece until then. One lookup."""
    if stories.find(paper, value, now=now, include_drafts=True) is None:
        raise Invalid(errors={LEAD_STORY: [f"No piece of this paper has the id or slug {value!r}."]})


def choose_lead(paper: Paper, rails, *, now: datetime, rows: bool = False, top: int = TOP_SIZE) -> tuple:
    """`(lead, chosen, top_stories)` for the front, out of `rails` (an iterable of rails, each a
    list of pieces newest first: Pieces, or Core rows of stories.ROW_COLUMNS with `rows`).

    `lead` is the editor's choice (`lead_story_choice`) when it names a piece on air by `now`, else the
    newest piece of the rails, else None (nothing on air); `chosen` says which. `top_stories`
    are the `top` newest pieces of the rails other than the lead, newest first (on_air_at, then
    id). Each rail must hold its section's newest `top + 1` pieces at least. At most one
    statement: the chosen piece's lookup (with its section and persona; a STORY_COLUMNS row
    with `rows`)."""
    chosen = None
    name = lead_story_choice(paper)
    if name is not None:
        if rows:
            found = stories.find_row(paper, name, now=now)
            chosen = found[0] if found else None
        else:
            chosen = stories.find(paper, name, now=now)
    newest = sorted((piece for rail in rails for piece in rail),
                    key=lambda piece: (piece.on_air_at, piece.id), reverse=True)
    lead = chosen if chosen is not None else (newest[0] if newest else None)
    others = [piece for piece in newest if lead is None or piece.id != lead.id][:top]
    return lead, chosen is not None, others


def front_page(paper: Paper, sections: list[Section] | list[RailSection], *, now: datetime,
               rail_size: int = RAIL_SIZE, top: int = TOP_SIZE) -> dict:
    """The reader's front page (blueprints/pages.py `home`): `{"lead": StoryItem | Piece | None,
    "lead_chosen": bool, "top_stories": [StoryItem], "rails": [(section, [StoryItem], aired:
    bool)]}`, one rail per section of `sections` in their order, each with up to `rail_size` of
    its newest pieces on air by `now` that are neither the lead nor a top story (`aired`: the
    section has pieces on air at all, shown or not). Story items are reader.StoryItem
    (`rail_items`); an editor's chosen lead is the Piece, section and persona loaded.

    Two statements whatever the paper's size (the rails' UNION ALL, and the editor's choice
    when there is one)."""
    # Each rail fetches enough to stay full once the lead and the top stories are taken out.
    # The page shows story items only: a rail's prose was most of what it loaded, then its ORM
    # objects most of the rest.
    rails = rail_items(paper, sections, size=rail_size + top + 1, now=now)
    lead, chosen, tops = choose_lead(paper, rails.values(), now=now, top=top)
    shown = {piece.id for piece in (lead, *tops) if piece is not None}
    return {
        "lead": lead, "lead_chosen": chosen, "top_stories": tops,
        "rails": [(section, [p for p in rails[section.id] if p.id not in shown][:rail_size],
                   bool(rails[section.id])) for section in sections],
    }
