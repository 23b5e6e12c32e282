"""The reader's feeds on each paper's host: `/rss.xml`, `/feed.json` (JSON Feed 1.1),
`/podcast.xml`, `/front.json`, `/llms.txt`, `/sitemap.xml` (with `/sitemap-<n>.xml` pages past
50 000 URLs) and `/sitemap-news.xml`.

Public GETs only: tenancy answers a private paper's feeds with 404, and http_cache gives each
answer the paper's ETag (304 on a match, before any piece is loaded). Built documents are kept in
the app cache under the paper's version, so a write makes them stale at once. Any origin may
read every one of them from a browser (the blueprint's policy: web/policy.py).
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from flask import Blueprint, Response, abort, current_app, g, jsonify, request, url_for

from blueprints.api.paper import NOTE
from extensions import cache
from models import clock
from schemas.front import front_wire
from services.reading import front
from services.rendering import art, feeds, sitemaps
from web import caching, policy
from web.links import links

# Any origin may read every feed from a browser (a feed reader or an agent in a page).
bp = policy.blueprint(Blueprint("feeds", __name__), cors="read", problems=True)

RSS_TYPE = "application/rss+xml; charset=utf-8"
# JSON Feed 1.1's own media type; JSON is UTF-8 by definition, so no charset parameter.
JSON_FEED_TYPE = "application/feed+json"
XML_TYPE = "application/xml; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"

log = logging.getLogger("paperdesk.feeds")


def _cached(build: Callable[[], bytes | str], *extra: str) -> bytes | str:
    # Absolute URLs differ per host, so the host is part of the key as well as the version.
    key = ":".join(["feeds", caching.paper_state(), links().absolute(request.path), *extra])
    # As in http_cache: a cache outage (Redis down) builds the feed afresh, never fails it.
    try:
        body = cache.get(key)
    except Exception:  # noqa: BLE001 - a cache outage must never fail a request
        log.warning("feed cache read failed", exc_info=True)
        body = None
    if body is None:
        body = build()
        try:
            cache.set(key, body)
        except Exception:  # noqa: BLE001 - a cache outage must never fail a request
            log.warning("feed cache write failed", exc_info=True)
    return body


def _max_urls() -> int:
    return int(current_app.config.get("SITEMAP_MAX_URLS", sitemaps.MAX_URLS))


@bp.route("/rss.xml")
def rss():
    """RSS 2.0 of the 50 newest pieces on air (full prose, cited facts, disclosed personas)."""
    caching.depends_on_lists()
    hub = current_app.config.get("WEBSUB_HUB") or None  # WebSub: the hub readers may subscribe at
    return Response(_cached(lambda: feeds.build_rss(g.paper, links=links(), hub=hub)), content_type=RSS_TYPE)


@bp.route("/feed.json")
def json_feed():
    """JSON Feed 1.1 of the 50 newest pieces on air: the RSS feed's items and content, with
    each piece's content hash, revision and AI disclosure in the `_paperdesk` extension."""
    caching.depends_on_lists()
    here = links()
    body = _cached(lambda: feeds.build_json_feed(
        g.paper, links=here,
        icon=here.absolute(url_for("static", filename="img/icon-512.png")),
        favicon=here.absolute(url_for("static", filename="img/apple-touch-icon.png")),
        # The extension is documented with the API; the guide is where a reader finds it.
        about=here.absolute("/api"), hub=current_app.config.get("WEBSUB_HUB") or None))
    return Response(body, content_type=JSON_FEED_TYPE)


@bp.route("/podcast.xml")
def podcast():
    """Every video edition as a podcast item with its enclosure and iTunes tags."""
    here = links()

    def build() -> bytes:
        # The paper's own square artwork, drawn once per nameplate (no statement).
        artwork = art.artwork_file(current_app.instance_path, g.paper.nameplate)
        return feeds.build_podcast(g.paper, here.host_name, links=here, artwork=here.media(artwork))

    return Response(_cached(build), content_type=RSS_TYPE)


@bp.route("/front.json")
def front_json():
    """The front page document: byte for byte the answer of `GET /api/v1/front`."""
    # The API view answers the same dump of the same document; CORS is opened in app.py.
    caching.depends_on_lists()
    here = links()
    return jsonify(front_wire(front.build_front(g.paper, caching.paper_state(), links=here, rows=True), here))


@bp.route("/llms.txt")
def llms_txt():
    """llmstxt.org summary of the paper: API, feeds, latest pieces."""
    body = _cached(lambda: feeds.build_llms_txt(g.paper, signature_note=NOTE, links=links()))
    return Response(body, content_type=TEXT_TYPE)


@bp.route("/sitemap.xml")
def sitemap():
    """sitemaps.org urlset, or a sitemap index when the paper has more than 50 000 URLs."""
    max_urls = _max_urls()
    body = _cached(lambda: sitemaps.build_sitemap(g.paper, max_urls, links=links()), str(max_urls))
    return Response(body, content_type=XML_TYPE)


@bp.route("/sitemap-<int:n>.xml")
def sitemap_page(n: int):
    """Page n (from 1) of a split sitemap; 404 past the last page."""
    max_urls = _max_urls()
    body = _cached(lambda: sitemaps.build_sitemap_page(g.paper, n, max_urls, links=links()) or b"",
                   str(max_urls))
    if not body:
        abort(404, description="No such sitemap page on this paper.")
    return Response(body, content_type=XML_TYPE)


@bp.route("/sitemap-news.xml")
def news_sitemap():
    """Google News sitemap: pieces on air in the last two days."""
    now = clock.utcnow()
    window = sitemaps.news_window_start(now)
    # The window moves with the clock, not with writes, so the hour is part of the ETag.
    etag = f"{caching.current_etag()}.{window:%Y%m%d%H}"
    if request.if_none_match.contains_weak(etag):
        response = Response(status=304)
    else:
        body = _cached(lambda: sitemaps.build_news_sitemap(g.paper, now, links=links()),
                       f"{window:%Y%m%d%H}")
        response = Response(body, content_type=XML_TYPE)
    response.set_etag(etag)
    response.headers["Cache-Control"] = caching.PUBLIC_CACHE_CONTROL
    return response
