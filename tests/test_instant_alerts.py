"""Instant alerts planned by `flask drain-outbox` as pieces air (no settle delay), every piece in
exactly one alert whichever of the drainer and cron's `send-alerts` plans it; and alert links
that always reach the app: `send-alerts` without PUBLIC_BASE_URL outside development refuses
and marks nothing sent, and `make run`'s recorded base URL is found by later commands.
Through the CLI and HTTP, with a real SMTP sink on loopback and a frozen clock."""
from __future__ import annotations

import re
import socket
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine
from sqlalchemy import func, select

from commands.worker import drain_once
from extensions import db
from models import AlertDelivery
from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text
from tests.test_alerts import T, alerts_to, join


def _air(client, admin, piece_id):
    answer = client.put(f"/api/v1/stories/{piece_id}/air", headers=auth(admin))
    assert answer.status_code == 200, answer.get_json()


def _drain(runner):
    result = runner.invoke(args=["drain-outbox", "--once"])  # one pass of the loop
    assert result.exit_code == 0, result.output
    return result.output


def test_drain_outbox_sends_an_instant_alert_within_seconds_of_airing(client, desk, runner, smtp):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "now@example.com", cadence="instant")
        join(client, smtp, "daily@example.com", cadence="daily")
        draft = desk.piece(paper, "Harbour cranes return", on_air_at=None)
        clock.move_to(T + timedelta(minutes=5))
        _air(client, admin, draft.id)
        clock.shift(timedelta(seconds=1))  # one poll later
        output = _drain(runner)
        # Planned by the change feed's instant-alerts consumer: one window, of the instant reader.
        assert "changes: 1 handled by instant-alerts" in output
        with db.engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(AlertDelivery)) == 1
        [alert] = alerts_to(smtp, "now@example.com")
        assert alert["Subject"] == "Harbour cranes return"
        # A digest keeps its cadence: the drainer plans instant windows only.
        assert alerts_to(smtp, "daily@example.com") == []
        # Cron's catch-up a while later finds the instant window already taken: no second copy.
        clock.shift(timedelta(minutes=5))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
        assert len(alerts_to(smtp, "now@example.com")) == 1
        assert len(alerts_to(smtp, "daily@example.com")) == 1


def test_an_idle_pass_plans_nothing_and_takes_no_lock(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "now@example.com", cadence="instant")
        desk.piece(paper, "Old news", on_air_at=T - timedelta(hours=1))  # before the reader joined
        clock.shift(timedelta(seconds=2))
        _drain(runner)
        _drain(runner)
        with db.engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(AlertDelivery)) == 0
    assert alerts_to(smtp, "now@example.com") == []


def test_continuous_airing_between_drainer_passes_and_cron_runs_loses_and_doubles_nothing(
        client, desk, runner, smtp):
    """Pieces air over HTTP before, between and after drainer passes and cron runs, some in the
    very instant a pass plans; every instant reader gets each piece exactly once."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    readers = ("a@example.com", "b@example.com")
    aired = []
    with time_machine.travel(T, tick=False) as clock:
        for reader in readers:
            join(client, smtp, reader, cadence="instant")
        drafts = [desk.piece(paper, f"Ferry timetable change {n}", on_air_at=None) for n in range(12)]
        clock.shift(timedelta(minutes=1))
        for n, draft in enumerate(drafts):
            _air(client, admin, draft.id)
            aired.append(draft.headline)
            if n % 3 == 0:
                _drain(runner)  # the same instant as the airing
            elif n % 3 == 1:
                clock.shift(timedelta(seconds=1))
                _drain(runner)
            else:
                clock.shift(timedelta(seconds=30))  # cron: its window ends 60 s ago
                assert runner.invoke(args=["send-alerts"]).exit_code == 0
        clock.shift(timedelta(minutes=2))
        _drain(runner)
        assert runner.invoke(args=["send-alerts"]).exit_code == 0
    for reader in readers:
        seen = Counter()
        for message in alerts_to(smtp, reader):
            text = body_text(message)
            seen.update(h for h in aired if re.search(rf"{re.escape(h)}\b(?!\d)", text))
        assert seen == Counter(aired), reader


@pytest.fixture
def production(app):
    """The suite's app as outside development: not TESTING, no PUBLIC_BASE_URL (restored after)."""
    saved = app.config["TESTING"], app.config.get("PUBLIC_BASE_URL")
    app.config.update(TESTING=False, PUBLIC_BASE_URL="")
    yield app
    app.config["TESTING"], app.config["PUBLIC_BASE_URL"] = saved


def test_send_alerts_without_a_base_url_refuses_and_marks_nothing_sent(client, desk, smtp, runner, production):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "reader@example.com", cadence="instant")
        desk.piece(paper, "Dead links", on_air_at=T + timedelta(minutes=1))
        clock.shift(timedelta(minutes=10))
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 1, result.output
        assert "PUBLIC_BASE_URL is not set" in result.output and "Nothing was planned" in result.output
        with db.engine.connect() as conn:
            assert conn.scalar(select(func.count()).select_from(AlertDelivery)) == 0
        assert alerts_to(smtp, "reader@example.com") == []
        # The drainer goes on with confirm mail, and says once why it sends no alerts.
        result = runner.invoke(args=["drain-outbox", "--once"])
        assert result.exit_code == 0
        assert "alerts are not planned or sent" in result.output
        assert alerts_to(smtp, "reader@example.com") == []


def test_the_base_url_make_run_records_reaches_later_commands_while_its_server_runs(
        client, desk, smtp, runner, production):
    paper = desk.paper("demo")
    recorded = Path(production.instance_path) / "public_base_url"
    server = socket.create_server(("127.0.0.1", 0))  # what `make run` serves on
    port = server.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    try:
        with time_machine.travel(T, tick=False) as clock:
            join(client, smtp, "reader@example.com", cadence="instant")
            story = desk.piece(paper, "Live links", on_air_at=T + timedelta(minutes=1))
            clock.shift(timedelta(minutes=10))
            production.config["PUBLIC_BASE_URL"] = base  # what `make run` sets
            assert runner.invoke(args=["run-info", "--port", str(port)]).exit_code == 0
            assert recorded.read_text().split() == [base, "port", str(port)]
            production.config["PUBLIC_BASE_URL"] = ""  # a later shell, without it
            result = runner.invoke(args=["send-alerts"])
            assert result.exit_code == 0, result.output
            assert f"send-alerts: links on {base} (recorded by `make run`, listening on port {port})" in result.output
        [alert] = alerts_to(smtp, "reader@example.com")
        assert f"{base}/stories/{story.slug}" in body_text(alert)

        # The server stops: its origin is no longer used (links to a port nothing serves).
        server.close()
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 1 and "PUBLIC_BASE_URL is not set" in result.output
        assert "is not running; ignored" in result.output
        result = runner.invoke(args=["drain-outbox", "--once"])
        assert result.exit_code == 0 and "drain-outbox: links on" in result.output
        assert "alerts are not planned or sent" in result.output
        # `make run` stopping removes the record altogether.
        assert runner.invoke(args=["run-info", "--forget"]).exit_code == 0
        assert not recorded.exists()
    finally:
        server.close()
        recorded.unlink(missing_ok=True)


def test_a_piece_dated_the_very_instant_a_pass_plans_is_planned_by_the_next_pass(app, client, desk, smtp):
    """Windows are half-open: a pass whose window ends at the instant a piece aired leaves it
    out; the next pass, a second later with nothing else new, must still plan it (not wait for
    cron's catch-up)."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "now@example.com", cadence="instant")
        draft = desk.piece(paper, "Lock gates reopen", on_air_at=None)
        clock.move_to(T + timedelta(minutes=5))
        _air(client, admin, draft.id)
        # Two passes of one drain-outbox loop.
        with app.app_context():
            drain_once()  # the same instant: its window ends where the piece begins
        assert alerts_to(smtp, "now@example.com") == []
        clock.shift(timedelta(seconds=1))
        with app.app_context():
            drain_once()
        [alert] = alerts_to(smtp, "now@example.com")
        assert alert["Subject"] == "Lock gates reopen"


def test_an_upgrade_replays_no_old_piece_and_each_pass_after_it_sends_only_what_is_new(
        app, client, desk, runner, smtp):
    """Migration 0024 places the instant-alert consumers' cursors after each paper's last public
    change and edition: the first pass after an upgrade hands them nothing old (no replay of the
    feed, no second alert), and the next airing is planned once."""
    from flask_migrate import downgrade, upgrade

    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "now@example.com", cadence="instant")
        drafts = [desk.piece(paper, f"Tide tables {n}", on_air_at=None) for n in range(2)]
        clock.move_to(T + timedelta(minutes=5))
        _air(client, admin, drafts[0].id)
        clock.shift(timedelta(seconds=1))
        assert "handled by instant-alerts" in _drain(runner)
        assert [m["Subject"] for m in alerts_to(smtp, "now@example.com")] == ["Tide tables 0"]
        with app.app_context():  # a deployment from before the consumers, upgraded
            db.session.remove()
            downgrade(revision="0023")
            db.session.remove()
            upgrade()
        output = _drain(runner)
        assert "instant-alerts" not in output, output  # the cursor was placed: nothing replayed
        _air(client, admin, drafts[1].id)
        clock.shift(timedelta(seconds=1))
        assert "changes: 1 handled by instant-alerts" in _drain(runner)
        _drain(runner)  # a restarted worker: its cursor is in the database, not in memory
    assert [m["Subject"] for m in alerts_to(smtp, "now@example.com")] == ["Tide tables 0", "Tide tables 1"]
