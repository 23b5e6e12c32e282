"""`/api`: the API playground.

A server-rendered page that works on its own and is enhanced by `static/js/playground.js`:

- without JavaScript, a GET form (`?story=<id>&maxwidth=<220-640>`) picks a story and a width
  and the server renders that card, its iframe snippet and its oEmbed URL (default: the newest
  story at 480 pixels); the public endpoints of `/api/v1` are plain links to their JSON;
- with it, the page reads the paper's own API (`/api/v1/stories`, `/api/v1`, `/oembed`), updates
  the card, snippet and oEmbed URL live, copies them, and shows each endpoint's JSON in place.

The page loads only this host's CSS and script (CSP `script-src 'self'`; `connect-src` and
`frame-src` fall back to `default-src 'self'`, which covers the fetches and the card's frame).
Bad query values never fail: an unparsable `maxwidth` is the default and one out of range is
clamped; an unknown `story` is a 404 page.
"""
from __future__ import annotations

import re
from urllib.parse import urlencode

from flask import Blueprint, abort, current_app, g, render_template, request

from services.reading import stories
from services.rendering import embeds
from services.rendering.embeds import DEFAULT_WIDTH, MAX_WIDTH, MIN_WIDTH
from web import caching, policy
from web.links import links

bp = Blueprint("playground", __name__)

# As many stories as `GET /api/v1/stories` answers by default, which is what the script loads.
STORY_CHOICES = 50
_WORD = re.compile(r"[^\W\d_]{4,}")


def _index() -> dict:
    """The paper index exactly as `GET /api/v1` answers it: the no-JavaScript endpoint list and
    the one the script fetches come from the same place."""
    return current_app.view_functions["paper.paper_index"]().get_json()


def sample_query(piece) -> str:
    """A search term that finds `piece`: the first word of four letters or more in its headline
    (lower-cased), else "news"."""
    found = _WORD.search(piece.headline) if piece is not None else None
    return found.group(0).lower() if found else "news"


def try_links(endpoints: dict, piece, query: str) -> list[dict]:
    """The index's `endpoints` as rows to try: `{name, method, template, url}`, where `url` has
    the story's id, its day and `query` filled in (None when a template cannot be filled, i.e.
    no story is on air) and `method` is "POST" for the subscribe entry, else "GET"."""
    rows = []
    for name, value in endpoints.items():
        method, _, template = value.rpartition(" ")
        url: str | None = template
        if "{id}" in template or "{YYYY-MM-DD}" in template:
            url = None if piece is None else template.replace("{id}", str(piece.id)).replace(
                "{YYYY-MM-DD}", piece.on_air_at.date().isoformat())
        elif template.endswith("?q="):
            url = template + query
        rows.append({"name": name, "method": method or "GET", "template": template, "url": url})
    return rows


def _width() -> int:
    wanted = request.args.get("maxwidth", type=int)
    return DEFAULT_WIDTH if wanted is None else stories.clamp(wanted, MIN_WIDTH, MAX_WIDTH)


@bp.get("/api")
@policy.route(query=("story", "maxwidth"))
def playground():
    """The playground: pick a story, see its card, copy the snippet; try each public endpoint."""
    now = caching.request_now()
    choices = stories.latest(g.paper, STORY_CHOICES, now=now)
    chosen = choices[0] if choices else None
    wanted = request.args.get("story", "").strip()
    if wanted:
        chosen = stories.find(g.paper, wanted, now=now)
        if chosen is None:
            abort(404, description="There is no such story on air in this paper.")
        if chosen.id not in {piece.id for piece in choices}:
            choices.append(chosen)
    width = _width()
    record = oembed_url = card_url = None
    if chosen is not None:
        record = embeds.oembed_record(chosen, g.paper, width, None, links=links())
        card_url = links().embed(chosen.slug)
        oembed_url = links().absolute("/oembed?" + urlencode(
            {"url": links().story_page(chosen.slug), "maxwidth": width, "format": "json"}))
    index = _index()
    query = sample_query(chosen)
    return render_template(
        "playground/playground.html", choices=choices, chosen=chosen, width=width,
        min_width=MIN_WIDTH, max_width=MAX_WIDTH, record=record, oembed_url=oembed_url,
        card_url=card_url, sandbox=embeds.SANDBOX,
        endpoints=try_links(index["endpoints"], chosen, query), query=query,
        index_url=links().api(), openapi_url=index["endpoints"]["openapi"],
    )
