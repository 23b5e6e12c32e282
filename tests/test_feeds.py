"""The reader's feeds through HTTP: `/rss.xml`, `/podcast.xml`, `/front.json`, `/llms.txt`,
`/sitemap.xml` (and its split pages) and `/sitemap-news.xml`."""
from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone
from pathlib import Path

import feedparser
import llms_txt
import podcastparser
import pytest
import time_machine
from lxml import etree

from models.clock import utcnow
from services.rendering.prose import DIGITAL_SOURCE_TYPE
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements

DATA = Path(__file__).parent / "data"
SM = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
NEWS = "{http://www.google.com/schemas/sitemap-news/0.9}"
IPTC_SCHEME = "http://cv.iptc.org/newscodes/digitalsourcetype/"
FEEDS = ["/rss.xml", "/feed.json", "/podcast.xml", "/llms.txt", "/sitemap.xml", "/sitemap-1.xml",
         "/sitemap-news.xml"]


def _schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(DATA / name)))


def _locs(body: bytes) -> list[str]:
    return [el.text for el in etree.fromstring(body).iter(f"{SM}loc")]


def _newsroom(desk):
    """A paper with pieces over three days (one with a `[^N]`-laden prose), a draft and two
    video editions."""
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", section="Business", facts=2,
               prose="Rates rose[^1].\n\nThe *bank* said so[^2].", on_air_at=T0)
    desk.piece(paper, "Comet seen", section="Science", byline="Rex Ledger",
               on_air_at=T0 + timedelta(days=1))
    desk.piece(paper, "Talks resume", section="World", on_air_at=T0 + timedelta(days=2))
    desk.piece(paper, "Secret draft", on_air_at=None)
    desk.edition(paper, T0.date())
    desk.edition(paper, (T0 + timedelta(days=1)).date())
    return paper


def test_rss_parses_with_items_authors_categories_and_disclosure(client, desk):
    _newsroom(desk)
    response = client.get("/rss.xml")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/rss+xml; charset=utf-8"
    feed = feedparser.parse(response.data)
    assert feed.bozo == 0, feed.get("bozo_exception")
    assert feed.version == "rss20"
    assert feed.feed.title == "The Demo Times"
    assert feed.feed.link == "http://localhost/"
    assert feed.feed.language == "en"
    assert [e.title for e in feed.entries] == ["Talks resume", "Comet seen", "Rates rise again"]
    assert "Secret draft" not in response.get_data(as_text=True)
    for entry in feed.entries:
        assert entry.link.startswith("http://localhost/stories/")
        assert entry.id == entry.link
        assert entry.author.endswith("(AI persona)")
        assert entry.tags[0].term in {"World", "Business", "Science"}
        assert entry.summary == "The standfirst."
        assert entry.published_parsed is not None
    rates = feed.entries[2]
    assert rates.author == "Ada Quill (AI persona)" and rates.tags[0].term == "Business"
    html = rates.content[0].value
    assert "is an AI persona of The Demo Times" in html
    story = "http://localhost/stories/rates-rise-again"
    assert f'href="{story}#fact-1"' in html and f'href="{story}#fact-2"' in html
    assert ">[1]</a></sup>" in html and "<em>bank</em>" in html
    assert 'id="fact-2"' in html and "Fact 2" in html and "Statistics Office" in html
    assert feed.entries[1].author == "Rex Ledger (AI persona)"
    # The disclosure for machines: RSS 2.0's category in the IPTC digital source type taxonomy,
    # after the section, whose domain and term spell the IPTC code's URI.
    for entry in feed.entries:
        assert [tag.scheme for tag in entry.tags] == [None, IPTC_SCHEME]
        assert entry.tags[1].scheme + entry.tags[1].term == DIGITAL_SOURCE_TYPE
    item = etree.fromstring(response.data).find("channel/item")
    assert [(c.get("domain"), c.text) for c in item.findall("category")] == [
        (None, "World"), ("http://cv.iptc.org/newscodes/digitalsourcetype/", "trainedAlgorithmicMedia")]


def test_rss_prose_is_rendered_without_raw_html(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Odd <b>title</b> \x0b & co", facts=1,
               prose="<script>alert(1)</script> [link](javascript:alert(1)) fact[^1]")
    response = client.get("/rss.xml")
    feed = feedparser.parse(response.data)
    assert feed.bozo == 0
    assert feed.entries[0].title == "Odd <b>title</b> & co"
    html = etree.fromstring(response.data).findtext(
        "channel/item/{http://purl.org/rss/1.0/modules/content/}encoded")
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert 'href="javascript:' not in html
    assert 'href="http://localhost/stories/odd-b-title-b-co#fact-1"' in html


def test_podcast_has_an_enclosure_and_itunes_tags_per_edition(client, desk):
    _newsroom(desk)
    response = client.get("/podcast.xml")
    assert response.headers["Content-Type"] == "application/rss+xml; charset=utf-8"
    feed = feedparser.parse(response.data)
    assert feed.bozo == 0, feed.get("bozo_exception")
    itunes = "{http://www.itunes.com/dtds/podcast-1.0.dtd}"
    channel = etree.fromstring(response.data).find("channel")
    assert channel.findtext(f"{itunes}explicit") == "false"
    assert channel.findtext(f"{itunes}summary") == "A test paper."
    assert [item.findtext(f"{itunes}explicit") for item in channel.iter("item")] == ["false", "false"]
    assert feed.feed.author == "The Demo Times"
    assert feed.feed.tags[0].term == "News"
    assert feed.feed.image.href.endswith(".jpg")
    assert feed.feed.publisher_detail.email == "desk@localhost"
    assert [e.title for e in feed.entries] == ["The cast, 2026-11-02", "The cast, 2026-11-01"]
    for entry in feed.entries:
        (enclosure,) = entry.enclosures
        assert enclosure.href.startswith("https://cdn.example.com/demo/")
        assert enclosure.length == "12345678" and enclosure.type == "video/mp4"
        assert entry.itunes_duration == "0:02:00"
        assert entry.summary == "The day in two minutes."
        assert entry.link.startswith("http://localhost/cast/")

    parsed = podcastparser.parse("http://localhost/podcast.xml", io.BytesIO(response.data))
    assert parsed["title"] == "The Demo Times: the cast"
    assert parsed["cover_url"].endswith(".jpg")
    assert len(parsed["episodes"]) == 2
    for episode in parsed["episodes"]:
        (enclosure,) = episode["enclosures"]
        assert enclosure["file_size"] == 12_345_678 and enclosure["mime_type"] == "video/mp4"
        assert episode["total_time"] == 120 and episode["explicit"] is False


def test_podcast_without_editions_is_an_empty_channel(client, desk):
    desk.paper("demo")
    feed = feedparser.parse(client.get("/podcast.xml").data)
    assert feed.bozo == 0 and feed.entries == []


def test_front_json_is_the_api_front_byte_for_byte(client, desk):
    _newsroom(desk)
    api = client.get("/api/v1/front", base_url="http://demo.localhost")
    page = client.get("/front.json", base_url="http://demo.localhost",
                      headers={"Origin": "https://elsewhere.example"})
    assert page.status_code == 200 and page.mimetype == "application/json"
    assert page.data == api.data
    assert [rail["section"] for rail in page.get_json()["rails"]] == ["World", "Business", "Science"]
    assert "http://demo.localhost/stories/talks-resume" in page.get_data(as_text=True)
    assert page.headers["Access-Control-Allow-Origin"] == "*"
    again = client.get("/front.json", base_url="http://demo.localhost",
                       headers={"If-None-Match": page.headers["ETag"]})
    assert again.status_code == 304


def test_llms_txt_parses_with_llms_txt(client, desk):
    paper = _newsroom(desk)
    desk.piece(paper, "Brackets [in] a headline", on_air_at=T0 + timedelta(days=3))
    response = client.get("/llms.txt")
    assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
    text = response.get_data(as_text=True)
    parsed = llms_txt.parse_llms_file(text)
    assert parsed.title == "The Demo Times"
    assert parsed.summary == "All the news that fits"
    assert "AI persona" in parsed.info and "never proves that a claim is true" in parsed.info
    assert list(parsed.sections) == ["API", "Feeds", "Latest", "Optional"]
    api = {link["title"]: link["url"] for link in parsed.sections["API"]}
    assert api["OpenAPI document"] == "http://localhost/api/v1/openapi.json"
    assert api["API guide"] == "http://localhost/api"
    feeds = {link["url"] for link in parsed.sections["Feeds"]}
    assert feeds == {"http://localhost/rss.xml", "http://localhost/feed.json", "http://localhost/podcast.xml",
                     "http://localhost/front.json", "http://localhost/sitemap.xml"}
    latest = parsed.sections["Latest"]
    assert [link["title"] for link in latest] == [
        "Brackets (in) a headline", "Talks resume", "Comet seen", "Rates rise again"]
    assert latest[1]["url"] == "http://localhost/stories/talks-resume"
    assert latest[1]["desc"] == "The standfirst."
    optional = [link["title"] for link in parsed.sections["Optional"]]
    assert optional[0] == "Masthead" and "Section: World" in optional
    assert "Secret draft" not in text


def test_sitemap_validates_and_lists_home_sections_masthead_personas_cast_days_and_pieces(client, desk):
    _newsroom(desk)
    response = client.get("/sitemap.xml", base_url="http://demo.localhost:8080")
    assert response.headers["Content-Type"] == "application/xml; charset=utf-8"
    document = etree.fromstring(response.data)
    _schema("sitemap.xsd").assertValid(document)
    base = "http://demo.localhost:8080"
    assert _locs(response.data) == [
        f"{base}/", f"{base}/sections/world", f"{base}/sections/business",
        f"{base}/sections/science", f"{base}/masthead", f"{base}/masthead/ada-quill",
        f"{base}/masthead/rex-ledger", f"{base}/cast",
        f"{base}/cast/2026-11-02", f"{base}/cast/2026-11-01", f"{base}/days/2026-11-03", f"{base}/days/2026-11-02",
        f"{base}/days/2026-11-01", f"{base}/stories/rates-rise-again",
        f"{base}/stories/comet-seen", f"{base}/stories/talks-resume"]
    lastmods = {url.findtext(f"{SM}loc"): url.findtext(f"{SM}lastmod") for url in document}
    assert lastmods[f"{base}/stories/comet-seen"] == "2026-11-02T08:00:00Z"
    assert lastmods[f"{base}/"] == "2026-11-03T08:00:00Z"


def test_sitemap_lists_the_persona_pages_that_answer(client, desk):
    paper = _newsroom(desk)
    admin = auth(desk.key(paper, "admin"), "X-Desk-Key")
    for name in ("Nova Reed", "Old Hand"):
        assert client.post("/api/v1/personas", headers=admin,
                           json={"name": name, "declared_ai": True}).status_code == 201
    # Retired: Rex Ledger keeps a page while "Comet seen" is on air; Old Hand has no piece.
    for slug in ("rex-ledger", "old-hand"):
        assert client.patch(f"/api/v1/personas/{slug}", headers=admin, json={"active": False}).status_code == 200
    document = etree.fromstring(client.get("/sitemap.xml").data)
    _schema("sitemap.xsd").assertValid(document)
    lastmods = {url.findtext(f"{SM}loc"): url.findtext(f"{SM}lastmod") for url in document}
    personas = [loc for loc in lastmods if loc.startswith("http://localhost/masthead/")]
    # The masthead's order, then the retired persona whose byline is still on air.
    assert personas == ["http://localhost/masthead/ada-quill", "http://localhost/masthead/nova-reed",
                        "http://localhost/masthead/rex-ledger"]
    assert lastmods["http://localhost/masthead/rex-ledger"] == "2026-11-02T08:00:00Z"
    assert lastmods["http://localhost/masthead/nova-reed"] is None  # no piece yet
    for loc in personas:
        assert client.get(loc.removeprefix("http://localhost")).status_code == 200


def test_a_large_sitemap_becomes_an_index_of_pages(client, desk, app, monkeypatch):
    _newsroom(desk)
    whole = _locs(client.get("/sitemap.xml").data)
    assert len(whole) == 16
    monkeypatch.setitem(app.config, "SITEMAP_MAX_URLS", 6)
    index = etree.fromstring(client.get("/sitemap.xml").data)
    _schema("siteindex.xsd").assertValid(index)
    assert index.tag == f"{SM}sitemapindex"
    pages = [el.findtext(f"{SM}loc") for el in index]
    assert pages == [f"http://localhost/sitemap-{n}.xml" for n in (1, 2, 3)]
    assert all(el.findtext(f"{SM}lastmod") for el in index)
    split = []
    for page in pages:
        body = client.get(page.removeprefix("http://localhost")).data
        _schema("sitemap.xsd").assertValid(etree.fromstring(body))
        split += _locs(body)
    assert split == whole
    missing = client.get("/sitemap-4.xml")
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"
    assert client.get("/sitemap-0.xml").status_code == 404


def test_sitemap_lastmods_follow_every_later_update_of_a_page_on_air(client, desk, app, monkeypatch):
    """Each page's lastmod is the newest `updated_at` of the pieces it shows, read at request time:
    a revision through the API moves its day's, section's, persona's and the home's lastmod (and its
    index page's), so does a row edited behind the API with SQL, and a scheduled piece's newer
    `updated_at` moves nothing (nor lists its day) until it airs."""
    from sqlalchemy import text

    from extensions import db

    paper = _newsroom(desk)
    admin = auth(desk.key(paper, "admin"), "X-Desk-Key")
    rates = client.get("/api/v1/stories/rates-rise-again").get_json()["id"]
    base = "http://localhost"

    def lastmods() -> dict:
        document = etree.fromstring(client.get("/sitemap.xml").data)
        return {url.findtext(f"{SM}loc"): url.findtext(f"{SM}lastmod") for url in document}

    def index_lastmods() -> list:
        # 13 static URLs and "Rates rise again" on page 1, the two newer pieces on page 2.
        monkeypatch.setitem(app.config, "SITEMAP_MAX_URLS", 14)
        try:
            index = etree.fromstring(client.get("/sitemap.xml").data)
        finally:
            monkeypatch.setitem(app.config, "SITEMAP_MAX_URLS", 50_000)
        return [el.findtext(f"{SM}lastmod") for el in index]

    revised_at = datetime(2026, 11, 20, 9, 30, tzinfo=timezone.utc)
    with time_machine.travel(revised_at, tick=False):
        # Scheduled for tomorrow in Business by Ada Quill, filed now: newer than all on air.
        desk.piece(paper, "Rates fall later", section="Business", on_air_at=revised_at + timedelta(days=1))
        before = lastmods()
        assert f"{base}/days/2026-11-21" not in before  # its day has nothing public yet
        assert before[f"{base}/sections/business"] == "2026-11-01T08:00:00Z"
        assert before[f"{base}/masthead/ada-quill"] == "2026-11-03T08:00:00Z"
        assert index_lastmods() == ["2026-11-03T08:00:00Z"] * 2
        # "Rates rise again": Business, Ada Quill, 2026-11-01.
        assert client.patch(f"/api/v1/stories/{rates}", headers=admin,
                            json={"dek": "Rates rose a third time."}).status_code == 200
        after = lastmods()
        for loc in ("/", "/sections/business", "/masthead/ada-quill", "/days/2026-11-01",
                    "/stories/rates-rise-again"):
            assert after[base + loc] == "2026-11-20T09:30:00Z", loc
        assert after[f"{base}/days/2026-11-02"] == "2026-11-02T08:00:00Z"  # untouched
        assert after[f"{base}/sections/science"] == "2026-11-02T08:00:00Z"
        assert index_lastmods() == ["2026-11-20T09:30:00Z", "2026-11-03T08:00:00Z"]

    # Behind the API: "Comet seen" (Science, Rex Ledger, 2026-11-02, page 2) edited with SQL.
    db.session.execute(text("UPDATE pieces SET updated_at = :at WHERE slug = 'comet-seen'"),
                       {"at": datetime(2026, 11, 21, 7, 15)})  # stored naive UTC (models/types.py)
    db.session.commit()
    with time_machine.travel(revised_at + timedelta(hours=2), tick=False):
        edited = lastmods()
        for loc in ("/", "/sections/science", "/masthead/rex-ledger", "/days/2026-11-02",
                    "/stories/comet-seen"):
            assert edited[base + loc] == "2026-11-21T07:15:00Z", loc
        assert edited[f"{base}/sections/business"] == "2026-11-20T09:30:00Z"
        assert index_lastmods() == ["2026-11-21T07:15:00Z"] * 2


def test_news_sitemap_lists_only_the_last_two_days(client, desk):
    paper = desk.paper("demo")
    now = utcnow()
    desk.piece(paper, "Fresh news", on_air_at=now - timedelta(hours=3))
    desk.piece(paper, "Yesterday", on_air_at=now - timedelta(hours=30))
    desk.piece(paper, "Old news", on_air_at=now - timedelta(days=5))
    desk.piece(paper, "Unaired", on_air_at=None)
    response = client.get("/sitemap-news.xml")
    assert response.headers["Content-Type"] == "application/xml; charset=utf-8"
    document = etree.fromstring(response.data)
    urls = list(document)
    assert [u.findtext(f"{SM}loc") for u in urls] == [
        "http://localhost/stories/fresh-news", "http://localhost/stories/yesterday"]
    news = urls[0].find(f"{NEWS}news")
    assert news.findtext(f"{NEWS}publication/{NEWS}name") == "The Demo Times"
    assert news.findtext(f"{NEWS}publication/{NEWS}language") == "en"
    assert news.findtext(f"{NEWS}title") == "Fresh news"
    assert news.findtext(f"{NEWS}publication_date").endswith("Z")
    again = client.get("/sitemap-news.xml", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304


def test_the_news_sitemaps_etag_without_scope_versions_ends_on_the_hour(client, desk):
    """With no shared state (this app's SHARED_STATE is off) the news sitemap's ETag is the
    paper's whole state and the hour: a 304 within the hour, the new window after it."""
    paper = desk.paper("demo")
    aired = datetime(2026, 11, 20, 10, 0, tzinfo=timezone.utc)
    desk.piece(paper, "Leaves on the hour", on_air_at=aired)
    with time_machine.travel(aired + timedelta(days=2, minutes=-1), tick=False):
        first = client.get("/sitemap-news.xml")
        assert first.data.count(b"<url>") == 1
        assert client.get("/sitemap-news.xml", headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
    with time_machine.travel(aired + timedelta(days=2, hours=1), tick=False):
        later = client.get("/sitemap-news.xml", headers={"If-None-Match": first.headers["ETag"]})
        assert later.status_code == 200 and later.data.count(b"<url>") == 0


@pytest.mark.parametrize("path", FEEDS)
def test_each_feed_has_an_etag_and_answers_304(client, desk, path):
    paper = _newsroom(desk)
    first = client.get(path)
    assert first.status_code == 200 and first.headers["ETag"]
    assert "max-age" in first.headers["Cache-Control"]
    again = client.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    desk.piece(paper, "Newer", on_air_at=utcnow())
    assert client.get(path, headers={"If-None-Match": first.headers["ETag"]}).status_code == 200


@pytest.mark.parametrize("path", FEEDS + ["/front.json"])
def test_a_private_papers_feeds_are_404(client, desk, path):
    secret = desk.paper("secret", public=False)
    desk.piece(secret, "Hidden")
    response = client.get(path, base_url="http://secret.localhost")
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"


@pytest.mark.parametrize("path", ["/rss.xml", "/feed.json", "/sitemap.xml", "/llms.txt", "/podcast.xml"])
def test_feeds_issue_the_same_statements_for_3_and_30_pieces(client, desk, path):
    paper = desk.paper("demo")
    for i in range(3):
        desk.piece(paper, f"Story {i}", section=["World", "Business"][i % 2],
                   on_air_at=T0 + timedelta(days=i))
        desk.edition(paper, (T0 + timedelta(days=i)).date())
    with statements() as few:
        assert client.get(path).status_code == 200
    for i in range(3, 30):
        desk.piece(paper, f"Story {i}", byline=["Ada Quill", "Rex Ledger"][i % 2],
                   section=["World", "Business", "Science"][i % 3], on_air_at=T0 + timedelta(days=i))
        desk.edition(paper, (T0 + timedelta(days=i)).date())
    with statements() as many:
        assert client.get(path).status_code == 200
    assert len(many) == len(few)


def test_every_xml_answer_drops_what_xml_forbids(client, desk):
    paper = desk.paper("demo")
    admin = auth(desk.key(paper, "admin"), "X-Desk-Key")
    filed = client.post("/api/v1/stories", headers=admin, json={
        "headline": "Rates\x01 rise\x0b again", "dek": "Ships\x0c return.", "prose": "The harbour reopened.",
        "section": "World", "byline": "Ada Quill", "cited_facts": []})
    assert filed.status_code == 201, filed.get_json()
    story = filed.get_json()
    assert client.put(f"/api/v1/stories/{story['id']}/air", headers=admin).status_code in (200, 204)
    cast = client.post("/api/v1/cast", headers=admin, json={
        "day": str(utcnow().date()), "title": "Cast\x01 one", "summary": "S\x1f",
        "video_url": "https://cdn.example.com/v.mp4", "poster_url": "https://cdn.example.com/p.jpg"})
    assert cast.status_code == 201, cast.get_json()
    oembed = client.get("/oembed", query_string={"url": story["url"], "format": "xml"})
    assert oembed.status_code == 200
    root = etree.fromstring(oembed.data)
    assert root.findtext("title") == "Rates rise again"
    for url in ("/sitemap.xml", "/sitemap-news.xml", "/podcast.xml", "/rss.xml"):
        response = client.get(url)
        assert response.status_code == 200, url
        text = etree.tostring(etree.fromstring(response.data), encoding="unicode")
        assert not any(ch in text for ch in "\x01\x0b\x0c\x1f"), url
    news = etree.fromstring(client.get("/sitemap-news.xml").data)
    assert "Rates rise again" in [t.text for t in news.iter("{*}title")]
    podcast = etree.fromstring(client.get("/podcast.xml").data)
    assert "Cast one" in [t.text for t in podcast.iter("title")]


# --- CORS -------------------------------------------------------------------------------------

CORS_FEEDS = FEEDS + ["/front.json"]


@pytest.mark.parametrize("path", CORS_FEEDS)
def test_any_origin_may_read_every_feed_and_preflight_it(make_app, desk, path):
    _newsroom(desk)
    origin = {"Origin": "https://reader.example"}
    client = make_app().test_client()  # the response cache on
    for _ in range(2):  # a miss, then a hit
        answer = client.get(path, headers=origin)
        assert answer.status_code == 200, path
        assert answer.headers["Access-Control-Allow-Origin"] == "*"
        assert "ETag" in answer.headers["Access-Control-Expose-Headers"]
    revalidated = client.get(path, headers={**origin, "If-None-Match": answer.headers["ETag"]})
    assert revalidated.status_code == 304
    assert revalidated.headers["Access-Control-Allow-Origin"] == "*"
    preflight = client.options(path, headers={**origin, "Access-Control-Request-Method": "GET",
                                              "Access-Control-Request-Headers": "If-None-Match"})
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS"  # read-only
    assert preflight.headers["Access-Control-Allow-Headers"].lower() == "if-none-match"
    assert preflight.headers["Access-Control-Max-Age"] == "600"


@pytest.mark.parametrize("path", ["/", "/stories/rates-rise-again", "/subscribe", "/sitemap.xml.bak",
                                  "/feed.json/x", "/robots.txt"])
def test_pages_and_lookalike_paths_stay_same_origin(client, desk, path):
    _newsroom(desk)
    answer = client.get(path, headers={"Origin": "https://reader.example"})
    assert "Access-Control-Allow-Origin" not in answer.headers, path
