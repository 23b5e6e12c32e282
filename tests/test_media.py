"""`/masthead/{slug}/avatar.svg` and `/cards/{slug}.png` through HTTP."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path

from PIL import Image

from extensions import db
from models import Persona
from services.newsroom import filing
from tests.factories import T0

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


def test_share_card_is_a_cached_1200x630_png(app, client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again as the bank moves to cool prices across the land")
    first = client.get("/cards/rates-rise-again-as-the-bank-moves-to-cool-prices-across-the-land.png")
    assert first.status_code == 200
    assert first.mimetype == "image/png"
    assert "max-age" in first.headers["Cache-Control"] and first.headers["ETag"]
    image = Image.open(io.BytesIO(first.data))
    assert image.format == "PNG" and image.size == (1200, 630)

    digest = piece.content_hash.removeprefix("sha256:")[:32]
    cached = list((Path(app.instance_path) / "cards").glob(f"{piece.id}-{digest}-*.png"))
    assert len(cached) == 1 and cached[0].read_bytes() == first.data

    again = client.get(f"/cards/{piece.slug}.png")
    assert again.data == first.data
    not_modified = client.get(f"/cards/{piece.slug}.png", headers={"If-None-Match": first.headers["ETag"]})
    assert not_modified.status_code == 304


def test_share_card_is_deterministic_across_renders(app, client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "A headline " + "that goes on " * 21)
    first = client.get(f"/cards/{piece.slug}.png")
    assert first.status_code == 200
    for path in (Path(app.instance_path) / "cards").glob(f"{piece.id}-*.png"):
        path.unlink()
    assert client.get(f"/cards/{piece.slug}.png").data == first.data


def test_revision_gets_a_new_card(app, client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "First words")
    before = client.get(f"/cards/{piece.slug}.png")
    draft = filing.Draft(headline="Second words", dek=piece.dek, prose=piece.prose,
                         section=desk.section(paper, "World"), persona=desk.persona(paper),
                         cited_facts=[{"statement": "Fact", "source": "S", "instrument": "I",
                                       "claim_key": "k"}] * 2)
    filing.revise_piece(paper, piece, draft, filer="test", now=T0 + timedelta(hours=1))
    db.session.commit()
    after = client.get(f"/cards/{piece.slug}.png")
    assert after.status_code == 200
    assert after.headers["ETag"] != before.headers["ETag"] and after.data != before.data


def test_share_card_404_for_unknown_draft_or_off_air(client, desk):
    paper = desk.paper("demo")
    draft = desk.piece(paper, "Secret draft", on_air_at=None)
    pulled = desk.piece(paper, "Pulled piece")
    filing.take_off_air(paper, pulled, T0 + timedelta(hours=1))
    db.session.commit()
    for slug in ("nothing-here", draft.slug, pulled.slug):
        response = client.get(f"/cards/{slug}.png")
        assert response.status_code == 404


def test_posts_image_points_at_a_working_card(client, desk):
    desk.piece(desk.paper("demo"), "Card please")
    post = client.get("/api/v1/posts").get_json()["posts"][0]
    response = client.get(post["image"])
    assert response.status_code == 200 and response.mimetype == "image/png"
