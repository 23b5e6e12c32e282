"""Content webhooks for site owners (docs/API.md "Content webhooks"), through HTTP and `flask
drain-outbox --once` to a real receiver on loopback: endpoints and who may manage them, the
SSRF refusals, Standard Webhooks messages verified with the `standardwebhooks` package, the
delivery log, ping and redelivery, retries with backoff and the 24-hour disable."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import time_machine
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from tests.fixtures.keys import auth

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
ALL_EVENTS = ["piece.aired", "piece.revised", "piece.unaired", "edition.published"]


def register(client, admin, url, events=None):
    """Register an endpoint; returns the 201 answer's JSON."""
    response = client.post("/api/v1/webhooks", headers=auth(admin), json={"url": url, "events": events or ALL_EVENTS})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def drain(runner):
    result = runner.invoke(args=["drain-outbox", "--once"])
    assert result.exit_code == 0, result.output
    return result.output


def verified(secret, request):
    """The request's body as the `standardwebhooks` package verifies it (raises if it does not)."""
    return Webhook(secret).verify(request["body"], request["headers"])


@pytest.fixture
def paper(desk):
    return desk.paper("demo")


@pytest.fixture
def admin(desk, paper):
    return desk.key(paper, "admin")


# ----------------------------------------------------------------------------- endpoints


def test_create_list_get_and_delete(client, admin, receiver):
    with time_machine.travel(T, tick=False):
        created = register(client, admin, receiver.url + "/hook", ["piece.unaired", "piece.aired"])
    assert created["id"].startswith("wh_") and created["secret"].startswith("whsec_")
    assert created["events"] == ["piece.aired", "piece.unaired"]  # in the documented order
    assert created["created_at"] == "2026-11-20T08:00:00Z" and created["disabled_at"] is None
    Webhook(created["secret"])  # the package reads the secret
    listed = client.get("/api/v1/webhooks", headers=auth(admin)).get_json()["webhooks"]
    assert [w["id"] for w in listed] == [created["id"]] and "secret" not in listed[0]
    one = client.get(f"/api/v1/webhooks/{created['id']}", headers=auth(admin))
    assert one.status_code == 200 and one.get_json()["disabled_reason"] is None and "secret" not in one.get_json()
    assert client.delete(f"/api/v1/webhooks/{created['id']}", headers=auth(admin)).status_code == 204
    assert client.get(f"/api/v1/webhooks/{created['id']}", headers=auth(admin)).status_code == 404
    assert client.get("/api/v1/webhooks", headers=auth(admin)).get_json()["webhooks"] == []


def test_location_header_names_the_endpoint(client, admin, receiver):
    response = client.post("/api/v1/webhooks", headers=auth(admin),
                           json={"url": receiver.url, "events": ["piece.aired"]})
    assert response.headers["Location"].endswith(f"/api/v1/webhooks/{response.get_json()['id']}")


def test_only_admin_keys_manage_webhooks(client, desk, paper, admin, receiver):
    created = register(client, admin, receiver.url)
    hook = f"/api/v1/webhooks/{created['id']}"
    for headers, status in [({}, 401), (auth(desk.key(paper, "read")), 403)]:
        assert client.get("/api/v1/webhooks", headers=headers).status_code == status
        assert client.get(hook, headers=headers).status_code == status
        assert client.post("/api/v1/webhooks", headers=headers,
                           json={"url": receiver.url, "events": ["piece.aired"]}).status_code == status
        assert client.post(hook + "/ping", headers=headers).status_code == status
        assert client.get(hook + "/deliveries", headers=headers).status_code == status
        assert client.delete(hook, headers=headers).status_code == status
    # Another paper's admin key is refused here, and that paper sees none of this one's endpoints.
    other = desk.paper("other")
    other_admin = desk.key(other, "admin")
    assert client.get(hook, headers=auth(other_admin)).status_code in (401, 403)
    assert client.get(hook, headers=auth(other_admin), base_url="http://other.localhost").status_code == 404
    assert client.get(hook, headers=auth(admin)).status_code == 200


def test_unknown_event_and_bad_bodies_are_422(client, admin, receiver):
    for body in [{"url": receiver.url, "events": ["piece.eaten"]}, {"url": receiver.url, "events": []},
                 {"url": receiver.url}, {"events": ["piece.aired"]},
                 {"url": receiver.url, "events": ["piece.aired"], "extra": 1}]:
        response = client.post("/api/v1/webhooks", headers=auth(admin), json=body)
        assert response.status_code == 422, body
        assert response.mimetype == "application/problem+json"


def test_private_targets_refused_when_not_allowed(client, admin, app):
    app.config["WEBHOOK_ALLOW_PRIVATE"] = False
    try:
        for url in ["http://example.com/hook", "https://127.0.0.1/x", "https://localhost/x", "https://[::1]/x",
                    "https://[::ffff:127.0.0.1]/x", "https://[2002:7f00:1::]/x", "https://[64:ff9b::7f00:1]/x",
                    "https://10.0.0.1/x", "https://169.254.169.254/latest", "https://0.0.0.0/x",
                    "https://user:pw@example.com/x", "https://[::1/x"]:
            response = client.post("/api/v1/webhooks", headers=auth(admin),
                                   json={"url": url, "events": ["piece.aired"]})
            assert response.status_code == 422, url
            assert "url" in response.get_json()["errors"], url
    finally:
        app.config["WEBHOOK_ALLOW_PRIVATE"] = True


def test_private_target_refused_again_at_delivery(client, runner, desk, paper, admin, receiver, app):
    with time_machine.travel(T, tick=False):
        register(client, admin, receiver.url + "/h", ["piece.aired"])
        desk.piece(paper, "News", on_air_at=T)
        app.config["WEBHOOK_ALLOW_PRIVATE"] = False
        try:
            output = drain(runner)
        finally:
            app.config["WEBHOOK_ALLOW_PRIVATE"] = True
    assert "content webhooks: delivered 0, failed 1" in output
    assert receiver.requests == []


# ----------------------------------------------------------------------------- events


def test_airing_a_piece_delivers_a_verified_piece_aired(client, runner, desk, paper, admin, receiver):
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/hooks/desk", ["piece.aired"])
        piece = desk.piece(paper, "Signed news", on_air_at=None)
        clock.move_to(T + timedelta(minutes=3))
        assert client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(admin)).status_code == 200
        clock.shift(timedelta(seconds=7))
        output = drain(runner)
        assert "content webhooks: delivered 1, failed 0, pending 0" in output
        [request] = receiver.requests
        payload = verified(hook["secret"], request)
    headers = request["headers"]
    assert request["path"] == "/hooks/desk" and headers["Content-Type"] == "application/json"
    assert headers["webhook-id"].startswith("msg_")
    assert headers["webhook-timestamp"] == str(int((T + timedelta(minutes=3, seconds=7)).timestamp()))
    assert headers["webhook-signature"].startswith("v1,")
    assert payload["type"] == "piece.aired" and payload["timestamp"] == "2026-11-20T08:03:00Z"
    data = payload["data"]
    assert data["id"] == piece.id and data["slug"] == piece.slug and data["rev"] == 1
    assert data["headline"] == "Signed news" and data["content_hash"] == piece.content_hash
    assert data["on_air_at"] == "2026-11-20T08:03:00Z"
    assert data["url"] == f"http://localhost/stories/{piece.slug}"
    assert data["api_url"] == f"http://localhost/api/v1/stories/{piece.id}"
    assert "prose" not in data
    # A tampered body or another secret does not verify.
    with time_machine.travel(T + timedelta(minutes=3, seconds=7), tick=False):
        with pytest.raises(WebhookVerificationError):
            Webhook(hook["secret"]).verify(request["body"] + b" ", headers)
        other = client.post("/api/v1/webhooks", headers=auth(admin),
                            json={"url": receiver.url, "events": ["piece.aired"]}).get_json()["secret"]
        with pytest.raises(WebhookVerificationError):
            Webhook(other).verify(request["body"], headers)


def test_revised_unaired_and_edition_published(client, runner, desk, paper, admin, receiver):
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h")
        piece = desk.piece(paper, "Changing news", on_air_at=T)  # aired: one piece.aired
        clock.shift(timedelta(minutes=1))
        assert client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin),
                            json={"headline": "Changed news"}).status_code == 200
        assert client.delete(f"/api/v1/stories/{piece.id}/air", headers=auth(admin)).status_code == 200
        # A revision of a piece off air is no news to the site.
        assert client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin),
                            json={"headline": "Quiet change"}).status_code == 200
        assert client.post("/api/v1/cast", headers=auth(admin), json={
            "day": "2026-11-20", "title": "The day", "video_url": "https://cdn.example.com/v.mp4",
            "poster_url": "https://cdn.example.com/p.jpg"}).status_code == 201
        drain(runner)
        payloads = [verified(hook["secret"], r) for r in receiver.requests]
    by_type = {p["type"]: p["data"] for p in payloads}
    assert sorted(by_type) == sorted(ALL_EVENTS) and len(payloads) == 4
    assert by_type["piece.revised"]["headline"] == "Changed news" and by_type["piece.revised"]["rev"] == 2
    assert by_type["piece.unaired"] == {"id": piece.id, "rev": 2}  # a tombstone, no content
    edition = by_type["edition.published"]
    assert edition["day"] == "2026-11-20" and edition["title"] == "The day"
    assert edition["url"].startswith("http://localhost/")


def test_an_edition_is_announced_by_the_worker_once_never_from_the_write(client, runner, desk, paper, admin,
                                                                        receiver):
    with time_machine.travel(T, tick=False):
        hook = register(client, admin, receiver.url + "/h", ["edition.published"])
        assert client.post("/api/v1/cast", headers=auth(admin), json={
            "day": "2026-11-20", "title": "The day", "video_url": "https://cdn.example.com/v.mp4",
            "poster_url": "https://cdn.example.com/p.jpg"}).status_code == 201
        # The write wrote the edition and nothing downstream: the message is the worker's.
        log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
        assert log == []
        assert "1 handled by edition-webhooks" in drain(runner)
        drain(runner)
    [request] = receiver.requests
    message = json.loads(request["body"])
    assert message["type"] == "edition.published" and message["timestamp"] == "2026-11-20T08:00:00Z"


def test_a_scheduled_piece_revised_before_it_airs_is_announced_as_revised_then(client, runner, desk, paper,
                                                                                 admin, receiver):
    at = T + timedelta(hours=2)
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired", "piece.revised"])
        piece = desk.piece(paper, "First headline", on_air_at=None)
        assert client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(admin),
                          json={"at": "2026-11-20T10:00:00Z"}).status_code == 200
        clock.shift(timedelta(minutes=30))
        revised = client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin), json={"headline": "Second headline"})
        assert revised.status_code == 200
        drain(runner)
        assert receiver.requests == []  # not due before it airs
        clock.move_to(at + timedelta(seconds=5))
        assert "content webhooks: delivered 1, failed 0, pending 0" in drain(runner)
        [payload] = [verified(hook["secret"], r) for r in receiver.requests]
    # One piece.aired (no piece.revised for what was never public), carrying the piece as it airs.
    assert payload["type"] == "piece.aired" and payload["timestamp"] == "2026-11-20T10:00:00Z"
    data = payload["data"]
    assert data["headline"] == "Second headline" and data["rev"] == 2
    assert data["content_hash"] == revised.get_json()["content_hash"]
    assert data["on_air_at"] == "2026-11-20T10:00:00Z"


def test_only_subscribed_events_are_sent(client, runner, desk, paper, admin, receiver):
    with time_machine.travel(T, tick=False):
        register(client, admin, receiver.url + "/h", ["piece.unaired"])
        desk.piece(paper, "News", on_air_at=T)
        drain(runner)
    assert receiver.requests == []


def test_ping_and_the_delivery_log(client, runner, admin, receiver):
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        ping = client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
        assert ping.status_code == 202 and ping.get_json()["status"] == "pending"
        log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()
        [row] = log["deliveries"]
        assert row["status"] == "pending" and row["attempts"] == 0 and row["next_attempt_at"] == "2026-11-20T08:00:00Z"
        clock.shift(timedelta(seconds=5))
        drain(runner)
        [request] = receiver.requests
        assert verified(hook["secret"], request)["type"] == "webhook.ping"
    log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()
    [row] = log["deliveries"]
    assert row["id"] == ping.get_json()["id"] and row["message_id"] == request["headers"]["webhook-id"]
    assert row["status"] == "delivered" and row["attempts"] == 1 and row["last_response_code"] == 200
    assert row["last_error"] is None and row["next_attempt_at"] is None
    assert row["delivered_at"] == "2026-11-20T08:00:05Z" and log["next_cursor"] is None


def test_the_log_pages_newest_first_with_a_cursor(client, admin, receiver):
    hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
    ids = [client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin)).get_json()["id"]
           for _ in range(5)]
    seen, url = [], f"/api/v1/webhooks/{hook['id']}/deliveries?limit=2"
    while url:
        response = client.get(url, headers=auth(admin))
        body = response.get_json()
        seen += [row["id"] for row in body["deliveries"]]
        if body["next_cursor"]:
            assert 'rel="next"' in response.headers["Link"]
            url = f"/api/v1/webhooks/{hook['id']}/deliveries?limit=2&cursor={body['next_cursor']}"
        else:
            url = None
    assert seen == ids[::-1]
    for bad in ["nonsense!", "ZGx2Ong", "eHl6OjE"]:
        response = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries?cursor={bad}", headers=auth(admin))
        assert response.status_code == 400, bad


def test_redelivery_keeps_the_webhook_id(client, runner, admin, receiver):
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        first = client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin)).get_json()
        drain(runner)
        clock.shift(timedelta(hours=2))
        again = client.post(f"/api/v1/webhooks/{hook['id']}/deliveries/{first['id']}/redeliver", headers=auth(admin))
        assert again.status_code == 202
        assert again.get_json()["message_id"] == first["message_id"] and again.get_json()["id"] != first["id"]
        drain(runner)
        one, two = receiver.requests
        assert verified(hook["secret"], two)["type"] == "webhook.ping"
    assert one["headers"]["webhook-id"] == two["headers"]["webhook-id"] == first["message_id"]
    assert one["body"] == two["body"]
    assert int(two["headers"]["webhook-timestamp"]) - int(one["headers"]["webhook-timestamp"]) == 7200
    missing = client.post(f"/api/v1/webhooks/{hook['id']}/deliveries/dlv_nope/redeliver", headers=auth(admin))
    assert missing.status_code == 404


# ----------------------------------------------------------------------------- failure


def test_a_failing_receiver_is_retried_with_backoff(client, runner, desk, paper, admin, receiver):
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        desk.piece(paper, "News", on_air_at=T)
        receiver.status = 500
        output = drain(runner)
        assert "content webhooks: delivered 0, failed 1, pending 1" in output
        [row] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
        assert row["status"] == "pending" and row["last_response_code"] == 500 and row["last_error"] == "HTTP 500"
        assert row["next_attempt_at"] == "2026-11-20T08:01:00Z"
        drain(runner)  # not due yet
        assert len(receiver.requests) == 1
        clock.shift(timedelta(minutes=1))
        drain(runner)  # second failure: the wait doubles
        [row] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
        assert row["attempts"] == 2 and row["next_attempt_at"] == "2026-11-20T08:03:00Z"
        receiver.status = 200
        clock.shift(timedelta(minutes=2))
        drain(runner)
        assert len(receiver.requests) == 3
        verified(hook["secret"], receiver.requests[-1])
    assert len({r["headers"]["webhook-id"] for r in receiver.requests}) == 1
    [row] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
    assert row["status"] == "delivered" and row["attempts"] == 3
    assert client.get(f"/api/v1/webhooks/{hook['id']}", headers=auth(admin)).get_json()["disabled_at"] is None


def test_redirects_are_not_followed(client, runner, admin, receiver):
    hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
    receiver.status, receiver.location = 302, receiver.url + "/elsewhere"
    client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
    assert "failed 1" in drain(runner)
    assert [r["path"] for r in receiver.requests] == ["/h"]


def test_an_endpoint_failing_for_24_hours_is_disabled(client, runner, desk, paper, admin, receiver):
    receiver.status = 500
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        desk.piece(paper, "News", on_air_at=T)
        for _ in range(30):
            output = drain(runner)
            endpoint = client.get(f"/api/v1/webhooks/{hook['id']}", headers=auth(admin)).get_json()
            if endpoint["disabled_at"]:
                break
            clock.shift(timedelta(hours=1))
        assert "disabled 1" in output
    disabled_at = datetime.fromisoformat(endpoint["disabled_at"].replace("Z", "+00:00"))
    assert T + timedelta(hours=24) <= disabled_at <= T + timedelta(hours=30)
    assert "failed for 24 hours (since 2026-11-20T08:00:00Z)" in endpoint["disabled_reason"]
    assert "HTTP 500" in endpoint["disabled_reason"]
    log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
    assert [row["status"] for row in log] == ["failed"]
    # Disabled: no new messages, no ping, no redelivery, nothing posted.
    before = len(receiver.requests)
    receiver.status = 200
    with time_machine.travel(disabled_at + timedelta(minutes=1), tick=False):
        desk.piece(paper, "Later news", on_air_at=disabled_at + timedelta(minutes=1))
        assert client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin)).status_code == 409
        assert client.post(f"/api/v1/webhooks/{hook['id']}/deliveries/{log[0]['id']}/redeliver",
                           headers=auth(admin)).status_code == 409
        drain(runner)
    assert len(receiver.requests) == before
    after = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
    assert len(after) == len(log)


def test_a_success_ends_the_failure_streak(client, runner, desk, paper, admin, receiver):
    receiver.status = 500
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        desk.piece(paper, "News", on_air_at=T)
        for _ in range(20):  # hourly runs: its attempts back off to T+22h by the last one
            drain(runner)
            clock.shift(timedelta(hours=1))
        receiver.status = 200
        client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
        assert "delivered 1, failed 0" in drain(runner)  # the ping only: the piece's message is not due
        receiver.status = 500  # the piece's message keeps failing: a new streak, 22 h in
        for _ in range(12):
            clock.shift(timedelta(hours=1))
            drain(runner)
    endpoint = client.get(f"/api/v1/webhooks/{hook['id']}", headers=auth(admin)).get_json()
    assert endpoint["disabled_at"] is None
    statuses = [r["status"] for r in client.get(f"/api/v1/webhooks/{hook['id']}/deliveries",
                                                 headers=auth(admin)).get_json()["deliveries"]]
    assert statuses == ["delivered", "failed"]  # the piece's message given up after 24 h


def test_a_message_is_given_up_after_24_hours(client, runner, admin, receiver):
    receiver.status = 500
    with time_machine.travel(T, tick=False) as clock:
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
        for _ in range(30):
            drain(runner)
            clock.shift(timedelta(hours=1))
    [row] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
    assert row["status"] == "failed" and row["next_attempt_at"] is None
    failed_at = datetime.fromisoformat(row["failed_at"].replace("Z", "+00:00"))
    assert T + timedelta(hours=24) <= failed_at <= T + timedelta(hours=30)
    # Backoff: fewer attempts than the runs that could have made one.
    assert 5 <= row["attempts"] < 25


def test_a_deleted_endpoint_gets_nothing(client, runner, desk, paper, admin, receiver):
    with time_machine.travel(T, tick=False):
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        desk.piece(paper, "News", on_air_at=T)
        assert client.delete(f"/api/v1/webhooks/{hook['id']}", headers=auth(admin)).status_code == 204
        drain(runner)
        desk.piece(paper, "More news", on_air_at=T)
        drain(runner)
    assert receiver.requests == []


def test_a_cancelled_scheduled_airing_sends_nothing(client, runner, desk, paper, admin, receiver):
    hook = register(client, admin, receiver.url + "/h", ["piece.aired", "piece.unaired"])
    with time_machine.travel(T, tick=False) as clock:
        piece = desk.piece(paper, "Later", on_air_at=None)
        assert client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(admin),
                          json={"at": "2026-11-20T09:00:00Z"}).status_code == 200
        drain(runner)
        assert client.delete(f"/api/v1/stories/{piece.id}/air", headers=auth(admin)).status_code in (200, 204)
        clock.move_to(T + timedelta(hours=2))
        drain(runner)
    log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()
    assert log["deliveries"] == [] and receiver.requests == []


def test_a_consumer_that_fails_on_one_paper_retries_it_and_serves_the_others(app, client, runner, desk, paper,
                                                                              admin, receiver, monkeypatch):
    from services.delivery import change_stream, content_webhooks

    hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
    real = content_webhooks.on_changes
    failing = {"left": 1}

    def flaky(row_paper, changes, now):
        if failing["left"]:
            failing["left"] -= 1
            raise RuntimeError("a bad row")
        return real(row_paper, changes, now)

    monkeypatch.setattr(change_stream, "CONSUMERS", (change_stream.Consumer("content-webhooks", flaky),))
    with time_machine.travel(T, tick=False):
        desk.piece(paper, "Aired once")
        assert "consumer failed: content-webhooks/" in runner.invoke(args=["drain-outbox", "--once"]).output
        assert receiver.requests == []
        drain(runner)
        [payload] = [verified(hook["secret"], r) for r in receiver.requests]
    assert payload["type"] == "piece.aired" and payload["data"]["headline"] == "Aired once"


def test_old_rows_are_pruned(client, runner, admin, receiver, app):
    hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
    with time_machine.travel(T, tick=False) as clock:
        client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
        drain(runner)
        clock.shift(timedelta(days=app.config["OUTBOX_RETENTION_DAYS"] + 1))
        client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
        output = drain(runner)
    assert "pruned 1" in output
    log = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=auth(admin)).get_json()["deliveries"]
    assert [row["status"] for row in log] == ["delivered"]


def test_the_body_is_the_documented_shape(client, runner, admin, receiver):
    with time_machine.travel(T, tick=False):
        hook = register(client, admin, receiver.url + "/h", ["piece.aired"])
        client.post(f"/api/v1/webhooks/{hook['id']}/ping", headers=auth(admin))
        drain(runner)
    body = json.loads(receiver.requests[0]["body"])
    assert list(body) == ["type", "timestamp", "data"] and body["data"] == {"endpoint": hook["id"]}
