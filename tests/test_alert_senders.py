"""Senders scale out: several `send-alerts` runs and `drain-outbox` drainers at once, each its own
process against the test database and one SMTP server on loopback, share the recorded alerts
with no global lock: every reader gets exactly one alert (0 lost, 0 doubled), and the "sent"
counts the senders print add up to the readers.

And a sender's time is bounded whatever the SMTP server does: one that drips its greeting a
byte at a time (each byte inside the read timeout) is cut off at the total bound, so it can
hold neither a sender nor the lease on its rows for ever.
"""
from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import func, select

from extensions import db
from models import AlertDelivery, Subscriber
from tests.fixtures.servers import free_port

pytestmark = pytest.mark.slow  # real subprocesses

ROOT = Path(__file__).resolve().parent.parent
READERS = 600


class SlowSink:
    """Accepts every message after a short wait (a relay across a network), so a sender cannot
    empty the queue before the others have started; counts alerts per recipient."""

    def __init__(self):
        self.alerts: Counter = Counter()
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        await asyncio.sleep(0.01)
        if b"List-Unsubscribe" in envelope.content:
            with self.lock:
                self.alerts.update(envelope.rcpt_tos)
        return "250 OK"


def flask(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_several_senders_at_once_send_each_alert_exactly_once(app, runner):
    seeded = runner.invoke(args=["seed-demo", "--subscribers", str(READERS), "--subscriber-cadence", "instant"])
    assert seeded.exit_code == 0, seeded.output
    planned = runner.invoke(args=["send-alerts", "--plan-only"])
    assert planned.exit_code == 0 and f"planned: {READERS} new alert(s)" in planned.output, planned.output

    sink = SlowSink()
    controller = Controller(sink, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
               "SMTP_URL": f"smtp://127.0.0.1:{controller.port}", "PAPER_DOMAIN": "localhost",
               "DEFAULT_PAPER": "demo", "ALERT_CONNECTIONS": "2",
               "PUBLIC_BASE_URL": "http://localhost"}
        senders = [flask(env, "send-alerts", "--no-webhooks"), flask(env, "send-alerts", "--no-webhooks"),
                   flask(env, "drain-outbox", "--once"), flask(env, "drain-outbox", "--once")]
        outputs = [sender.communicate(timeout=300) for sender in senders]
    finally:
        controller.stop()
    for sender, (out, err) in zip(senders, outputs, strict=True):
        assert sender.returncode == 0, (out, err)
    sent = [int(m.group(1)) for out, _ in outputs
            for m in re.finditer(r"^(?:sent|alerts: mailed) (\d+)", out, re.M)]
    assert sum(sent) == READERS, outputs
    with app.app_context():
        readers = db.session.scalars(select(Subscriber.email).where(Subscriber.confirmed_at.is_not(None))).all()
        assert db.session.scalar(select(func.count()).select_from(AlertDelivery)
                                 .where(AlertDelivery.sent_at.is_(None))) == 0
        db.session.remove()
    assert len(readers) == READERS
    assert sink.alerts == Counter(readers)  # each reader exactly once: none lost, none doubled


def test_a_server_that_drips_its_greeting_is_cut_off_at_the_total_bound(app, client, desk):
    """OUTBOX_SMTP_TIMEOUT 0.5 s bounds each read; the server sends a byte every 0.2 s, so no
    read ever times out, and only the total bound (5 x 0.5 s) ends the wait."""
    desk.paper("demo")
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def drip():
        conn, _ = listener.accept()
        with conn:
            while not stop.wait(0.2):
                try:
                    conn.sendall(b"2")
                except OSError:
                    return

    dripper = threading.Thread(target=drip, daemon=True)
    dripper.start()
    try:
        assert client.post("/api/v1/subscribers", json={"email": "drip@example.com"}).status_code == 202
        env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
               "SMTP_URL": f"smtp://127.0.0.1:{listener.getsockname()[1]}", "PAPER_DOMAIN": "localhost",
               "DEFAULT_PAPER": "demo", "OUTBOX_SMTP_TIMEOUT": "0.5",
               "PUBLIC_BASE_URL": "http://localhost"}
        drainer = flask(env, "drain-outbox", "--once")
        out, err = drainer.communicate(timeout=60)
    finally:
        stop.set()
        listener.close()
    assert drainer.returncode == 0, (out, err)
    assert "retrying 1" in out and "stopped: the SMTP server is unreachable" in out, (out, err)
    assert "no answer within 2.5s in all" in err, err
