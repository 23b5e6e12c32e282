"""Embeddable story cards and oEmbed records (`/embed/{id}`, `/oembed`; oembed.com, oEmbed 1.0,
type rich).

The card is an HTML page made for an `<iframe>`: it loads nothing but its own inline CSS and one
picture (the piece's own https art, else its share card on this host), so a reader's browser
makes no third-party request because of it and receives no cookie.
"""
from __future__ import annotations

import math
import re
from datetime import datetime
from urllib.parse import unquote, urlencode, urlsplit
from xml.etree import ElementTree

from markupsafe import Markup, escape

from models import Edition, Paper, Piece
from services.links import Links
from services.reading import stories
from services.rendering.media import CARD_SIZE as SHARE_CARD_SIZE
from services.rendering.prose import DIGITAL_SOURCE_TYPE, disclosure
from services.rendering.xmltext import xml_safe

# The card's width bounds in CSS pixels (oEmbed `maxwidth`), and the least height that still
# shows the byline with its whole AI-persona disclosure (`maxheight`).
MIN_WIDTH, MAX_WIDTH, DEFAULT_WIDTH = 220, 640, 480
# The oEmbed formats `/oembed` answers in; any other is 501 (oEmbed 1.0 section 2.3.4).
FORMATS = ("json", "xml")
MIN_HEIGHT = 200
CACHE_AGE = 3600
STORY_PATH = re.compile(r"/stories/([^/]+)/?")
SANDBOX = "allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation"


def story_from_url(paper: Paper, url: str, *, now: datetime, links: Links) -> Piece | None:
    """The piece on air by `now` that a story page address names, or None.

    Accepted: `http` or `https`, the host of `links` (port included, case-insensitive), the
    path `/stories/<slug or id>` with an optional trailing slash; a query or fragment is ignored.
    Any other address (another host, another path, a draft, an unknown piece) is None. At most
    one query.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unbalanced '[' in the host part
        return None
    if parts.scheme.lower() not in ("http", "https") or parts.netloc.lower() != links.host.lower():
        return None
    match = STORY_PATH.fullmatch(parts.path)
    if match is None:
        return None
    return stories.find_card(paper, unquote(match.group(1)), now=now)


def picture(piece: Piece, nameplate: str, *, links: Links) -> str:
    """The card's picture: the piece's own art when it is an https URL (or under `links`'
    origin), else its current share card there (drawn with the paper's `nameplate`; needs
    `piece.section` and `persona` loaded). Plain-http art elsewhere would be mixed content and is refused by the card's
    `img-src 'self' https: data:` policy, so it is never used."""
    image = (links.media(piece.image) or "").strip()
    if image.startswith("https://") or image.startswith(links.absolute("/")):
        return image
    return links.share_card(piece, nameplate)


def natural_height(piece: Piece, width: int, *, nameplate: str) -> int:
    """Pixels the card needs at `width` (pixels) to show its picture, up to three lines of
    headline, the byline and the whole disclosure naming the paper `nameplate` (estimated from
    text lengths and the card's type sizes). Needs `piece.persona` loaded."""
    text_width = width - 32
    picture_height = round(width * SHARE_CARD_SIZE[1] / SHARE_CARD_SIZE[0])
    headline_lines = min(3, max(1, math.ceil(len(piece.headline) * 10.5 / text_width)))
    disclosure_lines = math.ceil(len(disclosure(piece.persona.name, nameplate)) * 6.6 / text_width)
    # padding + nameplate + headline + byline + disclosure, each with its line height.
    return picture_height + 24 + 22 + headline_lines * 25 + 24 + disclosure_lines * 17 + 16


def card_size(piece: Piece, maxwidth: int | None, maxheight: int | None, *,
              nameplate: str) -> tuple[int, int]:
    """(width, height) of the iframe in pixels: width `maxwidth` or DEFAULT_WIDTH, clamped to
    MIN_WIDTH..MAX_WIDTH (a consumer's `maxwidth` is an upper bound: a larger one gets the
    widest card, a smaller one than any card the smallest); height the card's natural height at
    that width (see `natural_height`), capped at `maxheight` but never below MIN_HEIGHT (the
    card hides its picture when the frame is too short for it)."""
    width = max(MIN_WIDTH, min(maxwidth or DEFAULT_WIDTH, MAX_WIDTH))
    height = natural_height(piece, width, nameplate=nameplate)
    if maxheight is not None:
        height = min(height, max(maxheight, MIN_HEIGHT))
    return width, height


def iframe(piece: Piece, width: int, height: int, *, links: Links) -> Markup:
    """The `<iframe>` snippet for a story card (`links.embed`): sandboxed (links may open a new
    tab, nothing else), lazy-loaded, titled with the headline."""
    return Markup(
        f'<iframe src="{escape(links.embed(piece.slug))}" width="{width}" height="{height}" '
        f'frameborder="0" loading="lazy" title="{escape(piece.headline)}" '
        f'sandbox="{SANDBOX}"></iframe>'
    )


def player_iframe(edition: Edition, *, links: Links) -> Markup:
    """The `<iframe>` snippet for a video edition's frameable player (`/cast/<day>?embed=1`),
    16:9 at 640 pixels wide."""
    return Markup(
        f'<iframe src="{escape(links.edition_embed(edition.day))}" width="640" height="360" '
        f'frameborder="0" loading="lazy" allowfullscreen title="{escape(edition.title)}"></iframe>'
    )


def oembed_record(piece: Piece, paper: Paper, maxwidth: int | None, maxheight: int | None, *,
                  links: Links) -> dict:
    """The oEmbed 1.0 rich record for `piece` (shape: schemas.embed.OEmbedOut), its URLs under
    `links`, sized by `card_size`. Beside the standard members it carries two that oEmbed allows
    as extras: the byline's `disclosure` sentence and its `digital_source_type` (IPTC), and for a
    piece changed since it aired `corrected` (`corrected_at`). Needs
    `piece.section` and `persona` loaded."""
    width, height = card_size(piece, maxwidth, maxheight, nameplate=paper.nameplate)
    return {
        "type": "rich",
        "version": "1.0",
        "title": piece.headline,
        "author_name": piece.persona.name,
        "author_url": masthead_entry(piece.persona.slug, links=links),
        "provider_name": paper.nameplate,
        "provider_url": links.home(),
        "html": str(iframe(piece, width, height, links=links)),
        "width": width,
        "height": height,
        # The share card, not the piece's own art: its size is known, and oEmbed requires
        # thumbnail_width and thumbnail_height beside thumbnail_url.
        "thumbnail_url": links.share_card(piece, paper.nameplate),
        "thumbnail_width": SHARE_CARD_SIZE[0],
        "thumbnail_height": SHARE_CARD_SIZE[1],
        "cache_age": CACHE_AGE,
        "disclosure": disclosure(piece.persona.name, paper.nameplate),
        "digital_source_type": DIGITAL_SOURCE_TYPE,
        **({"corrected": corrected} if (corrected := corrected_at(piece)) else {}),
    }


def corrected_at(piece: Piece) -> str | None:
    """When the piece was last corrected, clarified, updated or retracted (RFC 3339), from its
    public notices; None for a piece never changed since it aired. Cards and oEmbed say so."""
    notices = [n for n in piece.notices or [] if n["kind"] != "edit"]
    return notices[-1]["at"] if notices else None


def oembed_xml(record: dict) -> bytes:
    """The oEmbed XML form of a record (oEmbed 1.0 section 2.3.4): `<oembed>` with one child per
    field, UTF-8, standalone; characters XML 1.0 forbids (a control character in a headline) are
    dropped, as in the feeds."""
    root = ElementTree.Element("oembed")
    for name, value in record.items():
        ElementTree.SubElement(root, name).text = xml_safe(str(value))
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)


def masthead_entry(persona_slug: str, *, links: Links) -> str:
    """The persona's own page, `/masthead/<slug>` (bio, beat, sections, recent pieces): the
    author URL of oEmbed records, feed items and JSON-LD."""
    return links.absolute(f"/masthead/{persona_slug}")


def oembed_url(story_url: str, *, links: Links) -> str:
    """The oEmbed endpoint address for a story page (the pages' discovery `<link>`)."""
    return links.absolute("/oembed?" + urlencode({"url": story_url, "format": "json"}))
