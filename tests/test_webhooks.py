"""Webhook deliveries through `flask send-alerts` / `flask deliver-webhooks` to a real HTTP
receiver on loopback: the documented signature recipe, retries with backoff, no redirects,
private targets refused."""
from __future__ import annotations

import hashlib
import hmac
import json
import re
from datetime import datetime, timedelta, timezone

import time_machine

from tests.fixtures.keys import auth
from tests.fixtures.servers import Receiver, body_text

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)


def verify(secret: str, header: str, raw_body: bytes, now: int, tolerance: int = 300) -> bool:
    """The receiver's recipe, as docs/ALERTS.md gives it."""
    parts = dict(p.split("=", 1) for p in header.split(","))
    t = int(parts["t"])
    expected = hmac.new(secret.encode("utf-8"), f"{t}.".encode() + raw_body, hashlib.sha256).hexdigest()
    return abs(now - t) <= tolerance and hmac.compare_digest(expected, parts["v1"])


def hooked(client, desk, smtp, url, email="hook@example.com"):
    """A confirmed instant subscriber with a webhook; returns its secret."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    body = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                       json={"emails": [email], "webhook": url, "cadence": "instant"}).get_json()
    token = re.search(r"confirm\?token=(\S+)", body_text(smtp.to(email)[-1])).group(1)
    client.post("/subscribe/confirm", data={"token": token})
    return paper, body["subscribers"][0]["webhook_secret"]


def test_delivery_is_signed_and_verifies(client, desk, runner, smtp, receiver):
    with time_machine.travel(T, tick=False) as clock:
        paper, secret = hooked(client, desk, smtp, receiver.url + "/hooks/desk")
        piece = desk.piece(paper, "Signed news", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
        assert "webhooks: delivered 1, failed 0, pending 0" in result.output
    [request] = receiver.requests
    headers = request["headers"]
    assert request["path"] == "/hooks/desk"
    assert headers["X-Desk-Event"] == "alert" and headers["Content-Type"] == "application/json"
    assert verify(secret, headers["X-Desk-Signature"], request["body"], int((T + timedelta(minutes=10)).timestamp()))
    assert not verify(secret, headers["X-Desk-Signature"], request["body"] + b" ", int(T.timestamp()) + 600)
    assert not verify(secret, headers["X-Desk-Signature"], request["body"], int(T.timestamp()) + 1200)
    payload = json.loads(request["body"])
    assert payload["id"] == headers["X-Desk-Delivery"] and payload["type"] == "alert"
    assert payload["created_at"] == "2026-11-20T08:10:00Z"
    assert [p["headline"] for p in payload["data"]["pieces"]] == ["Signed news"]
    assert payload["data"]["pieces"][0]["url"] == f"http://localhost/stories/{piece.slug}"
    assert payload["data"]["edition"] is None


def test_a_failing_receiver_is_retried_later_with_backoff(client, desk, runner, smtp, receiver):
    with time_machine.travel(T, tick=False) as clock:
        paper, secret = hooked(client, desk, smtp, receiver.url + "/h")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        receiver.status = 500
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 1
        assert "webhooks: delivered 0, failed 1, pending 1" in result.output
        assert result.output.strip().endswith("sent 1, failed 0, skipped 0")  # the email went
        receiver.status = 200
        # Not due yet (first backoff: one minute): nothing is posted.
        assert runner.invoke(args=["deliver-webhooks"]).exit_code == 0
        assert len(receiver.requests) == 1
        clock.shift(timedelta(seconds=61))
        result = runner.invoke(args=["deliver-webhooks"])
        assert result.exit_code == 0 and "delivered 1" in result.output
    first, second = receiver.requests
    assert first["body"] == second["body"]
    assert first["headers"]["X-Desk-Delivery"] == second["headers"]["X-Desk-Delivery"]
    assert verify(secret, second["headers"]["X-Desk-Signature"], second["body"],
                  int((T + timedelta(minutes=11, seconds=1)).timestamp()))


def test_receiver_down_gets_it_on_a_later_run(client, desk, runner, smtp, receiver):
    url = receiver.url + "/h"
    receiver.stop()
    with time_machine.travel(T, tick=False) as clock:
        paper, _ = hooked(client, desk, smtp, url)
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        assert runner.invoke(args=["send-alerts"]).exit_code == 1
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        back = Receiver().start(port)  # the receiver comes back where it was
        try:
            clock.shift(timedelta(minutes=5))
            result = runner.invoke(args=["send-alerts"])
            assert result.exit_code == 0, result.output
            assert len(back.requests) == 1
        finally:
            back.stop()


def test_redirects_are_not_followed(client, desk, runner, smtp, receiver):
    with time_machine.travel(T, tick=False) as clock:
        paper, _ = hooked(client, desk, smtp, receiver.url + "/h")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        receiver.status, receiver.location = 302, receiver.url + "/elsewhere"
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 1 and "failed 1" in result.output
    assert [r["path"] for r in receiver.requests] == ["/h"]


def test_private_targets_refused_at_delivery_when_not_allowed(client, desk, runner, smtp, receiver, app):
    with time_machine.travel(T, tick=False) as clock:
        paper, _ = hooked(client, desk, smtp, receiver.url + "/h")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        app.config["WEBHOOK_ALLOW_PRIVATE"] = False
        try:
            result = runner.invoke(args=["send-alerts"])
        finally:
            app.config["WEBHOOK_ALLOW_PRIVATE"] = True
        assert result.exit_code == 1 and "webhooks: delivered 0, failed 1" in result.output
    assert receiver.requests == []
