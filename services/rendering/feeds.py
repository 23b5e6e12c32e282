"""The reader's feeds of a paper: RSS 2.0, JSON Feed 1.1, the podcast of video editions and
llms.txt.

Every byline is a declared AI persona, and its disclosure is never removed. Every URL in a
feed is absolute, under the `links` the builder is given. Feeds are built with feedgen (lxml
underneath, so every untrusted string is escaped by the serialiser, after `xml_safe`
(services/rendering/xmltext.py) drops the characters XML cannot carry). Each builder issues a
constant number of statements whatever the number of rows.
Sitemaps live in `services/rendering/sitemaps.py`.
"""
from __future__ import annotations

import re
from datetime import datetime

import orjson
from feedgen.feed import FeedGenerator
from markupsafe import escape
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from extensions import db
from models import Edition, Paper, Piece, Section
from models.clock import rfc3339
from services.links import Links
from services.reading import stories, visibility
from services.rendering import prose
from services.rendering.embeds import masthead_entry
from services.rendering.prose import DIGITAL_SOURCE_TYPE, disclosure
from services.rendering.xmltext import xml_safe

RSS_ITEMS = 50
JSON_FEED_ITEMS = RSS_ITEMS
JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
JSON_FEED_EXTENSION = "_paperdesk"
# RSS 2.0 <category domain="taxonomy">term</category>: the IPTC digital source type's scheme
# and code, which together spell DIGITAL_SOURCE_TYPE.
IPTC_SCHEME = DIGITAL_SOURCE_TYPE.rpartition("/")[0] + "/"
IPTC_CODE = DIGITAL_SOURCE_TYPE.rpartition("/")[2]
LLMS_LATEST = 20
DEFAULT_LANGUAGE = "en"
_SPACE = re.compile(r"\s+")


def one_line(text: str | None) -> str:
    """`text` made XML-safe with every run of whitespace (newlines too) collapsed to a space."""
    return _SPACE.sub(" ", xml_safe(text)).strip()


def paper_language(paper: Paper) -> str:
    """The paper's language tag (config `language`, default `en`), for RSS and Google News."""
    language = (paper.config or {}).get("language") if isinstance(paper.config, dict) else None
    return one_line(language) or DEFAULT_LANGUAGE


def persona_label(name: str) -> str:
    """A byline with its AI-persona disclosure kept: 'Ada Quill (AI persona)'."""
    return f"{name} (AI persona)"


def paper_disclosure(nameplate: str) -> str:
    """The paper-wide statement that every byline of the paper named `nameplate` is a declared
    AI persona (llms.txt, JSON Feed `user_comment`)."""
    return (f"Every byline on {nameplate} is a declared AI persona: pieces are written by AI "
            "systems, not by human reporters, and wherever a byline is shown its AI-persona "
            "disclosure must be shown too and never removed.")


# --- prose -> HTML --------------------------------------------------------------------------

def render_prose(piece: Piece, story_url: str) -> str:
    """A piece's prose as HTML (services/prose: each `[^N]` a visible footnote link) followed
    by its cited facts as the numbered `fact-N` list. In-page links (`#fact-N`, `#ref-N`) are
    made absolute on `story_url`: a feed reader resolves a bare fragment against the feed.
    Needs `piece.cited_facts` loaded."""
    rendered = prose.render(piece.prose, {fact.n for fact in piece.cited_facts})
    facts = prose.render_facts(piece.cited_facts, rendered.referenced)
    html = str(rendered.html)
    if facts:
        html += f'<section class="cited-facts"><h2>Cited facts</h2>{facts}</section>'
    return html.replace('href="#', f'href="{escape(story_url)}#')


def correction_lines(piece: Piece, story_url: str) -> str:
    """The piece's public notices as feed HTML, newest first: one `<p class="correction">` line
    each ('Correction, 2026-11-28: note'), then a link to its history; "" for a piece never
    corrected. A feed reader that refetches the item shows what changed and why."""
    notices = [n for n in piece.notices or [] if n["kind"] != "edit"]
    if not notices:
        return ""
    lines = "".join(f'<p class="correction"><strong>{escape(n["kind"].capitalize())}, {escape(n["at"][:10])}'
                    f'</strong>{": " + str(escape(n["note"])) if n["note"] else ""}</p>' for n in reversed(notices))
    return lines + f'<p class="correction"><a href="{escape(story_url)}/history">Every change to this piece</a></p>'


def _prose_html(piece: Piece, story_url: str, nameplate: str) -> str:
    byline = persona_label(piece.persona.name)
    head = (f'<p class="byline">By {escape(byline)}. '
            f"<em>{escape(disclosure(piece.persona.name, nameplate))}</em></p>")
    return xml_safe(correction_lines(piece, story_url) + head + render_prose(piece, story_url))


# --- RSS ------------------------------------------------------------------------------------

def latest_pieces(paper: Paper, limit: int, *, now: datetime) -> list[Piece]:
    """The `limit` newest pieces on air by `now` with section, persona (joined) and cited facts
    (one SELECT ... IN): two statements."""
    query = stories.rows_query(paper).options(selectinload(Piece.cited_facts)).limit(limit)
    return list(db.session.scalars(query, visibility.at(now)))


def _channel(paper: Paper, *, title: str, self_path: str, built: datetime, links: Links) -> FeedGenerator:
    fg = FeedGenerator()
    fg.title(one_line(title))
    # feedgen takes the channel <link> from the last link given: self first, then home.
    fg.link(href=links.absolute(self_path), rel="self", type="application/rss+xml")
    fg.link(href=links.home(), rel="alternate")
    fg.description(one_line(paper.motto) or one_line(paper.description) or one_line(paper.nameplate))
    fg.language(paper_language(paper))
    fg.lastBuildDate(built)
    fg.generator("Paper Desk")
    return fg


def _with_hub(rss: bytes, hub: str) -> bytes:
    """`rss` with `<atom:link rel="hub" href="{hub}"/>` after the channel's self link (WebSub:
    feedgen writes only the self link of an RSS channel)."""
    from lxml import etree

    root = etree.fromstring(rss)
    channel = root.find("channel")
    link = etree.Element("{http://www.w3.org/2005/Atom}link", href=hub, rel="hub")
    selflink = channel.find("{http://www.w3.org/2005/Atom}link")
    if selflink is not None:
        selflink.addnext(link)
    else:
        channel.insert(0, link)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def build_rss(paper: Paper, *, now: datetime, links: Links, hub: str | None = None) -> bytes:
    """`/rss.xml`: RSS 2.0 of the 50 newest pieces on air by `now`, newest first. Each item has title,
    link and permalink guid (the story page), pubDate (on_air_at), description (the dek),
    content:encoded (byline with disclosure, prose with `[^N]` markers, cited facts),
    category (section), dc:creator ('Name (AI persona)') and the IPTC digital source type as
    `<category domain="http://cv.iptc.org/newscodes/digitalsourcetype/">trainedAlgorithmicMedia`
    (RSS 2.0's own element for a term of a named taxonomy, so every reader keeps it without a
    namespace to know; domain and term together spell DIGITAL_SOURCE_TYPE). URLs under
    `links`. With `hub` (WEBSUB_HUB), the channel names the WebSub hub beside its self link.
    Three statements."""
    pieces = latest_pieces(paper, RSS_ITEMS, now=now)
    built = max((p.updated_at for p in pieces), default=paper.created_at)
    fg = _channel(paper, title=paper.nameplate, self_path="/rss.xml", built=built, links=links)
    fg.load_extension("dc", atom=False, rss=True)
    for piece in pieces:
        url = links.story_page(piece.slug)
        entry = fg.add_entry(order="append")
        entry.title(one_line(piece.headline))
        entry.link(href=url)
        entry.guid(url, permalink=True)
        entry.pubDate(piece.on_air_at)
        entry.description(one_line(piece.dek) or one_line(piece.headline))
        entry.content(_prose_html(piece, url, paper.nameplate))
        # feedgen writes categories in the order given: the section stays the first.
        entry.category([{"term": one_line(piece.section.name)},
                        {"term": IPTC_CODE, "scheme": IPTC_SCHEME}])
        # RSS <author> must be an e-mail address; personas have none, so dc:creator carries it.
        entry.dc.dc_creator(one_line(persona_label(piece.persona.name)))
    rss = fg.rss_str(pretty=False)
    return _with_hub(rss, hub) if hub else rss


# --- JSON Feed ------------------------------------------------------------------------------

def _absolute(url: str | None, links: Links) -> str | None:
    # Art on the paper's own host may be stored as a path; JSON Feed wants URLs.
    url = (url or "").strip()
    if not url:
        return None
    return links.absolute(url) if url.startswith("/") and not url.startswith("//") else url


def json_feed_item(piece: Piece, nameplate: str, *, links: Links, about: str) -> dict:
    """One JSON Feed 1.1 item for a piece on air: `id` and `url` (the story page, as the RSS
    guid), `title`, `content_html` (the RSS item's content:encoded: byline with disclosure,
    prose with footnote links, cited facts), `summary` (the dek, left out when empty), `image`
    (the piece's art, else its share card), `date_published` (on air) and `date_modified`
    (RFC 3339, UTC), `tags` ([section]), `authors` ([{name 'Name (AI persona)', url on the
    masthead, avatar}]) and the `_paperdesk` extension object: `about` (the URL `about`),
    `digital_source_type` (IPTC), `disclosure` (the sentence), `declared_ai` (true),
    `content_hash`, `rev`, `story_url` (the story in the API) and `proof_url` (its proof with the
    signed receipt; a desk key reads it) and `corrections` (`[{rev, kind, note, at}]`, also
    written as lines atop `content_html`). Needs `piece.section`, `persona` and `cited_facts`
    loaded."""
    url = links.story_page(piece.slug)
    item = {
        "id": url,
        "url": url,
        "title": piece.headline,
        "content_html": _prose_html(piece, url, nameplate),
    }
    if (piece.dek or "").strip():
        item["summary"] = piece.dek
    item.update({
        "image": _absolute(piece.image, links) or links.share_card(piece, nameplate),
        "date_published": rfc3339(piece.on_air_at),
        "date_modified": rfc3339(max(piece.updated_at, piece.on_air_at)),
        "authors": [{"name": persona_label(piece.persona.name),
                     "url": masthead_entry(piece.persona.slug, links=links),
                     "avatar": links.avatar(piece.persona.slug)}],
        "tags": [piece.section.name],
        JSON_FEED_EXTENSION: {
            "about": about,
            "digital_source_type": DIGITAL_SOURCE_TYPE,
            "disclosure": disclosure(piece.persona.name, nameplate),
            "declared_ai": True,
            "content_hash": piece.content_hash,
            "rev": piece.rev,
            "story_url": links.api(f"/stories/{piece.id}"),
            "proof_url": links.api(f"/stories/{piece.id}/proof"),
            "corrections": [n for n in piece.notices or [] if n["kind"] != "edit"],
        },
    })
    return item


def build_json_feed(paper: Paper, *, now: datetime, links: Links, icon: str, favicon: str, about: str,
                    hub: str | None = None) -> bytes:
    """`/feed.json`: JSON Feed 1.1 (jsonfeed.org/version/1.1) of the same 50 newest pieces on
    air by `now` as `/rss.xml`, newest first, as UTF-8 JSON bytes. Top level: `version`, `title`
    (nameplate), `home_page_url`, `feed_url`, `description` (as the RSS channel's),
    `user_comment` (the paper-wide AI-persona statement), `icon` and `favicon` (absolute URLs,
    given), `language` (`paper_language`) and a `_paperdesk` object (`about`, the URL of the
    extension's documentation; `digital_source_type`; `receipt_keys_url`), then `items` (see
    `json_feed_item`). URLs under `links`. With `hub` (WEBSUB_HUB), `hubs` names the WebSub
    hub. Three statements."""
    pieces = latest_pieces(paper, JSON_FEED_ITEMS, now=now)
    feed = {
        "version": JSON_FEED_VERSION,
        "title": paper.nameplate,
        "home_page_url": links.home(),
        "feed_url": links.absolute("/feed.json"),
        "description": (one_line(paper.motto) or one_line(paper.description)
                        or one_line(paper.nameplate)),
        "user_comment": paper_disclosure(paper.nameplate),
        "icon": icon,
        "favicon": favicon,
        "language": paper_language(paper),
        JSON_FEED_EXTENSION: {
            "about": about,
            "digital_source_type": DIGITAL_SOURCE_TYPE,
            "receipt_keys_url": links.api("/receipt-keys"),
        },
        "items": [json_feed_item(piece, paper.nameplate, links=links, about=about) for piece in pieces],
    }
    if hub:
        feed["hubs"] = [{"type": "WebSub", "url": hub}]
    return orjson.dumps(feed)


# --- podcast --------------------------------------------------------------------------------

def _duration(seconds: int) -> str:
    hours, rest = divmod(max(0, int(seconds or 0)), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _artwork(url: str | None) -> str | None:
    # iTunes takes only .jpg or .png artwork (feedgen enforces it on items).
    return xml_safe(url) if url and url.lower().endswith((".jpg", ".png")) else None


def owner_email(paper: Paper, host: str) -> str:
    """The podcast owner's address: config `contact_email`, else `desk@<host>`."""
    config = paper.config if isinstance(paper.config, dict) else {}
    return one_line(config.get("contact_email")) or f"desk@{host}"


def build_podcast(paper: Paper, host: str, *, links: Links, artwork: str | None = None) -> bytes:
    """`/podcast.xml`: every video edition with a video, newest day first, as an RSS item with
    an enclosure (url, length in bytes, MIME type) and iTunes tags (author, summary, explicit
    `false`, duration); a poster-only edition (no video) is left out, having nothing to enclose.
    The channel carries itunes:author, summary, image, category News, owner (`owner_email(paper,
    host)`, `host` without a port) and explicit `false`. Its image is config `podcast_image`,
    else `artwork` (the square artwork the paper draws, an absolute URL); 16:9 posters never
    stand in, as podcast apps want a square (Apple: 1400-3000 px, JPEG or PNG). Page and media
    URLs under `links`. One statement."""
    editions = list(db.session.scalars(
        select(Edition).where(Edition.paper_id == paper.id, Edition.video_url.is_not(None))
        .order_by(Edition.day.desc(), Edition.id.desc())
    ))
    built = max((e.published_at for e in editions), default=paper.created_at)
    name = one_line(paper.nameplate)
    summary = one_line(paper.description) or one_line(paper.motto) or name
    fg = _channel(paper, title=f"{paper.nameplate}: the cast", self_path="/podcast.xml", built=built,
                  links=links)
    fg.load_extension("podcast", atom=False, rss=True)
    fg.podcast.itunes_author(name)
    fg.podcast.itunes_summary(summary)
    config = paper.config if isinstance(paper.config, dict) else {}
    configured = config.get("podcast_image")
    image = _artwork(links.media(configured) if isinstance(configured, str) else None) or _artwork(artwork)
    if image:
        fg.podcast.itunes_image(image)
    fg.podcast.itunes_explicit("no")
    fg.podcast.itunes_category({"cat": "News"})
    fg.podcast.itunes_owner(name=name, email=owner_email(paper, host))
    for edition in editions:
        page = links.edition_page(edition.day)
        entry = fg.add_entry(order="append")
        entry.title(one_line(edition.title))
        entry.link(href=page)
        entry.guid(page, permalink=True)
        entry.pubDate(edition.published_at)
        entry.description(one_line(edition.summary) or one_line(edition.title))
        entry.enclosure(xml_safe(links.media(edition.video_url)), str(max(0, edition.length_bytes or 0)),
                        one_line(edition.mime_type) or "video/mp4")
        entry.podcast.itunes_author(name)
        entry.podcast.itunes_summary(one_line(edition.summary) or one_line(edition.title))
        entry.podcast.itunes_duration(_duration(edition.duration_seconds))
        entry.podcast.itunes_explicit("no")
    # Apple and the podcast validators want `true`/`false`; feedgen takes only yes/no/clean.
    # Every string of the paper's is escaped inside its element, so this exact element text
    # can only be feedgen's own.
    return fg.rss_str(pretty=False).replace(EXPLICIT_NO, EXPLICIT_FALSE)


EXPLICIT_NO = b"<itunes:explicit>no</itunes:explicit>"
EXPLICIT_FALSE = b"<itunes:explicit>false</itunes:explicit>"


# --- llms.txt -------------------------------------------------------------------------------

def _link_text(text: str) -> str:
    # llmstxt.org links are `[title](url)`: a bracket in a headline would end the title early.
    return one_line(text).replace("[", "(").replace("]", ")")


def _link(title: str, url: str, note: str = "") -> str:
    note = one_line(note)
    return f"- [{_link_text(title)}]({url})" + (f": {note}" if note else "")


def build_llms_txt(paper: Paper, *, now: datetime, signature_note: str, links: Links) -> str:
    """`/llms.txt` in the llmstxt.org format: `# nameplate`, a `> summary` blockquote, a
    paragraph with the AI-persona disclosure and `signature_note`, then link sections `## API`,
    `## Feeds` (RSS, JSON Feed, podcast, front, sitemap), `## Latest` (20 newest pieces on air by `now`:
    `- [headline](url): dek`) and `## Optional` (masthead, sections), every URL under `links`.
    Two statements."""
    name = one_line(paper.nameplate)
    summary = one_line(paper.motto) or one_line(paper.description) or f"{name}, a news paper published as data."
    about = " ".join(filter(None, [
        one_line(paper.description) if one_line(paper.description) != summary else "",
        paper_disclosure(name),
        "Prose carries `[^N]` markers that point at numbered cited facts; render them as "
        "footnotes and never strip them.",
        one_line(signature_note),
    ]))
    pieces = list(db.session.scalars(stories.rows_query(paper).limit(LLMS_LATEST), visibility.at(now)))
    sections = db.session.execute(
        select(Section.name, Section.slug, Section.description)
        .where(Section.paper_id == paper.id, Section.active.is_(True))
        .order_by(Section.position, Section.id)
    ).all()
    lines = [f"# {name}", "", f"> {summary}", "", about, "", "## API", "",
             _link("API index", links.api(), "every endpoint and feed of this paper as absolute URLs"),
             _link("OpenAPI document", links.api("/openapi.json"), "this API as OpenAPI 3.1"),
             _link("API guide", links.absolute("/api"), "the playground: try each public endpoint "
                   "and build embed snippets"),
             "", "## Feeds", "",
             _link("RSS", links.absolute("/rss.xml"), "the 50 newest pieces with full prose and cited facts"),
             _link("JSON Feed", links.absolute("/feed.json"), "the same 50 pieces as JSON Feed 1.1, with "
                   "each piece's content hash and AI disclosure in `_paperdesk`"),
             _link("Podcast", links.absolute("/podcast.xml"), "the video editions, with enclosures"),
             _link("Front page JSON", links.absolute("/front.json"), "the same document as /api/v1/front"),
             _link("Sitemap", links.absolute("/sitemap.xml"), "home, sections, back issues and every piece on air"),
             "", "## Latest", ""]
    lines += [_link(p.headline, links.story_page(p.slug), p.dek) for p in pieces]
    lines += ["", "## Optional", "",
              _link("Masthead", links.api("/masthead"), "the desk's AI personas, each declared as such")]
    lines += [_link(f"Section: {section_name}", links.section_page(slug), description)
              for section_name, slug, description in sections]
    return "\n".join(lines) + "\n"
