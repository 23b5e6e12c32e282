"""`/masthead/{slug}/avatar.svg` and `.png` and `/media/{name}` through HTTP (share cards:
tests/test_share_cards.py)."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

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


def test_avatar_png_is_the_same_portrait_rendered_once(client, app, desk):
    """The PNG twin of the SVG (the fediverse actor's icon): 256x256, the SVG's background
    colour, white initials, written once into the media folder and read from there after."""
    from PIL import Image

    desk.paper("demo")
    first = client.get("/masthead/ada-quill/avatar.png")
    assert first.status_code == 200 and first.mimetype == "image/png"
    assert "max-age=604800" in first.headers["Cache-Control"] and first.headers["ETag"]
    image = Image.open(io.BytesIO(first.data))
    assert image.format == "PNG" and image.size == (256, 256)
    svg_fill = _fill(client.get("/masthead/ada-quill/avatar.svg").data)
    assert "#{:02x}{:02x}{:02x}".format(*image.convert("RGB").getpixel((2, 2))) == svg_fill
    assert (255, 255, 255) in {colour for _, colour in image.convert("RGB").getcolors(65536)}  # the lettering
    stored = sorted(p.name for p in (Path(app.instance_path) / "media").glob("*.png"))
    assert f"{first.headers['ETag'].strip(chr(34))}.png" in stored
    again = client.get("/masthead/ada-quill/avatar.png")
    assert again.data == first.data
    assert sorted(p.name for p in (Path(app.instance_path) / "media").glob("*.png")) == stored  # not drawn again
    assert client.get("/masthead/ada-quill/avatar.png", headers={"If-None-Match": first.headers["ETag"]}
                      ).status_code == 304
    other = client.get("/masthead/rex-ledger/avatar.png")
    assert other.status_code == 200 and other.data != first.data
    assert client.get("/masthead/nobody/avatar.png").status_code == 404


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
