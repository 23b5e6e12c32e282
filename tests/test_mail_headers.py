"""Values that end up in mail headers (nameplate, section and persona names) are one line:
refused with a line break at the door (422 per field), and collapsed to one line when mail is
built, so a row stored before the door was shut cannot break a send run or a subscribe."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
import time_machine

from extensions import db
from models import Paper
from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
EVIL = "The Demo Desk\r\nBcc: x@evil.example"


@pytest.mark.parametrize("path, method, body, field", [
    ("/api/v1/config", "patch", {"nameplate": EVIL}, "nameplate"),
    ("/api/v1/config", "patch", {"nameplate": "Tab\tbed"}, "nameplate"),
    ("/api/v1/config", "patch", {"nameplate": "Line\u2028separated"}, "nameplate"),
    ("/api/v1/sections", "post", {"name": "World\nBcc: x@evil.example"}, "name"),
    ("/api/v1/sections/world", "patch", {"name": "World\r"}, "name"),
    ("/api/v1/personas", "post", {"name": "Nova\r\nReed", "declared_ai": True}, "name"),
    ("/api/v1/personas/ada-quill", "patch", {"name": "Ada\nQuill"}, "name"),
])
def test_header_values_with_line_breaks_are_422_per_field(client, desk, path, method, body, field):
    paper = desk.paper("demo", nameplate="The Demo Times")
    admin = auth(desk.key(paper, "admin"))
    response = getattr(client, method)(path, json=body, headers=admin)
    assert response.status_code == 422, response.get_json()
    assert list(response.get_json()["errors"]) == [field]
    assert client.get("/api/v1").get_json()["nameplate"] == "The Demo Times"


def test_a_stored_line_break_neither_stops_send_alerts_nor_subscribe(client, desk, runner, smtp):
    demo = desk.paper("demo")
    other = desk.paper("other", nameplate="The Other Times")
    with time_machine.travel(T, tick=False) as clock:
        for paper, email in ((demo, "one@example.com"), (other, "two@example.com")):
            host = "localhost" if paper is demo else "other.localhost"
            assert client.post("/api/v1/subscribers", json={"email": email, "cadence": "instant"},
                               headers={"Host": host}).status_code == 202
            token = re.search(r"token=(\S+)", body_text(smtp.to(email)[-1])).group(1)
            assert client.post("/subscribe/confirm", data={"token": token},
                               headers={"Host": host}).status_code == 200
        # Written behind the API's back, as a row from before the check would be.
        db.session.get(Paper, demo.id).nameplate = EVIL
        db.session.commit()
        desk.piece(demo, "News", on_air_at=T + timedelta(minutes=5))
        desk.piece(other, "Other news", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
        assert result.output.strip().splitlines()[-1] == "sent 2, failed 0, skipped 0"
        [alert] = [m for m in smtp.to("one@example.com") if m["List-Unsubscribe"]]
        assert alert["Subject"] == "News"
        assert alert["From"].addresses[0].display_name == "The Demo Desk Bcc: x@evil.example"
        assert alert["Bcc"] is None and "evil" not in str(alert["To"])
        assert [m for m in smtp.to("two@example.com") if m["List-Unsubscribe"]]

        # Public subscribe on the paper with the bad row: 202 and a one-line confirm mail.
        response = client.post("/api/v1/subscribers", json={"email": "three@example.com"})
        assert response.status_code == 202, response.get_json()
        [confirm] = smtp.to("three@example.com")
        assert confirm["Bcc"] is None and "\n" not in confirm["Subject"]
    assert all(m["Bcc"] is None for m in smtp.messages)
