"""robots.txt and the icons: what crawlers and browsers ask every host for."""
from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path

from PIL import Image


def test_robots_txt_names_the_papers_sitemaps_and_keeps_crawlers_off_token_pages(client, desk):
    desk.paper("demo")
    desk.paper("gazette", nameplate="The Gazette")
    response = client.get("/robots.txt")
    assert response.status_code == 200
    assert response.mimetype == "text/plain" and response.cache_control.max_age == 3600
    lines = response.get_data(as_text=True).splitlines()
    assert lines[0] == "User-agent: *"
    assert "Sitemap: http://localhost/sitemap.xml" in lines
    assert "Sitemap: http://localhost/sitemap-news.xml" in lines
    assert {"Disallow: /subscribe/confirm", "Disallow: /subscribe/unsubscribe"} <= set(lines)
    # Each paper's host names its own sitemaps, and every one of them is served.
    other = client.get("/robots.txt", headers={"Host": "gazette.localhost"}).get_data(as_text=True)
    assert "Sitemap: http://gazette.localhost/sitemap.xml" in other.splitlines()
    for line in lines:
        if line.startswith("Sitemap: "):
            assert client.get(line.removeprefix("Sitemap: http://localhost")).status_code == 200


def test_robots_txt_of_a_private_paper_is_as_absent_as_the_paper(client, desk):
    desk.paper("demo", public=False)
    assert client.get("/robots.txt").status_code == 404


def test_favicon_and_home_screen_icons_are_served_and_linked(client, desk):
    desk.paper("demo")
    with client.get("/favicon.ico") as icon:
        assert icon.status_code == 200 and icon.mimetype == "image/vnd.microsoft.icon"
        assert icon.cache_control.max_age == 7 * 24 * 3600
        assert Image.open(io.BytesIO(icon.data)).info["sizes"] == {(16, 16), (32, 32), (48, 48)}
    page = client.get("/").get_data(as_text=True)
    assert '<link rel="icon" href="/favicon.ico"' in page
    with client.get("/static/img/apple-touch-icon.png") as touch:
        assert touch.status_code == 200 and Image.open(io.BytesIO(touch.data)).size == (180, 180)
    assert "apple-touch-icon" in page


def test_static_files_have_hashed_names_cached_for_a_year(client, desk):
    desk.paper("demo")
    page = client.get("/").get_data(as_text=True)
    stylesheet = re.search(r'href="(/static/css/paper\.([0-9a-f]{12})\.css)"', page)
    assert stylesheet, "the page links its stylesheet by a hashed name"
    with open(Path(client.application.static_folder) / "css" / "paper.css", "rb") as handle:
        body = handle.read()
    assert stylesheet.group(2) == hashlib.sha256(body).hexdigest()[:12]
    with client.get(stylesheet.group(1)) as hashed:
        assert hashed.status_code == 200 and hashed.data == body
        assert hashed.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    # A page cached from before a deploy names an old hash: today's file, for a minute.
    with client.get("/static/css/paper.000000000000.css") as stale:
        assert stale.status_code == 200 and stale.data == body
        assert stale.cache_control.max_age == 60 and not stale.cache_control.immutable
    # The plain name still works, revalidated as before; nothing outside the folder is reached.
    with client.get("/static/css/paper.css") as plain:
        assert plain.status_code == 200 and "immutable" not in plain.headers.get("Cache-Control", "")
    assert client.get("/static/../app.000000000000.py").status_code == 404
    assert client.get("/static/css/missing.000000000000.css").status_code == 404
