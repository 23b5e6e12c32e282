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


# The address filter over a table (no traffic: the function judges literals). An IPv6 form that
# embeds an IPv4 address is judged by that address.
ADDRESSES = {
    "8.8.8.8": True, "2606:4700:4700::1111": True, "::ffff:8.8.8.8": True,
    "2002:808:808::": True, "64:ff9b::808:808": True, "2001:0:808:808::fefe:fefe": True,
    "100.100.100.200": False, "100.64.0.1": False, "100.127.255.254": False,  # shared space
    "127.0.0.1": False, "10.1.2.3": False, "172.16.0.1": False, "192.168.1.1": False,
    "169.254.169.254": False, "0.0.0.0": False, "192.0.2.1": False, "198.18.0.1": False,
    "224.0.0.1": False, "240.0.0.1": False, "255.255.255.255": False, "192.0.0.170": False,
    "::1": False, "::": False, "fe80::1%eth0": False, "fc00::1": False, "2001:db8::1": False,
    "ff0e::1": False,
    "2002:7f00:1::": False, "2002:a9fe:a9fe::": False, "2002:6464:64c8::": False,  # 6to4
    "64:ff9b::7f00:1": False, "64:ff9b::a00:1": False, "64:ff9b:1::a9fe:a9fe": False,  # NAT64
    "2001:0:808:808::80ff:fffe": False, "2001:0:7f00:1::fefe:fefe": False,  # Teredo
    "::ffff:127.0.0.1": False, "::ffff:100.64.0.1": False, "::127.0.0.1": False,  # mapped, compatible
}


def test_the_address_filter_accepts_only_global_addresses():
    from services.http import is_public_address
    assert {address: is_public_address(address) for address in ADDRESSES} == ADDRESSES


def test_loopback_spelled_in_ipv6_forms_is_refused_at_the_api(client, desk, app):
    admin = desk.key(desk.paper("demo"), "admin")
    app.config["WEBHOOK_ALLOW_PRIVATE"] = False
    try:
        for host in ("[2002:7f00:1::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[64:ff9b::7f00:1]",
                     "[64:ff9b:1::7f00:1]", "[::127.0.0.1]", "[2001:0:7f00:1::80ff:fffe]"):
            response = client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                                   json={"emails": ["a@example.com"], "webhook": f"https://{host}/x"})
            assert response.status_code == 422, host
            assert "webhook" in response.get_json()["errors"]
    finally:
        app.config["WEBHOOK_ALLOW_PRIVATE"] = True
