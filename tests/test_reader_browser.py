"""The reader's pages and the story card in a real browser: Debian's headless Chromium driven by
Playwright, against the app served on a loopback port.

Skipped cleanly when the `playwright` package or `/usr/bin/chromium` is missing (no browser is
ever downloaded). Screenshots land in `build/screenshots/` (git-ignored) for a person to look at.
"""
from __future__ import annotations

import http.server
import os
import threading
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from werkzeug.serving import make_server

from tests.factories import T0

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parent.parent / "build" / "screenshots"
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is not installed", allow_module_level=True)


@pytest.fixture
def live(app):
    """The app on http://localhost:<port> (a bare host: the default paper, `demo`)."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def other_origin():
    """A second origin (127.0.0.1 on its own port) serving one page that frames a URL
    (`/frame?src=<url>`) or holds an oEmbed snippet (`/frame?snippet=<html>`)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            from urllib.parse import parse_qs

            query = parse_qs(urlsplit(self.path).query)
            src = query.get("src", [""])[0]
            # `snippet`: an oEmbed `html` pasted as is; else a frame of `src`.
            snippet = query.get("snippet", [""])[0] or (
                f'<iframe id="card" src="{src}" width="480" height="460" frameborder="0" '
                f'sandbox="allow-popups allow-popups-to-escape-sandbox '
                f'allow-top-navigation-by-user-activation"></iframe>')
            body = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Blog</title>'
                    f'</head><body><h1>Someone else\'s blog</h1>{snippet}</body></html>').encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def browser():
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield chromium
        chromium.close()


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo", sections=("World", "Business", "Science"), nameplate="The Demo Times",
                       motto="All the news that fits")
    prose = ("Rates rose by a quarter point on Thursday[^1], the third rise this year[^2].\n\n"
             "Markets had priced it in[^1]; the currency barely moved[^3].")
    for i in range(7):
        desk.piece(paper, f"World story number {i} with a headline of ordinary length",
                   section=("World", "Business", "Science")[i % 3], facts=3,
                   dek="A standfirst that says what happened and why it matters.",
                   on_air_at=T0 + timedelta(hours=i))
    desk.piece(paper, "Rates rise again as the central bank tightens", facts=3, prose=prose,
               dek="The third rise this year.", on_air_at=T0 + timedelta(hours=9))
    desk.edition(paper, date(2026, 11, 1))
    return paper


def _placeholder_png() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1280, 720), "#b9b2a3").save(buffer, "PNG")
    return buffer.getvalue()


def _watch(page):
    """Record every request the page makes and every console error or CSP violation."""
    seen = {"requests": [], "errors": []}
    page.on("request", lambda request: seen["requests"].append(request.url))
    page.on("console", lambda message: message.type == "error" and seen["errors"].append(message.text))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    return seen


@pytest.mark.parametrize("name,path", [("home", "/"), ("story", "/stories/rates-rise-again-as-the-central-bank-tightens"),
                                       ("section", "/sections/world"), ("day", "/days/2026-11-01"),
                                       ("edition", "/cast/2026-11-01"), ("masthead", "/masthead")])
def test_pages_render_styled_without_errors_and_are_screenshotted(browser, live, newsroom, name, path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    for label, (width, height) in WIDTHS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        seen = _watch(page)
        # The test data's art and posters sit on a fictional CDN: answer them with a grey picture.
        page.route("https://**/*", lambda route: route.fulfill(
            status=200, content_type="image/png", body=_placeholder_png()))
        response = page.goto(live + path)
        assert response.status == 200
        # The stylesheet applied (no CSP refusal): the nameplate is set in a serif face.
        family = page.eval_on_selector(".nameplate", "e => getComputedStyle(e).fontFamily")
        assert "serif" in family.lower() or "georgia" in family.lower()
        # Nothing overflows sideways on a phone.
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
        page.screenshot(path=str(SHOTS / f"{name}-{label}.png"), full_page=True)
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
    seen = _watch(page)
    card_url = f"{live}/embed/rates-rise-again-as-the-central-bank-tightens"
    page.goto(f"{other_origin}/frame?src={card_url}")
    frame = page.frame_locator("#card")
    assert "Rates rise again" in frame.locator("h1").inner_text()
    assert "AI persona" in frame.locator("body").inner_text()
    # The picture is the share card, drawn by this host.
    assert frame.locator("img").evaluate("img => img.complete && img.naturalWidth") == 1200
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "card-in-a-frame.png"))
    hosts = {urlsplit(url).netloc for url in seen["requests"]}
    # The blog itself, and the paper's host for the card and its share card; nothing else.
    assert hosts <= {urlsplit(other_origin).netloc, urlsplit(live).netloc}, hosts
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
    # Nothing the reader must see is cut off by the frame's edge (spec rule 5: the disclosure).
    bottom = frame.evaluate("document.querySelector('.disc').getBoundingClientRect().bottom")
    assert bottom <= record["height"], (bottom, record["height"])
    assert frame.evaluate("document.documentElement.scrollWidth") <= record["width"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"card-{maxwidth}x{maxheight or 'auto'}.png"))
    context.close()
