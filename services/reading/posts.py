"""Ready-to-post short forms of pieces on air (`/api/v1/posts`): deterministic, written by no
model.

A post's `text` is the headline, then the dek when it fits, then the link, joined by a blank
line, never longer than 280 characters (Unicode code points, the unit Python's `len` counts).
"""
from __future__ import annotations

from datetime import datetime

from models import Paper, Piece
from services.links import Links
from services.reading import stories

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


def post_for(piece: Piece, nameplate: str, *, links: Links) -> dict:
    """One post: `{"id", "headline", "dek"?, "link", "image", "text", "on_air_at"}`; `dek` is
    present only when it fits (see `dek_fits`). `link` is the story page and `image` the
    piece's art, else its current share card (drawn with the paper's `nameplate`), both under
    `links`. Needs `piece.section` and `persona` loaded."""
    link = links.story_page(piece.slug)
    text, with_dek = compose(piece.headline, piece.dek or "", link)
    post = {"id": str(piece.id), "headline": piece.headline}
    if with_dek:
        post["dek"] = piece.dek
    post.update(link=link, image=links.media(piece.image) or links.share_card(piece, nameplate), text=text,
                on_air_at=piece.on_air_at)
    return post


# A page with `since` never ends inside one instant: at most this many pieces that went on air
# at the very same microsecond are added to a page made of that instant alone.
MAX_SAME_INSTANT = 1000


def list_posts(paper: Paper, limit: int, since: datetime | None = None, *, now: datetime, links: Links,
               after: list | None = None) -> tuple[list[dict], list | None]:
    """A page of posts (see `post_for`) of pieces on air by `now`: `(posts, last)`.

    Without `since`, the `limit` newest pieces, newest first. With `since` (aware), only pieces
    whose `on_air_at` is strictly later, oldest first (ascending `on_air_at`, then id), so a
    client that walks the pages, or advances `since` to the last post's `on_air_at`, misses
    nothing that airs meanwhile. For the second kind of client a page with `since` never ends
    between two pieces aired at the same instant: it stops before that instant, or, when the
    whole page is that one instant, holds all of its pieces (up to MAX_SAME_INSTANT; so it may
    hold more than `limit`). `after` is the keyset position (`[1, on_air_at, id]`) the page
    starts after; `last` the position of the page's last piece when more follow, else None.
    One SQL statement (two when a page is one instant)."""
    ascending = since is not None
    rows, _ = stories.page(paper, limit + 1, stories.PageFilter(), after, now=now, core=False,
                           ascending=ascending, since=since)
    if len(rows) <= limit:
        return [post_for(piece, paper.nameplate, links=links) for piece in rows], None
    kept = rows[:limit]
    instant = kept[-1].on_air_at
    if ascending and rows[limit].on_air_at == instant:
        start = next(n for n, piece in enumerate(kept) if piece.on_air_at == instant)
        if start:
            kept = kept[:start]
        else:  # the page is one instant: take the rest of it too
            rest, more = stories.page(paper, MAX_SAME_INSTANT, stories.PageFilter(), stories.position(rows[-1]),
                                      now=now, core=False, ascending=True, since=since)
            same = [piece for piece in rest if piece.on_air_at == instant]
            kept = rows + same
            if len(same) == len(rest) and not more:
                return [post_for(piece, paper.nameplate, links=links) for piece in kept], None
    return [post_for(piece, paper.nameplate, links=links) for piece in kept], stories.position(kept[-1])
