"""robots.txt and the icons: what crawlers and browsers ask every host for."""
from __future__ import annotations

import io

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
