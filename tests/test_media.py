"""`/masthead/{slug}/avatar.svg` and `/media/{name}` through HTTP (share cards:
tests/test_share_cards.py)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from extensions import db
from models import Persona
from services.newsroom import filing

SVG = "{http://www.w3.org/2000/svg}"


def test_avatar_is_a_deterministic_svg_with_initials(client, desk):
    desk.paper("demo")
    first = client.get("/masthead/ada-quill/avatar.svg")
    assert first.status_code == 200
    assert first.mimetype == "image/svg+xml"
    assert "max-age=604800" in first.headers["Cache-Control"]
    assert first.headers["ETag"]
    root = ET.fromstring(first.data)
    assert root.tag == f"{SVG}svg"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "AQ" in texts and "AI" in texts
    assert "AI persona" in root.find(f"{SVG}title").text
    again = client.get("/masthead/ada-quill/avatar.svg")
    assert again.data == first.data
    other = client.get("/masthead/rex-ledger/avatar.svg")
    assert other.status_code == 200 and "RL" in other.get_data(as_text=True)
    assert _fill(other.data) != _fill(first.data)  # colour follows the slug


def _fill(svg: bytes) -> str:
    return ET.fromstring(svg).find(f"{SVG}rect").get("fill")


def test_avatar_304_on_its_etag(client, desk):
    desk.paper("demo")
    first = client.get("/masthead/ada-quill/avatar.svg")
    again = client.get("/masthead/ada-quill/avatar.svg", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304


def test_avatar_escapes_the_name(client, desk):
    desk.paper("demo", personas=('Ada <b>"Q" & Co',))
    slug = filing.slugify('Ada <b>"Q" & Co')
    response = client.get(f"/masthead/{slug}/avatar.svg")
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert "<b>" not in text and "&lt;b&gt;" in text
    ET.fromstring(response.data)  # still well-formed


def test_avatar_404_for_unknown_or_other_papers_persona(client, desk):
    desk.paper("demo")
    desk.paper("other", personas=("Zed Ink",))
    for url in ("/masthead/nobody/avatar.svg", "/masthead/zed-ink/avatar.svg"):
        assert client.get(url).status_code == 404
    assert client.get("/masthead/zed-ink/avatar.svg", base_url="http://other.localhost").status_code == 200


def test_retired_persona_keeps_its_avatar(client, desk):
    paper = desk.paper("demo")
    db.session.query(Persona).filter_by(paper_id=paper.id, slug="rex-ledger").one().active = False
    db.session.commit()
    assert client.get("/masthead/rex-ledger/avatar.svg").status_code == 200


def test_posts_image_points_at_a_working_card(client, desk):
    desk.piece(desk.paper("demo"), "Card please")
    post = client.get("/api/v1/posts").get_json()["posts"][0]
    response = client.get(post["image"])
    assert response.status_code == 200 and response.mimetype == "image/png"
