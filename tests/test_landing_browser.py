"""The /subscribe landing page in a real browser: subscribing end to end, with
static/js/subscribe.js (JSON to the public API, inline confirmation, per-field errors) and without
JavaScript (the form POST), the confirm email arriving at a real SMTP server on loopback, its link
followed and the confirm button pressed.

Debian's headless Chromium through Playwright (tests/fixtures/browser.py); skipped without them.
"""
from __future__ import annotations

import re

import pytest

from tests.fixtures.browser import WIDTHS, hosts, screenshot, watch
from tests.fixtures.servers import body_text

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed").expect


def confirm_link(smtp, address: str) -> str:
    """The confirm link of the one email sent to `address`."""
    [message] = smtp.to(address)
    assert message["Subject"] and "confirm" in message["Subject"].lower()
    return re.search(r"(https?://\S+/subscribe/confirm\?token=\S+)", body_text(message)).group(1)


def confirm_in_the_browser(page, link: str, address: str) -> None:
    page.goto(link)
    expect(page.locator("h1")).to_have_text("Confirm your alerts")
    page.get_by_role("button", name="Confirm my alerts").click()
    expect(page.locator("h1")).to_have_text("You are subscribed")
    expect(page.locator("main")).to_contain_text(f"{address} is on the list")


def test_subscribe_with_javascript_confirms_inline_and_the_email_arrives(browser, live, newsroom, smtp):
    context = browser.new_context()
    page = context.new_page()
    seen = watch(page)
    posts = []
    page.on("request", lambda request: request.method == "POST" and posts.append(request))
    page.goto(live + "/subscribe")
    page.get_by_label("Email address").fill("reader@example.com")
    page.get_by_label("A weekly digest").check()
    page.get_by_label("Business").uncheck()
    page.get_by_role("button", name="Subscribe").click()

    status = page.locator(".form-status")
    expect(status).to_contain_text("Check your inbox at reader@example.com")
    expect(status).to_contain_text("confirmation link is on its way")
    # The page stayed put: the script sent JSON to the public API, not the form.
    assert page.url == live + "/subscribe"
    [post] = posts
    assert post.url == live + "/api/v1/subscribers"
    assert post.post_data_json == {"email": "reader@example.com", "cadence": "weekly", "cast": True,
                                   "sections": ["World", "Science"]}
    expect(page.get_by_label("Email address")).to_have_value("")
    screenshot(page, "landing-sent-desktop")

    link = confirm_link(smtp, "reader@example.com")
    assert "weekly, for World, Science, with the video edition" in body_text(smtp.messages[0])
    confirm_in_the_browser(page, link, "reader@example.com")
    assert hosts(seen["requests"]) == hosts([live])
    assert seen["errors"] == []
    assert context.cookies() == []
    context.close()


def test_every_section_ticked_sends_no_sections_so_later_ones_count_too(browser, live, newsroom, smtp):
    context = browser.new_context()
    page = context.new_page()
    posts = []
    page.on("request", lambda request: request.method == "POST" and posts.append(request))
    page.goto(live + "/subscribe")
    page.get_by_label("Email address").fill("all@example.com")
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".form-status")).to_contain_text("Check your inbox at all@example.com")
    assert posts[0].post_data_json == {"email": "all@example.com", "cadence": "daily", "cast": True}
    assert len(smtp.to("all@example.com")) == 1
    context.close()


def test_errors_from_the_api_show_beside_their_fields(browser, live, newsroom, smtp):
    context = browser.new_context()
    page = context.new_page()
    seen = watch(page)
    page.goto(live + "/subscribe")
    email = page.get_by_label("Email address")
    email.fill("not-an-address")
    page.get_by_role("button", name="Subscribe").click()

    # The 422 problem's `errors.email`, next to the field, linked to it and announced.
    error = page.locator("#error-email")
    expect(error).to_contain_text("Not a valid email address")
    expect(email).to_have_attribute("aria-invalid", "true")
    expect(email).to_have_attribute("aria-describedby", "error-email")
    expect(email).to_be_focused()
    expect(page.locator(".form-status")).to_contain_text("Email address: Not a valid email address")
    assert page.url == live + "/subscribe"

    # No section ticked: said beside the sections, without a request.
    for name in ("World", "Business", "Science"):
        page.get_by_label(name).uncheck()
    email.fill("fine@example.com")
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator("#error-sections")).to_have_text("Pick at least one section.")
    expect(page.locator("#error-email")).to_have_count(0)
    expect(email).not_to_have_attribute("aria-invalid", "true")
    screenshot(page, "landing-errors-desktop")

    # Fixed: the errors go and the confirmation comes.
    page.get_by_label("Science").check()
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator(".form-status")).to_contain_text("Check your inbox at fine@example.com")
    expect(page.locator(".field-error")).to_have_count(0)
    assert smtp.messages and [m["To"] for m in smtp.messages] == ["fine@example.com"]
    # The 422 is the only console error (Chromium logs a failed fetch); no CSP refusal.
    assert all("422" in error for error in seen["errors"]), seen["errors"]
    context.close()


def test_subscribe_without_javascript_posts_the_form(browser, live, newsroom, smtp):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live + "/subscribe")
    page.get_by_label("Email address").fill("nojs@example.com")
    page.get_by_label("As pieces go on air").check()
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator("h1")).to_have_text("Check your inbox")
    assert page.url == live + "/subscribe"  # the form's own POST answered with a page
    link = confirm_link(smtp, "nojs@example.com")
    confirm_in_the_browser(page, link, "nojs@example.com")
    context.close()


def test_form_errors_without_javascript_come_back_on_the_page(browser, live, newsroom, smtp):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(live + "/subscribe")
    page.get_by_label("Email address").fill("nope")
    page.get_by_role("button", name="Subscribe").click()
    expect(page.locator("#form-errors")).to_contain_text("Email address:")
    expect(page.get_by_label("Email address")).to_have_value("nope")
    assert smtp.messages == []
    context.close()


@pytest.mark.parametrize("label", WIDTHS)
def test_landing_page_screenshots(browser, live, newsroom, label):
    width, height = WIDTHS[label]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    seen = watch(page)
    page.goto(live + "/subscribe")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    screenshot(page, f"landing-{label}")
    assert seen["errors"] == []
    context.close()


@pytest.mark.parametrize("label", WIDTHS)
def test_the_confirmation_is_in_view_after_pressing_subscribe(browser, live, newsroom, smtp, label):
    width, height = WIDTHS[label]
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.goto(live + "/subscribe")
    page.get_by_label("Email address").fill("reader@example.com")
    page.get_by_role("button", name="Subscribe").click()  # scrolled to, as a reader scrolls to it
    status = page.locator(".form-status")
    expect(status).to_contain_text("Check your inbox at reader@example.com")
    box = status.bounding_box()
    assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height, (box, height)
    expect(status).to_be_focused()
    screenshot(page, f"landing-confirmed-{label}")
    context.close()
