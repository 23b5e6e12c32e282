"""Ready-to-post short forms of pieces on air (`/api/v1/posts`): deterministic, written by no
model.

A post's `text` is the headline, then the dek when it fits, then the link, joined by a blank
line, never longer than 280 characters (Unicode code points, the unit Python's `len` counts).
"""
from __future__ import annotations

from datetime import datetime

from extensions import db
from models import Paper, Piece
from services.reading import stories
from services.rendering.links import Links

MAX_CHARS = 280
SEPARATOR = "\n\n"
ELLIPSIS = "…"


def dek_fits(headline: str, dek: str, link: str) -> bool:
    """True when a dek that is not blank fits: len(headline) + len(dek) + len(link) + 4 <= 280
    (4 = two `\\n\\n` separators)."""
    return bool(dek.strip()) and len(headline) + len(dek) + len(link) + 2 * len(SEPARATOR) <= MAX_CHARS


def shorten(text: str, budget: int) -> str:
    """`text` cut to at most `budget` characters, ending with `…` when cut. Cuts at the last
    space when that keeps at least half the budget, else mid-word. `budget` < 1 gives ''."""
    if len(text) <= budget:
        return text
    if budget < 1:
        return ""
    head = text[: budget - 1]
    space = head.rfind(" ")
    if space >= (budget - 1) // 2:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def compose(headline: str, dek: str, link: str) -> tuple[str, bool]:
    """The post text and whether the dek is in it. Headline, dek (when `dek_fits`) and link
    joined by `\\n\\n`; when headline + separator + link exceed 280, the headline is shortened
    (`shorten`) so the whole is exactly within 280. A link of 280 characters or more (never
    produced by this app) stands alone, cut to 280."""
    if dek_fits(headline, dek, link):
        return SEPARATOR.join((headline, dek, link)), True
    budget = MAX_CHARS - len(SEPARATOR) - len(link)
    short = shorten(headline, budget)
    if not short:
        return link[:MAX_CHARS], False
    return SEPARATOR.join((short, link)), False


def post_for(piece: Piece, *, links: Links) -> dict:
    """One post: `{"id", "headline", "dek"?, "link", "image", "text", "on_air_at"}`; `dek` is
    present only when it fits (see `dek_fits`). `link` is the story page and `image` the
    piece's art, else its share card, both under `links`."""
    link = links.story_page(piece.slug)
    text, with_dek = compose(piece.headline, piece.dek or "", link)
    post = {"id": str(piece.id), "headline": piece.headline}
    if with_dek:
        post["dek"] = piece.dek
    post.update(link=link, image=links.media(piece.image) or links.share_card(piece.slug), text=text,
                on_air_at=piece.on_air_at)
    return post


def list_posts(paper: Paper, limit: int, since: datetime | None = None, *, links: Links) -> list[dict]:
    """Posts (see `post_for`) for the `limit` newest pieces on air (newest first); with `since`
    (aware), only pieces whose `on_air_at` is strictly later. One SQL statement."""
    query = stories.rows_query(paper)
    if since is not None:
        query = query.where(Piece.on_air_at > since)
    return [post_for(piece, links=links) for piece in db.session.scalars(query.limit(limit))]
