"""`flask worker` as production runs it (a real process, the real clock): each queue on its own
thread and budget, so a tarpit on one (a receiver that accepts and never answers: an HTTP
receiver, or an SMTP server that never greets) delays no other queue's work by more than its
poll; `drain-outbox` is the same command. Real servers on loopback: aiosmtpd, an HTTP receiver,
a socket server that accepts and never speaks."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from commands import worker
from tests.fixtures.keys import auth

ROOT = Path(__file__).resolve().parent.parent
POLL = 0.5
TARPIT_SECONDS = 10.0  # what one POST to the tarpit costs its queue (WEBHOOK_TIMEOUT_SECONDS)


@contextmanager
def _running(app, smtp_url: str, command: str, **settings: str) -> Iterator[tuple[subprocess.Popen, list[str]]]:
    """A `flask <command>` loop (poll POLL, SMTP_URL `smtp_url`, `settings` in its environment)
    that has said it polls; yields (the process, its output lines so far). Killed on the way
    out if it is still running."""
    env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "SMTP_URL": smtp_url,
           "FLASK_APP": "app", "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo",
           "SECRET_KEY": app.config["SECRET_KEY"], "OUTBOX_POLL_SECONDS": str(POLL), "PYTHONUNBUFFERED": "1",
           "PUBLIC_BASE_URL": "http://localhost", "WEBHOOK_ALLOW_PRIVATE": "1",
           "WEBHOOK_TIMEOUT_SECONDS": str(TARPIT_SECONDS), "WEBHOOK_CONCURRENCY": "1", **settings}
    process = subprocess.Popen([sys.executable, "-m", "flask", command], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    polling = threading.Event()

    def read():
        for line in process.stdout:
            lines.append(line)
            if line.startswith(f"{command}: polling"):
                polling.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert polling.wait(30), "".join(lines)
        yield process, lines
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(10)
        process.stdout.close()


def _wait_for(predicate, seconds: float) -> float | None:
    """Real seconds until `predicate()` holds (polled every 20 ms), or None after `seconds`."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.02)
    return None


@pytest.mark.slow
@pytest.mark.parametrize("command", ["worker", "drain-outbox"])
def test_a_tarpit_on_one_queue_delays_no_other_queue_by_more_than_its_poll(
        command, app, client, desk, smtp, receiver):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    receiver.hang = {"/tarpit"}
    assert client.post("/api/v1/webhooks", headers=auth(admin), json={
        "url": receiver.url + "/tarpit", "events": ["piece.aired"]}).status_code == 201
    for n in range(3):
        desk.piece(paper, f"Story {n}")
    with _running(app, smtp.url, command) as (process, lines):
        # The content webhook queue is stuck in a POST the tarpit will never answer.
        assert _wait_for(lambda: receiver.requests, 30) is not None, "".join(lines)
        stuck_at = receiver.requests[0]["arrived"]
        assert client.post("/api/v1/subscribers", json={"email": "reader@example.com"}).status_code == 202
        waited = _wait_for(lambda: smtp.received, TARPIT_SECONDS * 2)
        assert waited is not None, "".join(lines)
        # Within a poll (and the time to send it), while the tarpit still holds its queue.
        assert waited < POLL + 4.0, (waited, "".join(lines))
        assert time.monotonic() - stuck_at < TARPIT_SECONDS, "the tarpit let go first: nothing was shown"
        assert smtp.received[0]["To"] == "reader@example.com"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TARPIT_SECONDS + 20)  # the POST in hand ends at its timeout
        assert process.returncode == 0 and lines[-1].rstrip() == f"{command}: stopped", "".join(lines)


@pytest.mark.slow
def test_a_hanging_smtp_server_delays_no_other_queue_by_more_than_its_poll(app, client, desk, silent_smtp,
                                                                         receiver):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    assert client.post("/api/v1/webhooks", headers=auth(admin), json={
        "url": receiver.url + "/hooks", "events": ["piece.aired"]}).status_code == 201
    assert client.post("/api/v1/subscribers", json={"email": "reader@example.com"}).status_code == 202
    with _running(app, silent_smtp.url, "worker", OUTBOX_SMTP_TIMEOUT=str(TARPIT_SECONDS)) as (process, lines):
        # The confirm-mail queue is stuck on a connection whose greeting never comes.
        assert _wait_for(lambda: silent_smtp.accepted, 30) is not None, "".join(lines)
        stuck_at = time.monotonic()
        desk.piece(paper, "Aired while the mail relay hangs")
        # The change feed writes its content webhook message; its own queue posts it.
        waited = _wait_for(lambda: receiver.requests, TARPIT_SECONDS * 2)
        assert waited is not None, "".join(lines)
        assert waited < 2 * POLL + 4.0, (waited, "".join(lines))  # the consumers' poll, then the queue's
        assert time.monotonic() - stuck_at < TARPIT_SECONDS, "the relay's timeout came first: nothing was shown"
        assert receiver.requests[0]["path"] == "/hooks"
        assert "outbox:" not in "".join(lines)  # the confirm email is still in hand, not sent
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=TARPIT_SECONDS + 20)  # the SMTP read in hand ends at its timeout
        assert process.returncode == 0 and lines[-1].rstrip() == "worker: stopped", "".join(lines)
        assert any(line.startswith("outbox: sent 0, retrying 1") for line in lines), "".join(lines)


def test_describe_names_the_declared_consumers_then_queues():
    described = worker.describe()
    assert described["consumers"] == ["changes", "log-checkpoints"]
    assert described["change_consumers"] == ["content-webhooks", "cdn-purge", "activitypub", "pings",
                                              "transparency-log", "correction-alerts", "instant-alerts",
                                              "edition-webhooks", "instant-edition-alerts"]
    assert [q["name"] for q in described["queues"]] == [
        "confirm-mail", "alert-mail", "webhooks", "content-webhooks", "activitypub", "pings"]
    assert [q["budget"] for q in described["queues"]] == [
        "OUTBOX_RUN_SECONDS", "ALERT_LEASE_SECONDS", "WEBHOOK_RUN_SECONDS", "CONTENT_WEBHOOK_RUN_SECONDS",
        "ACTIVITYPUB_RUN_SECONDS", "PING_RUN_SECONDS"]
