#!/usr/bin/env python3
"""Fuzz the running app against its own OpenAPI document with schemathesis (all checks).

For each backend (SQLite, and PostgreSQL when TEST_DATABASE_URL names a server), on a throwaway
database: `flask init-db`, `flask seed-demo --pieces N`, an admin and a read key, gunicorn (the
repo's gunicorn.conf.py, 2 workers) on a free loopback port with rate limits off, then one
schemathesis run per lane (LANES below): no key, a read key, an admin key. Any server error,
check failure or unhandled exception in the server log fails the run. The gunicorn server and
the PostgreSQL database it made are always removed. Settings: scripts/schemathesis.toml.

    .venv/bin/python scripts/ci_schemathesis.py                 # every backend available
    .venv/bin/python scripts/ci_schemathesis.py --backend sqlite --lanes public -n 10

Exit status: 0 when every lane passed, 1 otherwise (2 when the set-up itself failed).
JUnit reports land in build/schemathesis/<backend>-<lane>/; the figures of the run (test cases
generated and server errors found, per lane and in all) in build/schemathesis/figures.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's bin: flask, gunicorn, schemathesis
REPORTS = ROOT / "build" / "schemathesis"
CONFIG = ROOT / "scripts" / "schemathesis.toml"
CONFIG_WRITE = "PATCH /api/v1/config"
# lane -> (key kind or None, extra schemathesis arguments). Run in this order.
LANES = {
    # No key: the public lane, and every keyed route must refuse (401) without one.
    "public": (None, []),
    # A read key: drafts and counts appear. Its writes are all 403, which the other lanes cover.
    "read": ("read", ["--include-method", "GET"]),
    # An admin key: every write. The paper's own config is written last, on its own (next lane).
    "admin": ("admin", ["--exclude-name", CONFIG_WRITE]),
    # `is_public: false` makes the paper private, and a private paper answers a request without a
    # key with 404 as if absent (docs/API.md "tenancy"), so "no key gets 401" cannot hold after
    # this write: that one check is off here, and only here.
    "admin-config": ("admin", ["--include-name", CONFIG_WRITE, "--exclude-checks", "ignored_auth"]),
}
PG_DATABASE = os.environ.get("SCHEMATHESIS_DATABASE", "paperdesk_schemathesis")
# Lines the app logs for an exception it did not expect (errors.handle_unexpected), and gunicorn's
# own worker failures.
SERVER_ERROR_MARKERS = ("unhandled error", "Traceback (most recent call last)", "WORKER TIMEOUT",
                        "Worker failed to boot")


# Schemathesis's closing summary: "Test cases:" then "  1234 generated, 1234 passed". A server
# error is reported under its kind's title, "Server error" (check not_a_server_error, ST101).
CASES_LINE = re.compile(r"^\s*([0-9]+) generated\b")
SERVER_ERROR_LINE = re.compile(r"\bServer error\b")
FIGURES = REPORTS / "figures.json"


class SetupError(RuntimeError):
    """The app could not be prepared or started: no lane ran."""


@dataclass
class LaneResult:
    backend: str
    lane: str
    ok: bool
    seconds: float
    note: str = ""
    cases: int = 0          # "Test cases: N generated" of schemathesis's summary
    server_errors: int = 0  # 5xx answers schemathesis reported, plus exceptions in the server log


def log(message: str) -> None:
    print(f"[schemathesis-ci] {message}", flush=True)


def run(cmd: list[str], env: dict, *, capture: bool = False) -> subprocess.CompletedProcess:
    """Run a set-up command from the repo root; raise SetupError on a non-zero exit."""
    log("$ " + " ".join(cmd))
    result = subprocess.run(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, text=True,
                            capture_output=capture)
    if result.returncode != 0:
        if capture:
            sys.stdout.write(result.stdout)
            sys.stdout.write(result.stderr)
        raise SetupError(f"{cmd[1] if len(cmd) > 1 else cmd[0]} exited {result.returncode}")
    return result


def create_key(env: dict, kind: str) -> str:
    out = run([str(BIN / "flask"), "keys", "create", "--paper", "demo", "--kind", kind,
               "--label", f"schemathesis {kind}"], env, capture=True).stdout
    lines = out.strip().splitlines()
    key = lines[-1].strip() if lines else ""
    if not key.startswith("desk_"):
        raise SetupError(f"`flask keys create --kind {kind}` did not print a key on its last line")
    return key


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _psycopg_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return "postgresql://" + rest if scheme.startswith("postgres") else url


@contextmanager
def postgres_database(server_url: str):
    """Create a fresh database on TEST_DATABASE_URL's server; yield its URL; drop it after."""
    import psycopg

    admin_url = _psycopg_url(server_url)
    parts = urlsplit(admin_url)
    url = urlunsplit(parts._replace(path="/" + PG_DATABASE))

    def execute(sql: str) -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql)

    log(f"creating database {PG_DATABASE} on {parts.hostname}:{parts.port or 5432}")
    execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')
    execute(f'CREATE DATABASE "{PG_DATABASE}"')
    try:
        yield url
    finally:
        execute(f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)')
        log(f"dropped database {PG_DATABASE}")


@contextmanager
def gunicorn(env: dict, port: int, log_path: Path, workers: int):
    """Serve the app on 127.0.0.1:port until the block ends; yield the base URL."""
    cmd = [str(BIN / "gunicorn"), "--config", str(ROOT / "gunicorn.conf.py"),
           "--workers", str(workers), "--bind", f"127.0.0.1:{port}", "--timeout", "60"]
    log("$ " + " ".join(cmd) + f"  (log: {log_path})")
    with open(log_path, "w", encoding="utf-8") as out:
        server = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, server, log_path)
        yield base
    finally:
        stop(server)


def wait_healthy(base: str, server: subprocess.Popen, log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            print(log_path.read_text(encoding="utf-8", errors="replace")[-4000:])
            raise SetupError(f"gunicorn exited {server.returncode} before answering")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                if response.status == 200:
                    log(f"gunicorn answers at {base}")
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    raise SetupError(f"gunicorn did not answer /healthz within {timeout:.0f}s")


def stop(server: subprocess.Popen) -> None:
    """SIGTERM the gunicorn master (graceful), then SIGKILL its process group if it lingers."""
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    log(f"gunicorn stopped (exit {server.returncode})")


def server_errors(log_path: Path, since: int) -> list[str]:
    """Lines of the server log (from byte offset `since`) that show an unexpected exception."""
    with open(log_path, encoding="utf-8", errors="replace") as fh:
        fh.seek(since)
        text = fh.read()
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if any(marker in line for marker in SERVER_ERROR_MARKERS):
            found.extend(lines[i:i + 30] + ["..."])
    return found


def run_lane(base: str, backend: str, lane: str, key: str | None, args, log_path: Path) -> LaneResult:
    report_dir = REPORTS / f"{backend}-{lane}"
    cmd = [str(BIN / "schemathesis"), "--config-file", str(CONFIG), "run", f"{base}/api/v1/openapi.json",
           # Every check runs: schemathesis.toml enables them all. `--checks all` on the command
           # line would also re-enable the one check it turns off for the stateful phase.
           "--max-examples", str(args.max_examples), "--seed", str(args.seed),
           "--workers", str(args.st_workers), "--request-timeout", "20",
           "--report", "junit", "--report-dir", str(report_dir), "--no-color"]
    cmd += LANES[lane][1]
    if args.phases:
        cmd += ["--phases", args.phases]
    if key:
        cmd += ["--header", f"Authorization: Bearer {key}"]
    print(f"\n===== schemathesis: {backend} / {lane} lane =====", flush=True)
    log(" ".join(c if not c.startswith("Authorization") else "Authorization: Bearer desk_***"
                 for c in cmd))
    offset = log_path.stat().st_size
    started = time.monotonic()
    # From the reports folder: schemathesis keeps its crash cache (`.schemathesis/`) in its cwd.
    # Its output is passed through line by line, and read for the summary's figures.
    process = subprocess.Popen(cmd, cwd=REPORTS, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace",
                               env={**os.environ, "NO_COLOR": "1"})
    cases, reported_5xx, in_cases = 0, 0, False
    for line in process.stdout:
        sys.stdout.write(line)
        if in_cases and (found := CASES_LINE.match(line)):
            cases = int(found.group(1))
        in_cases = line.strip() == "Test cases:"
        reported_5xx += bool(SERVER_ERROR_LINE.search(line))
    returncode = process.wait()
    sys.stdout.flush()
    seconds = time.monotonic() - started
    errors = server_errors(log_path, offset)
    if errors:
        print(f"\n----- unexpected exceptions in the server log during {backend}/{lane} -----")
        print("\n".join(errors[:200]))
    ok = returncode == 0 and not errors
    note = "" if ok else (f"schemathesis exit {returncode}" if returncode
                          else "exceptions in the server log")
    exceptions = sum(1 for line in errors if any(m in line for m in SERVER_ERROR_MARKERS))
    return LaneResult(backend, lane, ok, seconds, note, cases=cases,
                      server_errors=reported_5xx + exceptions)


def run_backend(backend: str, args) -> list[LaneResult]:
    with tempfile.TemporaryDirectory(prefix=f"paperdesk-schemathesis-{backend}-") as tmp:
        instance = Path(tmp) / "instance"
        instance.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "FLASK_APP")}
        env.update(FLASK_APP="app", INSTANCE_PATH=str(instance), RATELIMIT_ENABLED="0",
                   PYTHONUNBUFFERED="1", WEB_CONCURRENCY=str(args.workers),
                   OUTBOX_DIR=str(instance / "outbox"))
        with (postgres_database(os.environ["TEST_DATABASE_URL"]) if backend == "postgresql"
              else _sqlite(instance)) as url:
            env["DATABASE_URL"] = url
            started = time.monotonic()
            run([str(BIN / "flask"), "init-db"], env)
            run([str(BIN / "flask"), "seed-demo", "--pieces", str(args.pieces)], env)
            kinds = {LANES[lane][0] for lane in args.lanes} - {None}
            keys = {kind: create_key(env, kind) for kind in sorted(kinds)}
            log(f"{backend}: database ready in {time.monotonic() - started:.1f}s")
            log_path = REPORTS / f"gunicorn-{backend}.log"
            with gunicorn(env, free_port(), log_path, args.workers) as base:
                return [run_lane(base, backend, lane, keys.get(LANES[lane][0]), args, log_path)
                        for lane in args.lanes]


@contextmanager
def _sqlite(instance: Path):
    yield f"sqlite:///{instance / 'paperdesk.db'}"


def parse_args(argv: list[str]):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_backends = "sqlite" + (",postgresql" if os.environ.get("TEST_DATABASE_URL") else "")
    parser.add_argument("--backend", default=default_backends,
                        help="comma-separated: sqlite, postgresql (default: %(default)s)")
    parser.add_argument("--lanes", default=",".join(LANES),
                        help="comma-separated, run in the order given (default: %(default)s)")
    parser.add_argument("-n", "--max-examples", type=int,
                        default=int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "30")))
    parser.add_argument("--seed", type=int, default=int(os.environ.get("SCHEMATHESIS_SEED", "20261101")),
                        help="hypothesis seed, fixed so CI failures reproduce")
    parser.add_argument("--phases", default=os.environ.get("SCHEMATHESIS_PHASES", ""),
                        help="schemathesis phases (default: all of them)")
    parser.add_argument("--pieces", type=int, default=60, help="seed-demo --pieces")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    # One: with two, its threads run hypothesis's ast.parse at once, which CPython 3.11.7 can
    # fail with "SystemError: AST constructor recursion depth mismatch" (a schemathesis
    # "Runtime Error" that says nothing about the app, seen once in CI).
    parser.add_argument("--st-workers", type=int, default=1, help="schemathesis workers")
    args = parser.parse_args(argv)
    args.backends = [b for b in args.backend.split(",") if b]
    args.lanes = [lane for lane in args.lanes.split(",") if lane]
    for name in args.backends:
        if name not in ("sqlite", "postgresql"):
            parser.error(f"unknown backend {name!r}")
    if "postgresql" in args.backends and not os.environ.get("TEST_DATABASE_URL"):
        parser.error("--backend postgresql needs TEST_DATABASE_URL (the server to create a database on)")
    for lane in args.lanes:
        if lane not in LANES:
            parser.error(f"unknown lane {lane!r}")
    return args


def _terminate(signum, frame):  # SIGTERM -> unwind, so servers and databases are removed
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    REPORTS.mkdir(parents=True, exist_ok=True)
    results: list[LaneResult] = []
    setup_failed = False
    for backend in args.backends:
        try:
            results += run_backend(backend, args)
        except SetupError as exc:
            setup_failed = True
            results.append(LaneResult(backend, "set-up", False, 0.0, str(exc)))
    print("\n===== schemathesis summary =====")
    for r in results:
        print(f"{'ok  ' if r.ok else 'FAIL'}  {r.backend:<10} {r.lane:<12} {r.seconds:6.1f}s  "
              f"{r.cases:6d} cases  {r.server_errors} server errors  {r.note}")
    failed = sum(not r.ok for r in results)
    cases = sum(r.cases for r in results)
    server = sum(r.server_errors for r in results)
    print(f"schemathesis: {len(results) - failed} lanes passed, {failed} failed; "
          f"{cases} test cases generated; server errors found: {server}", flush=True)
    # For scripts/ci_figures.py (docs/SECURITY.md quotes the last CI run's figures).
    FIGURES.write_text(json.dumps({
        "cases": cases, "server_errors": server, "lanes_failed": failed,
        "max_examples": args.max_examples, "seed": args.seed,
        "lanes": [{"backend": r.backend, "lane": r.lane, "ok": r.ok, "cases": r.cases,
                   "server_errors": r.server_errors, "seconds": round(r.seconds, 1)}
                  for r in results],
    }, indent=2) + "\n", encoding="utf-8")
    if setup_failed:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
