"""The reader's subscribe pages through HTTP: the landing form without JavaScript, the confirm
and unsubscribe pages (a GET never changes anything; the POST does)."""
from __future__ import annotations

import re

import time_machine

from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text


def test_landing_page_has_a_working_form(client, desk):
    desk.paper("demo")
    page = client.get("/subscribe")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert '<form method="post" action="/subscribe"' in html
    for name in ("World", "Business", "Science"):
        assert f'value="{name}" checked' in html
    assert 'name="cadence" value="daily" checked' in html and 'name="cast" value="true" checked' in html


@time_machine.travel("2026-11-20T12:00:00Z", tick=False)
def test_form_post_subscribes_without_javascript(client, desk, smtp):
    desk.paper("demo")
    page = client.post("/subscribe", data={"email": "form@example.com", "cadence": "weekly",
                                           "sections": ["Science"], "cast": "true"})
    assert page.status_code == 200 and b"Check your inbox" in page.data
    [message] = smtp.to("form@example.com")
    token = re.search(r"confirm\?token=(\S+)", body_text(message)).group(1)
    assert "weekly, for Science, with the video edition" in body_text(message)
    confirm = client.get(f"/subscribe/confirm?token={token}")
    assert confirm.status_code == 200 and b"Confirm my alerts" in confirm.data
    assert "ETag" not in confirm.headers
    assert b"is on the list" in client.post("/subscribe/confirm", data={"token": token}).data


def test_form_errors_are_shown_with_422(client, desk, smtp):
    desk.paper("demo")
    page = client.post("/subscribe", data={"email": "nope", "cadence": "daily"})
    assert page.status_code == 422
    html = page.get_data(as_text=True)
    assert "Email address:" in html and "Pick at least one section" in html
    assert 'value="nope"' in html
    assert smtp.messages == []


def test_bad_tokens_get_a_page_not_a_500(client, desk):
    desk.paper("demo")
    for path in ("/subscribe/confirm?token=junk", "/subscribe/unsubscribe?token=junk", "/subscribe/confirm"):
        assert client.get(path).status_code == 400
        assert client.post(path).status_code == 400


@time_machine.travel("2026-11-20T12:00:00Z", tick=False)
def test_unsubscribe_page_get_then_post(client, desk, smtp):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    client.post("/api/v1/subscribers", json={"email": "u@example.com"})
    token = re.search(r"confirm\?token=(\S+)", body_text(smtp.messages[0])).group(1)
    client.post("/subscribe/confirm", data={"token": token})
    from extensions import db
    from models import Subscriber
    from services.delivery import subscriptions

    with client.application.test_request_context():
        row = db.session.query(Subscriber).filter_by(email="u@example.com").one()
        unsubscribe = subscriptions.make_token("unsubscribe", row)
    page = client.get(f"/subscribe/unsubscribe?token={unsubscribe}")
    assert page.status_code == 200 and b"Unsubscribe</button>" in page.data
    assert client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["count"] == 1
    done = client.post("/subscribe/unsubscribe", data={"token": unsubscribe})
    assert done.status_code == 200 and b"no more" in done.data
    assert client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["count"] == 0
    # The old confirm link does not undo the unsubscribe.
    assert client.post("/subscribe/confirm", data={"token": token}).status_code == 400


@time_machine.travel("2026-11-20T12:00:00Z", tick=False)
def test_token_pages_are_never_stored_and_send_no_referrer(client, desk, smtp):
    desk.paper("demo")
    client.post("/api/v1/subscribers", json={"email": "nostore@example.com"})
    token = re.search(r"confirm\?token=(\S+)", body_text(smtp.messages[0])).group(1)
    from extensions import db
    from models import Subscriber
    from services.delivery import subscriptions

    with client.application.test_request_context():
        row = db.session.query(Subscriber).filter_by(email="nostore@example.com").one()
        unsubscribe = subscriptions.make_token("unsubscribe", row)
    answers = [client.get(f"/subscribe/confirm?token={token}"),
               client.post("/subscribe/confirm", data={"token": token}),
               client.get(f"/subscribe/unsubscribe?token={unsubscribe}"),
               client.post("/subscribe/unsubscribe", data={"token": unsubscribe}),
               client.get("/subscribe/confirm?token=junk")]
    for answer in answers[:4]:
        assert answer.status_code == 200 and b"nostore@example.com" in answer.data
    for answer in answers:
        assert answer.headers["Cache-Control"] == "no-store", answer.request.path
        assert answer.headers["Referrer-Policy"] == "no-referrer", answer.request.path
    # Other pages keep the site's policy.
    assert client.get("/subscribe").headers["Referrer-Policy"] == "strict-origin-when-cross-origin"
