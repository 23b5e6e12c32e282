"""`/api`, the API playground: through HTTP (the server-rendered page that works without JavaScript)
and in a real browser (static/js/playground.js): pick a story, change the width, copy the snippet,
paste it into a page of another origin and see the card, with no cookie and no request to any other
host; try each public endpoint.
"""
from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, quote, urlsplit
from urllib.request import urlopen

import lxml.html
import pytest

from tests.fixtures.assets import unhashed
from tests.fixtures.browser import WIDTHS, hosts, screenshot, watch
from tests.fixtures.newsroom import LEAD

THIRD = "World story number 3 with a headline of ordinary length"
THIRD_SLUG = "world-story-number-3-with-a-headline-of-ordinary-length"


def tree_of(response):
    assert response.status_code == 200 and response.mimetype == "text/html"
    return lxml.html.fromstring(response.data)


def oembed(client, slug: str, **params) -> dict:
    answer = client.get("/oembed", query_string={"url": f"http://localhost/stories/{slug}", **params})
    assert answer.status_code == 200
    return answer.get_json()


def story_id(client, slug: str) -> str:
    return client.get(f"/api/v1/stories/{slug}").get_json()["id"]


# --- the page without JavaScript --------------------------------------------------------------

def test_the_page_shows_the_newest_card_its_snippet_and_oembed_url(client, newsroom):
    tree = tree_of(client.get("/api"))
    options = tree.xpath("//select[@id='story']/option")
    rows = client.get("/api/v1/stories").get_json()["stories"]
    assert [o.get("value") for o in options] == [row["id"] for row in rows]
    assert [o.text for o in options] == [row["headline"] for row in rows]
    assert tree.xpath("//select[@id='story']/option[@selected]/@value") == [story_id(client, LEAD)]

    record = oembed(client, LEAD, maxwidth=480)
    assert tree.xpath("string(//textarea[@id='snippet'])") == record["html"]
    [frame] = tree.xpath("//div[@id='preview']/iframe")
    assert frame.get("src") == f"http://localhost/embed/{LEAD}" and frame.get("width") == "480"
    oembed_url = tree.xpath("string(//input[@id='oembed-url']/@value)")
    parts = urlsplit(oembed_url)
    assert oembed_url.startswith("http://localhost/oembed?")
    assert parse_qs(parts.query) == {"url": [f"http://localhost/stories/{LEAD}"], "maxwidth": ["480"],
                                     "format": ["json"]}
    assert client.get(f"{parts.path}?{parts.query}").get_json() == record
    # Every label names its control; the width is 220-640.
    for control in tree.xpath("//main//select | //main//textarea | //main//input[not(@type='range')]"):
        assert tree.xpath(f"//label[@for='{control.get('id')}']"), control.get("id")
    number = tree.xpath("//input[@id='maxwidth']")[0]
    assert (number.get("min"), number.get("max"), number.get("value")) == ("220", "640", "480")


def test_every_public_endpoint_of_the_index_is_listed_and_its_link_answers(client, runner, newsroom):
    # The worker beside the app (as `make run` starts it) has made the paper's transparency log.
    assert runner.invoke(args=["drain-outbox", "--once"]).exit_code == 0
    tree = tree_of(client.get("/api"))
    endpoints = client.get("/api/v1").get_json()["endpoints"]
    links = {a.get("data-endpoint"): a for a in tree.xpath("//ul[@id='endpoints']//a[@data-endpoint]")}
    gets = {name for name, value in endpoints.items() if not value.startswith("POST ")}
    assert set(links) == gets
    assert [li.xpath("string(code)") for li in tree.xpath("//ul[@id='endpoints']/li[code]")] == ["subscribe"]
    # Templates are filled with the newest story, its day and a word of its headline.
    lead_id = story_id(client, LEAD)
    assert links["story"].get("href") == f"http://localhost/api/v1/stories/{lead_id}"
    assert links["day"].get("href") == "http://localhost/api/v1/days/2026-11-01"
    assert links["search"].get("href") == "http://localhost/api/v1/search?q=rates"
    for name, link in links.items():
        assert link.get("data-template") == endpoints[name]
        answer = client.get(link.get("href"))
        assert answer.status_code == 200 and answer.is_json, name
    assert client.get(links["search"].get("href")).get_json()["stories"][0]["headline"].startswith("Rates")


def test_the_query_picks_the_story_and_width_and_bad_values_never_fail(client, newsroom):
    third = story_id(client, THIRD_SLUG)
    for story in (third, THIRD_SLUG):
        tree = tree_of(client.get("/api", query_string={"story": story, "maxwidth": "320"}))
        assert tree.xpath("string(//textarea[@id='snippet'])") == oembed(client, THIRD_SLUG, maxwidth=320)["html"]
        assert tree.xpath("//select[@id='story']/option[@selected]/@value") == [third]
    for given, width in (("abc", "480"), ("", "480"), ("5000", "640"), ("10", "220"), ("-3", "220"),
                         ("333", "333")):
        tree = tree_of(client.get("/api", query_string={"maxwidth": given}))
        assert tree.xpath("string(//input[@id='maxwidth']/@value)") == width, given
        assert f'width="{width}"' in tree.xpath("string(//textarea[@id='snippet'])")
    for story in ("nope", "0", "\x00", "x" * 300):
        missing = client.get("/api", query_string={"story": story})
        assert missing.status_code == 404 and missing.mimetype == "text/html"


def test_a_story_older_than_the_list_can_still_be_chosen(client, desk):
    from datetime import timedelta

    from tests.fixtures.newsroom import T0

    paper = desk.paper("demo")
    oldest = desk.piece(paper, "The oldest story", on_air_at=T0)
    for n in range(50):
        desk.piece(paper, f"Later story {n}", on_air_at=T0 + timedelta(minutes=n + 1))
    tree = tree_of(client.get("/api", query_string={"story": oldest.slug}))
    assert len(tree.xpath("//select[@id='story']/option")) == 51
    assert tree.xpath("//select[@id='story']/option[@selected]/text()") == ["The oldest story"]


def test_a_paper_with_nothing_on_air_still_lists_the_endpoints(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "A draft", on_air_at=None)
    tree = tree_of(client.get("/api"))
    assert "No story is on air yet" in tree.text_content() and "A draft" not in tree.text_content()
    assert not tree.xpath("//select") and not tree.xpath("//textarea")
    linked = set(tree.xpath("//ul[@id='endpoints']//a/@data-endpoint"))
    assert "stories" in linked and not {"story", "day", "subscribe"} & linked


def test_the_page_has_the_papers_landmarks_and_one_heading(client, newsroom):
    tree = tree_of(client.get("/api"))
    assert tree.get("lang") == "en"
    for landmark in ("header", "nav", "main", "footer"):
        assert len(tree.xpath(f"//body/{landmark}")) == 1, landmark
    assert tree.xpath("//body/a[1][@class='skip-link']/@href") == ["#main"]
    assert tree.xpath("//h1/text()") == ["API playground"]
    # The copy feedback and the endpoint's answer are announced.
    assert tree.xpath("//*[@id='copy-status']/@role") == ["status"]
    assert tree.xpath("//*[@id='result-status']/@aria-live") == ["polite"]
    [frame] = tree.xpath("//div[@id='preview']/iframe")
    assert frame.get("title") == "Rates rise again as the central bank tightens"
    assert "allow-scripts" not in frame.get("sandbox")


def test_the_page_loads_only_its_own_script_and_style(client, newsroom):
    response = client.get("/api")
    tree = tree_of(response)
    assert [unhashed(s.get("src")) for s in tree.xpath("//script")] == ["/static/js/playground.js"]
    assert all(not s.text for s in tree.xpath("//script"))
    assert [unhashed(href) for href in tree.xpath("//link[@rel='stylesheet']/@href")] == [
        "/static/css/paper.css", "/static/css/playground.css"]
    policy = response.headers["Content-Security-Policy"]
    # Its fetches and the card's frame are same-origin: `default-src 'self'` covers both.
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "connect-src" not in policy and "frame-src" not in policy
    assert response.headers["X-Frame-Options"] == "DENY"
    for path, mimetype in (("/static/js/playground.js", "text/javascript"),
                           ("/static/css/playground.css", "text/css")):
        with client.get(path) as asset:
            assert asset.status_code == 200 and asset.mimetype == mimetype
            assert b"http://" not in asset.data and b"https://" not in asset.data  # no CDN


# --- in a browser ------------------------------------------------------------------------------

try:
    from playwright.sync_api import expect
except ImportError:  # the browser tests skip (tests/fixtures/browser.py `browser`); the HTTP ones run
    expect = None


def open_playground(context, live: str, path: str = "/api"):
    page = context.new_page()
    seen = watch(page)
    page.goto(live + path)
    # The script has read the story list and the index from the API.
    expect(page.locator("#playground")).to_have_attribute("data-ready", "true")
    return page, seen


@pytest.mark.browser
def test_pick_a_story_set_the_width_copy_the_snippet_and_embed_it_elsewhere(
        browser, live, newsroom, other_origin):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live)
    page, seen = open_playground(context, live)
    page.get_by_label("Story", exact=True).select_option(label=THIRD)
    snippet = page.locator("#snippet")
    expect(snippet).to_have_value(re.compile(rf'/embed/{THIRD_SLUG}" width="480"'))

    # The slider, from the keyboard: End is its maximum.
    page.locator("#maxwidth-range").press("End")
    expect(page.locator("#maxwidth")).to_have_value("640")
    expect(snippet).to_have_value(re.compile(r'width="640"'))
    # The number field.
    page.locator("#maxwidth").fill("320")
    expect(page.locator("#maxwidth-range")).to_have_value("320")
    expect(snippet).to_have_value(re.compile(rf'/embed/{THIRD_SLUG}" width="320"'))
    expect(page.locator("#preview iframe")).to_have_attribute("width", "320")
    expect(page.frame_locator("#preview iframe").locator("h1")).to_contain_text(THIRD)
    expect(page.locator("#preview-width")).to_have_text("320")
    oembed_field = page.locator("#oembed-url")
    expect(oembed_field).to_have_value(re.compile("maxwidth=320"))
    third = json.load(urlopen(f"{live}/api/v1/stories/{THIRD_SLUG}"))["id"]
    assert page.url == f"{live}/api?story={third}&maxwidth=320"

    # Out of range: flagged, nothing fetched; leaving the field takes the nearest width.
    page.locator("#maxwidth").fill("9000")
    expect(page.locator("#maxwidth")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#maxwidth-hint")).to_contain_text("from 220 to 640")
    page.locator("#maxwidth").blur()
    expect(page.locator("#maxwidth")).to_have_value("640")
    expect(snippet).to_have_value(re.compile(r'width="640"'))
    page.locator("#maxwidth").fill("320")
    expect(snippet).to_have_value(re.compile(r'width="320"'))

    page.get_by_role("button", name="Copy snippet").click()
    expect(page.get_by_role("status").filter(has_text="Copied")).to_have_text(
        "Copied the snippet to the clipboard.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == snippet.input_value()
    page.get_by_role("button", name="Copy URL").click()
    expect(page.locator("#copy-status")).to_have_text("Copied the oEmbed URL to the clipboard.")
    address = page.evaluate("navigator.clipboard.readText()")
    assert address == oembed_field.input_value()
    record = json.load(urlopen(address))
    assert (record["type"], record["width"], record["html"]) == ("rich", 320, copied)
    screenshot(page, "playground-card-320-desktop")
    # The playground itself talked to its own origin only, set no cookie, broke no CSP rule.
    assert hosts(seen["requests"]) == hosts([live]), seen["requests"]
    assert seen["errors"] == [] and context.cookies() == []
    context.close()

    # Someone else's page, on another origin, with the copied snippet pasted in.
    elsewhere = browser.new_context()
    blog = elsewhere.new_page()
    blog_seen = watch(blog)
    blog.goto(f"{other_origin}/frame?snippet={quote(copied, safe='')}")
    card = blog.frame_locator("iframe")
    expect(card.locator("h1")).to_contain_text(THIRD)
    expect(card.locator("body")).to_contain_text("AI persona")
    expect(card.locator("img")).to_have_js_property("naturalWidth", 1200)  # the share card drew
    assert blog.locator("iframe").get_attribute("width") == "320"
    screenshot(blog, "playground-snippet-elsewhere")
    # The blog's own page, then the card and its share card from the paper: nothing else.
    assert hosts(blog_seen["requests"]) == hosts([other_origin, live]), blog_seen["requests"]
    assert elsewhere.cookies() == []
    assert blog_seen["errors"] == []
    elsewhere.close()


@pytest.mark.browser
def test_try_an_endpoint_shows_its_status_and_pretty_json_in_place(browser, live, newsroom):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page, seen = open_playground(context, live)
    status, body = page.locator("#result-status"), page.locator("#result-body")

    page.locator("a[data-endpoint='stories']").click()
    expect(status).to_contain_text("GET stories: 200 OK · application/json")
    expect(body).to_contain_text('"count": 8')
    assert json.loads(body.text_content())["count"] == 8
    assert '\n  "stories": [\n    {\n' in body.text_content()  # pretty-printed
    assert page.url == live + "/api"  # read in place, not followed
    expect(page.locator("a[data-endpoint='stories']")).to_have_attribute("aria-current", "true")

    # The templated endpoints follow the chosen story and the search term.
    page.get_by_label("Story", exact=True).select_option(label=THIRD)
    third = json.load(urlopen(f"{live}/api/v1/stories/{THIRD_SLUG}"))["id"]
    story_link = page.locator("a[data-endpoint='story']")
    expect(story_link).to_have_attribute("href", f"{live}/api/v1/stories/{third}")
    story_link.click()
    expect(status).to_contain_text("GET story: 200 OK")
    expect(body).to_contain_text(f'"headline": "{THIRD}"')
    assert json.loads(body.text_content())["cited_facts"]

    page.locator("a[data-endpoint='day']").click()
    expect(status).to_contain_text("GET day: 200 OK")
    expect(body).to_contain_text('"day": "2026-11-01"')

    page.get_by_label("Search term").fill("ordinary length")
    search = page.locator("a[data-endpoint='search']")
    expect(search).to_have_attribute("href", f"{live}/api/v1/search?q=ordinary%20length")
    search.click()
    expect(status).to_contain_text("GET search: 200 OK")
    expect(body).to_contain_text('"count": 7')

    page.get_by_label("Search term").fill("")
    search.click()
    expect(status).to_contain_text("GET search: 400 BAD REQUEST · application/problem+json")
    expect(body).to_contain_text('"status": 400')
    screenshot(page, "playground-try-desktop")
    # The 400 is logged by Chromium as a failed resource; nothing else (no CSP refusal).
    assert [e for e in seen["errors"] if "400" not in e] == []
    assert hosts(seen["requests"]) == hosts([live])
    context.close()


@pytest.mark.browser
def test_without_javascript_the_form_and_the_links_work(browser, live, newsroom):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live + "/api")
    expect(page.locator("#snippet")).to_have_value(re.compile(rf'/embed/{LEAD}" width="480"'))
    expect(page.frame_locator("#preview iframe").locator("h1")).to_contain_text("Rates rise again")
    # What only the script can drive stays out of the way.
    for hidden in ("Copy snippet", "Copy URL"):
        expect(page.get_by_role("button", name=hidden)).to_be_hidden()
    expect(page.locator("#maxwidth-range")).to_be_hidden()
    expect(page.locator("#result")).to_be_hidden()

    page.get_by_label("Story", exact=True).select_option(label=THIRD)
    page.locator("#maxwidth").fill("300")
    page.get_by_role("button", name="Show this card").click()
    expect(page.locator("#snippet")).to_have_value(re.compile(rf'/embed/{THIRD_SLUG}" width="300"'))
    assert "maxwidth=300" in page.url
    expect(page.frame_locator("#preview iframe").locator("h1")).to_contain_text(THIRD)

    page.locator("a[data-endpoint='sections']").click()
    assert page.url == live + "/api/v1/sections"
    assert json.loads(page.locator("body").inner_text())["sections"]
    context.close()


@pytest.mark.browser
@pytest.mark.parametrize("label", WIDTHS)
def test_playground_screenshots(browser, live, newsroom, label):
    width, height = WIDTHS[label]
    context = browser.new_context(viewport={"width": width, "height": height})
    page, seen = open_playground(context, live)
    card = page.frame_locator("#preview iframe")
    expect(card.locator("h1")).to_contain_text("Rates rise again")
    expect(card.locator("img")).to_have_js_property("naturalWidth", 1200)
    screenshot(page, f"playground-{label}")
    page.locator("a[data-endpoint='sections']").click()
    expect(page.locator("#result-status")).to_contain_text("200 OK")
    # Nothing overflows sideways: a card wider than a phone scrolls inside its own box.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    screenshot(page, f"playground-try-{label}")
    assert seen["errors"] == [] and context.cookies() == []
    context.close()


@pytest.mark.browser
def test_on_a_390px_phone_the_preview_card_fits_without_clipping(browser, live, newsroom):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, device_scale_factor=3)
    page, seen = open_playground(context, live)
    frame = page.locator("#preview iframe")
    expect(frame).not_to_have_attribute("width", "480")
    width = int(frame.get_attribute("width"))
    assert 220 <= width < 390
    box, holder = frame.bounding_box(), page.locator("#preview").bounding_box()
    assert box["x"] >= holder["x"] and box["x"] + box["width"] <= holder["x"] + holder["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.evaluate("(box => box.scrollWidth <= box.clientWidth)(document.getElementById('preview'))")
    expect(page.locator("#snippet")).to_have_value(re.compile(rf'width="{width}"'))
    assert seen["errors"] == []
    context.close()
