"""Sitemaps of a paper's host: the sitemaps.org 0.9 urlset (or index) and a Google News sitemap.

`/sitemap.xml` lists, in order: the home page, each active section's page, the masthead, each
persona's page (active personas in masthead order, then retired ones whose pieces are still on
air), the cast and each video edition's page (newest first, when there are editions), each day's
back-issue page (newest first), then every piece on air, oldest first (so pages of a split
sitemap stay stable as pieces are added); every URL is absolute, under the `links` given.
When that list is longer than `MAX_URLS` (50 000, the protocol's limit) `/sitemap.xml` becomes
a sitemap index of `/sitemap-<n>.xml` pages, each a slice of the same list.

Every function issues a constant number of statements, selecting only the columns it writes
(slug, updated_at), never whole `Piece` rows: a 100 000-piece paper is two sitemap pages.
XML is built with lxml, so untrusted text is escaped by the serialiser; a urlset, the one
large answer, is joined from strings escaped as lxml escapes them (`_text`, held equal to
lxml's output by tests/test_sitemap_writer.py).
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from lxml import etree
from sqlalchemy import Integer, and_, case, func, literal, literal_column, or_, select, union_all

from extensions import db
from models import Edition, Paper, Persona, Piece, Section
from models.clock import rfc3339, rfc3339_fresh
from services.links import Links
from services.reading import visibility
from services.rendering.feeds import paper_language
from services.rendering.xmltext import xml_safe

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
MAX_URLS = 50_000
MAX_OFFSET = 2**31 - 1  # no paper has two billion URLs; larger page numbers name nothing
# Google News reads pieces published in the last two days, at most 1000 per sitemap.
NEWS_WINDOW = timedelta(days=2)
NEWS_MAX_URLS = 1000


class Entry(NamedTuple):
    """One `<url>`: an absolute location and when it last changed (None: unknown)."""

    loc: str
    lastmod: datetime | None


def _on_air(paper: Paper):
    return and_(Piece.paper_id == paper.id, visibility.on_air())


def _static_entries(paper: Paper, links: Links, now: datetime) -> list[Entry]:
    """Home, active sections (paper order), the masthead, the persona pages, the cast and its
    editions (newest first), and every day with pieces on air (newest first). Three queries; a
    page's lastmod is the newest `updated_at` of the pieces it shows, an edition's its
    publication."""
    sections, personas = _named_pages(paper, now)
    days = db.session.execute(_days_newest(paper), visibility.at(now)).all()
    editions = db.session.execute(
        select(Edition.day, Edition.published_at).where(Edition.paper_id == paper.id)
        .order_by(Edition.day.desc())
    ).all()
    stamps = [moment for _, moment in days if moment is not None]
    entries = [Entry(links.home(), max(stamps) if stamps else None)]
    entries += [Entry(links.section_page(slug), moment) for slug, moment in sections]
    entries.append(Entry(links.absolute("/masthead"), None))
    entries += [Entry(links.absolute(f"/masthead/{slug}"), moment) for slug, moment in personas]
    if editions:
        entries.append(Entry(links.absolute("/cast"), max(moment for _, moment in editions)))
        entries += [Entry(links.edition_page(day), moment) for day, moment in editions]
    entries += [Entry(links.day_page(day), moment) for day, moment in days]
    return entries


def _days_newest(paper: Paper):
    """(day, newest `updated_at` of its pieces public at AIR_NOW) for every day with one, newest
    day first: a recursive CTE that hops ix_pieces_day_updated from one `on_air_day` to the next
    (`visibility.air_days`, one seek a day, as the front's newsroom counts walk them), then one backward seek a
    day for its newest `updated_at` whose `on_air_at` has come (the index holds both, so a
    scheduled piece is stepped over without reading its row). A GROUP BY read every piece on
    air: about 80 ms on SQLite and 220 ms on PostgreSQL at 100 000 pieces, against 2-12 ms."""
    days = visibility.air_days(paper.id)
    newest = (select(func.max(Piece.updated_at))
              .where(_on_air(paper), Piece.on_air_day == days.c.day).scalar_subquery())
    dated = select(days.c.day.label("day"), newest.label("newest")).where(days.c.day.is_not(None)).subquery()
    return (select(dated.c.day, dated.c.newest).where(dated.c.newest.is_not(None))
            .order_by(dated.c.day.desc()))


def _named_pages(paper: Paper, now: datetime) -> tuple[list[tuple[str, datetime | None]],
                                                       list[tuple[str, datetime | None]]]:
    """(sections, personas): each a list of (slug, newest `updated_at` of its pieces on air, or
    None). Sections: the active ones in paper order. Personas: the active ones in masthead order,
    then the retired ones with pieces still on air (their pages answer, bylines link them).
    One query for both: the sitemap's statement count stays what tests/test_queries.py holds.
    Each newest `updated_at` is a correlated `max` that walks ix_pieces_section_updated or
    ix_pieces_persona_updated backwards to the first piece whose `on_air_at` has come: a seek
    per section and persona, where a join grouped every piece on air (about 100 ms on SQLite
    at 100 000 pieces, 60 ms on PostgreSQL, even from covering indexes)."""
    def newest(column, owner_id):
        return (select(func.max(Piece.updated_at)).where(_on_air(paper), column == owner_id)
                .scalar_subquery())

    sections = (
        select(literal_column("0").label("kind"), Section.slug.label("slug"),
               newest(Piece.section_id, Section.id).label("newest"), literal_column("0").label("retired"),
               Section.position.label("position"), Section.id.label("id"))
        .where(Section.paper_id == paper.id, Section.active.is_(True))
    )
    retired = case((Persona.active.is_(True), 0), else_=1)
    persona_newest = newest(Piece.persona_id, Persona.id)
    # `updated_at` is NOT NULL: a retired persona's newest is not None exactly when it has a
    # piece on air.
    personas = (
        select(literal_column("1"), Persona.slug, persona_newest, retired, Persona.position, Persona.id)
        .where(Persona.paper_id == paper.id, or_(Persona.active.is_(True), persona_newest.is_not(None)))
    )
    named = union_all(sections, personas).subquery()
    rows = db.session.execute(
        select(named.c.kind, named.c.slug, named.c.newest)
        .order_by(named.c.kind, named.c.retired, named.c.position, named.c.id),
        visibility.at(now),
    ).all()
    return ([(slug, moment) for kind, slug, moment in rows if kind == 0],
            [(slug, moment) for kind, slug, moment in rows if kind == 1])


def _piece_entries(paper: Paper, offset: int, limit: int, links: Links, now: datetime) -> list[Entry]:
    if limit <= 0:
        return []
    rows = db.session.execute(
        select(Piece.slug, Piece.updated_at)
        .where(_on_air(paper))
        .order_by(Piece.on_air_at, Piece.id)
        .offset(offset)
        .limit(limit),
        visibility.at(now),
    )
    # One URL prefix for all rows, joined to each slug: a call per row would cost more.
    prefix = links.story_page("")
    return [Entry(prefix + slug, updated_at) for slug, updated_at in rows]


def _count_pieces(paper: Paper, now: datetime) -> int:
    return db.session.scalar(select(func.count(Piece.id)).where(_on_air(paper)), visibility.at(now)) or 0


def _page_lastmods(paper: Paper, offset: int, max_urls: int, pieces: int, now: datetime) -> dict[int, datetime]:
    """{page index from 0: newest updated_at among its pieces}, in one statement. The piece at
    position `p` (from 0, in sitemap order) sits at position `offset + p` of the list, so page
    `k` holds pieces `k * max_urls - offset` to `(k + 1) * max_urls - offset - 1`; `pieces` is
    how many there are. Each page is a slice of ix_pieces_paper_air (which ends with
    `updated_at`, so no table row is read) walked from its nearer end, OFFSET then LIMIT: a
    two-page index reads each index entry about once. A window numbering every row cost
    120-200 ms at 100 000 pieces, most of it the numbering."""
    order = (Piece.on_air_at, Piece.id)
    slices = []
    for k in range(-(-(offset + pieces) // max_urls)):
        first = max(0, k * max_urls - offset)
        end = min(pieces, (k + 1) * max_urls - offset)
        if end <= first:
            continue  # a page of static URLs only
        rows = select(Piece.updated_at).where(_on_air(paper))
        if first <= pieces - end:
            rows = rows.order_by(*order).offset(first)
        else:
            rows = rows.order_by(*(column.desc() for column in order)).offset(pieces - end)
        rows = rows.limit(end - first).subquery()
        slices.append(select(literal(k, Integer).label("page"), func.max(rows.c.updated_at)))
    if not slices:
        return {}
    statement = slices[0] if len(slices) == 1 else union_all(*slices)
    rows = db.session.execute(statement, visibility.at(now))
    return {int(n): moment for n, moment in rows if moment is not None}


_URLSET_OPEN = f"<?xml version='1.0' encoding='UTF-8'?>\n<urlset xmlns=\"{SITEMAP_NS}\">"


def _text(value: str) -> str:
    """`value` as XML character data, byte for byte as lxml's serialiser writes a text node:
    characters XML 1.0 cannot carry dropped (`xml_safe`), then `&`, `<`, `>` and carriage
    return escaped; quotes, tab, newline and every other character as they are (UTF-8)."""
    return (xml_safe(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("\r", "&#13;"))


def _urlset(entries: list[Entry]) -> bytes:
    """The sitemaps.org urlset of `entries`, as UTF-8 bytes: the very bytes lxml's writer
    made (tests/test_sitemap_writer.py holds them equal for any text), written as one join of
    strings, since lxml's element calls cost 20-30 us a URL, over a second for a full page."""
    parts = [_URLSET_OPEN]
    for loc, lastmod in entries:
        if lastmod is None:
            parts.append(f"<url><loc>{_text(loc)}</loc></url>")
        else:
            parts.append(f"<url><loc>{_text(loc)}</loc><lastmod>{rfc3339_fresh(lastmod)}</lastmod></url>")
    parts.append("</urlset>")
    return "".join(parts).encode("utf-8")


def _serialise(root) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def build_sitemap(paper: Paper, max_urls: int = MAX_URLS, *, now: datetime, links: Links) -> bytes:
    """`/sitemap.xml`: a urlset of every URL (under `links`; what is on air by `now`) when they
    fit in `max_urls`, else a sitemap index of `/sitemap-<n>.xml` pages with their lastmod. Five
    statements whatever the size."""
    static = _static_entries(paper, links, now)
    pieces = _count_pieces(paper, now)
    total = len(static) + pieces
    if total <= max_urls:
        return _urlset(static + _piece_entries(paper, 0, pieces, links, now))
    lastmods = _page_lastmods(paper, len(static), max_urls, pieces, now)
    static_newest = static[0].lastmod
    root = etree.Element(f"{{{SITEMAP_NS}}}sitemapindex", nsmap={None: SITEMAP_NS})
    for n in range(-(-total // max_urls)):
        sitemap = etree.SubElement(root, f"{{{SITEMAP_NS}}}sitemap")
        etree.SubElement(sitemap, f"{{{SITEMAP_NS}}}loc").text = links.absolute(f"/sitemap-{n + 1}.xml")
        moments = [m for m in (lastmods.get(n), static_newest if n * max_urls < len(static) else None)
                   if m is not None]
        if moments:
            etree.SubElement(sitemap, f"{{{SITEMAP_NS}}}lastmod").text = rfc3339(max(moments))
    return _serialise(root)


def build_sitemap_page(paper: Paper, n: int, max_urls: int = MAX_URLS, *, now: datetime,
                       links: Links) -> bytes | None:
    """`/sitemap-<n>.xml` (n from 1): slice n of the URL list (under `links`; what is on air by
    `now`) as a urlset; None when the page is past the end. Four statements."""
    if n < 1 or (n - 1) * max_urls > MAX_OFFSET:
        return None  # past any real end, and an OFFSET neither database could take
    static = _static_entries(paper, links, now)
    start, end = (n - 1) * max_urls, n * max_urls
    entries = static[start:end]
    first_piece = max(0, start - len(static))
    entries += _piece_entries(paper, first_piece, end - max(start, len(static)), links, now)
    if not entries:
        return None
    return _urlset(entries)


def news_window_start(now: datetime) -> datetime:
    """The oldest `on_air_at` the news sitemap lists: two days before `now`, floored to the
    hour so the document (and its ETag) holds still for an hour."""
    return now.replace(minute=0, second=0, microsecond=0) - NEWS_WINDOW


def build_news_sitemap(paper: Paper, now: datetime, *, links: Links) -> bytes:
    """`/sitemap-news.xml`: pieces on air since `news_window_start(now)` (aware UTC), newest
    first, at most 1000, each with its story page under `links`, news:publication (name,
    language), news:publication_date and news:title. One statement."""
    rows = db.session.execute(
        select(Piece.slug, Piece.headline, Piece.on_air_at)
        .where(_on_air(paper), Piece.on_air_at >= news_window_start(now))
        .order_by(Piece.on_air_at.desc(), Piece.id.desc())
        .limit(NEWS_MAX_URLS),
        visibility.at(now),
    )
    root = etree.Element(f"{{{SITEMAP_NS}}}urlset", nsmap={None: SITEMAP_NS, "news": NEWS_NS})
    name, language = xml_safe(paper.nameplate), paper_language(paper)
    for slug, headline, on_air_at in rows:
        url = etree.SubElement(root, f"{{{SITEMAP_NS}}}url")
        etree.SubElement(url, f"{{{SITEMAP_NS}}}loc").text = links.story_page(slug)
        news = etree.SubElement(url, f"{{{NEWS_NS}}}news")
        publication = etree.SubElement(news, f"{{{NEWS_NS}}}publication")
        etree.SubElement(publication, f"{{{NEWS_NS}}}name").text = name
        etree.SubElement(publication, f"{{{NEWS_NS}}}language").text = language
        etree.SubElement(news, f"{{{NEWS_NS}}}publication_date").text = rfc3339(on_air_at)
        etree.SubElement(news, f"{{{NEWS_NS}}}title").text = xml_safe(headline)
    return _serialise(root)

