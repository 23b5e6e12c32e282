"""The reader's pages and the story card in a real browser: Debian's headless Chromium driven by
Playwright, against the app served on a loopback port.

Skipped cleanly when the `playwright` package or `/usr/bin/chromium` is missing (no browser is
ever downloaded). Screenshots land in `build/screenshots/` (git-ignored) for a person to look at.
"""
from __future__ import annotations

import pytest

from tests.fixtures.browser import WIDTHS, hosts, placeholder_png, screenshot, watch

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name,path", [("home", "/"),
                                       ("story", "/stories/rates-rise-again-as-the-central-bank-tightens"),
                                       ("section", "/sections/world"), ("day", "/days/2026-11-01"),
                                       ("edition", "/cast/2026-11-01"), ("masthead", "/masthead")])
def test_pages_render_styled_without_errors_and_are_screenshotted(browser, live, newsroom, name, path):
    for label, (width, height) in WIDTHS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        seen = watch(page)
        # The test data's art and posters sit on a fictional CDN: answer them with a grey picture.
        page.route("https://**/*", lambda route: route.fulfill(
            status=200, content_type="image/png", body=placeholder_png()))
        response = page.goto(live + path)
        assert response.status == 200
        # The stylesheet applied (no CSP refusal): the nameplate is set in a serif face.
        family = page.eval_on_selector(".nameplate", "e => getComputedStyle(e).fontFamily")
        assert "serif" in family.lower() or "georgia" in family.lower()
        # Nothing overflows sideways on a phone.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        screenshot(page, f"{name}-{label}")
        assert seen["errors"] == []
        assert context.cookies() == []
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
