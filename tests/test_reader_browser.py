"""The reader's pages and the story card in a real browser: Debian's headless Chromium driven by
Playwright, against the app served on a loopback port.

Every page kind is checked with axe-core (the `axe-playwright-python` package bundles it) at a
desktop and a phone width: no violation of any rule. On a phone the front's lead must be on the
first screen.

Skipped cleanly when the `playwright` package or `/usr/bin/chromium` is missing (no browser is
ever downloaded). Screenshots land in `build/screenshots/` (git-ignored) for a person to look at.
"""
from __future__ import annotations

import pytest

from tests.fixtures.browser import WIDTHS, hosts, placeholder_png, screenshot, watch

pytestmark = pytest.mark.browser


# Every page kind of the reader's web: (name, path, status).
PAGE_KINDS = [("home", "/", 200),
              ("story", "/stories/rates-rise-again-as-the-central-bank-tightens", 200),
              ("section", "/sections/world", 200), ("day", "/days/2026-11-01", 200),
              ("days", "/days", 200), ("cast", "/cast", 200),
              ("edition", "/cast/2026-11-01", 200), ("masthead", "/masthead", 200),
              ("persona", "/masthead/ada-quill", 200), ("search-form", "/search", 200),
              ("search", "/search?q=rates", 200), ("search-empty", "/search?q=platypus", 200),
              ("search-refused", "/search?q=one+two+three+four+five", 400),
              ("error-404", "/stories/no-such-story", 404)]


def open_page(browser, url: str, width: int, height: int):
    """(context, page, seen, response): `url` opened at `width` x `height`, the test data's
    fictional CDN answered with a grey picture."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    seen = watch(page)
    page.route("https://**/*", lambda route: route.fulfill(
        status=200, content_type="image/png", body=placeholder_png()))
    return context, page, seen, page.goto(url)


@pytest.mark.parametrize("name,path,status", PAGE_KINDS)
def test_pages_render_styled_without_errors_and_are_screenshotted(browser, live, newsroom, name, path, status):
    for label, (width, height) in WIDTHS.items():
        context, page, seen, response = open_page(browser, live + path, width, height)
        assert response.status == status
        # The stylesheet applied (no CSP refusal): the nameplate is set in a serif face.
        family = page.eval_on_selector(".nameplate", "e => getComputedStyle(e).fontFamily")
        assert "serif" in family.lower() or "georgia" in family.lower()
        # Nothing overflows sideways on a phone.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        screenshot(page, f"{name}-{label}")
        # Chromium logs the page's own 4xx status as an error: that one, and nothing else.
        own = [] if status == 200 else [
            f"Failed to load resource: the server responded with a status of {status} ({response.status_text})"]
        assert seen["errors"] == own
        assert context.cookies() == []
        context.close()


@pytest.mark.parametrize("name,path,status", PAGE_KINDS)
def test_every_page_kind_has_no_axe_violation(browser, live, newsroom, name, path, status):
    axe = pytest.importorskip("axe_playwright_python.sync_playwright", reason="axe-playwright-python is missing")
    for width, height in WIDTHS.values():
        context, page, _, response = open_page(browser, live + path, width, height)
        assert response.status == status
        # Every rule axe-core runs by default (WCAG 2.x A and AA, and its best practices).
        results = axe.Axe().run(page, options={"resultTypes": ["violations"]})
        assert results.violations_count == 0, f"{name} at {width}px:\n" + results.generate_report()
        context.close()


def test_on_a_phone_the_lead_is_on_the_first_screen(browser, live, newsroom):
    width, height = WIDTHS["phone"]
    context, page, seen, _ = open_page(browser, live + "/", width, height)
    headline = page.locator(".lead-story .lead-headline")
    assert "Rates rise again" in headline.inner_text()
    box = headline.bounding_box()
    assert 0 <= box["y"] and box["y"] + box["height"] <= height, box
    art = page.locator(".lead-story img")
    assert art.bounding_box()["y"] < box["y"] and art.bounding_box()["y"] >= 0
    # Its art is the share card this host draws, loaded.
    assert art.evaluate("img => img.complete && img.naturalWidth") == 1200
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert seen["errors"] == []
    context.close()


def test_the_header_search_box_works_without_javascript(browser, live, newsroom):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live + "/sections/world")
    page.get_by_role("searchbox", name="Search").fill("rates")
    page.get_by_role("button", name="Go").click()
    page.wait_for_url("**/search?q=rates")
    assert "Rates rise again" in page.locator(".search-results").inner_text()
    context.close()


def test_footnote_marker_jumps_to_its_fact_without_javascript(browser, live, newsroom):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live + "/stories/rates-rise-again-as-the-central-bank-tightens")
    page.click("sup#ref-2 a")
    assert page.url.endswith("#fact-2")
    assert page.is_visible("li#fact-2")
    context.close()


def test_card_shows_in_a_frame_on_another_origin_with_no_cookie_and_no_foreign_request(
        browser, live, newsroom, other_origin):
    context = browser.new_context()
    page = context.new_page()
    seen = watch(page)
    card_url = f"{live}/embed/rates-rise-again-as-the-central-bank-tightens"
    page.goto(f"{other_origin}/frame?src={card_url}")
    frame = page.frame_locator("#card")
    assert "Rates rise again" in frame.locator("h1").inner_text()
    assert "AI persona" in frame.locator("body").inner_text()
    # The picture is the share card, drawn by this host.
    assert frame.locator("img").evaluate("img => img.complete && img.naturalWidth") == 1200
    screenshot(page, "card-in-a-frame")
    # The blog itself, and the paper's host for the card and its share card; nothing else.
    assert hosts(seen["requests"]) <= hosts([other_origin, live]), seen["requests"]
    assert context.cookies() == []
    assert seen["errors"] == []
    context.close()


def test_story_page_refuses_to_be_framed(browser, live, newsroom, other_origin):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{other_origin}/frame?src={live}/stories/rates-rise-again-as-the-central-bank-tightens")
    child = page.frames[1] if len(page.frames) > 1 else None
    # Chromium replaces a refused frame by an error page: no headline of ours is in it.
    text = child.evaluate("document.body ? document.body.innerText : ''") if child else ""
    assert "Rates rise again" not in text
    context.close()


@pytest.mark.parametrize("maxwidth,maxheight", [(220, None), (480, None), (640, None), (320, 200)])
def test_oembed_snippet_shows_the_whole_byline_and_disclosure(browser, live, newsroom, other_origin,
                                                             maxwidth, maxheight):
    import json
    from urllib.parse import quote
    from urllib.request import urlopen

    story = f"{live}/stories/rates-rise-again-as-the-central-bank-tightens"
    query = f"url={quote(story, safe='')}&maxwidth={maxwidth}" + (
        f"&maxheight={maxheight}" if maxheight else "")
    with urlopen(f"{live}/oembed?{query}") as answer:
        record = json.load(answer)
    context = browser.new_context(viewport={"width": 800, "height": 1200})
    page = context.new_page()
    page.goto(f"{other_origin}/frame?snippet={quote(record['html'], safe='')}")
    frame = page.frames[1]
    assert "Rates rise again" in frame.inner_text("h1")
    # Nothing the reader must see (above all, the AI persona disclosure) is cut off by the frame.
    bottom = frame.evaluate("document.querySelector('.disc').getBoundingClientRect().bottom")
    assert bottom <= record["height"], (bottom, record["height"])
    assert frame.evaluate("document.documentElement.scrollWidth") <= record["width"]
    screenshot(page, f"card-{maxwidth}x{maxheight or 'auto'}")
    context.close()


@pytest.mark.browser
@pytest.mark.parametrize("path", ["/", "/stories/rates-rise-again-as-the-central-bank-tightens", "/masthead/ada-quill",
                                  "/embed/rates-rise-again-as-the-central-bank-tightens"])
def test_touch_targets_are_24px_on_a_phone(browser, live, newsroom, path):
    """axe-core's WCAG 2.2 `target-size` rule at 390 px: the front's section kickers and the
    card's byline are at least 24 px tall (issue 25)."""
    axe = pytest.importorskip("axe_playwright_python.sync_playwright", reason="axe-playwright-python is missing")
    context, page, _, response = open_page(browser, live + path, 390, 844)
    assert response.status == 200
    results = axe.Axe().run(page, options={"runOnly": {"type": "rule", "values": ["target-size"]},
                                           "resultTypes": ["violations"]})
    assert results.violations_count == 0, results.generate_report()
    context.close()
