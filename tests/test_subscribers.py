"""`/api/v1/subscribers` and `/api/v1/subscribe` through HTTP: double opt-in end to end over a
real SMTP server, validation, no enumeration, the keyed list, the admin batch, rate limits."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine

from extensions import db
from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text

NOW = "2026-11-20T12:00:00Z"


def confirm_link(message) -> str:
    return re.search(r"(http://\S+/subscribe/confirm\?token=\S+)", body_text(message)).group(1)


def path_of(url: str) -> str:
    return url.split("localhost", 1)[1]


@time_machine.travel(NOW, tick=False)
def test_double_opt_in_over_http(client, desk, smtp):
    desk.paper("demo")
    response = client.post("/api/v1/subscribers", json={"email": "Reader@Example.com",
                                                         "cadence": "instant", "sections": ["World"]})
    assert response.status_code == 202
    assert response.get_json()["status"] == "accepted"
    cross = client.post("/api/v1/subscribers", json={"email": "x@example.com"},
                        headers={"Origin": "https://elsewhere.example"})
    assert cross.status_code == 202 and cross.headers["Access-Control-Allow-Origin"] == "*"
    [message] = smtp.to("reader@example.com")
    assert message["From"] == "The Demo Times <alerts@localhost.localdomain>"
    assert message.get_body(("html",)) is not None
    link = confirm_link(message)
    admin = desk.key(_paper(), "admin")
    rows = client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["subscribers"]
    row = next(r for r in rows if r["email"] == "reader@example.com")
    assert row["confirmed_at"] is None and row["sections"] == ["World"] and row["cadence"] == "instant"
    # A GET (what a mail scanner does) shows a button and confirms nothing.
    page = client.get(path_of(link))
    assert page.status_code == 200 and b"<form method=\"post\"" in page.data
    assert "ETag" not in page.headers
    rows = client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["subscribers"]
    assert next(r for r in rows if r["email"] == "reader@example.com")["confirmed_at"] is None
    token = link.split("token=", 1)[1]
    done = client.post("/subscribe/confirm", data={"token": token})
    assert done.status_code == 200 and b"is on the list" in done.data
    rows = client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["subscribers"]
    assert next(r for r in rows if r["email"] == "reader@example.com")["confirmed_at"] == NOW


def _paper():
    from models import Paper

    return db.session.query(Paper).filter_by(slug="demo").one()


def test_confirm_link_expires_after_seven_days(client, desk, smtp):
    desk.paper("demo")
    with time_machine.travel("2026-11-01T00:00:00Z", tick=False):
        client.post("/api/v1/subscribers", json={"email": "late@example.com"})
    token = confirm_link(smtp.messages[0]).split("token=", 1)[1]
    with time_machine.travel("2026-11-08T00:00:01Z", tick=False):
        assert client.post("/subscribe/confirm", data={"token": token}).status_code == 400
    assert client.post("/subscribe/confirm", data={"token": token + "x"}).status_code == 400


@time_machine.travel(NOW, tick=False)
def test_same_202_body_for_new_pending_and_confirmed(client, desk, smtp):
    desk.paper("demo")
    first = client.post("/api/v1/subscribers", json={"email": "a@example.com"})
    pending = client.post("/api/v1/subscribe", json={"email": "a@example.com"})
    token = confirm_link(smtp.messages[0]).split("token=", 1)[1]
    client.post("/subscribe/confirm", data={"token": token})
    confirmed = client.post("/api/v1/subscribers", json={"email": "a@example.com"})
    assert first.status_code == pending.status_code == confirmed.status_code == 202
    assert first.data == pending.data == confirmed.data
    # One confirm email only: at most one per address per 10 minutes, none once confirmed.
    assert len(smtp.to("a@example.com")) == 1


def test_confirm_email_at_most_once_per_ten_minutes(client, desk, smtp):
    desk.paper("demo")
    with time_machine.travel("2026-11-20T12:00:00Z", tick=False) as clock:
        client.post("/api/v1/subscribers", json={"email": "b@example.com"})
        clock.shift(timedelta(minutes=9))
        client.post("/api/v1/subscribers", json={"email": "b@example.com"})
        assert len(smtp.to("b@example.com")) == 1
        clock.shift(timedelta(minutes=2))
        client.post("/api/v1/subscribers", json={"email": "b@example.com"})
        assert len(smtp.to("b@example.com")) == 2


@pytest.mark.parametrize("body,field", [
    ({"email": "not-an-address"}, "email"),
    ({"email": "a@example.com", "cadence": "hourly"}, "cadence"),
    ({"email": "a@example.com", "sections": ["Sport"]}, "sections"),
    ({"email": "a@example.com", "colour": "red"}, "colour"),
    ({"email": "a@example.com", "cast": "maybe"}, "cast"),
    ({"email": "a@example.com", "cast": 0}, "cast"),  # a JSON boolean only (schemathesis found 0 taken)
    ({}, "email"),
])
def test_bad_bodies_are_422(client, desk, smtp, body, field):
    desk.paper("demo")
    response = client.post("/api/v1/subscribers", json=body)
    assert response.status_code == 422, response.get_json()
    assert response.mimetype == "application/problem+json"
    assert field in response.get_json()["errors"]
    assert smtp.messages == []


@pytest.mark.parametrize("body", [{"emails": ["a@example.com"]},
                                  {"emails": ["a@example.com"], "webhook": "https://hooks.example.com/x"},
                                  {"email": "a@example.com", "webhook": "https://hooks.example.com/x"}])
def test_the_admin_batch_without_a_key_is_401_naming_its_fields(client, desk, smtp, body):
    desk.paper("demo")
    response = client.post("/api/v1/subscribers", json=body)
    assert response.status_code == 401 and response.mimetype == "application/problem+json"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert all(f"`{name}`" in response.get_json()["detail"] for name in body if name != "email")
    assert smtp.messages == []


def test_the_public_and_admin_bodies_are_two_schemas_in_the_document(client, desk):
    """The public body lists no admin-only field; the admin batch keeps its own schema; each of
    the document's examples is accepted by the lane it belongs to."""
    paper = desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    for path in ("/api/v1/subscribers", "/api/v1/subscribe"):
        body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        assert body["schema"] == {"oneOf": [{"$ref": "#/components/schemas/SubscribeIn"},
                                            {"$ref": "#/components/schemas/SubscribeBatchIn"}]}
    public, batch = (doc["components"]["schemas"][name] for name in ("SubscribeIn", "SubscribeBatchIn"))
    assert public["required"] == ["email"] and public["additionalProperties"] is False
    assert not {"emails", "webhook"} & set(public["properties"])
    assert batch["required"] == ["emails"] and {"emails", "webhook"} <= set(batch["properties"])
    assert "email" not in batch["properties"]
    # Schema-valid public bodies are accepted without a key.
    for body in ({"email": "reader@example.com"},
                 {"email": "r2@example.com", "cadence": "weekly", "cast": False}):
        assert client.post("/api/v1/subscribers", json=body).status_code == 202
    admin = desk.key(paper, "admin")
    answer = client.post("/api/v1/subscribers", json={"emails": ["a@example.com", "b@example.com"]},
                         headers={"Authorization": f"Bearer {admin}"})
    assert answer.status_code == 202 and len(answer.get_json()["subscribers"]) == 2
    # A body that is neither of the two (one `email` beside the batch's fields) is refused.
    for mixed in ({"email": "c@example.com", "emails": ["d@example.com"]},
                  {"email": "c@example.com", "webhook": "https://hooks.example.com/x"}):
        refused = client.post("/api/v1/subscribers", json=mixed, headers={"Authorization": f"Bearer {admin}"})
        assert refused.status_code == 422 and set(refused.get_json()["errors"]) == set(mixed) - {"email"}


def test_non_json_is_415(client, desk):
    desk.paper("demo")
    response = client.post("/api/v1/subscribers", data="email=a@example.com",
                           content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415 and response.mimetype == "application/problem+json"


def test_private_paper_has_no_public_subscribe(client, desk):
    desk.paper("secret", public=False)
    response = client.post("/api/v1/subscribers", json={"email": "a@example.com"},
                           base_url="http://secret.localhost")
    assert response.status_code == 404


def test_keyed_list_read_and_admin(client, desk, smtp):
    paper = desk.paper("demo")
    read, admin = desk.key(paper, "read"), desk.key(paper, "admin")
    assert client.get("/api/v1/subscribers").status_code == 401
    client.post("/api/v1/subscribers", json={"email": "one@example.com"})
    client.post("/api/v1/subscribers", json={"email": "two@example.com", "cast": False})
    client.post("/subscribe/confirm", data={"token": confirm_link(smtp.to("one@example.com")[0]).split("token=")[1]})
    counts = client.get("/api/v1/subscribers", headers=auth(read))
    assert counts.get_json() == {"count": 2, "confirmed": 1}
    assert counts.headers["Cache-Control"] == "private, no-store"
    assert "Access-Control-Allow-Origin" not in counts.headers
    rows = client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()
    assert rows["count"] == 2
    two = next(r for r in rows["subscribers"] if r["email"] == "two@example.com")
    assert set(two) == {"email", "confirmed_at", "cadence", "sections", "cast", "last_sent_at", "bounces",
                        "suppressed_at", "suppressed_reason"}
    assert two["bounces"] == 0 and two["suppressed_at"] is None and two["suppressed_reason"] is None
    assert two["cast"] is False and two["sections"] == ["World", "Business", "Science"]
    assert two["cadence"] == "daily"


def test_admin_batch_with_webhook(client, desk, smtp, receiver):
    paper = desk.paper("demo")
    read, admin = desk.key(paper, "read"), desk.key(paper, "admin")
    emails = [f"r{i}@example.com" for i in range(3)]
    forbidden = client.post("/api/v1/subscribers", json={"emails": emails}, headers=auth(read, "X-Desk-Key"))
    assert forbidden.status_code == 403
    response = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                           json={"emails": emails, "webhook": receiver.url + "/hook", "cadence": "weekly"})
    assert response.status_code == 202
    body = response.get_json()["subscribers"]
    assert [r["email"] for r in body] == emails
    assert all(r["webhook_secret"].startswith("whsec_") for r in body)
    assert len({r["webhook_secret"] for r in body}) == 3
    assert sorted(m["To"] for m in smtp.messages) == emails
    rows = client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["subscribers"]
    assert all(r["confirmed_at"] is None and r["webhook"] == receiver.url + "/hook" for r in rows)
    assert {r["webhook_secret"] for r in rows} == {r["webhook_secret"] for r in body}
    plain = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"), json={"emails": ["p@example.com"]})
    assert plain.get_json() == {"subscribers": [{"email": "p@example.com"}]}


def test_admin_batch_limits_and_webhook_rules(client, desk, app):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    too_many = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                           json={"emails": [f"r{i}@example.com" for i in range(21)]})
    assert too_many.status_code == 422 and "emails" in too_many.get_json()["errors"]
    bad = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                      json={"emails": ["a@example.com", "nope"]})
    assert bad.status_code == 422
    app.config["WEBHOOK_ALLOW_PRIVATE"] = False
    try:
        for url in ("http://hooks.example.com/x", "https://127.0.0.1/x", "https://10.1.2.3/x",
                    "https://169.254.169.254/latest", "https://[::1]/x", "ftp://example.com/x"):
            response = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                                   json={"emails": ["a@example.com"], "webhook": url})
            assert response.status_code == 422, url
            assert "webhook" in response.get_json()["errors"]
    finally:
        app.config["WEBHOOK_ALLOW_PRIVATE"] = True


def test_rate_limits_answer_429_with_retry_after(make_app, still_clock):
    """Its own app with the limits on (the suite's app runs with RATELIMIT_ENABLED off)."""
    _hit_limits(make_app(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="memory://",
                         CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True))


def _hit_limits(limited):
    with limited.app_context():
        from tests.fixtures.newsroom import Desk

        Desk(limited).paper("demo")
        client = limited.test_client()
        codes = [client.post("/api/v1/subscribers", json={"email": f"c{i}@example.com"}).status_code
                 for i in range(6)]
        assert codes == [202] * 5 + [429]
        blocked = client.post("/api/v1/subscribe", json={"email": "z@example.com"})
        assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) > 0
        assert blocked.mimetype == "application/problem+json"
        # Per address: another client, the same address.
        other = {"REMOTE_ADDR": "10.9.9.9"}
        codes = [client.post("/api/v1/subscribers", json={"email": "same@example.com"},
                             environ_base={"REMOTE_ADDR": f"10.0.0.{i}"}).status_code for i in range(4)]
        assert codes == [202, 202, 202, 429]
        assert client.post("/api/v1/subscribers", json={"email": "fresh@example.com"},
                           environ_base=other).status_code == 202
        from extensions import db

        db.session.remove()


def test_local_parts_over_64_characters_are_refused(client, desk, smtp):
    desk.paper("demo")
    too_long = client.post("/api/v1/subscribers", json={"email": "a" * 65 + "@example.com"})
    assert too_long.status_code == 422 and "email" in too_long.get_json()["errors"]
    assert client.post("/api/v1/subscribers", json={"email": "a" * 64 + "@example.com"}).status_code == 202
    assert [m["To"] for m in smtp.messages] == ["a" * 64 + "@example.com"]


def test_addresses_are_stored_with_an_ascii_domain(client, desk, smtp):
    admin = desk.key(desk.paper("demo"), "admin")
    assert client.post("/api/v1/subscribers", json={"email": "Leser@Bücher.example"}).status_code == 202
    batch = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                        json={"emails": ["ünï@münchen.example"]})
    assert batch.status_code == 202
    assert batch.get_json()["subscribers"][0]["email"] == "ünï@xn--mnchen-3ya.example"
    rows = client.get("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key")).get_json()["subscribers"]
    assert sorted(r["email"] for r in rows) == ["leser@xn--bcher-kva.example", "ünï@xn--mnchen-3ya.example"]
    assert smtp.to("leser@xn--bcher-kva.example")
