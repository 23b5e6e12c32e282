"""Conventions outside tools rely on, read back the way those tools read them: robots.txt through
Python's urllib.robotparser, WebVTT cue text escaped, `<video crossorigin>` when captions are
linked, JSON-LD and Open Graph on persona, masthead and day pages, and a VideoObject only
where there is a video."""
from __future__ import annotations

import json
from datetime import date
from urllib.robotparser import RobotFileParser

from lxml import html

from services.rendering.art import captions_vtt
from tests.fixtures.newsroom import T0


def _head(client, path: str):
    response = client.get(path)
    assert response.status_code == 200, path
    tree = html.fromstring(response.data)
    [script] = tree.xpath("//script[@type='application/ld+json']")
    og = {m.get("property"): m.get("content") for m in tree.xpath("//meta[starts-with(@property, 'og:')]")}
    return json.loads(script.text), og, tree


def test_robotparser_reads_robots_txt_as_meant(client, desk):
    desk.paper("demo")
    parser = RobotFileParser()
    parser.parse(client.get("/robots.txt").get_data(as_text=True).splitlines())
    for path in ("/subscribe/confirm?token=x", "/subscribe/unsubscribe", "/subscribe/preferences?token=y"):
        assert not parser.can_fetch("Googlebot", f"http://localhost{path}"), path
    for path in ("/", "/stories/some-story", "/sections/world", "/rss.xml", "/sitemap.xml"):
        assert parser.can_fetch("Googlebot", f"http://localhost{path}"), path
    assert parser.site_maps() == ["http://localhost/sitemap.xml", "http://localhost/sitemap-news.xml"]


def test_webvtt_cue_text_is_escaped():
    vtt = captions_vtt(["Rates & prices <rise> --> again"]).decode()
    cue = vtt.split("\n")[4]
    assert cue == "Rates &amp; prices &lt;rise&gt; \u2192 again"


def test_persona_masthead_and_day_pages_carry_json_ld_and_open_graph(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again", byline="Ada Quill")
    slug = desk.persona(paper, "Ada Quill").slug
    ld, og, _ = _head(client, f"/masthead/{slug}")
    assert ld["@type"] == "ProfilePage" and ld["mainEntity"]["@type"] == "Person"
    assert ld["mainEntity"]["name"] == "Ada Quill" and "AI persona" in ld["mainEntity"]["description"]
    assert ld["hasPart"]["itemListElement"][0]["url"] == f"http://localhost/stories/{piece.slug}"
    assert og["og:type"] == "profile" and og["og:url"] == f"http://localhost/masthead/{slug}"
    assert "AI persona" in og["og:description"]

    ld, og, _ = _head(client, "/masthead")
    assert ld["@type"] == "CollectionPage"
    entries = {e["item"]["url"]: e["item"] for e in ld["mainEntity"]["itemListElement"]}
    assert f"http://localhost/masthead/{slug}" in entries
    assert all("AI persona" in person["description"] for person in entries.values())
    assert og["og:url"] == "http://localhost/masthead"

    day = T0.date().isoformat()
    ld, og, _ = _head(client, f"/days/{day}")
    assert ld["@type"] == "CollectionPage" and ld["datePublished"] == day
    assert [i["url"] for i in ld["mainEntity"]["itemListElement"]] == [f"http://localhost/stories/{piece.slug}"]
    assert og["og:url"] == f"http://localhost/days/{day}" and og["og:type"] == "website"


def test_a_video_object_only_with_a_video_and_crossorigin_when_captions_are_linked(client, desk):
    paper = desk.paper("demo")
    desk.edition(paper, date(2026, 11, 1))
    with_captions = desk.edition(paper, date(2026, 11, 2))
    poster_only = desk.edition(paper, date(2026, 11, 3))
    from extensions import db

    with_captions.captions_url = "https://cdn.example.com/demo/2026-11-02.vtt"
    poster_only.video_url = None
    db.session.commit()

    ld, og, tree = _head(client, "/cast/2026-11-01")
    assert ld["@type"] == "VideoObject" and ld["contentUrl"].endswith(".mp4")
    [video] = tree.xpath("//video")
    assert video.get("crossorigin") is None  # no track: nothing needs CORS mode

    ld, og, tree = _head(client, "/cast/2026-11-02")
    [video] = tree.xpath("//video")
    assert video.get("crossorigin") == "anonymous"
    assert tree.xpath("//track/@src") == ["https://cdn.example.com/demo/2026-11-02.vtt"]
    player = html.fromstring(client.get("/cast/2026-11-02?embed=1").data)
    assert player.xpath("//video/@crossorigin") == ["anonymous"]

    ld, og, tree = _head(client, "/cast/2026-11-03")
    assert ld["@type"] == "CreativeWork" and "contentUrl" not in ld and tree.xpath("//video") == []
    assert og["og:type"] == "website"


def test_openapi_examples_come_from_the_demo_world_not_placeholders(client, desk):
    """No example value in the document is just its field's name (`"home": "home"`); section
    names and the nameplate are the demo paper's."""
    desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    placeholders = set()

    def walk(value, name=None):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, key)
        elif isinstance(value, list):
            for item in value:
                walk(item, name)
        elif isinstance(value, str) and name and value.replace(" ", "_") == name:
            placeholders.add(name)

    examples = []
    for item in doc["paths"].values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            bodies = [operation.get("requestBody", {}), *operation.get("responses", {}).values()]
            examples += [media["example"] for body in bodies for media in body.get("content", {}).values()
                         if "example" in media]
    for example in examples:
        walk(example)
    assert placeholders == set()
    text = json.dumps(examples)
    assert "Economy" not in text and "The Demo Desk" in text
    assert "https://demo.example.org/api/v1/stories" in text


def test_a_body_over_64_kib_is_a_documented_413(client, desk):
    """A body past the 64 KiB limit (a transcript longer than the field allows, too) is the 413
    the document lists for that operation, and states on its body and in the field: the
    longest transcript the field allows fits the limit (tests/test_openapi_served.py)."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    doc = client.get("/api/v1/openapi.json").get_json()
    operation = doc["paths"]["/api/v1/cast"]["post"]
    assert "413" in operation["responses"] and "64 KiB" in operation["responses"]["413"]["description"]
    schema = doc["components"]["schemas"]["CastIn"]["properties"]["transcript"]
    assert schema["maxLength"] == 60_000 and "413" in schema["description"]
    body_doc = operation["requestBody"]
    assert body_doc["x-max-body-bytes"] == 64 * 1024 and "413" in body_doc["description"]
    body = {"day": "2026-11-20", "title": "The cast", "video_url": "https://cdn.example.com/c.mp4",
            "poster_url": "https://cdn.example.com/c.jpg", "transcript": "Good evening. " * 5000}
    answer = client.post("/api/v1/cast", json=body, headers={"Authorization": f"Bearer {admin}"})
    assert answer.status_code == 413 and answer.mimetype == "application/problem+json"
    assert client.get("/api/v1/cast").get_json()["editions"] == []
