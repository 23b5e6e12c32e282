"""Files crawlers and browsers ask every host for: `/robots.txt` and `/favicon.ico`.

`robots.txt` lets crawlers read the paper's pages and feeds, keeps them out of the pages that
are only reached with a reader's token (confirm, unsubscribe, preferences) and out of the API
playground, and names the paper's sitemaps by absolute URL (a crawler reads them from there).
A private paper's host answers 404 like every other public path (web/tenancy.py).
"""
from __future__ import annotations

from flask import Blueprint, Response, current_app, send_from_directory

from web import policy
from web.links import links

bp = Blueprint("site", __name__)

# Paths that hold nothing for a crawler: token pages (a crawler never has the token) and the
# API playground (a page that calls the API from the browser).
DISALLOWED = ("/subscribe/confirm", "/subscribe/unsubscribe", "/subscribe/preferences", "/api/playground")
ROBOTS_MAX_AGE = 3600
ICON_MAX_AGE = 7 * 24 * 3600


@bp.route("/robots.txt")
def robots_txt():
    """The Robots Exclusion Protocol file (RFC 9309) with the paper's `Sitemap:` lines."""
    here = links()
    # No `Allow: /`: everything not disallowed is allowed anyway, and parsers that take the
    # first matching line rather than the longest (Python's urllib.robotparser) would read an
    # `Allow: /` before the Disallow lines as allowing every path.
    lines = ["User-agent: *", *(f"Disallow: {path}" for path in DISALLOWED), "",
             f"Sitemap: {here.absolute('/sitemap.xml')}", f"Sitemap: {here.absolute('/sitemap-news.xml')}", ""]
    response = Response("\n".join(lines), content_type="text/plain; charset=utf-8")
    response.cache_control.public, response.cache_control.max_age = True, ROBOTS_MAX_AGE
    return response


@bp.route("/favicon.ico")
@policy.route(limit="none")  # browsers ask on every page: an asset, not a read
def favicon():
    """The icon browsers fetch without being told (static/img/favicon.ico, 16-48 px)."""
    return send_from_directory(current_app.static_folder, "img/favicon.ico",
                               mimetype="image/vnd.microsoft.icon", max_age=ICON_MAX_AGE)
