"""`/embed/{id}`, `/oembed` and the framing and security headers."""
from __future__ import annotations

import re
from urllib.parse import quote
from xml.etree import ElementTree

import lxml.html
import pytest

from services.rendering.prose import DIGITAL_SOURCE_TYPE

EMBED_CSP = ("default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; "
             "frame-ancestors *; base-uri 'none'; form-action 'none'")


def oembed(client, url, **params):
    query = "&".join([f"url={quote(url, safe='')}"] + [f"{k}={v}" for k, v in params.items()])
    return client.get(f"/oembed?{query}")


# --- the card ------------------------------------------------------------------------------

def test_card_shows_headline_picture_byline_disclosure_and_nameplate(client, desk):
    paper = desk.paper("demo", nameplate="The Demo Times")
    piece = desk.piece(paper, "Rates rise again", byline="Rex Ledger",
                       image="https://cdn.example.com/art/rates.jpg")
    for ref in (piece.slug, str(piece.id)):
        response = client.get(f"/embed/{ref}")
        assert response.status_code == 200 and response.mimetype == "text/html"
        page = lxml.html.fromstring(response.data)
        text = page.text_content()
        assert "Rates rise again" in page.findtext(".//h1/a/span")
        assert "The Demo Times" in text
        assert "By Rex Ledger" in text and "AI persona" in text
        assert "Rex Ledger is an AI persona" in text  # schemas.story.disclosure
        assert [img.get("src") for img in page.iter("img")] == ["https://cdn.example.com/art/rates.jpg"]


def test_every_part_of_the_card_opens_the_story_outside_the_frame(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again")
    page = lxml.html.fromstring(client.get(f"/embed/{piece.id}").data)
    links = list(page.iter("a"))
    assert len(links) >= 4  # picture, nameplate, headline, byline and disclosure
    for link in links:
        assert link.get("href") == "http://localhost/stories/rates-rise-again"
        assert link.get("target") == "_blank"
        assert "noopener" in link.get("rel").split()


def test_card_sets_no_cookie_runs_no_script_and_requests_nothing_elsewhere(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "No art here")  # no image: the share card on this host
    response = client.get(f"/embed/{piece.slug}")
    assert "Set-Cookie" not in response.headers
    body = response.get_data(as_text=True)
    assert "<script" not in body.lower()
    page = lxml.html.fromstring(response.data)
    assert not page.xpath("//link[@rel='stylesheet'] | //iframe | //object | //form | //@style")
    sources = page.xpath("//@src | //link[not(@rel='canonical')]/@href")
    assert len(sources) == 1 and re.fullmatch(r"http://localhost/cards/no-art-here/1-[0-9a-f]{8}\.png", sources[0])


def test_card_headers_allow_any_frame_and_lock_everything_else(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper)
    response = client.get(f"/embed/{piece.slug}")
    assert response.headers["Content-Security-Policy"] == EMBED_CSP
    assert "X-Frame-Options" not in response.headers
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["ETag"]  # a public GET: web/caching.py still applies
    again = client.get(f"/embed/{piece.slug}", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304
    # A browser merges a 304's headers into the stored card's: none may forbid framing.
    assert "X-Frame-Options" not in again.headers
    assert "Content-Security-Policy" not in again.headers


def test_plain_http_art_falls_back_to_the_share_card(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Mixed content", image="http://cdn.example.com/a.jpg")
    page = lxml.html.fromstring(client.get(f"/embed/{piece.slug}").data)
    [source] = page.xpath("//img/@src")
    assert re.fullmatch(r"http://localhost/cards/mixed-content/1-[0-9a-f]{8}\.png", source)


@pytest.mark.parametrize("ref", ["nope", "999999", "secret-draft"])
def test_missing_or_draft_card_is_a_frameable_html_404(client, desk, ref):
    paper = desk.paper("demo")
    desk.piece(paper, "Secret draft", on_air_at=None)
    response = client.get(f"/embed/{ref}")
    assert response.status_code == 404 and response.mimetype == "text/html"
    assert "Secret draft" not in response.get_data(as_text=True)
    assert response.headers["Content-Security-Policy"] == EMBED_CSP
    assert "Set-Cookie" not in response.headers


def test_card_on_an_unknown_host_is_a_404_page(client, desk):
    desk.paper("demo")
    response = client.get("/embed/anything", base_url="http://nowhere.localhost")
    assert response.status_code == 404 and response.mimetype == "text/html"


# --- framing and security headers elsewhere ------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/stories/rates-rise-again", "/masthead", "/api/v1",
                                  "/api/v1/stories", "/oembed?url=x", "/stories/nope",
                                  "/static/css/paper.css"])
def test_framing_is_forbidden_everywhere_else(client, desk, path):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    response = client.get(path)
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
    assert "Strict-Transport-Security" not in response.headers  # plain http
    response.close()  # a static file answer holds its file open until closed


def test_pages_get_a_strict_policy(client, desk):
    desk.paper("demo")
    policy = client.get("/").headers["Content-Security-Policy"]
    for directive in ("default-src 'self'", "img-src 'self' https: data:", "style-src 'self'",
                      "script-src 'self'", "object-src 'none'", "base-uri 'self'"):
        assert directive in policy


def test_hsts_only_over_https(client, desk):
    desk.paper("demo")
    secure = client.get("/", base_url="https://localhost")
    assert secure.headers["Strict-Transport-Security"].startswith("max-age=")
    assert "Strict-Transport-Security" not in client.get("/").headers


# --- oEmbed --------------------------------------------------------------------------------

def test_oembed_record_is_rich_json_with_every_field(client, desk):
    paper = desk.paper("demo", nameplate="The Demo Times")
    piece = desk.piece(paper, "Rates rise again", byline="Rex Ledger")
    response = oembed(client, "http://localhost/stories/rates-rise-again")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    record = response.get_json()
    assert record["type"] == "rich" and record["version"] == "1.0"
    assert record["title"] == "Rates rise again"
    assert record["author_name"] == "Rex Ledger"
    assert record["author_url"] == "http://localhost/masthead/rex-ledger"
    assert record["provider_name"] == "The Demo Times"
    assert record["provider_url"] == "http://localhost/"
    assert record["width"] == 480 and 200 < record["height"] < 1000
    assert re.fullmatch(r"http://localhost/cards/rates-rise-again/1-[0-9a-f]{8}\.png", record["thumbnail_url"])
    assert (record["thumbnail_width"], record["thumbnail_height"]) == (1200, 630)
    assert isinstance(record["cache_age"], int) and record["cache_age"] > 0
    # Extra members (oEmbed allows them): the byline's disclosure, for people and for machines.
    assert record["disclosure"].startswith("Rex Ledger is an AI persona of The Demo Times")
    assert record["digital_source_type"] == (
        "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia") == DIGITAL_SOURCE_TYPE
    frame = lxml.html.fragment_fromstring(record["html"])
    assert frame.tag == "iframe"
    assert frame.get("src") == f"http://localhost/embed/{piece.slug}"
    assert (frame.get("width"), frame.get("height")) == ("480", str(record["height"]))
    assert frame.get("frameborder") == "0" and frame.get("loading") == "lazy"
    assert frame.get("title") == "Rates rise again"
    assert set(frame.get("sandbox").split()) == {
        "allow-popups", "allow-popups-to-escape-sandbox", "allow-top-navigation-by-user-activation"}
    # The snippet's address is a working, frameable card.
    card = client.get(frame.get("src"))
    assert card.status_code == 200 and "frame-ancestors *" in card.headers["Content-Security-Policy"]


@pytest.mark.parametrize("maxwidth", [220, 333, 640])
def test_maxwidth_is_honoured_in_width_and_in_the_iframe(client, desk, maxwidth):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    record = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=maxwidth).get_json()
    assert record["width"] == maxwidth
    frame = lxml.html.fragment_fromstring(record["html"])
    assert frame.get("width") == str(maxwidth)


def test_maxheight_caps_the_height(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    natural = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=640).get_json()
    capped = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=640,
                    maxheight=250).get_json()
    roomy = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=640,
                   maxheight=5000).get_json()
    assert natural["height"] > 250
    assert capped["height"] == 250 and 'height="250"' in capped["html"]
    assert roomy["height"] == natural["height"]


@pytest.mark.parametrize("maxwidth", [641, 800, 1920, 10**30])
def test_a_maxwidth_above_640_is_an_upper_bound_the_640_card_meets(client, desk, maxwidth):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    widest = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=640).get_json()
    response = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=maxwidth)
    assert response.status_code == 200
    record = response.get_json()
    assert record["width"] == 640 and record["height"] == widest["height"]
    frame = lxml.html.fragment_fromstring(record["html"])
    assert (frame.get("width"), frame.get("height")) == ("640", str(widest["height"]))
    capped = oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=maxwidth,
                    maxheight=250).get_json()
    assert (capped["width"], capped["height"]) == (640, 250)


def test_the_height_follows_the_width(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    heights = [oembed(client, "http://localhost/stories/rates-rise-again", maxwidth=w).get_json()["height"]
               for w in (240, 480, 640)]
    assert heights == sorted(heights) and len(set(heights)) == 3  # the picture keeps its 1200:630


@pytest.mark.parametrize("format", ["yaml", "JSON", "html", "json%20", "x" * 300])
@pytest.mark.parametrize("url", ["http://localhost/stories/rates-rise-again", "http://localhost/stories/nope"])
def test_an_unsupported_format_is_501_not_implemented(client, desk, format, url):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    response = oembed(client, url, format=format, maxwidth=300)
    assert response.status_code == 501
    assert response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert problem["status"] == 501 and "json and xml" in problem["detail"]
    assert response.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("params", [{"maxwidth": 0}, {"maxwidth": -5}, {"maxwidth": "abc"},
                                    {"maxwidth": "4.5"}, {"maxheight": 0}, {"maxheight": "x"}])
def test_out_of_range_or_malformed_values_are_400_problems(client, desk, params):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    response = oembed(client, "http://localhost/stories/rates-rise-again", **params)
    assert response.status_code == 400
    assert response.mimetype == "application/problem+json"
    assert set(response.get_json()["errors"]) == set(params)


@pytest.mark.parametrize("maxwidth, maxheight", [(100, None), (219, None), (1, 1), (219, 199), (300, 50)])
def test_a_size_below_the_smallest_card_gets_the_smallest_card(client, desk, maxwidth, maxheight):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    natural = oembed(client, "http://localhost/stories/rates-rise-again",
                     maxwidth=max(220, maxwidth)).get_json()["height"]
    params = {"maxwidth": maxwidth} | ({"maxheight": maxheight} if maxheight is not None else {})
    response = oembed(client, "http://localhost/stories/rates-rise-again", **params)
    assert response.status_code == 200
    record = response.get_json()
    assert record["width"] == max(220, maxwidth)
    assert record["height"] == (natural if maxheight is None else min(natural, max(200, maxheight)))
    frame = re.search(r'width="(\d+)" height="(\d+)"', record["html"])
    assert (int(frame[1]), int(frame[2])) == (record["width"], record["height"])


def test_an_empty_format_is_json(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    response = client.get("/oembed?url=http://localhost/stories/rates-rise-again&format=")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.get_json()["type"] == "rich"


def test_author_url_is_the_persona_page(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", byline="Ada Quill")
    record = oembed(client, "http://localhost/stories/rates-rise-again").get_json()
    assert record["author_url"] == f"http://localhost/masthead/{desk.persona(paper, 'Ada Quill').slug}"
    assert client.get(record["author_url"]).status_code == 200


def test_url_is_required(client, desk):
    desk.paper("demo")
    response = client.get("/oembed")
    assert response.status_code == 400 and "url" in response.get_json()["errors"]


@pytest.mark.parametrize("url", [
    "http://elsewhere.example/stories/rates-rise-again",
    "http://other.localhost/stories/rates-rise-again",
    "http://localhost:8080/stories/rates-rise-again",
    "ftp://localhost/stories/rates-rise-again",
    "http://localhost/sections/world",
    "http://localhost/stories/rates-rise-again/extra",
    "http://localhost/stories/",
    "http://localhost/stories/secret-draft",
    "http://localhost/stories/nope",
    "http://[::1/stories/rates-rise-again",
    "not a url",
])
def test_anything_but_a_story_page_on_this_paper_is_a_404_problem(client, desk, url):
    paper = desk.paper("demo")
    desk.paper("other")
    desk.piece(paper, "Rates rise again")
    desk.piece(paper, "Secret draft", on_air_at=None)
    response = oembed(client, url)
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"


@pytest.mark.parametrize("url", [
    "http://localhost/stories/rates-rise-again",
    "https://localhost/stories/rates-rise-again",
    "HTTP://LOCALHOST/stories/rates-rise-again/",
    "http://localhost/stories/rates-rise-again?utm_source=x#top",
])
def test_story_addresses_in_their_usual_spellings_resolve(client, desk, url):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    assert oembed(client, url).get_json()["title"] == "Rates rise again"


def test_story_address_by_id_and_on_another_papers_host(client, desk):
    desk.paper("demo")
    other = desk.paper("other", nameplate="The Other Paper")
    piece = desk.piece(other, "Elsewhere news")
    response = client.get(f"/oembed?url=http://other.localhost/stories/{piece.id}",
                          base_url="http://other.localhost")
    record = response.get_json()
    assert record["provider_name"] == "The Other Paper"
    assert f'src="http://other.localhost/embed/{piece.slug}"' in record["html"]
    # The same address asked of the demo paper's host is foreign there.
    assert client.get(f"/oembed?url=http://other.localhost/stories/{piece.id}").status_code == 404


def test_xml_format_carries_the_same_record(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates <rise> & again")
    url = "http://localhost/stories/rates-rise-again"
    response = oembed(client, url, format="xml", maxwidth=300)
    assert response.status_code == 200 and response.mimetype == "text/xml"
    root = ElementTree.fromstring(response.data)
    assert root.tag == "oembed"
    as_json = oembed(client, url, format="json", maxwidth=300).get_json()
    assert {child.tag: child.text for child in root} == {k: str(v) for k, v in as_json.items()}
    assert root.findtext("title") == "Rates <rise> & again"
    assert root.findtext("digital_source_type") == DIGITAL_SOURCE_TYPE
    assert oembed(client, url, format="yaml").status_code == 501


def test_headline_is_escaped_in_the_snippet(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, 'Quotes "and" <tags> & more')
    record = oembed(client, "http://localhost/stories/quotes-and-tags-more").get_json()
    frame = lxml.html.fragment_fromstring(record["html"])
    assert frame.get("title") == 'Quotes "and" <tags> & more'
    assert "<tags>" not in record["html"]


# --- the OpenAPI document --------------------------------------------------------------------

def test_embed_and_oembed_are_documented(client, desk):
    desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    card = doc["paths"]["/embed/{id}"]["get"]
    assert set(card["responses"]["200"]["content"]) == {"text/html"}
    assert "text/html" in card["responses"]["404"]["content"]
    record = doc["paths"]["/oembed"]["get"]
    params = {p["name"]: p for p in record["parameters"]}
    assert params["maxwidth"]["schema"]["minimum"] == 1  # below 220: the 220 card
    assert "maximum" not in params["maxwidth"]["schema"]  # an upper bound, clamped to 640
    assert "640" in params["maxwidth"]["description"]
    assert "enum" not in params["format"]["schema"] and "501" in params["format"]["description"]
    assert params["url"]["required"] is True
    assert {"200", "400", "404", "501"} <= set(record["responses"])
    assert set(record["responses"]["501"]["content"]) == {"application/problem+json"}
    assert set(record["responses"]["200"]["content"]) == {"application/json", "text/xml"}
    out = record["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert out.endswith("/OEmbedOut")
    fields = doc["components"]["schemas"]["OEmbedOut"]["properties"]
    assert fields["digital_source_type"]["example"] == DIGITAL_SOURCE_TYPE
    assert "disclosure" in doc["components"]["schemas"]["OEmbedOut"]["required"]


def test_a_card_and_its_oembed_read_one_row_without_prose_or_facts(client, desk):
    """The card and the oEmbed record load only what they show (services/reading/stories.py
    `find_card`): one statement, no prose, no cited facts, whatever the piece's facts."""
    from tests.fixtures.statements import statements

    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again")
    for url in (f"/embed/{piece.id}", f"/embed/{piece.slug}",
                f"/oembed?url=http://localhost/stories/{piece.slug}"):
        client.get(url)  # the paper's row is read once per version
        with statements() as seen:
            answer = client.get(url)
        assert answer.status_code == 200, (url, answer.get_data(as_text=True))
        pieces = [s for s in seen if re.search(r"\bFROM pieces\b", s)]
        assert len(pieces) == 1, (url, seen)
        assert "prose" not in pieces[0] and "cited_facts" not in pieces[0], pieces[0]
