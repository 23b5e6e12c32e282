"""Limits: 64 KiB bodies (413) on every route that takes one, and rate limits on every public
route (web/limits.py) with `Retry-After` and the X-RateLimit headers, shared across processes
through Redis and surviving a Redis outage; the outbound SMTP timeout is bounded.

The suite's app runs with the limits off (RATELIMIT_ENABLED=False, tests/fixtures/app.py); the
rate-limit tests build their own app with them on (create_app and nothing else), over the same
database; each app owns its limits and their store. The Redis tests run the app in two
child processes, as two gunicorn workers would, and skip when 127.0.0.1:6379 does not answer.
"""
from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import func, select

from extensions import db
from models import Piece, PieceRevision, Section, Subscriber
from services.delivery import mail, subscriptions

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 64 * 1024
REDIS = ("127.0.0.1", 6379)


# ----------------------------------------------------------------------------- helpers


def counts() -> dict:
    return {model.__tablename__: db.session.scalar(select(func.count()).select_from(model))
            for model in (Piece, PieceRevision, Section, Subscriber)}


def write_routes(app) -> list[tuple[str, str]]:
    """(method, rule) of every route that takes a request body: POST, PATCH and PUT."""
    found = []
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods & {"POST", "PATCH", "PUT"}):
            found.append((method, rule.rule))
    return sorted(found, key=lambda item: (item[1], item[0]))


def fill(rule: str, values: dict) -> str:
    path = rule
    for name, value in values.items():
        path = path.replace(f"<{name}>", str(value))
    for converter in ("string(maxlength=200):", "string(maxlength=40):", "string:", "int:"):
        for name, value in values.items():
            path = path.replace(f"<{converter}{name}>", str(value))
    assert "<" not in path, path
    return path


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again")
    return {"paper": paper, "piece": piece, "admin": desk.key(paper, "admin")}


# ----------------------------------------------------------------------------- 64 KiB bodies


def test_every_route_that_takes_a_body_refuses_one_over_64_kib(app, client, newsroom):
    routes = write_routes(app)
    # The routes this test must reach: keyed JSON writes, public subscribe, the reader's forms.
    assert {("POST", "/api/v1/stories"), ("PATCH", "/api/v1/stories/<string(maxlength=200):id>"),
            ("POST", "/api/v1/subscribers"), ("POST", "/subscribe"),
            ("POST", "/subscribe/confirm"), ("POST", "/subscribe/unsubscribe")} <= set(routes)
    values = {"id": newsroom["piece"].id, "slug": "world", "delivery_id": "dlv_0"}
    before = counts()
    for method, rule in routes:
        path = fill(rule, values)
        form = rule.startswith("/subscribe")
        body = (b"email=" + b"a" * LIMIT) if form else json.dumps({"headline": "x" * LIMIT}).encode()
        response = client.open(path, method=method, data=body, headers={
            "X-Desk-Key": newsroom["admin"],
            "Content-Type": "application/x-www-form-urlencoded" if form else "application/json"})
        assert response.status_code == 413, (method, path, response.status_code)
        if form:
            assert response.mimetype == "text/html"
        else:
            assert response.mimetype == "application/problem+json"
            assert response.get_json()["status"] == 413
    assert counts() == before


def test_a_body_of_exactly_64_kib_is_read(client, newsroom):
    # The limit is inclusive: 65 536 bytes of JSON get to validation (422: headline too long).
    head, tail = b'{"headline": "', b'"}'
    body = head + b"x" * (LIMIT - len(head) - len(tail)) + tail
    assert len(body) == LIMIT
    response = client.patch(f"/api/v1/stories/{newsroom['piece'].id}", data=body,
                            headers={"X-Desk-Key": newsroom["admin"], "Content-Type": "application/json"})
    assert response.status_code == 422 and "headline" in response.get_json()["errors"]


def test_a_chunked_body_without_a_length_is_cut_off_at_64_kib(client, newsroom):
    before = counts()
    big = json.dumps({"email": "a@example.com", "sections": ["x" * 70] * 1200}).encode()
    assert len(big) > LIMIT
    # gunicorn marks a chunked body as terminated; werkzeug then reads it up to the limit only.
    response = client.post("/api/v1/subscribers", input_stream=io.BytesIO(big),
                           headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                           environ_overrides={"wsgi.input_terminated": True})
    assert response.status_code == 413, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    assert counts() == before


# ----------------------------------------------------------------------------- rate limits


@pytest.fixture
def limited(make_app, still_clock):
    """An app over the suite's database with the limits on and small ones."""
    return make_app(
        CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True,
        RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="memory://",
        READ_RATELIMIT="5/minute",
        SUBSCRIBE_RATELIMIT="2/minute", SUBSCRIBE_ADDRESS_RATELIMIT="10/minute",
        SUBSCRIBE_LINK_RATELIMIT="3/minute",
    )


def assert_rate_headers(response, limit: int, remaining: int) -> None:
    assert response.headers["X-RateLimit-Limit"] == str(limit)
    assert response.headers["X-RateLimit-Remaining"] == str(remaining)
    assert int(response.headers["X-RateLimit-Reset"]) > time.time() - 1


def assert_429(response, *, problem: bool) -> None:
    assert response.status_code == 429
    assert 0 < int(response.headers["Retry-After"]) <= 60
    assert response.headers["X-RateLimit-Remaining"] == "0"
    if problem:
        assert response.mimetype == "application/problem+json"
        body = response.get_json()
        assert body["status"] == 429 and "Retry-After" in body["detail"]
    else:
        assert response.mimetype == "text/html"
    assert response.headers["Cache-Control"] == "no-store"


def test_reads_share_one_generous_limit_per_client(limited, newsroom):
    client = limited.test_client()
    paths = ["/api/v1/stories", "/api/v1/sections", "/rss.xml", "/", f"/embed/{newsroom['piece'].slug}"]
    for i, path in enumerate(paths):
        response = client.get(path)
        assert response.status_code == 200, path
        assert_rate_headers(response, 5, 4 - i)
        assert "Retry-After" not in response.headers  # it means something on 429 and 503 only
    assert_429(client.get("/api/v1"), problem=True)
    assert_429(client.get("/masthead"), problem=False)
    # A HEAD counts as a read too; another client has its own count.
    assert client.head("/api/v1/stories").status_code == 429
    other = client.get("/api/v1/stories", environ_base={"REMOTE_ADDR": "10.1.2.3"})
    assert other.status_code == 200
    assert_rate_headers(other, 5, 4)
    # Load balancers' checks and static files are never limited.
    assert client.get("/healthz").status_code == 200
    static = client.get("/static/css/paper.css")
    assert static.status_code == 200 and "X-RateLimit-Limit" not in static.headers
    static.close()


def test_public_subscribe_is_strict_and_keyed_writes_are_limited_too(limited, newsroom):
    client = limited.test_client()
    for i in range(2):
        response = client.post("/api/v1/subscribers", json={"email": f"r{i}@example.com"})
        assert response.status_code == 202
        # Two limits apply (per client, per address); the headers name one of them.
        assert int(response.headers["X-RateLimit-Remaining"]) >= 0
    assert_429(client.post("/api/v1/subscribe", json={"email": "r9@example.com"}), problem=True)
    # The landing page's form shares the count, and answers in HTML.
    assert_429(client.post("/subscribe", data={"email": "r8@example.com", "sections": "World"}),
               problem=False)
    with limited.app_context():
        assert db.session.scalar(select(func.count()).select_from(Subscriber)) == 2
    # Reads are counted apart from subscribing.
    assert client.get("/subscribe").status_code == 200
    # A keyed write carries a limit as well (RATELIMIT_DEFAULT, per route).
    keyed = client.patch("/api/v1/config", json={}, headers={"X-Desk-Key": newsroom["admin"]})
    assert keyed.status_code == 200 and int(keyed.headers["X-RateLimit-Limit"]) > 0


def test_confirm_and_unsubscribe_posts_are_limited(limited, client, newsroom):
    assert client.post("/api/v1/subscribers", json={"email": "reader@example.com"}).status_code == 202
    row = db.session.scalars(select(Subscriber)).one()
    token = subscriptions.make_token("unsubscribe", row)
    client = limited.test_client()
    for _ in range(3):
        assert client.post("/subscribe/confirm", data={"token": "forged"}).status_code == 400
    assert_429(client.post("/subscribe/unsubscribe", data={"token": token}), problem=False)
    with limited.app_context():
        assert db.session.get(Subscriber, row.id).unsubscribed_at is None
    # The GET pages behind the links are reads, limited with the other reads.
    assert client.get(f"/subscribe/unsubscribe?token={token}").status_code == 200


# ----------------------------------------------------------------------------- Redis


def redis_up() -> bool:
    try:
        with socket.create_connection(REDIS, timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


needs_redis = pytest.mark.skipif(not redis_up(), reason="no Redis on 127.0.0.1:6379")

# One "worker": an app on the test database with its limits in `storage`, making `n` requests
# to /api/v1/stories from one client; prints the statuses as JSON.
WORKER = """
import json, sys
import time_machine
from app import create_app
# Every worker process on one stopped clock: the count cannot straddle a window's end.
time_machine.travel(1795003220.0, tick=False).start()
app = create_app(json.loads(sys.argv[1]))
client = app.test_client()
print(json.dumps([client.get("/api/v1/stories").status_code for _ in range(int(sys.argv[2]))]))
"""


def run_worker(app, storage: str, prefix: str, n: int, tmp_path) -> list[int]:
    config = {
        "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
        "INSTANCE_PATH": str(tmp_path / "instance"), "CACHE_TYPE": "NullCache",
        "CACHE_NO_NULL_WARNING": True, "RATELIMIT_ENABLED": True,
        "RATELIMIT_STORAGE_URI": storage, "RATELIMIT_KEY_PREFIX": prefix,
        "READ_RATELIMIT": "5/hour", "LOG_REQUESTS": False,
    }
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "FLASK_APP")}
    result = subprocess.run([sys.executable, "-c", WORKER, json.dumps(config), str(n)], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@needs_redis
def test_two_processes_share_one_count_through_redis(app, newsroom, tmp_path):
    import redis

    prefix = f"paperdesk-test-{uuid.uuid4().hex}"
    try:
        assert run_worker(app, "redis://127.0.0.1:6379/0", prefix, 3, tmp_path) == [200, 200, 200]
        # A second process (another gunicorn worker, another host) continues the same count.
        assert run_worker(app, "redis://127.0.0.1:6379/0", prefix, 3, tmp_path) == [200, 200, 429]
    finally:
        server = redis.Redis(*REDIS)
        for key in server.scan_iter(match=f"*{prefix}*"):
            server.delete(key)
        server.close()


@needs_redis
def test_reserved_counts_never_let_two_hosts_exceed_a_limit(make_app, newsroom, still_clock):
    """Workers reserve blocks of counts in Redis (web/limits.py "Reserved counts"): two hosts
    reading in turn never admit more than the limit between them, no two requests are given one
    count, and a block held by the other host refuses at most RESERVE_MAX requests early."""
    import redis

    from web.limits import RESERVE_MAX

    prefix = f"paperdesk-test-{uuid.uuid4().hex}"
    settings = dict(CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True, RATELIMIT_ENABLED=True,
                    RATELIMIT_STORAGE_URI="redis://127.0.0.1:6379/0", RATELIMIT_KEY_PREFIX=prefix,
                    READ_RATELIMIT="200/minute")
    hosts = [make_app(**settings).test_client(), make_app(**settings).test_client()]
    try:
        answers = [hosts[n % 2].get("/api/v1/sections") for n in range(240)]
        admitted = [int(a.headers["X-RateLimit-Remaining"]) for a in answers if a.status_code == 200]
        assert {a.status_code for a in answers} == {200, 429}
        assert len(admitted) == len(set(admitted))  # every admitted read had a count of its own
        assert 200 - RESERVE_MAX <= len(admitted) <= 200
        assert all(a.status_code == 429 for a in answers[len(admitted) + RESERVE_MAX:])
    finally:
        server = redis.Redis(*REDIS)
        for key in server.scan_iter(match=f"*{prefix}*"):
            server.delete(key)
        server.close()


def test_the_config_keeps_requests_served_when_the_limiter_store_fails():
    import config

    settings = config.load()
    assert settings["RATELIMIT_IN_MEMORY_FALLBACK_ENABLED"] is True
    assert settings["RATELIMIT_STORAGE_OPTIONS"] == {"socket_timeout": 1, "socket_connect_timeout": 1}


@pytest.mark.slow
def test_an_unreachable_limiter_store_limits_in_memory_instead_of_failing(app, newsroom, tmp_path):
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    statuses = run_worker(app, f"redis://127.0.0.1:{port}/0", "unused", 7, tmp_path)
    assert statuses == [200] * 5 + [429] * 2


# ----------------------------------------------------------------------------- SMTP timeout


def test_a_silent_smtp_server_costs_a_bounded_wait():
    """A server that accepts the connection and never greets: the mailer gives up after its
    timeout (mail.SMTP_TIMEOUT in production) instead of holding `send-alerts` for ever."""
    assert 0 < mail.SMTP_TIMEOUT <= 60
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []
    waiter = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    waiter.start()
    mailer = mail.SmtpMailer(f"smtp://127.0.0.1:{server.getsockname()[1]}", timeout=0.5)
    message = mail.compose(from_name="Desk", from_addr="desk@example.com", to="r@example.com",
                           subject="Hello", text="Hi", html="<p>Hi</p>", now=datetime.now(timezone.utc))
    started = time.monotonic()
    try:
        with pytest.raises(mail.MailError, match="timed out"):
            mailer.send(message)
        assert time.monotonic() - started < 5
    finally:
        mailer.close()
        waiter.join(timeout=5)
        for conn in accepted:
            conn.close()
        server.close()
