"""The reader's web: server-rendered pages, no JavaScript needed.

`/` (the front: a lead, the top stories, then the section rails), `/stories/<id or slug>`,
`/sections/<slug>`, `/days` and `/days/<YYYY-MM-DD>` (back issues), `/cast` and
`/cast/<YYYY-MM-DD>` (video editions; `?embed=1` gives the frameable player the cast API's
`embed_url` names), `/masthead` and `/masthead/<persona>` (a persona and their pieces), and
`/search?q=` (the API's search as a page). docs/READER.md describes each page kind.

Only pieces on air appear. An unknown piece, section, day, edition or persona aborts 404, which
web/errors.py answers with the HTML error page. Lists (section, day, persona, search) are paged by
`?page=N` (services/reading/reader.py), with "Newer" (rel=prev) and "Older" (rel=next) links; a
page that is not a number is a 400 page, a page past the last a 404. Pages are public GETs, so
caching.py gives them an ETag and answers 304; nothing here reads the clock: every query is
judged at the request's one instant (`caching.request_now`), the one the ETag names too.
"""
from __future__ import annotations

import secrets
from datetime import date, datetime
from functools import lru_cache
from typing import NamedTuple

from flask import Blueprint, abort, current_app, g, make_response, render_template, request, url_for
from markupsafe import Markup

from models.clock import rfc3339
from services.delivery.federation import documents
from services.reading import archive, front, lookups, reader, revisions, search, stories
from services.rendering import diffs, embeds, prose
from services.rendering.prose import DIGITAL_SOURCE_TYPE, disclosure
from web import caching, policy, security
from web.links import links, paper_links

bp = Blueprint("pages", __name__)


@bp.app_context_processor
def page_context() -> dict:
    """For every template: `site` (the paper, or None on an unknown host), `site_url(path)` (an
    absolute URL on this host) and `nav_sections()`, the active sections for the nav (one query,
    run only by pages that show the nav and were not handed `nav` already)."""
    paper = g.get("paper")
    # web/tenancy.py sets g.paper before refusing a private paper without its key: the 404 page
    # must not show that paper's name.
    if paper is not None and not paper.is_public and g.get("key") is None:
        paper = None
    return {"site": paper, "site_url": lambda path: links().absolute(path),
            "nav_sections": lambda: front.nav_sections(paper, _version_state()) if paper is not None else []}


def _version_state() -> str | None:
    snap = g.get("paper_snapshot")  # set for every request answered for a paper
    return snap.state if snap is not None else None


@bp.app_template_filter("longdate")
def longdate(value: date | datetime | None) -> str:
    """date -> 'Sunday 1 November 2026'."""
    return "" if value is None else f"{value:%A} {value.day} {value:%B %Y}"


@bp.app_template_filter("shortdate")
def shortdate(value: date | datetime | None) -> str:
    """date -> '1 Nov 2026'."""
    return "" if value is None else f"{value.day} {value:%b %Y}"


@bp.app_template_filter("rfc3339")
def rfc3339_filter(value: datetime | None) -> str:
    """Aware datetime -> '2026-11-01T12:00:00Z' (for `<time datetime>` and JSON-LD)."""
    return "" if value is None else rfc3339(value)


@bp.app_template_filter("clock")
def clock_time(value: datetime | None) -> str:
    """datetime -> '14:05 UTC'."""
    return "" if value is None else f"{value:%H:%M} UTC"


@bp.app_template_global()
def kept_story_item(piece, **options) -> Markup:
    """The `story_item` macro (templates/pages/_macros.html) of `piece` with `options` (`lead`,
    `show_section`, `heading`, `art`). A reader.StoryItem is immutable plain data and the macro
    a pure function of it and the options, so its HTML is kept in this worker (least recently
    used dropped first) under the item itself as key: after a write, the items that did not
    change are not rendered again (a cold front page rendered forty), and a changed piece is a
    new item, so a kept rendering is never stale. Anything else (an ORM Piece) is rendered."""
    if isinstance(piece, reader.StoryItem):
        return _story_item_html(piece, tuple(sorted(options.items())))
    return _macros().story_item(piece, **options)


@lru_cache(maxsize=4096)
def _story_item_html(item, options: tuple) -> Markup:
    return _macros().story_item(item, **dict(options))


def _macros():
    return current_app.jinja_env.get_template("pages/_macros.html").module


@bp.route("/")
def home():
    """The front page: nameplate, motto and the issue's date; the lead story large with its art
    (the piece's own `image`, else its share card), the top stories, then one rail per section
    in order, none repeating a piece shown above it."""
    # The sections and the newsroom's counts are kept per paper version in this worker (read in
    # one statement after a write): then a front costs one statement (the rails), two with an
    # editor's chosen lead.
    caching.depends_on_lists()
    now = caching.request_now()
    sections, newsroom = front.sections_and_newsroom(g.paper, caching.paper_state(), now=now)
    shown = front.front_page(g.paper, sections, now=now)
    latest = newsroom["latest_on_air_at"]
    lead = shown["lead"]
    return render_template(
        "pages/home.html", active_nav="home", nav=sections, rails=shown["rails"],
        lead=lead, lead_chosen=shown["lead_chosen"], top_stories=shown["top_stories"],
        lead_art=(lead.image or links().share_card(lead, g.paper.nameplate)) if lead is not None else None,
        issue_date=latest.date() if latest else None, newsroom=newsroom, json_ld=home_graph(),
    )


def publisher() -> dict:
    """The paper as schema.org `NewsMediaOrganization`: name, home page and its logo (the
    512 px square icon, static/img/icon-512.png, as search engines ask of a publisher logo)."""
    here = links()
    return {"@type": "NewsMediaOrganization", "@id": here.home() + "#publisher", "name": g.paper.nameplate,
            "url": here.home(), "correctionsPolicy": here.absolute("/corrections"),
            "logo": {"@type": "ImageObject", "width": 512, "height": 512,
                     "url": here.absolute(url_for("static", filename="img/icon-512.png"))}}


def home_graph() -> dict:
    """JSON-LD of the front page: the publisher, and the site as a `WebSite` whose search
    (`/search?q=`) a search engine may offer as a `SearchAction`."""
    here = links()
    return {"@context": "https://schema.org", "@graph": [
        publisher(),
        {"@type": "WebSite", "name": g.paper.nameplate, "url": here.home(),
         "description": g.paper.description or g.paper.motto or g.paper.nameplate,
         "publisher": {"@id": here.home() + "#publisher"},
         "potentialAction": {"@type": "SearchAction",
                             "target": {"@type": "EntryPoint",
                                        "urlTemplate": here.absolute("/search") + "?q={search_term_string}"},
                             "query-input": "required name=search_term_string"}},
    ]}


def section_graph(section, page: reader.Page) -> dict:
    """JSON-LD of a section page: a `CollectionPage` of the section, its pieces on this page as
    an `ItemList` of their story pages in the order shown, and the publisher."""
    here = links()
    first = (page.number - 1) * reader.SECTION_PAGE_SIZE
    return {"@context": "https://schema.org", "@type": "CollectionPage",
            "name": f"{section.name} — {g.paper.nameplate}", "url": here.section_page(section.slug),
            "description": section.description or section.name, "publisher": publisher(),
            "mainEntity": {"@type": "ItemList", "itemListElement": [
                {"@type": "ListItem", "position": first + n, "url": here.story_page(piece.slug),
                 "name": piece.headline} for n, piece in enumerate(page.items, start=1)]}}


def item_list(urls_and_names: list[tuple[str, str]], first: int = 1) -> dict:
    """A schema.org `ItemList` of (url, name) pairs in the order shown, numbered from `first`."""
    return {"@type": "ItemList", "itemListElement": [
        {"@type": "ListItem", "position": n, "url": url, "name": name}
        for n, (url, name) in enumerate(urls_and_names, start=first)]}


def day_graph(day, page: reader.Page) -> dict:
    """JSON-LD of a back issue: a `CollectionPage` of the day's pieces on this page, in the
    order shown (by section in the paper's order), and the publisher."""
    here = links()
    shown = sorted(page.items, key=lambda p: (p.section.position, p.section.id))
    return {"@context": "https://schema.org", "@type": "CollectionPage",
            "name": f"The issue of {day.isoformat()} — {g.paper.nameplate}",
            "url": here.absolute(f"/days/{day.isoformat()}"), "datePublished": day.isoformat(),
            "publisher": publisher(),
            "mainEntity": item_list([(here.story_page(p.slug), p.headline) for p in shown])}


def persona_graph(persona, page: reader.Page) -> dict:
    """JSON-LD of a persona's page: a `ProfilePage` whose main entity is the byline as a
    `Person` that says, in its `description`, that it is a declared AI persona (as the story
    pages' author does), affiliated with the publisher; and the pieces on this page."""
    here = links()
    first = (page.number - 1) * reader.PERSONA_PAGE_SIZE + 1
    return {"@context": "https://schema.org", "@type": "ProfilePage",
            "url": here.absolute(f"/masthead/{persona.slug}"),
            "mainEntity": {"@type": "Person", "name": persona.name,
                           **({"jobTitle": persona.title} if persona.title else {}),
                           "url": here.absolute(f"/masthead/{persona.slug}"), "image": here.avatar(persona.slug),
                           "description": disclosure(persona.name, g.paper.nameplate),
                           "affiliation": publisher()},
            "hasPart": item_list([(here.story_page(p.slug), p.headline) for p in page.items], first)}


def masthead_graph(personas: list[dict]) -> dict:
    """JSON-LD of the masthead: a `CollectionPage` listing each persona as a `Person` (each
    described as a declared AI persona), and the publisher."""
    here = links()
    return {"@context": "https://schema.org", "@type": "CollectionPage",
            "name": f"Masthead — {g.paper.nameplate}", "url": here.absolute("/masthead"), "publisher": publisher(),
            "mainEntity": {"@type": "ItemList", "itemListElement": [
                {"@type": "ListItem", "position": n, "item": {
                    "@type": "Person", "name": p["name"], "url": here.absolute(f"/masthead/{p['slug']}"),
                    "image": p["avatar"], "description": disclosure(p["name"], g.paper.nameplate)}}
                for n, p in enumerate(personas, start=1)]}}


def page_number() -> int:
    """The request's `?page=` (1 when absent); aborts 400 when it is not a page number."""
    number = reader.parse_page(request.args.get("page"))
    if number is None:
        abort(400, description="That is not a page number: write ?page=2, ?page=3 and so on.")
    return number


def must_exist(page: reader.Page) -> reader.Page:
    """`page`, unless it is an empty page past the first: that page does not exist (404)."""
    if page.number > 1 and not page.items:
        abort(404, description=f"There is no page {page.number} here; the list ends before it.")
    return page


# Where a story page's rail goes in its kept shell (`story`): random per process, so no prose or
# headline can hold it, and plain text that escaping leaves as it is (letters, digits, '-').
_RAIL_SLOT = f"paperdesk-rail-{secrets.token_hex(16)}"


class _Placed(NamedTuple):
    """What a story page's rail and keys need of its piece, kept with its shell."""

    id: int
    section_id: int
    section_name: str


@bp.route("/stories/<string:id>")
def story(id: str):
    """A story page: prose with footnote links, cited facts, byline with its disclosure, and
    the rail of the newest other pieces in its section.

    The page but its rail (the shell) is a function of the piece and the paper alone, and
    every airing in the section moves the rail: so the shell is kept in this worker
    (caching.keep_part) under the state of the piece's and the paper's scopes, and while
    they stand a page whose rail moved is its kept shell and the rail (kept per section and
    paper version), with no statement for the piece and no rendering of it."""
    now = caching.request_now()
    paper = g.paper
    kept = caching.kept_part("story-page")
    if kept is not None:
        placed, shell = kept.extra[0], kept.text()
    else:
        piece = reader.story_page(paper, id, now=now)
        if piece is None:
            abort(404, description="There is no such story on air in this paper.")
        placed = _Placed(piece.id, piece.section_id, piece.section.name)
        shell = _story_shell(paper, piece)
        caching.keep_part("story-page", caching.piece_scopes(placed), shell, (placed,))
    caching.tag_piece(placed)
    caching.depends_on_piece(placed, section_rail=True)  # the rail: more in its section
    related = reader.related_pieces(paper, placed, version_state=caching.paper_state(), now=now)
    before, _slot, after = shell.partition(_RAIL_SLOT)
    # A plain join: `str + Markup` would escape the shell.
    return "".join((before, _rail_html(placed.section_name, tuple(related)), after))


def _story_shell(paper, piece: reader.PageStory) -> str:
    """The story page of `piece` with _RAIL_SLOT where its rail goes: what the template makes
    of the piece, the paper (its settings, sections, personas) and the host alone."""
    here = links()  # once: each read of `links()` is a context lookup
    facts = piece.cited_facts
    rendered = prose.render(piece.prose, {fact.n for fact in facts})
    story_url = here.story_page(piece.slug)
    picture = here.media(piece.image) or here.share_card(piece, paper.nameplate)
    return render_template(
        "pages/story.html", piece=piece, active_nav=piece.section.slug,
        body=rendered.html, facts_html=prose.render_facts(facts, rendered.referenced),
        disclosure=disclosure(piece.persona.name, paper.nameplate), story_url=story_url,
        og_image=picture,
        description=piece.dek or prose.plain(piece.prose),
        oembed_url=embeds.oembed_url(story_url, links=here),
        # Plain text: the page shows the snippet's source, it does not embed itself.
        embed_snippet=str(embeds.iframe(piece, *embeds.card_size(piece, None, None, nameplate=paper.nameplate),
                                        links=here)),
        author_url=embeds.masthead_entry(piece.persona.slug, links=here),
        json_ld=news_article(piece, story_url, picture),
        rail=_RAIL_SLOT,
        notices=revisions.notices_of(piece), retraction=revisions.retraction_of(piece),
        # Mastodon credits a shared link to the account this names (the persona's attributionDomains
        # include this host), when the paper federates.
        fediverse_creator=documents.handle(paper_links(), piece.persona.slug)
        if current_app.config.get("ACTIVITYPUB_ENABLED", True) and paper.is_public else None,
    )


@lru_cache(maxsize=1024)
def _rail_html(section_name: str, related: tuple) -> Markup:
    """The `related_rail` macro of a section's rail (StoryItems: immutable, so the key is the
    content itself and a changed item is a new key), kept in this worker: every story page of
    a section shows the same rail but for its own piece."""
    return _macros().related_rail(section_name, list(related))


@bp.route("/stories/<string:id>/history")
def story_history(id: str):
    """A story's history: each public revision's kind, note and receipt hash, newest first,
    with what it changed in headline, standfirst, text and cited facts as a word diff."""
    now = caching.request_now()
    piece = stories.find(g.paper, id, now=now)
    history = revisions.history_of(g.paper, id, now=now) if piece is not None else None
    if history is None:
        abort(404, description="There is no such story on air in this paper.")
    caching.tag_piece(piece)
    entries = [{**entry, "api": links().api(f"/stories/{piece.id}/revisions/{entry['rev']}")}
               for entry in diffs.timeline(revisions.texts(history))]
    return render_template("pages/history.html", piece=piece, entries=entries,
                           story_url=links().story_page(piece.slug), active_nav=piece.section.slug)


def correction_graph(piece) -> dict:
    """A NewsArticle's `correction`s: each public notice of the piece as a schema.org
    `CorrectionComment` (its note as `text`, dated), and nothing for a piece never corrected."""
    notices = revisions.notices_of(piece)
    if not notices:
        return {}
    history = links().absolute(f"/stories/{piece.slug}/history")
    return {"correction": [{"@type": "CorrectionComment", "text": f"{n['kind'].title()}: {n['note']}".rstrip(": "),
                            "datePublished": n["at"], "url": f"{history}#rev-{n['rev']}"} for n in notices]}


def news_article(piece, story_url: str, image: str) -> dict:
    """schema.org NewsArticle JSON-LD for a story page.

    The article's `digitalSourceType` is the IPTC code for trained algorithmic media
    (DIGITAL_SOURCE_TYPE): machines read that an AI system wrote it. The author is a `Person`
    named as the byline reads (what search engines take as a byline), never presented as a human
    reporter: its `description` is the disclosure sentence, and it is affiliated with the
    publisher that operates it; the article's `creditText` repeats the disclosure for consumers
    that show credits.
    """
    paper = g.paper
    organization = publisher()
    said = disclosure(piece.persona.name, paper.nameplate)
    return {
        "@context": "https://schema.org",
        "@type": "NewsArticle",
        "headline": piece.headline,
        "description": piece.dek,
        "url": story_url,
        "mainEntityOfPage": story_url,
        "image": [image],
        "datePublished": rfc3339(piece.on_air_at),
        "dateModified": rfc3339(piece.updated_at),
        "articleSection": piece.section.name,
        "digitalSourceType": DIGITAL_SOURCE_TYPE,
        "author": [{
            "@type": "Person",
            "name": piece.persona.name,
            "url": embeds.masthead_entry(piece.persona.slug, links=links()),
            "image": links().avatar(piece.persona.slug),
            "description": said,
            "affiliation": organization,
        }],
        "creditText": said,
        "publisher": organization,
        "isAccessibleForFree": True,
        "version": str(piece.rev),
        **correction_graph(piece),
        "citation": [
            {"@type": "CreativeWork", "name": fact.statement,
             "publisher": {"@type": "Organization", "name": fact.source},
             "identifier": fact.claim_key, "description": fact.instrument}
            for fact in piece.cited_facts
        ],
    }


@bp.route("/sections/<string:slug>")
@policy.route(query=("page",))
def section(slug: str):
    """A section's page: its pieces on air, newest first, SECTION_PAGE_SIZE a page."""
    caching.depends_on_lists()
    found = lookups.find_section(g.paper, slug, active_only=True)
    if found is None:
        abort(404, description="There is no such section in this paper.")
    pieces = must_exist(reader.section_pieces(g.paper, found, page_number(), now=caching.request_now()))
    return render_template("pages/section.html", section=found, page=pieces, active_nav=found.slug,
                           json_ld=section_graph(found, pieces))


@bp.route("/days")
def days():
    """Back issues: every day with pieces on air, newest first (up to 366)."""
    return render_template("pages/days.html", days=archive.list_days(g.paper, now=caching.request_now()),
                           active_nav="days")


@bp.route("/days/<string:day>")
@policy.route(query=("page",))
def day(day: str):
    """A back issue: the pieces that went on air on a UTC day, newest first, DAY_PAGE_SIZE a
    page, each page grouped by section in the paper's order."""
    when = lookups.parse_day(day)
    if when is None:
        abort(404, description="That is not a day of the calendar (write it YYYY-MM-DD).")
    now = caching.request_now()
    pieces = must_exist(reader.day_pieces(g.paper, when, page_number(), now=now))
    groups: dict[int, tuple] = {}
    for piece in sorted(pieces.items, key=lambda p: (p.section.position, p.section.id)):
        groups.setdefault(piece.section.id, (piece.section, []))[1].append(piece)
    before, after = reader.neighbour_days(g.paper, when, now=now)
    return render_template("pages/day.html", day=when, groups=list(groups.values()), page=pieces,
                           before=before, after=after, active_nav="days", json_ld=day_graph(when, pieces))


@bp.route("/search")
@policy.route(query=("q", "page"))
def search_page():
    """Search: `?q=` matched as `GET /api/v1/search` matches it (the same rule for `q`, the
    same index), newest first, SEARCH_PAGE_SIZE a page. No `q` (or an empty one) shows the
    form; a `q` the API would refuse answers 400 with the form and what to change; no match,
    a page saying so."""
    q = request.args.get("q", "")
    number = page_number()
    if not q.strip():
        return render_template("pages/search.html", q="", state="form", page=None, active_nav="search")
    try:
        terms = search.parse_query(q)
    except ValueError:
        return render_template("pages/search.html", q=q, state="refused", page=None,
                               max_length=search.MAX_Q_LENGTH, max_terms=search.MAX_TERMS,
                               active_nav="search"), 400
    if number > reader.SEARCH_MAX_PAGES:
        abort(404, description=f"Search shows the newest {reader.SEARCH_MAX_PAGES * reader.SEARCH_PAGE_SIZE} "
                               "matches; add a word to find older pieces.")
    found = must_exist(reader.search_page(g.paper, terms, number, now=caching.request_now()))
    return render_template("pages/search.html", q=q.strip(), state="results" if found.items else "empty",
                           page=found, capped=found.number == reader.SEARCH_MAX_PAGES and not found.has_older
                           and len(found.items) == reader.SEARCH_PAGE_SIZE, active_nav="search")


@bp.route("/cast")
def cast():
    """The video editions, newest first."""
    return render_template("pages/cast.html", editions=front.list_editions(g.paper), active_nav="cast")


@bp.route("/cast/<string:day>")
@policy.route(query=("embed",))
def edition(day: str):
    """A video edition's page; `?embed=1` gives the bare, frameable player."""
    when = lookups.parse_day(day)
    found = reader.find_edition(g.paper, when) if when else None
    if found is None:
        abort(404, description="There is no video edition for that day.")
    page_url = links().edition_page(found.day)
    if request.args.get("embed") == "1":
        html = render_template("embed/player.html", edition=found, paper=g.paper, page_url=page_url)
        return security.allow_framing(make_response(html), "player")
    media = {"video": links().media(found.video_url), "poster": links().media(found.poster_url),
             "captions": links().media(found.captions_url)}
    return render_template("pages/edition.html", edition=found, page_url=page_url, media=media,
                           language=_language(g.paper),
                           transcript=[p.strip() for p in (found.transcript or "").split("\n\n") if p.strip()],
                           json_ld=video_object(found, page_url, media),
                           snippet=str(embeds.player_iframe(found, links=links())))


def _language(paper) -> str:
    config = paper.config if isinstance(paper.config, dict) else {}
    language = config.get("language")
    return language if isinstance(language, str) and language.strip() else "en"


def video_object(edition, page_url: str, media: dict) -> dict:
    """schema.org JSON-LD for an edition page: a `VideoObject` (name, description, thumbnailUrl,
    uploadDate, contentUrl, embedUrl, duration in ISO 8601) when the edition has a video; a
    poster-only edition is a `CreativeWork` with the poster as its image (a VideoObject with no
    video is what validators flag). The transcript when there is one. `media` holds the
    absolute `video`, `poster` and `captions` URLs (None when absent)."""
    data = {
        "@context": "https://schema.org",
        "@type": "VideoObject" if media["video"] else "CreativeWork",
        "name": edition.title,
        "description": edition.summary or edition.title,
        "thumbnailUrl": [media["poster"]],
        "uploadDate": rfc3339(edition.published_at),
        "url": page_url,
        "publisher": publisher(),
    }
    if not media["video"]:
        data["image"] = data.pop("thumbnailUrl")
        data["datePublished"] = data.pop("uploadDate")
    else:
        data.update(contentUrl=media["video"], embedUrl=links().edition_embed(edition.day),
                    encodingFormat=edition.mime_type)
        if edition.duration_seconds:
            data["duration"] = f"PT{edition.duration_seconds // 60}M{edition.duration_seconds % 60}S"
    if edition.transcript:
        data["transcript"] = edition.transcript
    return data


@bp.route("/corrections")
def corrections_policy():
    """The paper's corrections policy (schema.org `correctionsPolicy` of the publisher): what
    each revision kind means and how a reader checks an old revision (docs/CORRECTIONS.md)."""
    return render_template("pages/corrections.html")


@bp.route("/masthead")
def masthead():
    """The masthead: every active persona, each a declared AI, with its portrait and a link to
    its page."""
    personas = front.list_masthead(g.paper, now=caching.request_now())
    for persona in personas:
        persona["avatar"] = links().avatar(persona["slug"])
    return render_template("pages/masthead.html", personas=personas, active_nav="masthead",
                           json_ld=masthead_graph(personas))


@bp.route("/masthead/<string:slug>")
@policy.route(query=("page",))
def persona(slug: str):
    """A persona's page: who they are (a declared AI persona) and their pieces on air, newest
    first, PERSONA_PAGE_SIZE a page. A persona retired from the masthead keeps a page while
    their pieces stay on air; an unknown one is a 404."""
    found = lookups.find_persona(g.paper, slug)
    if found is None:
        abort(404, description="There is no such persona on this paper's masthead.")
    pieces = must_exist(reader.persona_pieces(g.paper, found, page_number(), now=caching.request_now()))
    return render_template("pages/persona.html", persona=found, page=pieces, avatar=links().avatar(found.slug),
                           active_nav="masthead", json_ld=persona_graph(found, pieces),
                           disclosure=disclosure(found.name, g.paper.nameplate))
