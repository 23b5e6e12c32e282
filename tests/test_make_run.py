"""What `make run` serves with: the server command is read from the Makefile's own `run` recipe
(`make -n run`), started on a loopback port against a fresh SQLite database, and its answers must
name no server or language version in `Server` (werkzeug's `flask run` sends
`Werkzeug/x.y Python/x.y`, which a WSGI app cannot take off)."""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
# A product token with a version (`Werkzeug/3.1`, `Python/3.11.2`) or any digit at all.
VERSIONED = re.compile(r"/|\d")


def make_run_server_command(port: int) -> list[str]:
    """The last command of `make run`'s recipe (the server; the lines before it migrate, seed
    and start the outbox drainer), with this interpreter's bin folder for $(BIN)."""
    out = subprocess.run(["make", "-n", "run", f"PORT={port}", f"BIN={BIN}"], cwd=ROOT,
                         capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MAKE")}).stdout
    return shlex.split(out.strip().splitlines()[-1])


def answer(url: str, method: str = "GET"):
    """(status, headers) of one request; an HTTP error status is an answer too."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as resp:
            return resp.status, resp.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


@pytest.mark.slow
def test_make_run_serves_without_a_version_in_the_server_header(tmp_path):
    port = free_port()
    command = make_run_server_command(port)
    assert command[0].startswith(str(BIN)) and str(port) in " ".join(command), command
    env = {**os.environ, "FLASK_APP": "app", "INSTANCE_PATH": str(tmp_path), "RATELIMIT_ENABLED": "0",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'paperdesk.db'}", "PYTHONUNBUFFERED": "1"}
    env.pop("TEST_DATABASE_URL", None)
    subprocess.run([str(BIN / "flask"), "init-db"], cwd=ROOT, env=env, check=True, capture_output=True)
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        # Bounded wait for the workers to load the app (a few seconds on a loaded machine).
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                if answer(base + "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not answer /healthz within 60 s"
            time.sleep(0.2)
        seen = {}
        for method, path in [("GET", "/healthz"), ("HEAD", "/healthz"), ("GET", "/no-such-page"),
                             ("GET", "/api/v1/stories")]:
            status, headers = answer(base + path, method)
            seen[f"{method} {path}"] = (status, headers.get_all("Server"))
        assert seen["GET /healthz"][0] == 200 and seen["GET /no-such-page"][0] == 404, seen
        for label, (_, servers) in seen.items():
            assert servers and len(servers) == 1, (label, servers)  # one Server header, as sent
            assert not VERSIONED.search(servers[0]), (label, servers)
            assert "werkzeug" not in servers[0].lower() and "python" not in servers[0].lower()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()
