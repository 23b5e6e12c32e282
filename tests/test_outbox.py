"""The confirm outbox: a public subscribe writes a row and answers without SMTP; `flask
drain-outbox` sends it with a bounded SMTP time, backs off on failure, gives up after the
limit, and never lets one bad row hold up the others; drainers on PostgreSQL share the rows
without sending one twice. Over real loopback SMTP servers (a sink, and one that never speaks)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
import time_machine
from sqlalchemy import select

from extensions import db
from models import OutboxMessage, Subscriber
from models.clock import utcnow
from services.delivery import outbox, queues
from tests.fixtures.servers import body_text
from tests.fixtures.statements import statements

NOW = "2026-11-20T12:00:00Z"


def _rows() -> list[OutboxMessage]:
    db.session.rollback()  # see what the app committed
    return list(db.session.scalars(select(OutboxMessage).order_by(OutboxMessage.id)))


def _drain(runner):
    result = runner.invoke(args=["drain-outbox", "--once"])
    assert result.exit_code == 0, result.output
    return result


def _token(message) -> str:
    return re.search(r"/subscribe/confirm\?token=(\S+)", body_text(message)).group(1)


@time_machine.travel(NOW, tick=False)
def test_subscribe_queues_and_drain_sends_one_working_confirm(client, desk, runner, smtp):
    desk.paper("demo")
    assert client.post("/api/v1/subscribers", json={"email": "ann@example.com"}).status_code == 202
    assert smtp.received == []  # nothing left during the request
    [row] = _rows()
    assert (row.kind, row.sent_at, row.attempts) == ("confirm", None, 0)

    assert "outbox: sent 1, retrying 0, failed 0" in _drain(runner).output
    [message] = smtp.received
    assert message["To"] == "ann@example.com" and message["Subject"].startswith("Confirm your")
    assert client.post("/subscribe/confirm", data={"token": _token(message)}).status_code == 200
    assert db.session.scalars(select(Subscriber)).one().confirmed_at is not None
    assert _rows()[0].sent_at is not None
    _drain(runner)
    assert len(smtp.received) == 1  # a sent row is never sent again


@time_machine.travel(NOW, tick=False)
def test_a_silent_smtp_server_never_holds_the_request(client, desk, silent_smtp):
    desk.paper("demo")
    started = time.monotonic()
    response = client.post("/api/v1/subscribers", json={"email": "bob@example.com"})
    assert response.status_code == 202 and response.get_json()["status"] == "accepted"
    assert time.monotonic() - started < 2  # the old path waited 20 s per SMTP read
    assert silent_smtp.accepted == 0  # not even a connection
    assert len(_rows()) == 1


def test_new_pending_and_confirmed_addresses_cost_the_same_statements(client, desk, runner, smtp):
    desk.paper("demo")
    with time_machine.travel(NOW, tick=False) as clock:
        client.post("/api/v1/subscribers", json={"email": "old@example.com"})
        _drain(runner)
        client.post("/subscribe/confirm", data={"token": _token(smtp.received[-1])})
        client.post("/api/v1/subscribers", json={"email": "wait@example.com"})
        clock.shift(timedelta(minutes=1))
        seen = {}
        for state, address in (("new", "new@example.com"), ("pending", "wait@example.com"),
                               ("confirmed", "old@example.com")):
            with statements() as seen[state]:
                response = client.post("/api/v1/subscribers", json={"email": address})
            assert response.status_code == 202 and response.get_json()["status"] == "accepted"
        assert seen["new"] == seen["pending"] == seen["confirmed"]
    # Only the new address queued a message: the pending one had one a minute ago.
    assert [r.subscriber_id for r in _rows()].count(None) == 0 and len(_rows()) == 3


def test_a_silent_server_bounds_the_drain_and_the_row_is_retried_later(client, desk, runner, app, silent_smtp,
                                                                        smtp, monkeypatch):
    desk.paper("demo")
    monkeypatch.setitem(app.config, "OUTBOX_SMTP_TIMEOUT", 0.5)
    with time_machine.travel(NOW, tick=False) as clock:
        client.post("/api/v1/subscribers", json={"email": "a@example.com"})
        client.post("/api/v1/subscribers", json={"email": "b@example.com"})
        monkeypatch.setitem(app.config, "SMTP_URL", silent_smtp.url)
        started = time.monotonic()
        result = _drain(runner)
        assert time.monotonic() - started < 3  # one bounded try, then the server counts as down
        assert "retrying 1" in result.output and "unreachable" in result.output
        assert "outbox: pending 2" in result.output  # both still waiting: the queue's depth
        first, second = _rows()
        assert first.attempts == 1 and first.next_attempt_at == utcnow() + timedelta(seconds=30)
        assert "timed out" in first.last_error and first.claimed_until is None
        assert second.attempts == 0 and second.claimed_until is None  # untouched, still due

        # The sink gets the production timeout: half a second is a slow answer on a busy machine.
        monkeypatch.setitem(app.config, "SMTP_URL", smtp.url)
        monkeypatch.setitem(app.config, "OUTBOX_SMTP_TIMEOUT", 10)
        _drain(runner)  # the second now; the first waits for its backoff
        assert [m["To"] for m in smtp.received] == ["b@example.com"]
        clock.shift(timedelta(seconds=30))
        _drain(runner)
        assert [m["To"] for m in smtp.received] == ["b@example.com", "a@example.com"]
        assert all(r.sent_at is not None for r in _rows())


def test_bad_rows_never_stop_the_rows_behind_them_and_give_up_with_a_reason(client, desk, runner, app, smtp):
    paper = desk.paper("demo")
    smtp.refuse.add("refused@example.com")
    with time_machine.travel(NOW, tick=False):
        # First in line: a row whose subscriber is gone, then one the server refuses for good.
        db.session.add(OutboxMessage(paper_id=paper.id, kind="confirm", subscriber_id=None,
                                     payload={}, created_at=utcnow(), next_attempt_at=utcnow()))
        db.session.commit()
        for address in ("refused@example.com", "fine@example.com"):
            client.post("/api/v1/subscribers", json={"email": address})
        result = _drain(runner)
        assert "sent 1, retrying 0, failed 2" in result.output
        assert [m["To"] for m in smtp.received] == ["fine@example.com"]
        by_subscriber = {r.subscriber_id: r for r in _rows()}
        assert by_subscriber[None].failed_at is not None and "gone" in by_subscriber[None].last_error
        refused = next(r for r in _rows() if r.subscriber_id and r.failed_at)
        assert refused.last_error.startswith("smtp 550")
        # Given up: the reader may ask again at once.
        assert db.session.scalar(select(Subscriber.confirm_sent_at).where(
            Subscriber.email == "refused@example.com")) is None


def test_temporary_failures_back_off_then_give_up(client, desk, runner, app, silent_smtp, monkeypatch):
    desk.paper("demo")
    monkeypatch.setitem(app.config, "OUTBOX_SMTP_TIMEOUT", 0.2)
    monkeypatch.setitem(app.config, "OUTBOX_MAX_ATTEMPTS", 3)
    with time_machine.travel(NOW, tick=False) as clock:
        client.post("/api/v1/subscribers", json={"email": "x@example.com"})
        for wait in (30, 60):
            _drain(runner)
            [row] = _rows()
            assert row.failed_at is None and row.next_attempt_at == utcnow() + timedelta(seconds=wait)
            _drain(runner)  # not due yet: not tried
            assert _rows()[0].attempts == row.attempts
            clock.shift(timedelta(seconds=wait))
        _drain(runner)
        [row] = _rows()
        assert row.attempts == 3 and row.failed_at is not None and row.sent_at is None


def test_send_alerts_drains_the_outbox_first(client, desk, runner, smtp):
    desk.paper("demo")
    with time_machine.travel(NOW, tick=False):
        client.post("/api/v1/subscribers", json={"email": "c@example.com"})
        result = runner.invoke(args=["send-alerts"])
        assert result.exit_code == 0, result.output
        assert "outbox: sent 1" in result.output and [m["To"] for m in smtp.received] == ["c@example.com"]


def test_two_drainers_on_postgresql_never_send_one_message_twice(client, desk, app, smtp, monkeypatch):
    if app.backend != "postgresql":
        pytest.skip("SKIP LOCKED is PostgreSQL's; SQLite has one writer at a time")
    desk.paper("demo")
    addresses = [f"r{i:02d}@example.com" for i in range(30)]
    for address in addresses:
        assert client.post("/api/v1/subscribers", json={"email": address}).status_code == 202
    start = threading.Barrier(2)
    reports = []

    def drainer():
        with app.app_context():  # its own session, its own connection
            start.wait()
            reports.append(queues.run(outbox.QUEUE, queues.settings_of(outbox.QUEUE, app.config), utcnow()))

    threads = [threading.Thread(target=drainer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(m["To"] for m in smtp.received) == addresses
    assert sum(r.delivered for r in reports) == 30 and all(r.delivered for r in reports)
    assert all(r.sent_at is not None for r in _rows())


@pytest.mark.slow
def test_the_drainer_loop_sends_within_a_poll_and_stops_cleanly_on_sigterm(client, desk, app, smtp):
    desk.paper("demo")
    env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "SMTP_URL": smtp.url,
           "FLASK_APP": "app", "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo",
           "SECRET_KEY": app.config["SECRET_KEY"], "OUTBOX_POLL_SECONDS": "0.2", "PYTHONUNBUFFERED": "1",
           "PUBLIC_BASE_URL": "http://localhost"}  # alert links' origin, outside development
    flask = os.path.join(os.path.dirname(sys.executable), "flask")
    drainer = subprocess.Popen([flask, "drain-outbox"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    try:
        # It says which origin its links use (commands/worker.py announce_origin), then polls.
        assert drainer.stdout.readline().startswith("drain-outbox: links on http://localhost (PUBLIC_BASE_URL)")
        line = drainer.stdout.readline()
        while line and not line.startswith("drain-outbox: polling"):
            line = drainer.stdout.readline()
        assert line.startswith("drain-outbox: polling every 0.2s")
        assert client.post("/api/v1/subscribers", json={"email": "loop@example.com"}).status_code == 202
        line = drainer.stdout.readline()
        while line and not line.startswith("outbox:"):
            line = drainer.stdout.readline()
        assert line.startswith("outbox: sent 1")
        [message] = smtp.received
        assert client.post("/subscribe/confirm", data={"token": _token(message)}).status_code == 200
        drainer.send_signal(signal.SIGTERM)
        rest, _ = drainer.communicate(timeout=10)
        assert drainer.returncode == 0 and rest.rstrip().endswith("drain-outbox: stopped")
    finally:
        if drainer.poll() is None:
            drainer.kill()
            drainer.wait()


@time_machine.travel(NOW, tick=False)
def test_a_drainer_asked_to_stop_gives_back_what_it_has_not_sent(client, desk, smtp, app):
    desk.paper("demo")
    for n in range(3):
        assert client.post("/api/v1/subscribers", json={"email": f"r{n}@example.com"}).status_code == 202
    # SIGTERM arrives while the first message is being sent: the pass ends after it.
    report = queues.run(outbox.QUEUE, queues.settings_of(outbox.QUEUE, app.config), utcnow(),
                        should_stop=lambda: len(smtp.received) >= 1)
    assert (report.delivered, report.failed, report.given_up) == (1, 0, 0)
    rows = _rows()
    assert [row.sent_at is not None for row in rows] == [True, False, False]
    # The two not tried are free for the next drainer now, not at the end of their lease.
    assert all(row.claimed_until is None for row in rows)
    assert all(row.next_attempt_at <= utcnow() for row in rows[1:])
    assert queues.pending_count(outbox.QUEUE) == 2


@time_machine.travel(NOW, tick=False)
def test_a_confirm_no_longer_needed_is_skipped_not_failed(client, desk, runner, smtp):
    desk.paper("demo")
    assert client.post("/api/v1/subscribers", json={"email": "early@example.com"}).status_code == 202
    row = db.session.scalars(select(Subscriber)).one()
    row.confirmed_at = utcnow()  # confirmed through an earlier link before this mail went out
    db.session.commit()
    result = _drain(runner)
    assert "outbox: sent 0, retrying 0, failed 0, skipped 1" in result.output
    assert "outbox error" not in result.output
    assert smtp.received == []


def test_sent_rows_are_pruned_after_the_retention(client, desk, runner, app, smtp):
    desk.paper("demo")
    with time_machine.travel(NOW, tick=False) as clock:
        for address in ("old@example.com", "new@example.com"):
            assert client.post("/api/v1/subscribers", json={"email": address}).status_code == 202
            _drain(runner)
            clock.shift(timedelta(days=2))
        assert [row.sent_at is not None for row in _rows()] == [True, True]
        first_sent = _rows()[0].sent_at
        clock.move_to(first_sent + timedelta(days=app.config["OUTBOX_RETENTION_DAYS"] - 1))
        assert "pruned" not in _drain(runner).output and len(_rows()) == 2
        clock.shift(timedelta(days=1, hours=1))  # the first row is past the retention now
        assert "outbox: pruned 1 sent or given-up row(s) older than 30 days" in _drain(runner).output
        [left] = _rows()
        assert db.session.get(Subscriber, left.subscriber_id).email == "new@example.com"
