"""Webhook timing under `flask send-alerts`: each delivery is signed with the clock when its
request leaves (not when the run started), POSTs run a few at a time so a hanging receiver
holds one slot, and a run stops starting deliveries when its time budget is spent."""
from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone

import pytest
import time_machine
from sqlalchemy import select

from extensions import db
from models import WebhookDelivery
from services.delivery import webhooks
from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)


@pytest.fixture
def hook_settings(app):
    saved = {k: app.config.get(k) for k in ("WEBHOOK_CONCURRENCY", "WEBHOOK_RUN_SECONDS", "WEBHOOK_TIMEOUT_SECONDS")}
    yield app.config
    app.config.update(saved)


def _hooks(client, desk, smtp, receiver, paths: list[str]) -> dict[str, str]:
    """One confirmed instant subscriber per path, each with its webhook; {path: secret}."""
    paper = desk.paper("demo")
    admin = auth(desk.key(paper, "admin"))
    secrets = {}
    for n, path in enumerate(paths):
        email = f"hook{n}@example.com"
        body = client.post("/api/v1/subscribers", headers=admin, json={
            "emails": [email], "webhook": receiver.url + path, "cadence": "instant"}).get_json()
        token = re.search(r"confirm\?token=(\S+)", body_text(smtp.to(email)[-1])).group(1)
        assert client.post("/subscribe/confirm", data={"token": token}).status_code == 200
        secrets[path] = body["subscribers"][0]["webhook_secret"]
    desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
    return secrets


def test_each_delivery_is_signed_when_it_is_sent_not_when_the_run_started(
        client, desk, runner, smtp, receiver, hook_settings):
    hook_settings["WEBHOOK_CONCURRENCY"] = 1  # one after another: each waits for the one before
    with time_machine.travel(T, tick=False) as clock:
        secrets = _hooks(client, desk, smtp, receiver, ["/a", "/b", "/c"])
        clock.move_to(T + timedelta(minutes=10))
        # Each receiver takes four minutes to answer; by the third, the run is eight minutes old.
        receiver.on_request = lambda record: clock.shift(timedelta(minutes=4))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
        assert "webhooks: delivered 3, failed 0, pending 0" in result.output
    assert len(receiver.requests) == 3
    for request in receiver.requests:
        t = int(re.match(r"t=(\d+),", request["headers"]["X-Desk-Signature"]).group(1))
        assert t == int(request["received_at"])
        assert webhooks.verify(secrets[request["path"]], request["headers"]["X-Desk-Signature"], request["body"],
                               int(request["received_at"]))
    assert sorted(int(r["received_at"]) for r in receiver.requests) == [
        int((T + timedelta(minutes=m)).timestamp()) for m in (10, 14, 18)]


def test_hanging_receivers_each_hold_one_slot_not_the_run(
        client, desk, runner, smtp, receiver, hook_settings, monkeypatch):
    hook_settings["WEBHOOK_TIMEOUT_SECONDS"] = 1.0
    hook_settings["WEBHOOK_CONCURRENCY"] = 4
    receiver.hang = {"/slow1", "/slow2", "/slow3"}
    with time_machine.travel(T, tick=False) as clock:
        _hooks(client, desk, smtp, receiver, ["/slow1", "/slow2", "/slow3", "/fast1", "/fast2", "/fast3"])
        clock.move_to(T + timedelta(minutes=10))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 1
        assert "webhooks: delivered 3, failed 3, pending 3" in result.output
    # Each hanging receiver held its own slot: all three were asked before the first one's
    # timeout (1 s) ran out. One after another, each would have waited for that timeout.
    slow = sorted(r["arrived"] for r in receiver.requests if r["path"].startswith("/slow"))
    assert len(slow) == 3 and slow[-1] - slow[0] < 0.9, slow
    assert len(receiver.requests) == 6
    db.session.expire_all()
    rows = db.session.scalars(select(WebhookDelivery).order_by(WebhookDelivery.url)).all()
    failed = [r for r in rows if r.delivered_at is None]
    assert sorted(r.url.rsplit("/", 1)[1] for r in failed) == ["slow1", "slow2", "slow3"]
    assert all("timed out" in r.last_error and r.next_attempt_at == T + timedelta(minutes=11) for r in failed)


def test_a_run_stops_starting_deliveries_when_its_budget_is_spent(
        client, desk, runner, smtp, receiver, hook_settings, monkeypatch):
    hook_settings["WEBHOOK_TIMEOUT_SECONDS"] = 1.0
    hook_settings.update(WEBHOOK_CONCURRENCY=2, WEBHOOK_RUN_SECONDS=1.5)
    paths = [f"/hang{n}" for n in range(8)]
    receiver.hang = set(paths)
    with time_machine.travel(T, tick=False) as clock:
        _hooks(client, desk, smtp, receiver, paths)
        clock.move_to(T + timedelta(minutes=10))
        started = time.monotonic()
        result = runner.invoke(args=["send-alerts"])
        waited = time.monotonic() - started
    assert "out of time" in result.output and "webhooks: delivered 0, failed 4, pending 8" in result.output
    # Two rounds of two 1-second timeouts, then no more: bounded whatever the load (the
    # receivers hang for a minute, so a run that kept starting deliveries would take longer).
    assert waited < 10, waited
    assert len(receiver.requests) == 4
    db.session.expire_all()
    attempts = sorted(r.attempts for r in db.session.scalars(select(WebhookDelivery)))
    assert attempts == [0, 0, 0, 0, 1, 1, 1, 1]
