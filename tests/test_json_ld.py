"""JSON-LD where search engines look: the front, section pages and stories name the publisher
with its logo; the front offers the paper's search; a section lists its pieces in order."""
from __future__ import annotations

import io
import json

from lxml import html
from PIL import Image


def json_ld(client, path: str) -> dict:
    response = client.get(path)
    assert response.status_code == 200, path
    [script] = html.fromstring(response.data).xpath("//script[@type='application/ld+json']")
    return json.loads(script.text)


def assert_publisher_with_logo(client, publisher: dict) -> None:
    assert publisher["@type"] == "NewsMediaOrganization" and publisher["name"] == "The Demo Times"
    logo = publisher["logo"]
    with client.get(logo["url"].removeprefix("http://localhost")) as served:
        assert served.status_code == 200 and served.mimetype == "image/png"
        assert Image.open(io.BytesIO(served.data)).size == (logo["width"], logo["height"]) == (512, 512)


def test_the_front_names_the_publisher_and_offers_the_papers_search(client, newsroom):
    graph = {node["@type"]: node for node in json_ld(client, "/")["@graph"]}
    assert_publisher_with_logo(client, graph["NewsMediaOrganization"])
    site = graph["WebSite"]
    assert site["url"] == "http://localhost/" and site["publisher"] == {"@id": graph["NewsMediaOrganization"]["@id"]}
    template = site["potentialAction"]["target"]["urlTemplate"]
    assert template == "http://localhost/search?q={search_term_string}"
    found = client.get(template.removeprefix("http://localhost").replace("{search_term_string}", "rates"))
    assert found.status_code == 200 and b"Rates rise again" in found.data


def test_a_section_page_lists_its_pieces_in_the_order_shown(client, newsroom):
    page = json_ld(client, "/sections/world")
    assert page["@type"] == "CollectionPage" and page["url"] == "http://localhost/sections/world"
    assert_publisher_with_logo(client, page["publisher"])
    items = page["mainEntity"]["itemListElement"]
    shown = html.fromstring(client.get("/sections/world").data).xpath("//main//h2/a/@href | //main//h3/a/@href")
    assert [item["url"].removeprefix("http://localhost") for item in items] == [
        href for href in shown if href.startswith("/stories/")]
    assert [item["position"] for item in items] == list(range(1, len(items) + 1)) and items


def test_a_story_names_its_publisher_with_the_logo(client, newsroom):
    article = json_ld(client, "/stories/rates-rise-again-as-the-central-bank-tightens")
    assert article["@type"] == "NewsArticle"
    assert_publisher_with_logo(client, article["publisher"])
    assert article["author"][0]["affiliation"]["@id"] == article["publisher"]["@id"]
