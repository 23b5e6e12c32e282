"""PUBLIC_BASE_URL and MAIL_FROM: the origin of links and the sender of mail built outside a
request (`flask send-alerts`), checked at startup."""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
import time_machine

from app import create_app
from tests.fixtures.servers import body_text

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
BASE = "http://127.0.0.1:5000"


@pytest.fixture
def sender_settings(app):
    saved = {k: app.config.get(k) for k in ("PUBLIC_BASE_URL", "MAIL_FROM")}
    yield app.config
    app.config.update(saved)


def _join(client, smtp, email, host):
    assert client.post("/api/v1/subscribers", json={"email": email, "cadence": "instant"},
                       headers={"Host": host}).status_code == 202
    token = re.search(r"token=(\S+)", body_text(smtp.to(email)[-1])).group(1)
    assert client.post("/subscribe/confirm", data={"token": token}, headers={"Host": host}).status_code == 200


def test_send_alerts_links_are_under_public_base_url_and_from_is_mail_from(
        client, desk, runner, smtp, receiver, sender_settings):
    demo, gazette = desk.paper("demo"), desk.paper("gazette")
    with time_machine.travel(T, tick=False) as clock:
        _join(client, smtp, "reader@example.com", "localhost")
        _join(client, smtp, "other@example.com", "gazette.localhost")
        admin = desk.key(demo, "admin")
        assert client.post("/api/v1/subscribers", headers={"Authorization": f"Bearer {admin}"}, json={
            "emails": ["hook@example.com"], "webhook": receiver.url + "/hook", "cadence": "instant"}).status_code == 202
        token = re.search(r"token=(\S+)", body_text(smtp.to("hook@example.com")[-1])).group(1)
        assert client.post("/subscribe/confirm", data={"token": token}).status_code == 200
        story = desk.piece(demo, "Linked news", on_air_at=T + timedelta(minutes=5))
        other = desk.piece(gazette, "Gazette news", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        sender_settings.update(PUBLIC_BASE_URL=BASE + "/", MAIL_FROM="Paper Desk <alerts@example.com>")
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
    [alert] = [m for m in smtp.to("reader@example.com") if m["List-Unsubscribe"]]
    assert str(alert["From"]) == "Paper Desk <alerts@example.com>"
    assert re.fullmatch(re.escape(f"<{BASE}/subscribe/unsubscribe?token=") + r"\S+>", alert["List-Unsubscribe"])
    text = body_text(alert)
    assert f"{BASE}/stories/{story.slug}" in text
    assert "//localhost" not in text and f"{BASE}/subscribe/unsubscribe?token=" in text
    # Another paper keeps its own host, with the base URL's scheme and port.
    [gazette_alert] = [m for m in smtp.to("other@example.com") if m["List-Unsubscribe"]]
    assert f"http://gazette.localhost:5000/stories/{other.slug}" in body_text(gazette_alert)
    assert str(gazette_alert["From"]) == "Paper Desk <alerts@example.com>"
    [hook] = receiver.requests
    assert json.loads(hook["body"])["data"]["pieces"][0]["url"] == f"{BASE}/stories/{story.slug}"


def test_without_mail_from_an_ip_host_never_becomes_the_sender(client, desk, smtp):
    desk.paper("demo")
    assert client.post("/api/v1/subscribers", json={"email": "ip@example.com"},
                       headers={"Host": "127.0.0.1:5000"}).status_code == 202
    [confirm] = smtp.to("ip@example.com")
    assert str(confirm["From"]) == "The Demo Times <alerts@localhost.localdomain>"


@pytest.mark.parametrize("settings, message", [
    ({"MAIL_FROM": "Paper Desk <alerts@127.0.0.1>"}, "MAIL_FROM"),
    ({"MAIL_FROM": "not an address"}, "MAIL_FROM"),
    ({"PUBLIC_BASE_URL": "localhost:5000"}, "PUBLIC_BASE_URL"),
    ({"PUBLIC_BASE_URL": "http://127.0.0.1:5000/desk"}, "PUBLIC_BASE_URL"),
    ({"PUBLIC_BASE_URL": "https://elsewhere.example"}, "PAPER_DOMAIN"),
])
def test_bad_sender_settings_refuse_to_start(tmp_path, settings, message):
    with pytest.raises(ValueError, match=message):
        create_app({"TESTING": True, "INSTANCE_PATH": str(tmp_path), **settings})
