"""Shared fixtures for tests that need a real server or a real browser. Imported by the test
modules (like tests/smtp.py), not by conftest:

    from tests.browser import browser, live, other_origin  # noqa: F401  (fixtures)

- `live`: the test app served by werkzeug in a thread on 127.0.0.1 (a free port), addressed as
  `http://localhost:<port>`, a bare host, so tenancy serves the default paper (`demo`). It is
  the session's `app`, so it runs on each backend, and fixtures that set the app's config (the
  `smtp` fixture's SMTP_URL) apply to it.
- `other_origin`: a second server on `http://127.0.0.1:<another port>`, another origin, with
  one page that frames a URL (`/frame?src=<url>`) or holds a pasted snippet
  (`/frame?snippet=<html>`): someone else's blog.
- `browser`: Debian's headless Chromium (`/usr/bin/chromium`) driven by Playwright. A test that
  asks for it is skipped when the `playwright` package or the binary is missing; no browser is
  ever downloaded.
- `newsroom`: the paper `demo` with eight pieces on air (the newest is LEAD) and an edition.
- `watch(page)`, `placeholder_png()`, `screenshot(page, name)`: records every request and every
  console error (CSP refusals included), answers the test data's fictional CDN with a picture,
  and saves a screenshot in `build/screenshots/` (git-ignored) for a person to look at.
"""
from __future__ import annotations

import http.server
import io
import os
import threading
from datetime import date, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from werkzeug.serving import make_server

from tests.factories import T0

try:
    from playwright import sync_api
except ImportError:  # the tests that need a browser skip; the live server still works
    sync_api = None

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SHOTS = Path(__file__).resolve().parent.parent / "build" / "screenshots"
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}
# What the card's `sandbox` attribute allows (services/rendering/embeds.py SANDBOX).
LEAD = "rates-rise-again-as-the-central-bank-tightens"
CARD_SANDBOX = "allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation"


def _serve(server) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def live(app):
    """The app on http://localhost:<port> (a bare host: the default paper, `demo`)."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = _serve(server)
    yield f"http://localhost:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


class _BlogPage(http.server.BaseHTTPRequestHandler):
    """One page of another site: `?snippet=<html>` pasted as is, else a frame of `?src=<url>`."""

    def do_GET(self):
        query = parse_qs(urlsplit(self.path).query)
        src = query.get("src", [""])[0]
        snippet = query.get("snippet", [""])[0] or (
            f'<iframe id="card" src="{src}" width="480" height="460" frameborder="0" '
            f'sandbox="{CARD_SANDBOX}"></iframe>')
        body = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Blog</title>'
                f'</head><body><h1>Someone else\'s blog</h1>{snippet}</body></html>').encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def other_origin():
    """Another origin (127.0.0.1 on its own port) serving `_BlogPage`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _BlogPage)
    thread = _serve(server)
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from Debian, one per test module; skips the test when unavailable."""
    if sync_api is None:
        pytest.skip("the playwright package is not installed")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def newsroom(desk):
    """The paper `demo`: seven pieces over three sections, then the lead story (slug LEAD), and a
    video edition on 1 November 2026."""
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


def watch(page) -> dict:
    """Record every request the page makes (`requests`: URLs, frames included) and every console
    error, uncaught exception or CSP violation (`errors`)."""
    seen: dict = {"requests": [], "errors": []}
    page.on("request", lambda request: seen["requests"].append(request.url))
    page.on("console", lambda message: message.type == "error" and seen["errors"].append(message.text))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    return seen


def hosts(urls: list[str]) -> set[str]:
    """The `host:port` parts of `urls`."""
    return {urlsplit(url).netloc for url in urls}


def placeholder_png() -> bytes:
    """A grey 1280x720 PNG: the answer for the test data's pictures on a fictional CDN."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (1280, 720), "#b9b2a3").save(buffer, "PNG")
    return buffer.getvalue()


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as `build/screenshots/<name>.png`; returns its path.

    Chromium does not paint frames out of view, and a `full_page` shot does not wake them: the
    viewport is made as tall as the page for the shot instead, then put back."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    viewport = page.viewport_size
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": viewport["width"], "height": max(height, viewport["height"])})
    page.evaluate("() => new Promise(done => { window.scrollTo(0, 0); "
                  "requestAnimationFrame(() => requestAnimationFrame(done)); })")
    page.screenshot(path=str(path))
    page.set_viewport_size(viewport)
    return path
