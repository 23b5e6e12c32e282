#!/usr/bin/env python3
"""The fault and abuse suite (`make faults`): real gunicorn servers of the app, built as in
production (wsgi.py + gunicorn.conf.py, configured by the environment alone), under load while
something they depend on fails. One scenario per fault:

- pg-kill      PostgreSQL: reads and keyed writes while another connection terminates every
               other backend of the database every 0.5 s.
- redis        Redis (a redis-server of the suite's own, the rate limits' store and the response
               cache) stopped and started again under load: the limiter falls back to memory,
               the cache is skipped, nothing answers 500.
- smtp-hang    An SMTP server that accepts and never speaks, while public subscribes run and
               `flask worker --once` and `flask send-alerts` run beside the server: the
               requests stay fast (no SMTP on a request path), the commands end within their
               bound.
- sqlite-move  The SQLite file moved away (the workers restarted meanwhile, as a deploy or a
               recycled worker would) and back under load: 503 problems while it is gone, nothing
               created in its place, every acknowledged write there afterwards.
- partition    Two app hosts on one database and one Redis; host A's link to Redis turns lossy
               and slow while a pull is sent through A: the pull gets no success answer until
               every host will see it (503, retried with its Idempotency-Key), and no read
               after that answer shows the piece (issue 32; docs/SECURITY.md).
- redis-lifetimes  Redis restarted empty between a pull and the next write (the workers idle),
               then restored from a snapshot taken before a pull: 0 reads of the pulled piece.
- state-file   The SQLite host's state file deleted (and a worker recycled), then truncated,
               under load: 0 stale reads, 0 worker crashes (no SIGBUS).
- monitor-rewrite  `flask log verify` after a piece is backdated, a persona retitled and one
               renamed in the database behind the API: each run fails and names the field.
- hostile      Hostile bodies and query strings drawn from tests/strategies.py (hypothesis,
               derandomized) at every operation of the OpenAPI document, with and without a key,
               on SQLite and on PostgreSQL.

Every write carries an `Idempotency-Key`; a write answered 503 or lost to a connection error is
sent again with the same key and body. Afterwards the pieces are read back from the database:
each acknowledged write must be there exactly once.

The table (stdout, build/faults/table.md and table.json) has one row per scenario: requests,
answers by kind (5xx split into gunicorn's bare 500s, the app's 500 problems, 503 problems, and
connection errors), writes acknowledged and found, lost, duplicated, and the time from the
fault's end to the first successful answer.
Exit status 1 when a scenario answered a 500, lost or duplicated an acknowledged write,
recovered in more than 2 s, or broke its own promise (a command past its bound, a file created
in the moved one's place); 2 when the set-up failed.

    .venv/bin/python scripts/faults.py                       # every scenario
    .venv/bin/python scripts/faults.py --only redis,hostile  # some of them

PostgreSQL: FAULTS_DATABASE_URL names a database the suite owns (its `public` schema is dropped
and made again); without it, a database FAULTS_DATABASE (default `paperdesk_faults`) is created
on TEST_DATABASE_URL's server and dropped afterwards; with neither, pg-kill is skipped and redis
runs on SQLite. Everything listens on 127.0.0.1 only; every process started is stopped (its
process group) whatever happens.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent  # the venv's bin: flask, gunicorn
OUT = ROOT / "build" / "faults"
SCENARIOS = ("pg-kill", "redis", "smtp-hang", "sqlite-move", "hostile", "partition", "redis-lifetimes",
             "state-file", "monitor-rewrite")
RECOVERY_TARGET = 2.0  # seconds from a fault's end to the first successful answer
# Rate limits stay on (the limiter is one of the things under test) but far above the load.
LIMITS = {"READ_RATELIMIT": "1000000/minute", "RATELIMIT_DEFAULT": "1000000 per minute",
          "SUBSCRIBE_RATELIMIT": "1000000/minute", "SUBSCRIBE_LINK_RATELIMIT": "1000000/minute"}
# What the app logs for an exception it did not expect (errors.handle_unexpected), what gunicorn
# logs for one that escaped the app altogether (its bare HTML 500), and its worker failures.
LOG_MARKERS = ("unhandled error", "Error handling request", "WORKER TIMEOUT", "Worker failed to boot")
READS = ["/api/v1/stories?limit=10", "/api/v1/front", "/api/v1/sections", "/api/v1/days",
         "/api/v1/search?q=rates", "/", "/rss.xml", "/api/v1/masthead"]


class SetupError(RuntimeError):
    """The suite could not prepare a database or start a server: no scenario result."""


def log(message: str) -> None:
    """One progress line on stdout."""
    print(f"[faults] {message}", flush=True)


def free_port() -> int:
    """A free TCP port on loopback (the OS's choice)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ----------------------------------------------------------------------------- HTTP


@dataclass
class Answer:
    """One request's outcome: `kind` is ok (2xx/3xx), 4xx, 503 (a 503 problem, or the HTML
    page with Retry-After: the app's "unavailable" answers), 500-bare (any other 5xx that is not problem+json, e.g.
    gunicorn's HTML page for an exception that escaped the app), 500-problem (the app's own
    500 problem), or conn (no HTTP answer at all). oEmbed's 501 problem for a `format` it does
    not implement is the refusal oEmbed 1.0 prescribes, so it counts as a 4xx."""
    method: str
    path: str
    status: int | None
    ctype: str
    body: bytes
    started: float
    ended: float
    error: str = ""
    retry_after: bool = False

    @property
    def kind(self) -> str:
        if self.status is None:
            return "conn"
        if self.status < 400:
            return "ok"
        if self.status < 500:
            return "4xx"
        problem = self.ctype.startswith("application/problem+json")
        if self.status == 501 and problem and self.path.split("?", 1)[0] == "/oembed":
            return "4xx"
        if self.status == 503 and (problem or self.retry_after):
            return "503"
        return "500-problem" if problem else "500-bare"

    def json(self):
        """The body as JSON, or None."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class Client:
    """HTTP/1.1 over a new loopback connection per request (sync gunicorn workers close each
    one anyway); every answer is counted in `tally`."""

    def __init__(self, port: int, tally: Tally, key: str | None = None, timeout: float = 15):
        self.port, self.tally, self.key, self.timeout = port, tally, key, timeout

    def request(self, method: str, path: str, body: bytes | dict | list | None = None, *,
                headers: dict | None = None, keyed: bool = True) -> Answer:
        """Send one request; never raises for a network failure (kind "conn")."""
        sent = dict(headers or {})
        if keyed and self.key:
            sent["Authorization"] = f"Bearer {self.key}"
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            conn.request(method, path, body=body, headers=sent)
            response = conn.getresponse()
            data = response.read()
            answer = Answer(method, path, response.status, response.getheader("Content-Type", ""),
                            data, started, time.monotonic(),
                            retry_after=bool(response.getheader("Retry-After")))
        except (OSError, http.client.HTTPException) as exc:
            answer = Answer(method, path, None, "", b"", started, time.monotonic(),
                            error=f"{type(exc).__name__}: {exc}"[:200])
        finally:
            conn.close()
        self.tally.add(answer)
        return answer


@dataclass
class Tally:
    """Every answer of a scenario, thread-safe. `examples` keeps the first few 500s and
    connection errors, for the report."""
    answers: list[Answer] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, answer: Answer) -> None:
        with self.lock:
            self.answers.append(answer)

    def counts(self) -> Counter:
        """Answers by kind."""
        with self.lock:
            return Counter(a.kind for a in self.answers)

    def examples(self, kind: str, n: int = 5) -> list[str]:
        """The first `n` distinct answers of `kind`, one line each."""
        seen: dict[str, None] = {}
        with self.lock:
            for a in self.answers:
                if a.kind == kind:
                    what = a.error or f"{a.status} {a.ctype or '-'} {a.body[:120]!r}"
                    seen.setdefault(f"{a.method} {a.path[:100]} -> {what}", None)
                if len(seen) >= n:
                    break
        return list(seen)

    def recovery(self, fault_end: float) -> float | None:
        """Seconds from `fault_end` to the first successful answer to a request sent after it."""
        with self.lock:
            ends = [a.ended for a in self.answers if a.kind == "ok" and a.started >= fault_end]
        return round(min(ends) - fault_end, 3) if ends else None

    def timeline(self, origin: float, step: float = 1.0) -> list[str]:
        """Answers per `step` seconds from `origin` (the fault's start), by kind and by the
        second they were sent: e.g. `+2s ok=12 503=3`."""
        buckets: dict[int, Counter] = {}
        with self.lock:
            for a in self.answers:
                buckets.setdefault(int((a.started - origin) // step), Counter())[a.kind] += 1
        return [f"{n * step:+.0f}s " + " ".join(f"{k}={v}" for k, v in sorted(c.items()))
                for n, c in sorted(buckets.items())]

    def slowest(self, since: float, until: float, path_prefix: str) -> float:
        """The longest request time (s) among requests to `path_prefix` sent in [since, until]."""
        with self.lock:
            times = [a.ended - a.started for a in self.answers
                     if since <= a.started <= until and a.path.startswith(path_prefix)]
        return round(max(times), 3) if times else 0.0


# ----------------------------------------------------------------------------- writes


@dataclass
class Write:
    """One logical write: sent until acknowledged (2xx) with one Idempotency-Key."""
    kind: str            # file | revise | subscribe
    key: str
    marker: str          # the headline, dek or address that finds it afterwards
    piece_id: int | None = None
    attempts: int = 0
    acked: bool = False
    statuses: list = field(default_factory=list)


class Ledger:
    """Every write of a scenario, and how to send one until it lands."""

    def __init__(self, client: Client, scenario: str):
        self.client, self.scenario = client, scenario
        self.writes: list[Write] = []
        self.lock = threading.Lock()

    def send(self, kind: str, marker: str, method: str, path: str, body: dict, *,
             keyed: bool = True, piece_id: int | None = None, patience: float = 30) -> Write:
        """Send a write; after a 503 or a connection error send it again, same key and body,
        until it is acknowledged or `patience` seconds have passed. 4xx and 500 are final."""
        write = Write(kind, uuid.uuid4().hex, marker, piece_id)
        with self.lock:
            self.writes.append(write)
        deadline = time.monotonic() + patience
        while True:
            answer = self.client.request(method, path, body, keyed=keyed,
                                         headers={"Idempotency-Key": write.key})
            write.attempts += 1
            write.statuses.append(answer.status)
            if answer.kind == "ok":
                write.acked = True
                if kind == "file":
                    # The API spells ids as strings ("id": "42").
                    write.piece_id = int((answer.json() or {}).get("id") or 0) or None
                return write
            if answer.kind not in ("503", "conn") or time.monotonic() > deadline:
                return write
            time.sleep(0.2)

    def file(self, sections: list[str], personas: list[str], rng: random.Random) -> Write:
        """File a draft whose headline is unique to this write."""
        headline = f"Faults {self.scenario} {uuid.uuid4().hex[:12]}"
        body = {"headline": headline, "dek": "Filed by the fault suite.",
                "prose": "The fault suite filed this piece[^1].", "section": rng.choice(sections),
                "byline": rng.choice(personas),
                "cited_facts": [{"statement": "The suite filed it.", "source": "Fault suite",
                                 "instrument": "Load", "claim_key": "faults/1"}]}
        return self.send("file", headline, "POST", "/api/v1/stories", body)

    def revise(self, piece_id: int) -> Write:
        """Revise a piece with a dek unique to this write."""
        dek = f"Revised by the fault suite {uuid.uuid4().hex[:12]}"
        return self.send("revise", dek, "PATCH", f"/api/v1/stories/{piece_id}", {"dek": dek},
                         piece_id=piece_id)

    def subscribe(self) -> Write:
        """A public subscribe with an address unique to this write."""
        address = f"faults-{uuid.uuid4().hex[:12]}@example.com"
        return self.send("subscribe", address, "POST", "/api/v1/subscribers",
                         {"email": address, "cadence": "instant"}, keyed=False)


# ----------------------------------------------------------------------------- load


class Load:
    """Reader, writer and prober threads against one server until `stop()`.

    Writers file a piece and revise it twice, again and again (`subscribers` threads subscribe
    instead); readers walk READS and the pieces filed so far; the prober asks for the story
    list every 50 ms, so the recovery time is measured to within that."""

    def __init__(self, client: Client, ledger: Ledger, meta: dict, *, writers: int = 2,
                 readers: int = 2, subscribers: int = 0, seed: int = 1):
        self.client, self.ledger, self.meta = client, ledger, meta
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._writer, args=(random.Random(seed + i),), daemon=True)
                        for i in range(writers)]
        self.threads += [threading.Thread(target=self._reader, args=(random.Random(seed + 100 + i),),
                                          daemon=True) for i in range(readers)]
        self.threads += [threading.Thread(target=self._subscriber, daemon=True) for _ in range(subscribers)]
        self.threads.append(threading.Thread(target=self._prober, daemon=True))

    def start(self) -> Load:
        """Start every thread."""
        for thread in self.threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Ask every thread to stop after its current write (retries included) and wait."""
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def _writer(self, rng: random.Random) -> None:
        while not self.stopping.is_set():
            filed = self.ledger.file(self.meta["sections"], self.meta["personas"], rng)
            if filed.acked and filed.piece_id:
                for _ in range(2):
                    if self.stopping.is_set():
                        break
                    self.ledger.revise(filed.piece_id)
            elif not filed.acked:
                time.sleep(0.1)

    def _subscriber(self) -> None:
        while not self.stopping.is_set():
            self.ledger.subscribe()
            time.sleep(0.05)

    def _reader(self, rng: random.Random) -> None:
        while not self.stopping.is_set():
            filed = [w.piece_id for w in self.ledger.writes if w.kind == "file" and w.piece_id]
            if filed and rng.random() < 0.3:
                self.client.request("GET", f"/api/v1/stories/{rng.choice(filed)}")
            else:
                self.client.request("GET", rng.choice(READS), keyed=rng.random() < 0.3)

    def _prober(self) -> None:
        while not self.stopping.is_set():
            self.client.request("GET", "/api/v1/stories?limit=1", keyed=False)
            time.sleep(0.05)


# ----------------------------------------------------------------------------- processes


def stop_group(process: subprocess.Popen, grace: float = 20) -> None:
    """SIGTERM a process started in its own session, then SIGKILL its whole group if it
    lingers; afterwards nothing of the group is left (gunicorn workers included)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # stragglers of the group, if any
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


class Gunicorn:
    """`gunicorn -c gunicorn.conf.py` (wsgi:app) configured by `env` alone, on a free loopback
    port, 2 workers; its log in build/faults/<name>.log."""

    def __init__(self, name: str, env: dict):
        self.name, self.port = name, free_port()
        self.env = {**env, "GUNICORN_BIND": f"127.0.0.1:{self.port}"}
        self.log_path = OUT / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Gunicorn:
        cmd = [str(BIN / "gunicorn"), "--config", str(ROOT / "gunicorn.conf.py")]
        log(f"{self.name}: gunicorn on 127.0.0.1:{self.port} (log {self.log_path.relative_to(ROOT)})")
        with open(self.log_path, "w", encoding="utf-8") as out:
            self.process = subprocess.Popen(cmd, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            stop_group(self.process)
            raise
        return self

    def __exit__(self, *exc) -> None:
        stop_group(self.process)

    def _wait_ready(self, timeout: float = 60) -> None:
        # Every worker booting (the master's "Booting worker" lines), then /healthz answered:
        # which worker answered is not visible from outside.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SetupError(f"gunicorn exited {self.process.returncode}:\n{self.tail()}")
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
            if text.count("Booting worker") >= int(self.env.get("WEB_CONCURRENCY", "2")):
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                try:
                    conn.request("GET", "/healthz")
                    if conn.getresponse().status == 200:
                        return
                except (OSError, http.client.HTTPException):
                    pass
                finally:
                    conn.close()
            time.sleep(0.2)
        raise SetupError(f"gunicorn did not answer /healthz within {timeout:.0f}s:\n{self.tail()}")

    def reload(self) -> None:
        """SIGHUP: the master starts new workers and lets the old ones finish (a deploy)."""
        self.process.send_signal(signal.SIGHUP)

    def tail(self, n: int = 30) -> str:
        """The log's last `n` lines."""
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def count(self, text: str) -> int:
        """Lines of the server log that contain `text`."""
        return sum(text in line for line in self.log_path.read_text(encoding="utf-8", errors="replace").splitlines())

    def logged_errors(self) -> int:
        """Lines of the server log that show an unexpected exception or a worker failure."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return sum(1 for line in text.splitlines() if any(m in line for m in LOG_MARKERS))


class RedisServer:
    """A redis-server of the suite's own on a free loopback port (no persistence but an
    explicit SAVE, into `folder`), which can be stopped and started again on the same port:
    empty, or (`keep`) from the snapshot SAVE wrote."""

    def __init__(self, folder: Path | None = None):
        self.binary = shutil.which("redis-server")
        if not self.binary:
            raise SetupError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.port = free_port()
        self.folder = folder or Path(tempfile.mkdtemp(prefix="paperdesk-faults-redis-"))
        self.folder.mkdir(parents=True, exist_ok=True)
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self, keep: bool = False) -> None:
        """Start it (empty unless `keep`: then from the last SAVE) and wait until it answers PING."""
        if not keep:
            (self.folder / "dump.rdb").unlink(missing_ok=True)
        cmd = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--protected-mode", "yes", "--loglevel", "warning",
               "--dir", str(self.folder)]
        self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.command("PING") == "PONG":
                return
            time.sleep(0.05)
        raise SetupError("redis-server did not answer PING")

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL) and wait for it to exit."""
        if self.process is not None:
            stop_group(self.process, grace=5)
            self.process = None

    def command(self, *words: str, db: int = 0) -> str | None:
        """One command over RESP; its reply as a string, or None when Redis does not answer."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                parts = [["SELECT", str(db)], list(words)] if db else [list(words)]
                for part in parts:
                    sock.sendall(f"*{len(part)}\r\n".encode()
                                 + b"".join(f"${len(w)}\r\n{w}\r\n".encode() for w in part))
                reply = b""
                while reply.count(b"\r\n") < len(parts):
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    reply += chunk
            return reply.split(b"\r\n")[len(parts) - 1].decode().lstrip("+:")
        except OSError:
            return None


class SilentSmtp:
    """Accepts TCP connections on loopback and never says a word (no greeting)."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self.done.is_set():
            try:
                self.held.append(self.listener.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        """Stop accepting and close every connection held."""
        self.done.set()
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.listener.close()


# ----------------------------------------------------------------------------- databases


def flask(env: dict, *args: str, timeout: float = 120) -> str:
    """Run `flask <args>` from the repo root; its stdout, or SetupError."""
    result = subprocess.run([str(BIN / "flask"), *args], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise SetupError(f"flask {' '.join(args)} exited {result.returncode}:\n{result.stderr[-2000:]}")
    return result.stdout


def prepare(env: dict) -> str:
    """Migrate and seed the database `env` names (a few pieces, 10 confirmed instant
    subscribers) and create an admin key with the CLI; return the key."""
    flask(env, "init-db")
    flask(env, "seed-demo", "--pieces", "20", "--subscribers", "5", "--subscriber-cadence", "instant")
    key = flask(env, "keys", "create", "--paper", "demo", "--kind", "admin", "--label", "fault suite")
    key = key.strip().splitlines()[-1].strip()
    if not key.startswith("desk_"):
        raise SetupError("`flask keys create` did not print a key on its last line")
    return key


def _psycopg_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    return "postgresql://" + rest if scheme.startswith("postgres") else url


@contextmanager
def postgres_database():
    """The PostgreSQL database the suite may wipe (see the module docstring); yields its URL
    (postgresql://), or None when there is none."""
    import psycopg

    own = os.environ.get("FAULTS_DATABASE_URL")
    server = os.environ.get("TEST_DATABASE_URL")
    if own:
        url = _psycopg_url(own)
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
            conn.execute("CREATE SCHEMA public")
        yield url
        return
    if not server:
        yield None
        return
    name = os.environ.get("FAULTS_DATABASE", "paperdesk_faults")
    admin = _psycopg_url(server)
    with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(admin)._replace(path="/" + name))
    finally:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def read_back(database_url: str, scenario: str) -> tuple[Counter, dict[int, Counter], set[int], Counter]:
    """From the database: pieces by headline (this scenario's), each piece's revisions by dek,
    the ids of every piece, and subscribers by address."""
    from sqlalchemy import create_engine, text

    url = database_url.replace("postgresql://", "postgresql+psycopg://", 1)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT id, headline FROM pieces")).all()
            ids = {row.id for row in rows}
            headlines = Counter(row.headline for row in rows if row.headline.startswith(f"Faults {scenario} "))
            mine = [row.id for row in rows if row.headline.startswith(f"Faults {scenario} ")]
            deks: dict[int, Counter] = {}
            for piece_id, basis in conn.execute(text("SELECT piece_id, basis FROM piece_revisions")).all():
                if piece_id in mine:
                    basis = json.loads(basis) if isinstance(basis, str) else basis
                    deks.setdefault(piece_id, Counter())[basis.get("dek", "")] += 1
            addresses = Counter(r[0] for r in conn.execute(text("SELECT email FROM subscribers")).all())
    finally:
        engine.dispose()
    return headlines, deks, ids, addresses


# ----------------------------------------------------------------------------- results


@dataclass
class Result:
    """One row of the table."""
    scenario: str
    backend: str
    requests: int = 0
    ok: int = 0
    c4xx: int = 0
    c500: int = 0
    c500_problem: int = 0
    c503: int = 0
    conn: int = 0
    acked: int = 0
    found: int = 0
    lost: int = 0
    duplicates: int = 0
    recovery: float | None = None
    seconds: float = 0.0
    logged_errors: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    fault_seconds: float | None = None
    timeline: list[str] = field(default_factory=list)
    stale: int | None = None     # reads that lagged an answered write (issue 32's scenarios)
    crashes: int | None = None   # workers that died of a fault (SIGBUS, an exit of their own)

    @property
    def passed(self) -> bool:
        return not self.failures

    def count(self, tally: Tally) -> None:
        """Fill the answer columns from `tally`, and fail on any 500."""
        counts = tally.counts()
        self.requests = sum(counts.values())
        self.ok, self.c4xx = counts["ok"], counts["4xx"]
        self.c500, self.c500_problem = counts["500-bare"], counts["500-problem"]
        self.c503, self.conn = counts["503"], counts["conn"]
        for kind, n in (("500-bare", 5), ("500-problem", 5), ("conn", 2)):
            self.examples += [f"{kind}: {e}" for e in tally.examples(kind, n)]
        if self.c500 or self.c500_problem:
            self.failures.append(f"{self.c500} bare 500(s), {self.c500_problem} 500 problem(s)")

    def check_writes(self, ledger: Ledger, database_url: str) -> None:
        """Read the writes back: every acknowledged one exactly once."""
        headlines, deks, ids, addresses = read_back(database_url, ledger.scenario)
        for write in ledger.writes:
            if write.kind == "file":
                n = headlines[write.marker]
            elif write.kind == "revise":
                n = deks.get(write.piece_id, Counter())[write.marker]
            else:
                n = addresses[write.marker]
            if write.acked:
                self.acked += 1
                self.found += n >= 1
                self.lost += n == 0
            # A duplicate is a second copy of any keyed write, acknowledged or not.
            self.duplicates += max(n - 1, 0)
        unacked = [w for w in ledger.writes if not w.acked]
        retried = sum(1 for w in ledger.writes if w.attempts > 1)
        self.notes.append(f"{len(ledger.writes)} writes ({retried} retried, {len(unacked)} never acknowledged)")
        if self.lost:
            self.failures.append(f"{self.lost} acknowledged write(s) lost")
        if self.duplicates:
            self.failures.append(f"{self.duplicates} duplicate(s) of keyed writes")

    def check_recovery(self, tally: Tally, fault_start: float, fault_end: float) -> None:
        """Time from the fault's end to the first success; fail past RECOVERY_TARGET. Keeps the
        answers' timeline (per second from the fault's start) for table.json."""
        self.timeline = tally.timeline(fault_start)
        self.fault_seconds = round(fault_end - fault_start, 2)
        self.recovery = tally.recovery(fault_end)
        if self.recovery is None or self.recovery > RECOVERY_TARGET:
            self.failures.append(f"recovery {self.recovery} s (target {RECOVERY_TARGET:g} s)")


HEADER = ["scenario", "backend", "requests", "2xx/3xx", "4xx", "5xx: bare 500", "5xx: 500 problem",
          "5xx: 503 problem",
          "conn errors", "writes acked", "found", "lost", "duplicates", "stale reads", "worker crashes",
          "recovery s", "run s", "result"]


def row(r: Result) -> list[str]:
    """The table cells of a result."""
    return [r.scenario, r.backend, str(r.requests), str(r.ok), str(r.c4xx), str(r.c500),
            str(r.c500_problem), str(r.c503),
            str(r.conn), str(r.acked), str(r.found), str(r.lost), str(r.duplicates),
            "-" if r.stale is None else str(r.stale), "-" if r.crashes is None else str(r.crashes),
            "-" if r.recovery is None else f"{r.recovery:.2f}", f"{r.seconds:.0f}",
            "pass" if r.passed else "FAIL"]


def render(results: list[Result], started: datetime, seconds: float) -> str:
    """The Markdown table and, under it, each scenario's notes and failures."""
    lines = [f"Fault and abuse suite, {started:%Y-%m-%d %H:%M} UTC, {seconds:.0f} s in all "
             f"(`make faults`, scripts/faults.py)", "",
             "| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(row(r)) + " |" for r in results]
    lines.append("")
    for r in results:
        lines.append(f"- **{r.scenario}** ({r.backend}): " + "; ".join(r.notes + [f"server log: {r.logged_errors} "
                                                                      "unexpected-error line(s)"]))
        lines += [f"  - FAILED: {f}" for f in r.failures]
        lines += [f"  - {e}" for e in r.examples]
        if r.failures and r.timeline:
            lines.append(f"  - answers by second sent, from the fault's start ({r.fault_seconds} s long): "
                         + "; ".join(r.timeline))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- scenarios


# One instance secret for the whole run: the prepared databases' receipt signing seeds are
# sealed under it (services/newsroom/seeds.py), and every server of every scenario must open them.
RUN_SECRET = f"faults-{uuid.uuid4().hex}"


def base_env(instance: Path, database_url: str) -> dict:
    """The environment of every server and command of a scenario: production's settings
    (config.py) on a throwaway instance folder and database, with the run's one SECRET_KEY."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "FLASK_APP", "SMTP_URL", "RATELIMIT_STORAGE_URI", "CACHE_TYPE",
                        "CACHE_REDIS_URL", "TEST_DATABASE_URL", "FAULTS_DATABASE_URL")}
    env.update(FLASK_APP="app", INSTANCE_PATH=str(instance), DATABASE_URL=database_url,
               OUTBOX_DIR=str(instance / "outbox"), SECRET_KEY=RUN_SECRET,
               WEB_CONCURRENCY="2", LOG_REQUESTS="0", PYTHONUNBUFFERED="1",
               # Alert links need an origin outside development (commands/worker.py alert_origins).
               PUBLIC_BASE_URL="http://localhost", **LIMITS)
    return env


def site_meta(client: Client) -> dict:
    """Sections and personas of the demo paper, from the API."""
    sections = client.request("GET", "/api/v1/sections").json() or {}
    masthead = client.request("GET", "/api/v1/masthead").json() or {}
    meta = {"sections": [s["name"] for s in sections.get("sections", [])],
            "personas": [p["name"] for p in masthead.get("personas", masthead.get("masthead", []))]}
    if not meta["sections"] or not meta["personas"]:
        raise SetupError(f"no sections or personas on the demo paper: {meta}")
    return meta


def under_load(server: Gunicorn, key: str, scenario: str, fault, *, before: float = 1.5,
               after: float = 3.0, **load_options) -> tuple[Tally, Ledger, float, float]:
    """Run the load, `before` s, then `fault(tally)` (blocking while the fault lasts), then
    `after` s. Returns the tally, the ledger, and the fault's start and end (monotonic)."""
    tally = Tally()
    client = Client(server.port, tally, key)
    meta = site_meta(Client(server.port, Tally(), key))
    ledger = Ledger(client, scenario)
    load = Load(client, ledger, meta, **load_options).start()
    try:
        time.sleep(before)
        fault_start = time.monotonic()
        fault(tally)
        fault_end = time.monotonic()
        time.sleep(after)
    finally:
        load.stop()
    return tally, ledger, fault_start, fault_end


def scenario_pg_kill(pg_url: str, pg_key: str, work: Path, args) -> Result:
    """Backends terminated every 0.5 s for `args.kill_seconds` under reads and keyed writes."""
    import psycopg

    result = Result("pg-kill", "postgresql")
    env = base_env(work / "pg-kill", pg_url)
    killed = []

    def fault(tally):
        deadline = time.monotonic() + args.kill_seconds
        with psycopg.connect(pg_url, autocommit=True, connect_timeout=5) as conn:
            while time.monotonic() < deadline:
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchall()
                killed.append(sum(1 for (ok,) in rows if ok))
                time.sleep(0.5)

    with Gunicorn("pg-kill", env) as server:
        tally, ledger, fault_start, fault_end = under_load(server, pg_key, "pg-kill", fault)
        result.logged_errors = server.logged_errors()
    result.count(tally)
    result.check_recovery(tally, fault_start, fault_end)
    result.check_writes(ledger, pg_url)
    result.notes.insert(0, f"{len(killed)} kill rounds over {args.kill_seconds:g} s, "
                           f"{sum(killed)} backends terminated")
    if not sum(killed):
        result.failures.append("no backend was terminated: the scenario did not test it")
    return result


def scenario_redis(db_url: str, key: str, backend: str, work: Path, args) -> Result:
    """The suite's own Redis (limits and cache) stopped for `args.redis_seconds` and started."""
    result = Result("redis", backend)
    redis = RedisServer(work / "redis-server")
    redis.start()
    try:
        env = base_env(work / "redis", db_url)
        env.update(RATELIMIT_STORAGE_URI=f"{redis.url}/0", CACHE_TYPE="RedisCache",
                   CACHE_REDIS_URL=f"{redis.url}/1?socket_timeout=0.25&socket_connect_timeout=0.25")
        seen = {}

        def fault(tally):
            seen["limits"] = redis.command("DBSIZE", db=0)
            seen["cache"] = redis.command("DBSIZE", db=1)
            redis.stop()
            time.sleep(args.redis_seconds)
            redis.start()

        with Gunicorn("redis", env) as server:
            tally, ledger, fault_start, fault_end = under_load(server, key, "redis", fault)
            after = {"limits": redis.command("DBSIZE", db=0), "cache": redis.command("DBSIZE", db=1)}
            result.logged_errors = server.logged_errors()
            # The app's own warnings (web/limits.py, web/caching.py, blueprints/feeds.py).
            fallbacks = server.count("rate-limit store unreachable")
            skipped = server.count("cache read failed") + server.count("cache write failed")
    finally:
        redis.stop()
    result.count(tally)
    result.check_recovery(tally, fault_start, fault_end)
    result.check_writes(ledger, db_url)
    result.notes.insert(0, f"Redis down {args.redis_seconds:g} s; keys before the stop: limits "
                           f"{seen.get('limits')}, cache {seen.get('cache')}; after the restart: "
                           f"limits {after['limits']}, cache {after['cache']}; the workers' limiters fell back "
                           f"to memory {fallbacks} time(s), {skipped} cache reads and writes skipped")
    if not seen.get("limits") or seen["limits"] == "0" or not fallbacks or not skipped:
        result.failures.append("the limiter or the cache never used Redis or never missed it: "
                               "the scenario did not test them")
    return result


def scenario_smtp(db_url: str, key: str, work: Path, args) -> Result:
    """A silent SMTP server while subscribes run and worker / send-alerts run beside."""
    from services.delivery import mail

    result = Result("smtp-hang", "sqlite")
    smtp = SilentSmtp()
    # Both commands send confirm mail (OUTBOX_SMTP_TIMEOUT) and recorded alerts
    # (ALERT_SMTP_TIMEOUT): each message waits at most SMTP_STEPS x its timeout, in parallel.
    # This is also the bar for "requests stay fast": a request that waited on SMTP would take
    # at least this long. Not lower: on a busy 2-CPU machine an ordinary request takes a second.
    smtp_timeout = 3.0
    # Each command's bound: both phases at their worst, plus 15 s to start the app and for the
    # database work.
    bound = 15 + 2 * smtp_timeout * mail.SMTP_STEPS
    bounds = {"drain-outbox --once": bound, "send-alerts": bound}
    took: dict[str, float] = {}
    outputs: dict[str, str] = {}
    try:
        env = base_env(work / "smtp", db_url)
        env.update(SMTP_URL=f"smtp://127.0.0.1:{smtp.port}", OUTBOX_SMTP_TIMEOUT=str(smtp_timeout),
                   ALERT_SMTP_TIMEOUT=str(smtp_timeout), ALERT_SETTLE_SECONDS="0")

        def run_cli(name: str, *cli: str) -> None:
            started = time.monotonic()
            process = subprocess.Popen([str(BIN / "flask"), *cli], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       start_new_session=True)
            try:
                outputs[name] = process.communicate(timeout=bounds[name] + 30)[0]
            except subprocess.TimeoutExpired:
                outputs[name] = "(killed: past its bound + 30 s)"
            finally:
                stop_group(process, grace=2)
            took[name] = time.monotonic() - started

        fault_window = {}

        def fault(tally):
            fault_window["start"] = time.monotonic()
            threads = [threading.Thread(target=run_cli, args=("drain-outbox --once", "drain-outbox", "--once")),
                       threading.Thread(target=run_cli, args=("send-alerts", "send-alerts"))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            fault_window["end"] = time.monotonic()

        with Gunicorn("smtp-hang", env) as server:
            tally, ledger, fault_start, fault_end = under_load(server, key, "smtp-hang", fault, subscribers=2,
                                                     writers=1)
            result.logged_errors = server.logged_errors()
    finally:
        smtp.close()
    result.count(tally)
    result.check_recovery(tally, fault_start, fault_end)
    result.check_writes(ledger, db_url)
    slowest = tally.slowest(fault_window["start"], fault_window["end"], "/api/v1/subscribers")
    slowest_any = tally.slowest(fault_window["start"], fault_window["end"], "/")
    result.notes.insert(0, f"silent SMTP took {len(smtp.held)} connection(s); " + ", ".join(
        f"`flask {name}` {took[name]:.1f} s (bound {bounds[name]:.0f} s)" for name in bounds)
        + f"; slowest subscribe during them {slowest:.2f} s, slowest request {slowest_any:.2f} s")
    for name, bound in bounds.items():
        if took.get(name, 1e9) > bound:
            result.failures.append(f"`flask {name}` took {took[name]:.1f} s, past its bound {bound:.0f} s")
        last = [line for line in outputs.get(name, "").splitlines() if line.strip()][-2:]
        result.notes.append(f"`flask {name}` said: " + " / ".join(last))
    if slowest_any > smtp_timeout:
        result.failures.append(f"a request took {slowest_any:.2f} s while SMTP hung (SMTP on a request path?)")
    if not smtp.held:
        result.failures.append("nothing connected to the silent SMTP server: the scenario did not test it")
    return result


def scenario_sqlite_move(template: Path, key: str, work: Path, args) -> Result:
    """The SQLite file renamed away for `args.move_seconds` (workers restarted meanwhile) and back."""
    result = Result("sqlite-move", "sqlite")
    folder = work / "sqlite-move"
    folder.mkdir(parents=True)
    path = folder / "paperdesk.db"
    shutil.copy(template, path)
    url = f"sqlite:///{path}"
    env = base_env(folder, url)
    moved = path.with_name("paperdesk.db.away")
    appeared, waited = [], []

    def fault(tally):
        path.rename(moved)
        started = time.monotonic()
        server.reload()
        # New workers open new connections: a pooled one would go on using the moved file
        # through its open descriptor, which is no outage at all. They take a few seconds to
        # boot on a busy machine, so the file stays away until they have answered 503s for
        # `move_seconds` (at most 30 s in all).
        first_503 = None
        while time.monotonic() - started < 30:
            if path.exists():
                appeared.append(round(time.monotonic() - started, 2))
            if first_503 is None and tally.counts()["503"]:
                first_503 = time.monotonic()
            if first_503 is not None and time.monotonic() - first_503 >= args.move_seconds:
                break
            time.sleep(0.05)
        waited.append(round(time.monotonic() - started, 1))
        if path.exists():
            appeared.append("at the end")
        else:
            moved.rename(path)

    with Gunicorn("sqlite-move", env) as server:
        tally, ledger, fault_start, fault_end = under_load(server, key, "sqlite-move", fault, after=4.0)
        result.logged_errors = server.logged_errors()
    result.count(tally)
    result.check_recovery(tally, fault_start, fault_end)
    result.check_writes(ledger, url)
    result.notes.insert(0, f"file away {waited[0] if waited else '?'} s, the workers restarted (SIGHUP) as it "
                           f"left; 503s for {args.move_seconds:g} s")
    if appeared:
        result.failures.append(f"a file appeared in the moved one's place ({appeared[:3]})")
    if not result.c503:
        result.failures.append("no 503 while the file was away: the scenario did not test it")
    return result


def operations(document: dict) -> list[tuple[str, str, dict]]:
    """(method, path template, operation) of every operation in an OpenAPI document."""
    out = []
    for path, item in sorted(document.get("paths", {}).items()):
        for method in ("get", "post", "put", "patch", "delete"):
            if method in item:
                op = item[method]
                op.setdefault("parameters", [])
                op["parameters"] = item.get("parameters", []) + op["parameters"]
                out.append((method.upper(), path, op))
    return out


def hostile_strategy(method: str, path: str, op: dict):
    """A hypothesis strategy of (path, body) for one operation: its path and query parameters
    and its body from tests/strategies.py, valid and not, as a stranger would send them."""
    from hypothesis import strategies as st

    from tests import strategies as s

    def encoded(strategy):
        # Values go into the URL percent-encoded; s.RAW is encoded already (bytes that are
        # not UTF-8 at all), and None (s.SIZES) leaves the parameter out.
        return strategy.map(lambda v: None if v is None else quote(v, safe=""))

    by_name = {name: encoded(strategy) for name, strategy in {
        "q": s.search_queries(), "day": s.DAYS, "since": s.SINCE, "limit": s.LIMITS,
        "url": s.oembed_urls(), "maxwidth": s.SIZES, "maxheight": s.SIZES,
        "format": st.sampled_from(["json", "xml", "JSON", "", "yaml"]),
        "embed": st.sampled_from(["1", "0", "", "x"])}.items()}
    fallback = st.one_of(encoded(s.TEXT), s.RAW, encoded(s.LIMITS))
    params = op.get("parameters", [])
    path_params = {p["name"] for p in params if p.get("in") == "path"}
    query_params = [p["name"] for p in params if p.get("in") == "query"]
    raw_query = st.one_of(s.RAW, s.TEXT.map(lambda t: quote(t, safe="=&")))

    @st.composite
    def request(draw):
        url = path
        for name in path_params:
            value = draw(st.one_of(encoded(s.REFS), s.RAW, by_name["day"]) if name == "day"
                         else st.one_of(encoded(s.REFS), s.RAW))
            url = url.replace("{" + name + "}", value or "x")
        query = []
        for name in query_params:
            if draw(st.booleans()) and (value := draw(by_name.get(name, fallback))) is not None:
                query.append(f"{name}={value}")
        if draw(st.integers(0, 5)) == 0:
            query.append(draw(raw_query))  # junk the route does not read, or not even key=value
        if query:
            url += "?" + "&".join(query)
        body = None
        if method in ("POST", "PATCH", "PUT"):
            if "subscribe" in path:
                shaped = s.SUBSCRIBE_BODIES
            elif path.startswith("/api/v1/stories"):
                shaped = st.one_of(s.VALID_FILING, s.FILING)  # some land: each is read back
            else:
                shaped = s.JSON
            # The route's own shape first: hypothesis's first examples favour the first branch.
            body = draw(st.one_of(shaped.map(lambda b: json.dumps(b).encode()), s.JSON.map(
                lambda b: json.dumps(b).encode()), st.binary(max_size=200),
                st.sampled_from([b"", b"{", b"[" * 5000, b'{"a": 1e999999}', b'"\\ud800"',
                                 b"9" * 5000, b"\xff\xfe{}"])))
        return url, body

    return request()


def sender(client: Client, method: str, path: str, op: dict, keyed: bool, filed: list[int],
           examples: int):
    """A hypothesis-driven function that sends `examples` hostile requests to one operation
    (derandomized: the same requests every run); ids of stories it filed land in `filed`."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @hypothesis_seed(20261124)
    @given(hostile_strategy(method, path, op))
    def send(request):
        url, body = request
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if method != "GET":
            headers["Idempotency-Key"] = uuid.uuid4().hex
        answer = client.request(method, url, body, headers=headers, keyed=keyed)
        if answer.kind == "ok" and method == "POST" and urlsplit(url).path == "/api/v1/stories":
            story_id = (answer.json() or {}).get("id")
            if story_id:
                filed.append(int(story_id))

    return send


def scenario_hostile(db_url: str, key: str, backend: str, work: Path, args) -> Result:
    """Hostile path values, query strings and bodies at every OpenAPI operation."""
    result = Result("hostile", backend)
    started = time.monotonic()
    env = base_env(work / f"hostile-{backend}", db_url)
    tally = Tally()
    with Gunicorn(f"hostile-{backend}", env) as server:
        client = Client(server.port, tally, key)
        document = Client(server.port, Tally()).request("GET", "/api/v1/openapi.json").json()
        if not document:
            raise SetupError("no OpenAPI document at /api/v1/openapi.json")
        ops = operations(document)
        filed: list[int] = []
        for method, path, op in ops:
            for keyed in (False, True):
                sender(client, method, path, op, keyed, filed, args.hostile_examples)()
        result.logged_errors = server.logged_errors()
    result.count(tally)
    _, _, ids, _ = read_back(db_url, "hostile")
    result.acked = len(filed)
    result.found = sum(1 for i in filed if i in ids)
    result.lost = result.acked - result.found
    if result.lost:
        result.failures.append(f"{result.lost} acknowledged filing(s) lost")
    result.notes.insert(0, f"{len(ops)} operations × (no key, admin key) × {args.hostile_examples} examples")
    result.seconds = time.monotonic() - started
    return result


# ----------------------------------------------------------------------------- promises under faults
#
# Issue 32's scenarios: what a reader sees after a write was answered, while the shared store
# (Redis, or the SQLite host's state file) fails, and what the log monitor sees of a database
# rewritten behind the API. A *stale read* is a read of a pulled piece, sent after the pull's
# success answer, that still shows it (200, or a 304 for the ETag it had): the promise is 0.


class StaleReads:
    """Reads of one piece's public answer on some servers, each kept with when it was sent;
    half of them revalidate the ETag the warm-up saw (the 304 path)."""

    def __init__(self, clients: list[Client], piece_id: int):
        self.clients, self.path = clients, f"/api/v1/stories/{piece_id}"
        self.etags: dict[int, str] = {}
        self.answers: list[tuple[Answer, str]] = []  # (answer, server)
        self.lock = threading.Lock()

    def read(self, n: int, *, spread: float = 0.0) -> None:
        """`n` reads on each server (one connection each, so a master's workers all answer)."""
        for c in self.clients:
            if c.port not in self.etags:
                self.etags[c.port] = self._etag_of(c)
        for i in range(n):
            for c in self.clients:
                etag = self.etags.get(c.port)
                answer = c.request("GET", self.path, keyed=False,
                                   headers={"If-None-Match": etag} if etag and i % 2 else None)
                with self.lock:
                    self.answers.append((answer, str(c.port)))
            if spread:
                time.sleep(spread)

    def _etag_of(self, c: Client) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", c.port, timeout=10)
        try:
            conn.request("GET", self.path)
            response = conn.getresponse()
            response.read()
            return response.getheader("ETag", "")
        finally:
            conn.close()

    def stale_after(self, acked: float) -> int:
        """Reads sent after `acked` (monotonic) that still show the piece."""
        with self.lock:
            return sum(1 for a, _ in self.answers if a.started >= acked and a.status in (200, 304))

    def sent_after(self, acked: float) -> int:
        with self.lock:
            return sum(1 for a, _ in self.answers if a.started >= acked)


def _on_air_piece(client: Client, n: int = 0) -> int:
    stories = (client.request("GET", "/api/v1/stories?limit=5", keyed=False).json() or {}).get("stories", [])
    if len(stories) <= n:
        raise SetupError("the demo paper has too few pieces on air")
    return int(stories[n]["id"])


def _pull(client: Client, piece_id: int, *, patience: float = 30, tally_503: list | None = None) -> float | None:
    """Pull a piece with one Idempotency-Key, sent again after a 503 or a lost connection until
    it is acknowledged; the moment (monotonic) its success answer arrived, or None."""
    key = uuid.uuid4().hex
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        answer = client.request("DELETE", f"/api/v1/stories/{piece_id}/air", headers={"Idempotency-Key": key})
        if answer.kind == "ok":
            return answer.ended
        if tally_503 is not None:
            tally_503.append(answer.status)
        if answer.kind not in ("503", "conn"):
            return None
        time.sleep(0.5)
    return None


def _revise(client: Client, piece_id: int) -> None:
    client.request("PATCH", f"/api/v1/stories/{piece_id}", {"dek": f"Revised {uuid.uuid4().hex[:8]}"},
                   headers={"Idempotency-Key": uuid.uuid4().hex})


def _crashes(server: Gunicorn) -> int:
    """Workers that died of a signal they did not ask for, or exited on their own."""
    return sum(server.count(marker) for marker in ("was sent SIGBUS", "was sent SIGSEGV", "exited with code"))


def _stale_row(result: Result, tally: Tally, stale: int, crashes: int = 0) -> Result:
    result.count(tally)
    result.stale, result.crashes = stale, crashes
    if stale:
        result.failures.append(f"{stale} stale read(s) after a write's success answer")
    if crashes:
        result.failures.append(f"{crashes} worker crash(es)")
    return result


def scenario_partition(db_url: str, key: str, backend: str, work: Path, args) -> Result:
    """Two app hosts (gunicorn masters) on one database and one Redis; host A reaches Redis
    through a relay that turns lossy and slow (half the connections black-holed, 0.3 s per
    chunk against the 0.25 s SHARED_STATE_TIMEOUT) for `args.partition_seconds`, while a pull
    is sent through A and both hosts read the piece."""
    from tests.relay import Relay

    result = Result("partition", backend)
    redis = RedisServer(work / "partition-redis")
    redis.start()
    relay = Relay(("127.0.0.1", redis.port), seed=32).start()
    tally, attempts = Tally(), []
    try:
        env_b = base_env(work / "partition", db_url)
        env_b.update(SHARED_STATE=f"{redis.url}/0", CACHE_TYPE="SimpleCache")
        env_a = {**env_b, "SHARED_STATE": f"redis://127.0.0.1:{relay.port}/0"}
        with Gunicorn("partition-a", env_a) as host_a, Gunicorn("partition-b", env_b) as host_b:
            a, b = Client(host_a.port, tally, key), Client(host_b.port, tally, key)
            piece = _on_air_piece(b)
            reads = StaleReads([a, b], piece)
            reads.read(12)  # every worker of both hosts holds the paper (and the answer)
            stop = threading.Event()

            def keep_reading():
                while not stop.is_set():
                    reads.read(1, spread=0.02)

            reader = threading.Thread(target=keep_reading, daemon=True)
            reader.start()
            fault_start = time.monotonic()
            relay.impair(delay=0.3, loss=0.5)
            relay.cut()  # live connections go: each new one crosses the lossy link
            healer = threading.Timer(args.partition_seconds, lambda: (relay.impair(), relay.cut()))
            healer.start()
            acked = _pull(a, piece, tally_503=attempts)
            healer.join()
            fault_end = time.monotonic()
            time.sleep(3.0)
            stop.set()
            reader.join(30)
            result.logged_errors = host_a.logged_errors() + host_b.logged_errors()
            unmoved = host_a.count("the shared generation could not be moved")
    finally:
        relay.stop()
        redis.stop()
    stale = reads.stale_after(acked) if acked else 0
    _stale_row(result, tally, stale)
    result.fault_seconds = round(fault_end - fault_start, 2)
    result.notes.insert(0, f"A cut off (lossy, slow) {args.partition_seconds:g} s; the pull through A answered "
                           f"{len(attempts)} time(s) without success ({Counter(attempts).most_common()}) then "
                           + (f"2xx {acked - fault_start:.1f} s into the fault" if acked else "never 2xx")
                           + f"; A logged {unmoved} unmoved generation(s); {reads.sent_after(acked or 0)} "
                           "reads on both hosts after the success answer")
    if acked is None:
        result.failures.append("the pull was never acknowledged, even after Redis came back")
    return result


def scenario_redis_lifetimes(db_url: str, key: str, backend: str, work: Path, args) -> Result:
    """One host (2 workers) on Redis. (1) Redis restarted empty between a pull and the next
    write, the workers idle meanwhile; (2) Redis restored from an RDB snapshot taken before a
    pull. Reads of the pulled piece afterwards."""
    result = Result("redis-lifetimes", backend)
    redis = RedisServer(work / "lifetimes-redis")
    redis.start()
    tally, stale, phases = Tally(), 0, []
    try:
        env = base_env(work / "lifetimes", db_url)
        env.update(SHARED_STATE=f"{redis.url}/0", CACHE_TYPE="SimpleCache")
        with Gunicorn("redis-lifetimes", env) as server:
            client = Client(server.port, tally, key)
            other = _on_air_piece(client, 4)
            for phase, piece in (("restarted empty", _on_air_piece(client, 0)),
                                 ("restored from a snapshot", _on_air_piece(client, 1))):
                reads = StaleReads([client], piece)
                if phase == "restarted empty":
                    redis.stop()
                    redis.start()  # a lifetime whose first touch is a write (INCR from nothing)
                    _revise(client, other)
                reads.read(10)  # both workers hold the paper at this generation
                if phase == "restored from a snapshot":
                    redis.command("SAVE")
                acked = _pull(client, piece)
                redis.stop()
                redis.start(keep=phase == "restored from a snapshot")
                if phase == "restarted empty":
                    _revise(client, other)  # the next write, before any read (the workers idle)
                reads.read(20)
                n = reads.stale_after(acked) if acked else 0
                stale += n
                phases.append(f"{phase}: {n} of {reads.sent_after(acked or 0)} reads stale")
            result.logged_errors = server.logged_errors()
    finally:
        redis.stop()
    _stale_row(result, tally, stale)
    result.notes.insert(0, "; ".join(phases))
    return result


def scenario_state_file(template: Path, key: str, work: Path, args) -> Result:
    """The SQLite host (SHARED_STATE host, 2 workers): its state file truncated to 0 bytes,
    then deleted and one worker restarted (a recycled worker); a pull and reads after each."""
    result = Result("state-file", "sqlite")
    folder = work / "state-file"
    folder.mkdir(parents=True)
    shutil.copy(template, folder / "paperdesk.db")
    env = base_env(folder, f"sqlite:///{folder / 'paperdesk.db'}")
    env.update(SHARED_STATE="host", CACHE_TYPE="SimpleCache")
    state_file = folder / "paperdesk-state.shm"
    tally, stale, phases = Tally(), 0, []
    with Gunicorn("state-file", env) as server:
        client = Client(server.port, tally, key)
        for phase, piece in (("truncated", _on_air_piece(client, 0)), ("deleted", _on_air_piece(client, 1))):
            reads = StaleReads([client], piece)
            reads.read(40)  # both workers read the state file (sync workers take connections unevenly)
            if phase == "deleted":
                state_file.unlink()
                booted = server.count("Booting worker")
                ps = shutil.which("ps") or "/bin/ps"
                workers = subprocess.run([ps, "-o", "pid=", "--ppid", str(server.process.pid)],
                                         capture_output=True, text=True).stdout.split()
                os.kill(int(workers[0]), signal.SIGTERM)  # recycled: the new worker opens the path
                deadline = time.monotonic() + 30
                while server.count("Booting worker") <= booted and time.monotonic() < deadline:
                    time.sleep(0.1)
                time.sleep(1.0)
            else:
                os.truncate(state_file, 0)  # the workers hold it open (and, before issue 32, mapped)
                time.sleep(0.5)
            reads.read(10)
            acked = _pull(client, piece)
            reads.read(20)
            n = reads.stale_after(acked) if acked else 0
            stale += n
            phases.append(f"{phase}: {n} of {reads.sent_after(acked or 0)} reads stale")
        crashes = _crashes(server)
        result.logged_errors = server.logged_errors()
    _stale_row(result, tally, stale, crashes)
    result.notes.insert(0, "; ".join(phases) + f"; {crashes} worker crash(es)")
    return result


def scenario_monitor_rewrite(template: Path, key: str, work: Path, args) -> Result:
    """`flask log verify` against a served paper, then after each rewrite in the database
    behind the API: a piece backdated 30 days, a persona retitled, a persona renamed. Each
    must fail, naming the field."""
    import sqlite3

    result = Result("monitor-rewrite", "sqlite")
    folder = work / "monitor"
    folder.mkdir(parents=True)
    db_path = folder / "paperdesk.db"
    shutil.copy(template, db_path)
    env = base_env(folder, f"sqlite:///{db_path}")
    # A rewrite behind the API moves no generation: with snapshots (web/state.py) the workers
    # would go on serving the version they hold until the next write. Here every public read
    # asks the database, so the monitor sees the rewrite at once.
    env.update(SHARED_STATE="off")
    tally = Tally()
    caught, runs = 0, []
    with Gunicorn("monitor-rewrite", env) as server:
        client = Client(server.port, tally, key)
        piece = _on_air_piece(client, 2)
        story = client.request("GET", f"/api/v1/stories/{piece}", keyed=False).json() or {}
        persona, title = story["byline"], story["persona"]["title"]
        verify = [str(BIN / "flask"), "log", "verify", "--url", f"http://127.0.0.1:{server.port}",
                  "--state", str(folder / "monitor.json"), "--grace", "0"]

        def run() -> tuple[int, str]:
            done = subprocess.run(verify, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            return done.returncode, done.stdout + done.stderr

        rewrites = [
            ("honest", None, None),
            ("backdated", "UPDATE pieces SET on_air_at = datetime(on_air_at, '-30 days') WHERE id = ?", (piece,)),
            ("retitled", "UPDATE personas SET title = 'Editor at large' WHERE name = ?", (persona,)),
            ("renamed", "UPDATE personas SET name = name || ' Jr', title = ? WHERE name = ?", (title, persona)),
        ]
        expected = {"backdated": "field on_air_at", "retitled": "field byline_title changed",
                    "renamed": "field byline changed"}
        for name, statement, params in rewrites:
            if statement:
                with sqlite3.connect(db_path) as conn:
                    conn.execute(statement, params)
                    conn.execute("UPDATE papers SET version = version + 1")  # no cache outlives it
            code, output = run()
            if name == "honest":
                if code != 0:
                    result.failures.append(f"the monitor failed the honest paper: {output[-400:]}")
                runs.append(f"honest: exit {code}")
                continue
            named = expected[name] in output
            caught += code == 1 and named
            runs.append(f"{name}: exit {code}" + (f", names `{expected[name]}`" if named else ""))
            if code != 1 or not named:
                result.failures.append(f"{name}: the monitor said exit {code} without naming {expected[name]!r}")
        result.logged_errors = server.logged_errors()
    result.count(tally)
    result.notes.insert(0, f"rewrites caught and named: {caught} of 3 ({'; '.join(runs)})")
    return result



# ----------------------------------------------------------------------------- main


def parse_args(argv: list[str]):
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help="comma-separated scenarios, run in this order: %(default)s")
    parser.add_argument("--kill-seconds", type=float, default=6, help="pg-kill: how long the killer runs")
    parser.add_argument("--redis-seconds", type=float, default=3, help="redis: how long Redis stays down")
    parser.add_argument("--move-seconds", type=float, default=3,
                        help="sqlite-move: how long the file stays away once the new workers answer 503")
    parser.add_argument("--partition-seconds", type=float, default=4,
                        help="partition: how long host A's link to Redis stays lossy and slow")
    parser.add_argument("--hostile-examples", type=int, default=6,
                        help="hostile: examples per operation and key (hypothesis, derandomized)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (databases, instance folders)")
    args = parser.parse_args(argv)
    args.scenarios = [name for name in args.only.split(",") if name]
    for name in args.scenarios:
        if name not in SCENARIOS:
            parser.error(f"unknown scenario {name!r}; choose from {', '.join(SCENARIOS)}")
    return args


def _terminate(signum, frame):  # SIGTERM -> unwind, so every server and database is removed
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    """Run the scenarios; print and write the table; 0, 1 (a scenario failed) or 2 (set-up)."""
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    sys.path.insert(0, str(ROOT))  # tests.strategies, services.*
    OUT.mkdir(parents=True, exist_ok=True)
    started_at = datetime.now(timezone.utc)
    started = time.monotonic()
    results: list[Result] = []
    setup_failed = False
    with ExitStack() as stack:
        work = Path(tempfile.mkdtemp(prefix="paperdesk-faults-"))
        if args.keep:
            log(f"work folder (kept): {work}")
        else:
            stack.callback(shutil.rmtree, work, ignore_errors=True)
        try:
            template = work / "template" / "paperdesk.db"
            template.parent.mkdir()
            sqlite_key = prepare(base_env(template.parent, f"sqlite:///{template}"))
            pg_url = stack.enter_context(postgres_database())
            pg_key = prepare(base_env(work / "pg", pg_url)) if pg_url else None
        except (SetupError, subprocess.TimeoutExpired, OSError) as exc:
            log(f"set-up failed: {exc}")
            return 2

        def sqlite_copy(name: str) -> str:
            folder = work / f"db-{name}"
            folder.mkdir()
            shutil.copy(template, folder / "paperdesk.db")
            return f"sqlite:///{folder / 'paperdesk.db'}"

        def run(name: str) -> list[Result]:
            if name == "pg-kill":
                if not pg_url:
                    log("pg-kill skipped: no FAULTS_DATABASE_URL or TEST_DATABASE_URL")
                    return []
                return [scenario_pg_kill(pg_url, pg_key, work, args)]
            if name == "redis":
                if pg_url:  # production's pair: PostgreSQL and Redis
                    return [scenario_redis(pg_url, pg_key, "postgresql", work, args)]
                return [scenario_redis(sqlite_copy(name), sqlite_key, "sqlite", work, args)]
            if name == "smtp-hang":
                return [scenario_smtp(sqlite_copy(name), sqlite_key, work, args)]
            if name == "sqlite-move":
                return [scenario_sqlite_move(template, sqlite_key, work, args)]
            if name in ("partition", "redis-lifetimes"):
                scenario = scenario_partition if name == "partition" else scenario_redis_lifetimes
                if pg_url:  # production's pair: PostgreSQL and Redis
                    return [scenario(pg_url, pg_key, "postgresql", work, args)]
                return [scenario(sqlite_copy(name), sqlite_key, "sqlite", work, args)]
            if name == "state-file":
                return [scenario_state_file(template, sqlite_key, work, args)]
            if name == "monitor-rewrite":
                return [scenario_monitor_rewrite(template, sqlite_key, work, args)]
            # hostile: each database refuses different things (NULs, integer ranges, collations).
            out = [scenario_hostile(sqlite_copy(name), sqlite_key, "sqlite", work, args)]
            if pg_url:
                out.append(scenario_hostile(pg_url, pg_key, "postgresql", work, args))
            return out

        for name in args.scenarios:
            t0 = time.monotonic()
            log(f"scenario {name}")
            try:
                done = run(name)
            except SetupError as exc:
                setup_failed = True
                done = [Result(name, "-", failures=[f"set-up failed: {exc}"])]
            except Exception as exc:  # noqa: BLE001 - one broken scenario must not hide the others' rows
                traceback.print_exc()
                done = [Result(name, "-", failures=[f"the scenario itself failed: {type(exc).__name__}: {exc}"])]
            for result in done:
                result.seconds = result.seconds or (time.monotonic() - t0) / len(done)
                log(f"{name} ({result.backend}): {'pass' if result.passed else 'FAIL'} in {result.seconds:.0f} s")
            results += done
    seconds = time.monotonic() - started
    table = render(results, started_at, seconds)
    print("\n" + table, flush=True)
    (OUT / "table.md").write_text(table, encoding="utf-8")
    (OUT / "table.json").write_text(json.dumps({
        "started": started_at.isoformat(timespec="seconds"), "seconds": round(seconds, 1),
        "recovery_target": RECOVERY_TARGET, "passed": all(r.passed for r in results) and not setup_failed,
        "scenarios": [{**asdict(r), "passed": r.passed} for r in results],
    }, indent=2) + "\n", encoding="utf-8")
    if setup_failed:
        return 2
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
