"""`flask send-alerts` over a real SMTP server on loopback, with a frozen clock: cadences,
sections, cast, idempotence, crash safety, SMTP failures, unsubscribe headers and one-click."""
from __future__ import annotations

import dataclasses
import email
import email.policy
import os
import re
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone

import pytest
import time_machine
from sqlalchemy import func, select

from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text, free_port

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)  # a Friday, ISO week 47


def join(client, smtp, email, **prefs):
    """Subscribe over HTTP and press the confirm button, like a reader."""
    assert client.post("/api/v1/subscribers", json={"email": email, **prefs}).status_code == 202
    link = re.search(r"/subscribe/confirm\?token=(\S+)", body_text(smtp.to(email)[-1])).group(1)
    assert client.post("/subscribe/confirm", data={"token": link}).status_code == 200


def run(runner, *args):
    result = runner.invoke(args=["send-alerts", *args])
    return result, result.output.strip().splitlines()[-1] if result.output.strip() else ""


def alerts_to(smtp, email):
    return [m for m in smtp.to(email) if m["List-Unsubscribe"]]


def test_cadences_sections_and_cast_as_the_clock_moves(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "instant@example.com", cadence="instant", sections=["World"])
        join(client, smtp, "daily@example.com", cadence="daily")
        join(client, smtp, "weekly@example.com", cadence="weekly", cast=False)
        client.post("/api/v1/subscribers", json={"email": "pending@example.com", "cadence": "instant"})
        desk.piece(paper, "World one", section="World", on_air_at=T + timedelta(hours=1))
        desk.piece(paper, "Business one", section="Business", on_air_at=T + timedelta(hours=1, minutes=30))
        desk.edition(paper, date(2026, 11, 19))  # published before anyone joined: not in a window
        clock.move_to(T + timedelta(hours=2))
        result, summary = run(runner)
        assert result.exit_code == 0, result.output
        assert summary == "sent 3, failed 0, skipped 0"
        [instant] = alerts_to(smtp, "instant@example.com")
        assert "World one" in body_text(instant) and "Business one" not in body_text(instant)
        assert instant["Subject"] == "World one"  # an instant alert is its headline
        [daily] = alerts_to(smtp, "daily@example.com")
        assert "World one" in body_text(daily) and "Business one" in body_text(daily)
        assert len(alerts_to(smtp, "weekly@example.com")) == 1
        assert alerts_to(smtp, "pending@example.com") == []

        # The same run again sends nothing twice.
        result, summary = run(runner)
        assert result.exit_code == 0 and summary.startswith("sent 0, failed 0")

        # A Business piece: the instant World reader gets nothing.
        desk.piece(paper, "Business two", section="Business", on_air_at=T + timedelta(hours=2, minutes=10))
        clock.move_to(T + timedelta(hours=2, minutes=20))
        assert run(runner)[1].startswith("sent 0,")
        assert len(alerts_to(smtp, "instant@example.com")) == 1

        # Instant: every run with something new; daily and weekly: not again the same day/week.
        desk.piece(paper, "World two", section="World", on_air_at=T + timedelta(hours=3))
        clock.move_to(T + timedelta(hours=4))
        assert run(runner)[1].startswith("sent 1,")
        assert "World two" in body_text(alerts_to(smtp, "instant@example.com")[-1])

        # Next UTC day (same ISO week): the daily digest, with the video edition of the day.
        desk.edition(paper, date(2026, 11, 20))  # published 2026-11-20 18:00
        clock.move_to(datetime(2026, 11, 21, 7, 0, tzinfo=timezone.utc))
        assert run(runner)[1].startswith("sent 2,")  # daily + instant (the edition)
        daily = alerts_to(smtp, "daily@example.com")[-1]
        assert "Business two" in body_text(daily) and "World two" in body_text(daily)
        assert "The cast, 2026-11-20" in body_text(daily)
        # Newest first, dated in words, the lead headline in the subject.
        assert daily["Subject"] == f"{paper.nameplate}, Saturday 21 November 2026: World two + 1 more"
        assert body_text(daily).index("World two") < body_text(daily).index("Business two")
        assert "daily digest: Saturday 21 November 2026" in body_text(daily)
        assert "World one" not in body_text(daily)
        assert len(alerts_to(smtp, "weekly@example.com")) == 1

        # Monday, ISO week 48: the weekly digest (cast off: no edition).
        clock.move_to(datetime(2026, 11, 23, 7, 0, tzinfo=timezone.utc))
        assert run(runner)[1].startswith("sent 1,")
        weekly = alerts_to(smtp, "weekly@example.com")[-1]
        assert "World two" in body_text(weekly) and "The cast" not in body_text(weekly)
        assert weekly["Subject"] == f"{paper.nameplate}, Week of 23 November 2026: World two + 1 more"
        assert len(alerts_to(smtp, "daily@example.com")) == 2


def test_every_alert_has_list_headers_and_one_click_stops_alerts(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "leaver@example.com", cadence="instant")
        desk.piece(paper, "First", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        run(runner)
        [alert] = alerts_to(smtp, "leaver@example.com")
        assert alert["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert alert["List-Id"].startswith("The Demo Times alerts <")
        assert alert.get_body(("html",)) is not None
        url = re.fullmatch(r"<(http://localhost/subscribe/unsubscribe\?token=\S+)>", alert["List-Unsubscribe"]).group(1)
        assert url in body_text(alert)
        path = url.split("localhost", 1)[1]
        # A GET shows the button and changes nothing.
        assert client.get(path).status_code == 200
        desk.piece(paper, "Second", on_air_at=T + timedelta(minutes=15))
        clock.move_to(T + timedelta(minutes=20))
        run(runner)
        assert len(alerts_to(smtp, "leaver@example.com")) == 2
        # RFC 8058 one-click: a form POST to the same URL.
        response = client.post(path, data={"List-Unsubscribe": "One-Click"})
        assert response.status_code == 200
        desk.piece(paper, "Third", on_air_at=T + timedelta(minutes=25))
        clock.move_to(T + timedelta(minutes=30))
        run(runner)
        assert len(alerts_to(smtp, "leaver@example.com")) == 2


def test_smtp_down_marks_nothing_sent_and_next_run_delivers(client, desk, runner, smtp, app):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        for i in range(3):
            join(client, smtp, f"r{i}@example.com", cadence="instant")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        app.config["SMTP_URL"] = f"smtp://127.0.0.1:{free_port()}"  # nothing listens there
        result, summary = run(runner)
        assert result.exit_code != 0
        assert summary == "sent 0, failed 3, skipped 0"
        app.config["SMTP_URL"] = smtp.url
        clock.move_to(T + timedelta(minutes=20))
        result, summary = run(runner)
        # The three recorded windows go out; nothing new is due for anyone.
        assert result.exit_code == 0 and summary == "sent 3, failed 0, skipped 3"
        assert all(len(alerts_to(smtp, f"r{i}@example.com")) == 1 for i in range(3))


def test_a_refused_message_does_not_poison_the_batch(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        for name in ("a", "bad", "c"):
            join(client, smtp, f"{name}@example.com", cadence="instant")
        smtp.refuse.add("bad@example.com")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result, summary = run(runner)
        assert result.exit_code == 1 and summary == "sent 2, failed 1, skipped 0"
        assert len(alerts_to(smtp, "a@example.com")) == len(alerts_to(smtp, "c@example.com")) == 1
        smtp.refuse.clear()
        # A 550 is final for that alert: not sent again; the address gets the next one.
        clock.move_to(T + timedelta(minutes=20))
        assert run(runner)[1] == "sent 0, failed 0, skipped 3"
        desk.piece(paper, "More", on_air_at=T + timedelta(minutes=25))
        clock.move_to(T + timedelta(minutes=30))
        assert run(runner)[1] == "sent 3, failed 0, skipped 0"
        [alert] = alerts_to(smtp, "bad@example.com")
        assert "More" in body_text(alert) and "News" not in body_text(alert)


def test_a_run_killed_mid_batch_is_completed_without_duplicates(client, desk, runner, smtp, app):
    from services.delivery import alerts, queues
    from services.links import PaperOrigins

    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        for i in range(6):
            join(client, smtp, f"k{i}@example.com", cadence="daily")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        now = datetime.now(timezone.utc).replace(microsecond=0)
        seen = []

        def killed_after_two(step):
            seen.append(step)
            if len(seen) == 2:
                raise KeyboardInterrupt  # the operator's Ctrl-C (or a crash) mid-batch

        with app.app_context():
            origins = PaperOrigins.from_config(app.config)
            alerts.plan_alerts(now, origins=origins)
            settings = dataclasses.replace(queues.settings_of(alerts.QUEUE, app.config), concurrency=1)
            with pytest.raises(KeyboardInterrupt):
                queues.run(alerts.queue_for(now, origins), settings, now, progress=killed_after_two)
        assert len([m for m in smtp.messages if m["List-Unsubscribe"]]) == 2
        clock.move_to(T + timedelta(minutes=30))
        result, summary = run(runner)
        assert summary == "sent 4, failed 0, skipped 6"  # 6 daily slots already recorded
        assert all(len(alerts_to(smtp, f"k{i}@example.com")) == 1 for i in range(6))


def test_file_outbox_when_no_smtp_url(client, desk, runner, app, tmp_path):
    paper = desk.paper("demo")
    app.config["OUTBOX_DIR"] = str(tmp_path / "outbox")
    with time_machine.travel(T, tick=False) as clock:
        client.post("/api/v1/subscribers", json={"email": "file@example.com", "cadence": "instant"})
        assert not os.path.exists(tmp_path / "outbox")  # queued; the drainer writes it
        assert runner.invoke(args=["drain-outbox", "--once"]).exit_code == 0
        [confirm] = os.listdir(tmp_path / "outbox")
        message = email.message_from_bytes((tmp_path / "outbox" / confirm).read_bytes(),
                                           policy=email.policy.default)
        token = re.search(r"confirm\?token=(\S+)", body_text(message)).group(1)
        client.post("/subscribe/confirm", data={"token": token})
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        assert run(runner)[1] == "sent 1, failed 0, skipped 0"
        assert len([f for f in os.listdir(tmp_path / "outbox") if f.endswith(".eml")]) == 2


@pytest.mark.slow
def test_two_concurrent_runs_alert_nobody_twice(client, desk, smtp, app):
    if app.backend != "postgresql":
        pytest.skip("two writers at once: PostgreSQL (SQLite has a single writer)")
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False):
        for i in range(40):
            client.post("/api/v1/subscribers", json={"email": f"c{i}@example.com", "cadence": "daily"})
        tokens = [re.search(r"confirm\?token=(\S+)", body_text(m)).group(1) for m in smtp.messages]
    with time_machine.travel(T, tick=False):
        for token in tokens:
            client.post("/subscribe/confirm", data={"token": token})
    # The subprocesses run on the real clock: the piece went on air before their windows end
    # (ALERT_SETTLE_SECONDS behind the clock).
    desk.piece(paper, "News", on_air_at=datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=5))
    env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "SMTP_URL": smtp.url,
           "FLASK_APP": "app", "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo",
           "PUBLIC_BASE_URL": "http://localhost"}
    flask = os.path.join(os.path.dirname(sys.executable), "flask")
    runs = [subprocess.Popen([flask, "send-alerts"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in runs]
    assert all(p.returncode == 0 for p in runs), outputs
    alerts = [m["To"] for m in smtp.messages if m["List-Unsubscribe"]]
    assert sorted(alerts) == sorted(f"c{i}@example.com" for i in range(40))


def test_seed_demo_subscribers_are_confirmed_mixed_and_sent_nothing_until_a_run(runner, client, desk, smtp, app):
    result = runner.invoke(args=["seed-demo", "--subscribers", "25"])
    assert result.exit_code == 0, result.output
    assert "demo: 25 confirmed subscribers (mixed), no email sent" in result.output
    assert smtp.messages == []  # seeding mails nobody
    from extensions import db
    from models import Paper

    key = desk.key(db.session.scalar(select(Paper).where(Paper.slug == "demo")), "admin")
    body = client.get("/api/v1/subscribers", headers=auth(key)).get_json()
    assert (body["count"], body["confirmed"]) == (25, 25)
    rows = body["subscribers"]
    assert [r["email"] for r in rows] == [f"reader{n:05d}@example.test" for n in range(1, 26)]
    assert {r["cadence"] for r in rows} == {"instant", "daily", "weekly"}
    assert len({tuple(r["sections"]) for r in rows}) >= 4 and {r["cast"] for r in rows} == {True, False}
    assert all(r["confirmed_at"] and r["last_sent_at"] is None for r in rows)
    # The private paper takes no subscribers; each reader's first window holds news.
    private = client.get("/api/v1", base_url="http://demo-private.localhost")
    assert private.status_code == 404
    result, summary = run(runner)
    assert summary == "sent 25, failed 0, skipped 0", result.output
    assert sorted(m["To"] for m in smtp.messages) == [r["email"] for r in rows]


def test_seed_demo_subscriber_cadence_sets_every_reader(runner, client, desk):
    result = runner.invoke(args=["seed-demo", "--paper", "gazette", "--pieces", "40",
                                 "--subscribers", "7", "--subscriber-cadence", "instant"])
    assert result.exit_code == 0, result.output
    from extensions import db
    from models import Paper, Subscriber

    paper = db.session.scalar(select(Paper).where(Paper.slug == "gazette"))
    cadences = db.session.scalars(select(Subscriber.cadence).where(Subscriber.paper_id == paper.id)).all()
    assert cadences == ["instant"] * 7
    assert runner.invoke(args=["seed-demo", "--subscriber-cadence", "hourly"]).exit_code == 2


def test_alerts_carry_non_ascii_text_and_long_lines_intact(client, desk, runner, smtp):
    paper = desk.paper("demo", nameplate="Le Québec Gazette — édition du soir")
    headline = "Café owners in Zürich “cautiously optimistic” as rents fall " + "é" * 90
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "lecteur@example.com", cadence="instant")
        desk.piece(paper, headline, dek="Prix = 4,50 € . and a trailing space ", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        assert run(runner)[1] == "sent 1, failed 0, skipped 0"
    [alert] = alerts_to(smtp, "lecteur@example.com")
    assert alert["From"].addresses[0].display_name == "Le Québec Gazette — édition du soir"
    assert alert["Subject"] == headline
    text, html = body_text(alert), alert.get_body(("html",)).get_content()
    assert headline in text and "Prix = 4,50 € . and a trailing space" in text
    assert headline in html and "List-Unsubscribe" not in text
    unsubscribe = re.fullmatch(r"<(\S+)>", alert["List-Unsubscribe"]).group(1)
    assert unsubscribe in text and unsubscribe in html
    assert re.match(r"<alert\.\d+\.\d+\.demo@localhost\.localdomain>$", alert["Message-ID"])


def test_ctrl_c_with_several_connections_records_what_is_in_flight(client, desk, runner, smtp, app):
    from extensions import db
    from models import AlertDelivery
    from services.delivery import alerts, queues
    from services.links import PaperOrigins

    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        for i in range(9):
            join(client, smtp, f"p{i}@example.com", cadence="daily")
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        now = datetime.now(timezone.utc).replace(microsecond=0)

        def interrupted(step):
            raise KeyboardInterrupt  # Ctrl-C while the other connections have messages out

        with app.app_context():
            origins = PaperOrigins.from_config(app.config)
            alerts.plan_alerts(now, origins=origins)
            settings = dataclasses.replace(queues.settings_of(alerts.QUEUE, app.config), concurrency=3)
            with pytest.raises(KeyboardInterrupt):
                queues.run(alerts.queue_for(now, origins), settings, now, progress=interrupted)
            accepted = len(alerts_to_all(smtp))
            assert 1 <= accepted <= 3  # no connection was given a second message
            # Every message the server accepted was recorded, in flight or not.
            assert db.session.scalar(select(func.count(AlertDelivery.id))
                                     .where(AlertDelivery.sent_at.is_not(None))) == accepted
        clock.move_to(T + timedelta(minutes=30))
        assert run(runner)[1] == f"sent {9 - accepted}, failed 0, skipped 9"
        assert all(len(alerts_to(smtp, f"p{i}@example.com")) == 1 for i in range(9))


def alerts_to_all(smtp):
    return [m for m in smtp.messages if m["List-Unsubscribe"]]
