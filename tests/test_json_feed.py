"""`/feed.json`, JSON Feed 1.1 through HTTP: valid against the format's JSON Schema (written from
the specification in tests/data, as no package ships one; feedparser 6 reads no JSON Feed), the
RSS feed's items with their full content, and each piece's content hash, revision and AI disclosure in the
`_paperdesk` extension; discovered from every HTML page and from the paper's indexes."""
from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import jsonschema
import lxml.html
from lxml import etree

from services.rendering.prose import DIGITAL_SOURCE_TYPE
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements
from tests.routes import PaperData, rules, urls_for

SCHEMA = json.loads((Path(__file__).parent / "data" / "jsonfeed-1.1.schema.json").read_text())
CONTENT = "{http://purl.org/rss/1.0/modules/content/}encoded"


def validate(feed: dict) -> None:
    """Raise unless `feed` is JSON Feed 1.1 (formats checked: RFC 3339 dates)."""
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(feed), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def _newsroom(desk):
    """Three pieces on air over three days (one with footnotes and no dek), and a draft."""
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", section="Business", facts=2, dek="",
               prose="Rates rose[^1].\n\nThe *bank* said so[^2].", on_air_at=T0)
    desk.piece(paper, "Comet seen", section="Science", byline="Rex Ledger",
               on_air_at=T0 + timedelta(days=1), image="https://img.example/comet.jpg")
    desk.piece(paper, "Talks resume", section="World", on_air_at=T0 + timedelta(days=2))
    desk.piece(paper, "Secret draft", on_air_at=None)
    return paper


def test_the_feed_is_valid_json_feed_1_1_that_feedparser_reads(client, desk):
    _newsroom(desk)
    response = client.get("/feed.json")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/feed+json"
    feed = json.loads(response.data)
    validate(feed)
    assert list(feed)[0] == "version" and feed["version"] == "https://jsonfeed.org/version/1.1"
    assert feed["title"] == "The Demo Times"
    assert feed["home_page_url"] == "http://localhost/"
    assert feed["feed_url"] == "http://localhost/feed.json"
    assert feed["description"] == "All the news that fits"
    assert feed["language"] == "en"
    assert "declared AI persona" in feed["user_comment"]
    for image in ("icon", "favicon"):
        fetched = client.get(feed[image].removeprefix("http://localhost"))
        assert fetched.status_code == 200 and fetched.mimetype == "image/png", image
        fetched.close()
    assert feed["_paperdesk"]["digital_source_type"] == DIGITAL_SOURCE_TYPE
    assert client.get(feed["_paperdesk"]["receipt_keys_url"]).status_code == 200

    assert [item["title"] for item in feed["items"]] == ["Talks resume", "Comet seen", "Rates rise again"]


def test_items_are_the_rss_items_with_full_content_newest_first(client, desk):
    _newsroom(desk)
    feed = client.get("/feed.json").get_json(force=True)
    rss = etree.fromstring(client.get("/rss.xml").data)
    rss_items = rss.findall("channel/item")
    assert [item["title"] for item in feed["items"]] == [i.findtext("title") for i in rss_items]
    assert "Secret draft" not in json.dumps(feed)
    published = [item["date_published"] for item in feed["items"]]
    assert published == sorted(published, reverse=True)
    for item, rss_item in zip(feed["items"], rss_items, strict=True):
        assert item["id"] == item["url"] == rss_item.findtext("guid")
        assert item["content_html"] == rss_item.findtext(CONTENT)
        assert item["date_modified"] >= item["date_published"]
    rates = feed["items"][2]
    story = "http://localhost/stories/rates-rise-again"
    assert rates["url"] == story and rates["date_published"] == "2026-11-01T08:00:00Z"
    assert "summary" not in rates  # no dek, no summary
    html = rates["content_html"]
    assert html.startswith('<p class="byline">By Ada Quill (AI persona). <em>Ada Quill is an AI persona')
    assert f'href="{story}#fact-1"' in html and f'href="{story}#fact-2"' in html
    assert "<em>bank</em>" in html and 'id="fact-2"' in html and "Statistics Office" in html
    assert rates["tags"] == ["Business"]
    # No art: the share card.
    assert re.fullmatch(r"http://localhost/cards/rates-rise-again/1-[0-9a-f]{8}\.png", rates["image"])
    comet = feed["items"][1]
    assert comet["summary"] == "The standfirst."
    assert comet["image"] == "https://img.example/comet.jpg"
    assert comet["authors"] == [{"name": "Rex Ledger (AI persona)",
                                 "url": "http://localhost/masthead/rex-ledger",
                                 "avatar": "http://localhost/masthead/rex-ledger/avatar.svg"}]
    assert client.get("/masthead/rex-ledger/avatar.svg").status_code == 200


def test_each_item_carries_its_hash_revision_and_disclosure_in_the_extension(client, desk):
    paper = _newsroom(desk)
    feed = client.get("/feed.json").get_json(force=True)
    read = auth(desk.key(paper, "read"))
    for item in feed["items"]:
        extension = item["_paperdesk"]
        assert extension["digital_source_type"] == DIGITAL_SOURCE_TYPE
        assert extension["declared_ai"] is True
        byline = item["authors"][0]["name"].removesuffix(" (AI persona)")
        assert extension["disclosure"] == (f"{byline} is an AI persona of The Demo Times's masthead, declared "
                                           "as such; this piece was written by an AI system, not by a human "
                                           "reporter.")
        story = client.get(extension["story_url"]).get_json()
        assert story["url"] == item["url"] and story["digital_source_type"] == DIGITAL_SOURCE_TYPE
        assert (extension["content_hash"], extension["rev"]) == (story["content_hash"], story["rev"])
        assert extension["content_hash"].startswith("sha256:")
        assert client.get(extension["proof_url"]).status_code == 401  # the receipt needs a desk key
        proof = client.get(extension["proof_url"], headers=read).get_json()
        assert proof["content_hash"] == extension["content_hash"] and proof["receipt"]
        assert extension["about"] == "http://localhost/api"


def test_a_revision_shows_at_once_with_its_new_hash(make_app, desk):
    paper = _newsroom(desk)
    client = make_app().test_client()  # the response cache and the feeds' cache on
    first = client.get("/feed.json")
    assert client.get("/feed.json").data == first.data
    talks = json.loads(first.data)["items"][0]
    admin = auth(desk.key(paper, "admin"))
    story_id = talks["_paperdesk"]["story_url"].rsplit("/", 1)[1]
    revised = client.patch(f"/api/v1/stories/{story_id}", headers=admin, json={"dek": "Talks go on."})
    assert revised.status_code == 200, revised.get_json()
    again = client.get("/feed.json", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 200
    now = json.loads(again.data)["items"][0]
    assert now["summary"] == "Talks go on." and now["_paperdesk"]["rev"] == talks["_paperdesk"]["rev"] + 1
    assert now["_paperdesk"]["content_hash"] != talks["_paperdesk"]["content_hash"]
    validate(json.loads(again.data))


def test_a_hot_feed_comes_from_the_cache_with_no_statement(make_app, desk):
    _newsroom(desk)
    cached = make_app()
    client = cached.test_client()
    miss = client.get("/feed.json", headers={"Accept-Encoding": "gzip"})
    with statements(cached) as seen:
        hit = client.get("/feed.json", headers={"Accept-Encoding": "gzip"})
    assert seen == []
    assert hit.data == miss.data and hit.headers["Content-Encoding"] == "gzip"
    assert hit.headers["Content-Type"] == "application/feed+json"
    assert hit.headers["ETag"] == miss.headers["ETag"]


def test_an_empty_paper_has_a_valid_feed_without_items(client, desk):
    desk.paper("demo", motto="", description="")
    feed = client.get("/feed.json").get_json(force=True)
    validate(feed)
    assert feed["items"] == [] and feed["description"] == "The Demo Times"


def test_the_feed_holds_the_50_newest_and_text_as_typed(client, desk):
    paper = desk.paper("demo")
    for n in range(53):
        desk.piece(paper, f"Story {n}", on_air_at=T0 + timedelta(minutes=n), facts=0)
    desk.piece(paper, 'Odd <b>"title"</b> & café \x0b', on_air_at=T0 + timedelta(days=1), facts=0)
    feed = client.get("/feed.json").get_json(force=True)
    validate(feed)
    assert len(feed["items"]) == 50
    assert feed["items"][0]["title"] == 'Odd <b>"title"</b> & café \x0b'  # JSON carries what was filed
    assert feed["items"][-1]["title"] == "Story 4"


# --- discovery -------------------------------------------------------------------------------

def _site(desk) -> PaperData:
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again")
    desk.edition(paper, T0.date())
    return PaperData.of(piece, "localhost", T0.date(), section_slug=desk.section(paper, "World").slug,
                        persona_slug=desk.persona(paper).slug)


def _discovery(response) -> list[str]:
    tree = lxml.html.fromstring(response.data)
    return tree.xpath("/html/head/link[@rel='alternate'][@type='application/feed+json']/@href")


def test_every_html_page_kind_links_the_json_feed(app, client, desk):
    data = _site(desk)
    frames = {"embed.card", "pages.edition?embed=1"}  # made for other sites' iframes, not pages
    kinds = set()
    for _, rule in rules(app, {"GET"}):
        for url in urls_for(rule, data):
            response = client.get(url)
            response.close()  # static files stream from an open file
            if response.mimetype != "text/html" or response.status_code != 200:
                continue
            kind = rule.endpoint + ("?embed=1" if "embed=1" in url else "")
            if kind in frames:
                continue
            kinds.add(rule.endpoint)
            assert _discovery(response) == ["/feed.json"], url
            assert client.get(_discovery(response)[0]).status_code == 200
    assert {"pages.home", "pages.story", "pages.section", "pages.days", "pages.day", "pages.cast",
            "pages.edition", "pages.masthead", "subscribe.landing"} <= kinds, kinds
    # The reader's error pages too (a 404 on a reader path).
    missing = client.get("/stories/no-such-story")
    assert missing.status_code == 404 and missing.mimetype == "text/html"
    assert _discovery(missing) == ["/feed.json"]


def test_the_indexes_list_the_json_feed(client, desk):
    _newsroom(desk)
    index = client.get("/api/v1").get_json()
    assert index["feeds"]["json_feed"] == "http://localhost/feed.json"
    llms = client.get("/llms.txt").get_data(as_text=True)
    assert "- [JSON Feed](http://localhost/feed.json): " in llms
    documented = client.get("/api/v1/openapi.json").get_json()["components"]["schemas"]["FeedsOut"]
    assert "json_feed" in documented["required"]


def test_art_kept_as_a_path_on_this_host_is_an_absolute_url(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Local art", image="/static/img/icon-512.png")
    feed = client.get("/feed.json", base_url="http://demo.localhost:8080").get_json(force=True)
    validate(feed)
    assert feed["items"][0]["image"] == "http://demo.localhost:8080/static/img/icon-512.png"
    assert feed["feed_url"] == "http://demo.localhost:8080/feed.json"
