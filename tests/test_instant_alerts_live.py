"""Instant alerts on the real clock, as `make run` and production run them: two `flask
drain-outbox` loops (real processes, polling every second) beside the app, pieces put on air
over HTTP one after another and two at once; every instant reader gets each piece exactly once,
within 10 seconds of its airing, from a real SMTP server on loopback."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text
from tests.test_alerts import join

pytestmark = pytest.mark.slow  # real processes on the real clock
ROOT = Path(__file__).resolve().parent.parent
WITHIN = 10.0  # seconds from an airing's answer to its alert in the reader's mailbox
READERS = ("live-a@example.com", "live-b@example.com")


def _drainer(env: dict) -> tuple[subprocess.Popen, threading.Event]:
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", "drain-outbox"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    polling = threading.Event()

    def read():
        try:
            for line in process.stdout:
                if line.startswith("drain-outbox: polling"):
                    polling.set()
        except ValueError:  # the pipe was closed once the process ended
            pass

    threading.Thread(target=read, daemon=True).start()
    return process, polling


def _alerts(smtp, reader: str) -> list:
    """Alerts that reached `reader` (read as they arrived: no in-process drain meanwhile)."""
    return [m for m in list(smtp.received) if m["List-Unsubscribe"] and m["To"] == reader]


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)  # polling a mailbox a real process writes to; bounded by the deadline
    return condition()


def test_instant_alerts_reach_readers_within_seconds_once_each(app, client, desk, smtp):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    for reader in READERS:
        join(client, smtp, reader, cadence="instant")
    drafts = [desk.piece(paper, f"Quay lights switched on at berth {n}", on_air_at=None) for n in range(7)]
    env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "SMTP_URL": smtp.url,
           "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo", "PUBLIC_BASE_URL": "http://localhost",
           "OUTBOX_POLL_SECONDS": "1", "INSTANCE_PATH": app.instance_path}
    env.pop("TEST_DATABASE_URL", None)
    drainers = [_drainer(env) for _ in range(2)]
    latencies = []
    try:
        assert all(polling.wait(60) for _, polling in drainers), "the drainers did not start"
        batches = [[d] for d in drafts[:5]] + [drafts[5:7]]  # one at a time, then two at once
        for batch in batches:
            aired = time.monotonic()
            for draft in batch:
                assert client.put(f"/api/v1/stories/{draft.id}/air", headers=auth(admin)).status_code == 200

            def arrived(batch=batch):
                texts = {reader: [body_text(m) for m in _alerts(smtp, reader)] for reader in READERS}
                return all(any(d.headline in t for t in texts[r]) for r in READERS for d in batch)

            assert _wait_for(arrived, WITHIN), f"not alerted within {WITHIN} s: {[d.headline for d in batch]}"
            latencies.append(time.monotonic() - aired)
        # Two more passes of each drainer: nothing further may leave.
        before = len(smtp.received)
        _wait_for(lambda: False, 2.5)
        assert len(smtp.received) == before
    finally:
        for process, _ in drainers:
            process.send_signal(signal.SIGTERM)
        for process, _ in drainers:
            process.wait(timeout=60)
            process.stdout.close()
    for reader in READERS:
        seen = Counter()
        for message in _alerts(smtp, reader):
            seen.update(re.findall(r"Quay lights switched on at berth \d", body_text(message)))
        assert seen == Counter(d.headline for d in drafts), reader
    assert max(latencies) < WITHIN
    print(f"instant alert latency: max {max(latencies):.1f} s, mean {sum(latencies) / len(latencies):.1f} s")
