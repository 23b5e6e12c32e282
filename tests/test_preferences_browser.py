"""The preference centre end to end in a real browser, with and without JavaScript: a reader
subscribes on /subscribe, confirms from the email a real SMTP server on loopback received,
gets an alert from `flask send-alerts`, follows its "Manage your alerts" link, changes cadence
and pauses, then resumes. Debian's headless Chromium through Playwright
(tests/fixtures/browser.py); skipped without them.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

import pytest
import time_machine

from tests.fixtures.browser import hosts, screenshot, watch
from tests.fixtures.servers import body_text

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed").expect


def on_live(live: str, url: str) -> str:
    """`url` (an alert's link, under the paper's canonical origin) on the live server."""
    parts = urlsplit(url)
    return f"{live}{parts.path}?{parts.query}"


@pytest.mark.parametrize("javascript", [True, False], ids=["with-js", "without-js"])
def test_a_reader_manages_alerts_from_the_link_in_an_alert(browser, live, newsroom, desk, runner, smtp, client,
                                                           javascript):
    address = f"manager-{'js' if javascript else 'nojs'}@example.com"
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    seen = watch(page)

    page.goto(live + "/subscribe")
    page.get_by_label("Email address").fill(address)
    page.get_by_label("As pieces go on air").check()
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".form-status" if javascript else "h1")).to_contain_text("Check your inbox")
    [confirm] = smtp.to(address)
    page.goto(re.search(r"(https?://\S+/subscribe/confirm\?token=\S+)", body_text(confirm)).group(1))
    page.get_by_role("button", name="Confirm my alerts").click()
    expect(page.locator("h1")).to_have_text("You are subscribed")

    # The clock only moves forward from here (signed links must not look signed in the future).
    with time_machine.travel(datetime.now(timezone.utc), tick=True) as traveller:
        desk.piece(newsroom, "Harbour reopens after the storm", section="World",
                   on_air_at=datetime.now(timezone.utc))
        traveller.shift(timedelta(minutes=2))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
        [alert] = [m for m in smtp.to(address) if m["List-Unsubscribe"]]
        assert alert["Subject"] == "Harbour reopens after the storm"
        html = alert.get_body(("html",)).get_content()
        link = re.search(r'<a href="([^"]+)">Manage your alerts</a>', html).group(1).replace("&amp;", "&")

        page.goto(on_live(live, link))
        expect(page.locator("h1")).to_have_text("Your alerts")
        expect(page.locator("main")).to_contain_text(address)
        expect(page.get_by_label("As pieces go on air")).to_be_checked()
        page.get_by_label("A weekly digest").check()
        page.get_by_label("Business").uncheck()
        page.get_by_label("Pause for a month").check()
        page.get_by_role("button", name="Save my choices").click()
        expect(page.locator("#saved")).to_contain_text("Your choices are saved.")
        expect(page.locator("#saved")).to_contain_text("Alerts are paused until")
        expect(page.get_by_label("A weekly digest")).to_be_checked()
        expect(page.get_by_label("Business")).not_to_be_checked()
        screenshot(page, f"preferences-paused-{'js' if javascript else 'nojs'}", javascript=javascript)

        token = re.search(r"token=([^&]+)", link).group(1)
        saved = client.get("/api/v1/subscribers/preferences", query_string={"token": token}).get_json()
        assert (saved["cadence"], saved["sections"], saved["paused"]) == ("weekly", ["World", "Science"], True)

        # Paused: news and a run, and nothing arrives.
        desk.piece(newsroom, "Quiet while paused", section="World", on_air_at=datetime.now(timezone.utc))
        traveller.shift(timedelta(minutes=2))
        assert runner.invoke(args=["send-alerts"]).output.strip().splitlines()[-1].startswith("sent 0,")

        page.get_by_role("button", name="Resume alerts now").click()
        expect(page.locator("#saved")).to_contain_text("Alerts are on again.")
        expect(page.locator("#pause-state")).to_have_text("Alerts are on.")
        assert hosts(seen["requests"]) == hosts([live])
        assert seen["errors"] == []
        assert context.cookies() == []
        context.close()
