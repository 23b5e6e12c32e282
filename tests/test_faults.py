"""Faults: the database goes away and comes back; a webhook receiver hangs or drips; two gunicorn
workers revise one piece at once.

- Database gone: an app whose engine reaches the test database through something the test can
  take away (SQLite: the file, opened afresh per request and renamed away; PostgreSQL: a TCP
  relay to the server, stopped and restarted on the same port). Every kind of answer is a 503
  (problem+json, or the HTML page) with Retry-After and no trace of the exception; the next
  request after the database returns is served.
- Webhooks: a receiver that accepts and never answers costs one bounded wait, and the delivery
  is retried with backoff; one that drips its answer a byte at a time is cut off at the same
  bound (a per-read timeout alone would wait for ever).
- Two gunicorn workers (a real server, its own database) take N concurrent revisions of one
  piece: every answer is a 200 or a 409/503 problem, never a 500; the final `rev` is 1 + the
  number of 200s, and revisions 1..rev are all present and chained by `prev_hash`.
- SMTP gone during `send-alerts` (nothing marked sent, the next run delivers) is
  tests/test_alerts.py::test_smtp_down_marks_nothing_sent_and_next_run_delivers, and a killed
  run is tests/test_alerts_kill.py: not repeated here.
"""
from __future__ import annotations

import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import time_machine
from sqlalchemy import select
from sqlalchemy.pool import NullPool

import config
from app import create_app
from commands.database import migrate_to_head
from extensions import db
from models import Piece, PieceRevision, Subscriber, WebhookDelivery
from services import http, retry
from services.delivery import webhooks
from tests.fixtures.app import dispose
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import Desk
from tests.fixtures.servers import gunicorn
from tests.relay import Relay

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LEAK_WORDS = ("traceback", "operationalerror", "sqlalchemy", "psycopg", "sqlite", "errno")


# ----------------------------------------------------------------------------- database gone


def outage(app):
    """(database URL for the fault app, engine options, take_away(), bring_back())."""
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    if app.backend == "sqlite":
        path = config.sqlite_file(url, app.instance_path)
        away = path.with_name(path.name + ".away")
        # The app opens the file read-write only (a missing file is an error, never a new empty
        # database). NullPool: each request opens the file, as a new server process would.
        return (url, {"poolclass": NullPool}, lambda: path.rename(away), lambda: away.rename(path))
    parts = urlsplit(url)
    relay = Relay((parts.hostname, parts.port or 5432)).start()
    netloc = f"{parts.username}@127.0.0.1:{relay.port}" if parts.username else f"127.0.0.1:{relay.port}"
    # Production's options (no pre-ping): its pool must drop the connections the outage cut.
    # A stopped relay refuses connections at once, so no connect timeout is needed either.
    url = urlunsplit(parts._replace(netloc=netloc))
    return (url, config.engine_options(url), relay.stop, relay.start)


def assert_unavailable(response, *, problem: bool) -> None:
    assert response.status_code == 503, response.status_code
    assert int(response.headers["Retry-After"]) > 0
    assert response.headers["Cache-Control"] == "no-store"
    text = response.get_data(as_text=True).lower()
    assert not any(word in text for word in LEAK_WORDS), text[:400]
    if problem:
        assert response.mimetype == "application/problem+json"
        assert response.get_json()["status"] == 503
    else:
        assert response.mimetype == "text/html"


def test_database_gone_is_a_503_and_service_returns_with_it(app, desk, tmp_path):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Still here")
    admin = desk.key(paper, "admin")
    url, engine_options, take_away, bring_back = outage(app)
    faulty = create_app({
        "TESTING": True, "SQLALCHEMY_DATABASE_URI": url, "SQLALCHEMY_ENGINE_OPTIONS": engine_options,
        "RATELIMIT_ENABLED": False, "INSTANCE_PATH": str(tmp_path), "OUTBOX_DIR": str(tmp_path / "out"),
        "CACHE_TYPE": "NullCache", "CACHE_NO_NULL_WARNING": True,
    })
    client = faulty.test_client()
    try:
        assert client.get("/api/v1/stories").status_code == 200  # connections made and pooled
        take_away()
        try:
            assert_unavailable(client.get("/api/v1/stories"), problem=True)
            assert_unavailable(client.get(f"/api/v1/stories/{piece.id}/proof",
                                          headers=auth(admin, "X-Desk-Key")), problem=True)
            assert_unavailable(client.post("/api/v1/subscribers", json={"email": "a@example.com"}),
                               problem=True)
            assert_unavailable(client.get("/readyz"), problem=True)
            assert_unavailable(client.get("/rss.xml"), problem=True)
            assert_unavailable(client.get("/"), problem=False)
            assert_unavailable(client.get("/stories/still-here"), problem=False)
            # The process itself is alive: a load balancer keeps it, and routes around it on /readyz.
            assert client.get("/healthz").status_code == 200
        finally:
            bring_back()
        # The first request after the database returns is served: no restart needed.
        again = client.get("/api/v1/stories")
        assert again.status_code == 200
        assert [s["headline"] for s in again.get_json()["stories"]] == ["Still here"]
        assert client.get("/readyz").status_code == 200
        assert client.post("/api/v1/subscribers", json={"email": "a@example.com"}).status_code == 202
    finally:
        dispose(faulty)


# ----------------------------------------------------------------------------- webhooks


class SlowReceiver:
    """Accepts connections and reads the request; then either never answers ("hang"), drips
    an answer one byte every `drip` seconds ("drip"), or answers 204 ("ok")."""

    def __init__(self, mode: str = "hang", drip: float = 0.2):
        self.mode, self.drip = mode, drip
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.requests = 0
        self.done = threading.Event()
        self.clients: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.clients.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            self.requests += 1
            if self.mode == "ok":
                conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
            elif self.mode == "drip":
                for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                    conn.sendall(bytes([byte]))
                    if self.done.wait(self.drip):  # the peer's pace, not the test's
                        return
            else:
                self.done.wait(60)
        except OSError:
            pass

    def close(self) -> None:
        self.done.set()
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.server.close()
        for conn in self.clients:
            conn.close()


@pytest.mark.slow
def test_a_hanging_webhook_costs_a_bounded_wait_and_is_retried_later(app, client, desk, runner):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    receiver = SlowReceiver("hang")
    t0 = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
    try:
        with time_machine.travel(t0, tick=False) as clock:
            assert client.post("/api/v1/subscribers", headers=auth(admin, "X-Desk-Key"),
                               json={"emails": ["hook@example.com"], "webhook": receiver.url}).status_code == 202
            row = db.session.scalars(select(Subscriber)).one()
            webhooks.enqueue(row, "test", {"hello": "world"}, t0)
            db.session.commit()
            started = time.monotonic()
            result = runner.invoke(args=["deliver-webhooks"])
            waited = time.monotonic() - started
            assert result.exit_code == 1 and "delivered 0, failed 1, pending 1" in result.output
            assert receiver.requests == 1
            assert waited < http.TIMEOUT_SECONDS + 3, waited
            db.session.expire_all()
            delivery = db.session.scalars(select(WebhookDelivery)).one()
            assert delivery.attempts == 1 and delivery.delivered_at is None and delivery.failed_at is None
            assert "timed out" in delivery.last_error
            assert delivery.next_attempt_at == t0 + retry.backoff(1)
            # The receiver recovers; once the backoff has passed, the next run delivers.
            receiver.mode = "ok"
            clock.move_to(t0 + retry.backoff(1) + timedelta(seconds=1))
            result = runner.invoke(args=["deliver-webhooks"])
            assert result.exit_code == 0 and "delivered 1, failed 0, pending 0" in result.output
    finally:
        receiver.close()


def test_a_dripping_webhook_is_cut_off_at_the_same_bound():
    receiver = SlowReceiver("drip", drip=0.2)
    try:
        started = time.monotonic()
        attempt = webhooks.post(receiver.url, b"{}", {}, allow_private=True, timeout=1.0)
        waited = time.monotonic() - started
        assert not attempt.ok and attempt.status is None
        # Each byte comes well within the 1 s per-read timeout; only a deadline on the whole
        # attempt stops it (10 000 bytes at 0.2 s would be half an hour).
        assert waited < 3, waited
    finally:
        receiver.close()


# ----------------------------------------------------------------------------- gunicorn


def _postgres_database(base_url: str, name: str):
    import psycopg

    parts = urlsplit(base_url.replace("postgresql+psycopg://", "postgresql://"))
    admin = urlunsplit(parts._replace(scheme="postgresql"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop():
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urlunsplit(parts._replace(scheme="postgresql+psycopg", path="/" + name)), drop


@pytest.fixture
def served(app, tmp_path):
    """gunicorn (the repo's gunicorn.conf.py, 2 sync workers) on its own database with paper
    `demo`, one piece and an admin key. Yields (base URL, piece id, admin key, app over it)."""
    drop = None
    if app.backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'served.db'}"
    else:
        base = urlsplit(app.config["SQLALCHEMY_DATABASE_URI"]).path.lstrip("/")
        url, drop = _postgres_database(app.config["SQLALCHEMY_DATABASE_URI"], f"{base}_filing")
    instance = tmp_path / "instance"
    owner = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": url, "RATELIMIT_ENABLED": False,
                        "INSTANCE_PATH": str(instance), "CACHE_TYPE": "NullCache",
                        "CACHE_NO_NULL_WARNING": True})
    with owner.app_context():
        migrate_to_head()
        desk = Desk(owner)
        paper = desk.paper("demo")
        piece_id = desk.piece(paper, "One piece, many hands").id
        admin = desk.key(paper, "admin")
        db.session.remove()
    env = dict(DATABASE_URL=url.replace("postgresql+psycopg://", "postgresql://"),
               INSTANCE_PATH=str(instance), RATELIMIT_ENABLED="0", CACHE_TYPE="NullCache",
               LOG_REQUESTS="0")
    try:
        with gunicorn(env, workers=2) as (base, log):
            yield base, piece_id, admin, owner, log
    finally:
        with owner.app_context():
            db.session.remove()
            db.engine.dispose()
        if drop:
            drop()


def call(method: str, url: str, key: str, body: dict | None = None) -> tuple[int, dict, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        **auth(key, "X-Desk-Key"), "Content-Type": "application/json", "Host": "localhost"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


@pytest.mark.slow
def test_two_workers_revising_one_piece_lose_no_revision(served):
    base, piece_id, admin, owner, log = served
    n = 16
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(
            lambda i: call("PATCH", f"{base}/api/v1/stories/{piece_id}", admin,
                           {"headline": f"Headline from hand {i}"}), range(n)))
    statuses = [status for status, _, _ in answers]
    print("concurrent revisions:", sorted(statuses))
    assert all(status in (200, 409, 503) for status in statuses), statuses
    for status, headers, body in answers:
        if status != 200:
            assert headers["Content-Type"] == "application/problem+json" and body["status"] == status
    ok = [body for status, _, body in answers if status == 200]
    assert ok, statuses
    # Every 200 filed its own revision: no two share a rev.
    assert len({body["rev"] for body in ok}) == len(ok)

    status, headers, story = call("GET", f"{base}/api/v1/stories/{piece_id}", admin)
    assert status == 200 and story["rev"] == 1 + len(ok), (story["rev"], statuses)
    # The real server names itself without a version.
    assert headers["Server"] == "gunicorn"
    with owner.app_context():
        revisions = db.session.scalars(select(PieceRevision).where(PieceRevision.piece_id == piece_id)
                                       .order_by(PieceRevision.rev)).all()
        assert [r.rev for r in revisions] == list(range(1, story["rev"] + 1))
        assert revisions[0].prev_hash is None
        for previous, current in zip(revisions, revisions[1:], strict=False):
            assert current.prev_hash == previous.content_hash
        piece = db.session.get(Piece, piece_id)
        assert piece.content_hash == revisions[-1].content_hash
        assert piece.headline == revisions[-1].basis["headline"]
        db.session.remove()
    assert not [line for line in log if "Traceback" in line or "unhandled error" in line], log[-20:]
