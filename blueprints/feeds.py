"""The reader's feeds on each paper's host: `/rss.xml`, `/feed.json` (JSON Feed 1.1),
`/podcast.xml`, `/front.json`, `/llms.txt`, `/sitemap.xml` (with `/sitemap-<n>.xml` pages past
50 000 URLs) and `/sitemap-news.xml`.

Public GETs only: tenancy answers a private paper's feeds with 404, and the pipeline gives each
answer an ETag (304 on a match, before any piece is loaded) and keeps it in the response cache,
both naming the versions of what it shows (web/caching.py: the paper's lists for `/rss.xml`,
`/feed.json`, `/front.json` and `/sitemap-news.xml`, `depends_on_lists`; every write of the
paper for the others), as every public answer, so a write makes it stale at once; a feed has no
cache of its own. The Google News sitemap's two-day window is counted from the hour, so its
copies and its ETag name the hour as well (`depends_on_lists(hourly=True)`): they hold for an
hour at most (at most 1000 URLs, one statement). A sitemap page larger than
RESPONSE_CACHE_MAX_BYTES (tens of thousands of URLs; bounded by SITEMAP_MAX_URLS) is not kept
and is built by each request that is not a 304; crawlers revalidate with the ETag. Any origin
may read every one of them from a browser (the blueprint's policy: web/policy.py).
"""
from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, g, jsonify, url_for

from blueprints.api.paper import NOTE
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


def _max_urls() -> int:
    return int(current_app.config.get("SITEMAP_MAX_URLS", sitemaps.MAX_URLS))


@bp.route("/rss.xml")
def rss():
    """RSS 2.0 of the 50 newest pieces on air (full prose, cited facts, disclosed personas)."""
    caching.depends_on_lists()
    hub = current_app.config.get("WEBSUB_HUB") or None  # WebSub: the hub readers may subscribe at
    return Response(feeds.build_rss(g.paper, now=caching.request_now(), links=links(), hub=hub),
                    content_type=RSS_TYPE)


@bp.route("/feed.json")
def json_feed():
    """JSON Feed 1.1 of the 50 newest pieces on air: the RSS feed's items and content, with
    each piece's content hash, revision and AI disclosure in the `_paperdesk` extension."""
    caching.depends_on_lists()
    here = links()
    body = feeds.build_json_feed(
        g.paper, now=caching.request_now(), links=here,
        icon=here.absolute(url_for("static", filename="img/icon-512.png")),
        favicon=here.absolute(url_for("static", filename="img/apple-touch-icon.png")),
        # The extension is documented with the API; the guide is where a reader finds it.
        about=here.absolute("/api"), hub=current_app.config.get("WEBSUB_HUB") or None)
    return Response(body, content_type=JSON_FEED_TYPE)


@bp.route("/podcast.xml")
def podcast():
    """Every video edition as a podcast item with its enclosure and iTunes tags."""
    here = links()

    # The paper's own square artwork, drawn once per nameplate (no statement).
    artwork = art.artwork_file(current_app.instance_path, g.paper.nameplate)
    body = feeds.build_podcast(g.paper, here.host_name, links=here, artwork=here.media(artwork))
    return Response(body, content_type=RSS_TYPE)


@bp.route("/front.json")
def front_json():
    """The front page document: byte for byte the answer of `GET /api/v1/front`."""
    # The API view answers the same dump of the same document; CORS is opened in app.py.
    caching.depends_on_lists()
    here = links()
    now = caching.request_now()
    document = front.build_front(g.paper, caching.paper_state(), now=now, links=here, rows=True)
    return jsonify(front_wire(document, here, now))


@bp.route("/llms.txt")
def llms_txt():
    """llmstxt.org summary of the paper: API, feeds, latest pieces."""
    body = feeds.build_llms_txt(g.paper, now=caching.request_now(), signature_note=NOTE, links=links())
    return Response(body, content_type=TEXT_TYPE)


@bp.route("/sitemap.xml")
def sitemap():
    """sitemaps.org urlset, or a sitemap index when the paper has more than 50 000 URLs."""
    body = sitemaps.build_sitemap(g.paper, _max_urls(), now=caching.request_now(), links=links())
    return Response(body, content_type=XML_TYPE)


@bp.route("/sitemap-<int:n>.xml")
def sitemap_page(n: int):
    """Page n (from 1) of a split sitemap; 404 past the last page."""
    body = sitemaps.build_sitemap_page(g.paper, n, _max_urls(), now=caching.request_now(), links=links())
    if not body:
        abort(404, description="No such sitemap page on this paper.")
    return Response(body, content_type=XML_TYPE)


@bp.route("/sitemap-news.xml")
def news_sitemap():
    """Google News sitemap: pieces on air in the last two days, counted from the hour."""
    caching.depends_on_lists(hourly=True)  # the window moves on the hour, not only with writes
    body = sitemaps.build_news_sitemap(g.paper, caching.request_now(), links=links())
    return Response(body, content_type=XML_TYPE)
