"""Share cards through HTTP: `/cards/{slug}/{version}.png` (immutable, a new URL at each revision),
`/cards/{slug}.png` and other versions (302 to the current card), every link to a card, and a pull.

Apps with caches on (`make_app`) where a kept or replayed answer could outlive a write."""
from __future__ import annotations

import io
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from lxml import html
from PIL import Image

from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0

IMMUTABLE = "public, max-age=31536000, immutable"
CARD = re.compile(r"http://localhost/cards/(?P<slug>[a-z0-9-]+)/(?P<rev>\d+)-(?P<frame>[0-9a-f]{8})\.png")


def og_image(client, slug: str) -> str:
    """The story page's og:image, checked to be a card URL of `slug`."""
    page = client.get(f"/stories/{slug}")
    assert page.status_code == 200
    found = html.fromstring(page.data).xpath("string(//meta[@property='og:image']/@content)")
    match = CARD.fullmatch(found)
    assert match and match["slug"] == slug, found
    return found


def path_of(url: str) -> str:
    return url.removeprefix("http://localhost")


def lifetime(cache_control: str) -> int:
    """Seconds a cache may show an answer: max-age plus stale-while-revalidate."""
    directives = dict(re.findall(r"([a-z-]+)=(\d+)", cache_control))
    return int(directives.get("max-age", 0)) + int(directives.get("stale-while-revalidate", 0))


def assert_redirects_briefly(response, to: str) -> None:
    """A 302 to `to`, cached no longer than any public answer, and no picture in it."""
    assert response.status_code == 302, response.status_code
    assert response.headers["Location"] == to
    assert "immutable" not in response.headers["Cache-Control"]
    assert 0 < lifetime(response.headers["Cache-Control"]) <= 60
    assert not response.data.startswith(b"\x89PNG")


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again as the bank moves to cool prices across the land")
    return {"paper": paper, "piece": piece, "admin": desk.key(paper, "admin")}


def test_the_current_card_is_an_immutable_1200x630_png(app, make_app, newsroom):
    client = make_app().test_client()
    piece = newsroom["piece"]
    url = og_image(client, piece.slug)
    assert CARD.fullmatch(url)["rev"] == "1"
    first = client.get(path_of(url))
    assert first.status_code == 200 and first.mimetype == "image/png"
    assert first.headers["Cache-Control"] == IMMUTABLE
    assert first.headers["ETag"] and first.headers["X-Content-Type-Options"] == "nosniff"
    assert f"piece-{piece.id}" in first.headers["Surrogate-Key"].split()
    image = Image.open(io.BytesIO(first.data))
    assert image.format == "PNG" and image.size == (1200, 630)
    digest = piece.content_hash.removeprefix("sha256:")[:32]
    kept = list((Path(app.instance_path) / "cards").glob(f"{piece.id}-{digest}-*.png"))
    assert len(kept) == 1 and kept[0].read_bytes() == first.data
    # A revalidation (which an immutable answer seldom needs) is a 304 that keeps the policy.
    again = client.get(path_of(url), headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.headers["Cache-Control"] == IMMUTABLE


def test_a_card_is_drawn_again_the_same(app, client, desk):
    piece = desk.piece(desk.paper("demo"), "A headline " + "that goes on " * 21)
    url = path_of(og_image(client, piece.slug))
    first = client.get(url)
    assert first.status_code == 200
    for path in (Path(app.instance_path) / "cards").glob(f"{piece.id}-*.png"):
        path.unlink()
    assert client.get(url).data == first.data


def test_a_correction_is_a_new_url_and_the_old_one_redirects_to_it(make_app, newsroom, still_clock):
    app = make_app()
    client = app.test_client()
    piece = newsroom["piece"]
    old = og_image(client, piece.slug)
    before = client.get(path_of(old))
    assert client.get(path_of(old)).data == before.data  # kept, and sent again
    assert app.extensions["paperdesk.replay.stats"]["replayed"] >= 1

    revised = client.patch(f"/api/v1/stories/{piece.id}", json={"headline": "Rates rise again, say economists"},
                           headers=auth(newsroom["admin"]))
    assert revised.status_code == 200 and revised.get_json()["rev"] == 2
    new = og_image(client, piece.slug)
    assert new != old and CARD.fullmatch(new)["rev"] == "2"
    for _ in range(2):  # neither the kept answer nor a replay shows the old headline's card
        assert_redirects_briefly(client.get(path_of(old)), new)
    after = client.get(path_of(new))
    assert after.status_code == 200 and after.headers["Cache-Control"] == IMMUTABLE
    assert after.data != before.data


def test_a_renamed_section_or_nameplate_is_a_new_url_too(client, newsroom):
    # The card draws them, and a rename makes no revision: the URL's frame names them.
    admin = auth(newsroom["admin"])
    slug = newsroom["piece"].slug
    first = og_image(client, slug)
    assert client.patch("/api/v1/sections/world", json={"name": "The World"}, headers=admin).status_code == 200
    second = og_image(client, slug)
    assert client.patch("/api/v1/config", json={"nameplate": "The Daily Demo"}, headers=admin).status_code == 200
    third = og_image(client, slug)
    assert len({first, second, third}) == 3
    assert {CARD.fullmatch(url)["rev"] for url in (first, second, third)} == {"1"}
    for old in (first, second):
        assert_redirects_briefly(client.get(path_of(old)), third)
    assert client.get(path_of(third)).status_code == 200


def test_the_unversioned_url_and_any_other_version_redirect_to_the_current_card(client, newsroom):
    slug = newsroom["piece"].slug
    current = og_image(client, slug)
    for path in (f"/cards/{slug}.png", f"/cards/{slug}/9-00000000.png", f"/cards/{slug}/1.png",
                 f"/cards/{slug}/not-a-version.png"):
        assert_redirects_briefly(client.get(path), current)
    followed = client.get(f"/cards/{slug}.png", follow_redirects=True)
    assert followed.status_code == 200 and followed.mimetype == "image/png"


def test_a_pulled_piece_is_404_at_every_card_url_at_once(make_app, newsroom, still_clock):
    app = make_app()
    client = app.test_client()
    piece = newsroom["piece"]
    url = path_of(og_image(client, piece.slug))
    for _ in range(3):
        assert client.get(url).status_code == 200
    pulled = client.delete(f"/api/v1/stories/{piece.id}/air", headers=auth(newsroom["admin"]))
    assert pulled.status_code == 200
    for path in (url, f"/cards/{piece.slug}.png", f"/cards/{piece.slug}/1-00000000.png"):
        for _ in range(2):
            assert client.get(path).status_code == 404, path


def test_a_draft_a_scheduled_or_an_unknown_piece_has_no_card(client, desk):
    paper = desk.paper("demo")
    draft = desk.piece(paper, "Secret draft", on_air_at=None)
    later = desk.piece(paper, "Tomorrow's news", on_air_at=T0 + timedelta(days=3650))
    for slug in ("nothing-here", draft.slug, later.slug):
        for path in (f"/cards/{slug}.png", f"/cards/{slug}/1-00000000.png"):
            assert client.get(path).status_code == 404, path


def test_every_link_to_a_card_is_the_current_revisions_url(client, newsroom):
    slug = newsroom["piece"].slug

    def links() -> set[str]:
        page = html.fromstring(client.get(f"/stories/{slug}").data)
        json_ld = page.xpath("string(//script[@type='application/ld+json'])")
        story = f"http://localhost/stories/{slug}"
        oembed = client.get(f"/oembed?url={quote(story, safe='')}").get_json()
        feed = client.get("/feed.json").get_json()
        post = client.get("/api/v1/posts").get_json()["posts"][0]
        front = html.fromstring(client.get("/").data)
        found = {
            "og:image": page.xpath("string(//meta[@property='og:image']/@content)"),
            "twitter:image": page.xpath("string(//meta[@name='twitter:image']/@content)"),
            "json-ld": re.search(r'"image":\s*\[?"([^"]+)"', json_ld).group(1),
            "oembed": oembed["thumbnail_url"],
            "feed.json": feed["items"][0]["image"],
            "posts": post["image"],
            "front": front.xpath("string(//a[@class='lead-art']/img/@src)"),
            "embed": html.fromstring(client.get(f"/embed/{slug}").data).xpath("string(//img/@src)"),
        }
        assert all(CARD.fullmatch(url) for url in found.values()), found
        return set(found.values())

    before = links()
    assert len(before) == 1
    revised = client.patch(f"/api/v1/stories/{slug}", json={"headline": "Rates rise again, a correction"},
                           headers=auth(newsroom["admin"]))
    assert revised.status_code == 200
    after = links()
    assert len(after) == 1 and after != before and CARD.fullmatch(after.pop())["rev"] == "2"
