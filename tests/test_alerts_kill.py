"""A real crash of `flask send-alerts`: the command runs in its own process against the test
database and a real SMTP server on loopback, is SIGKILLed mid-batch, and the next run completes
the batch: every confirmed address gets exactly one alert, none twice, none lost.

The kill is placed, not timed: the SMTP server accepts K alerts, then holds every further one
in the DATA phase (received, not yet answered, so not accepted) and tells the test once each
of the run's connections has one held; the test kills the sender right then. That is the
"message in flight" case the design covers, with one connection and with several. The dead run's rows
stay under its lease (a run right after leaves them alone: the sender might be alive) and the
first run after the lease sends them. The one case it
does not (a kill after the server's 250 and before the `sent_at` commit, which would send that
message again) is documented in docs/ALERTS.md "Crash safety".
"""
from __future__ import annotations

import asyncio
import email
import email.policy
import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import time_machine
from aiosmtpd.controller import Controller
from sqlalchemy import func, select

from extensions import db
from models import AlertDelivery
from tests.fixtures.servers import body_text, drain_outbox, free_port

pytestmark = pytest.mark.slow  # real subprocesses, killed and run again

ROOT = Path(__file__).resolve().parent.parent
ACCEPT_FIRST = 3  # alerts accepted before the server holds one and the sender is killed


class HoldingHandler:
    """Accepts every message, except that once `hold_after` alerts were accepted it holds each
    further alert's DATA unanswered until `release()`, then refuses it (its sender is dead by
    then). `wait_held(n)` returns once `n` alerts are held at once."""

    def __init__(self):
        self.messages: list[email.message.EmailMessage] = []
        self.hold_after: int | None = None
        self.held = 0
        self._changed = threading.Condition()
        self._loop = None
        self._release: asyncio.Event | None = None

    def alerts(self) -> list:
        return [m for m in self.messages if m["List-Unsubscribe"]]

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        if message["List-Unsubscribe"] and self.hold_after is not None and len(self.alerts()) >= self.hold_after:
            if self._release is None:
                self._loop, self._release = asyncio.get_running_loop(), asyncio.Event()
            with self._changed:
                self.held += 1
                self._changed.notify_all()
            await self._release.wait()
            return "451 4.3.0 held by the test, never accepted"
        self.messages.append(message)
        return "250 OK"

    def wait_held(self, count: int, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.held >= count, timeout=timeout)

    def release(self) -> None:
        self.hold_after = None
        if self._release is not None:
            self._loop.call_soon_threadsafe(self._release.set)


def send_alerts(env: dict, connections: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", "send-alerts",
                             "--connections", str(connections)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("connections", [1, 3])
def test_a_run_killed_mid_batch_is_completed_by_the_next_without_duplicates(client, desk, app, runner, connections):
    handler = HoldingHandler()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    smtp_url = f"smtp://127.0.0.1:{controller.port}"
    previous, app.config["SMTP_URL"] = app.config["SMTP_URL"], smtp_url
    try:
        paper = desk.paper("demo")
        # The subprocesses run on the real clock: readers joined an hour ago, news since.
        now = datetime.now(timezone.utc).replace(microsecond=0)
        readers = [f"k{i:02d}@example.com" for i in range(12)]
        with time_machine.travel(now - timedelta(hours=1), tick=False):
            for i, address in enumerate(readers):
                cadence = ("instant", "daily", "weekly")[i % 3]
                joined = client.post("/api/v1/subscribers", json={"email": address, "cadence": cadence})
                assert joined.status_code == 202
                drain_outbox(app)  # what the drainer beside the app does
                [confirm] = [m for m in handler.messages if m["To"] == address]
                token = re.search(r"/subscribe/confirm\?token=(\S+)", body_text(confirm)).group(1)
                assert client.post("/subscribe/confirm", data={"token": token}).status_code == 200
        desk.piece(paper, "News at the half hour", on_air_at=now - timedelta(minutes=30))

        env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "SMTP_URL": smtp_url,
               "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo", "PUBLIC_BASE_URL": "http://localhost"}
        handler.hold_after = ACCEPT_FIRST
        first = send_alerts(env, connections)
        try:
            # Every connection has a message in flight, none accepted: each connection's
            # earlier accepted message was recorded before it handed this one over.
            held = handler.wait_held(connections, timeout=120)
        finally:
            first.kill()  # SIGKILL: no cleanup, no rollback, no goodbye to the SMTP server
            output = first.communicate(timeout=60)
        assert held, output
        assert first.returncode == -signal.SIGKILL
        handler.release()
        assert len(handler.alerts()) == ACCEPT_FIRST

        with app.app_context():
            # Every window was recorded before anything was sent, and every accepted alert was
            # marked sent before the next one went out.
            assert db.session.scalar(select(func.count(AlertDelivery.id))) == len(readers)
            assert db.session.scalar(select(func.count(AlertDelivery.id))
                                     .where(AlertDelivery.sent_at.is_not(None))) == ACCEPT_FIRST
            db.session.remove()

        # The dead run's rows are still under its lease: a run right now leaves them alone
        # (another sender might be alive and sending them)...
        second = send_alerts(env, connections)
        out, err = second.communicate(timeout=120)
        assert second.returncode == 0, (out, err)
        assert out.strip().splitlines()[-1] == f"sent 0, failed 0, skipped {len(readers)}"
        assert len(handler.alerts()) == ACCEPT_FIRST
        # ... and once the lease has run out (ALERT_LEASE_SECONDS), the next run sends them.
        lease = timedelta(seconds=app.config["ALERT_LEASE_SECONDS"])
        with time_machine.travel(datetime.now(timezone.utc) + lease + timedelta(seconds=5), tick=False):
            third = runner.invoke(args=["send-alerts", "--connections", str(connections)])
        assert third.exit_code == 0, third.output
        assert re.search(rf"^sent {len(readers) - ACCEPT_FIRST}, failed 0, skipped \d+$", third.output, re.M), \
            third.output
        received = Counter(m["To"] for m in handler.alerts())
        assert received == Counter(readers)  # each address exactly once
    finally:
        app.config["SMTP_URL"] = previous
        handler.release()
        controller.stop()
