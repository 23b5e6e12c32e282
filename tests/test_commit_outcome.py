"""PostgreSQL connections lost at the worst moments (web/commit.py, web/idempotency.py; docs/API.md
"Idempotency-Key", "outcome unknown"):

- the COMMIT reaches the server, which commits, but its answer never comes back: a 503 problem
  with Retry-After saying the outcome is unknown; the retry with the same Idempotency-Key gets
  the first answer (the record committed with the write), and nothing is written twice;
- the COMMIT never reaches the server: the same 503; nothing was written, no record either, and
  the retry with the same key makes the write;
- the connection is lost after the answer was built (the session's ROLLBACK at the end of a
  keyed read, or of a refused write): the answer stands, never an exception out of the teardown
  (a bare 500 from the WSGI server), and the next request is served;
- a real gunicorn whose backends are terminated every 0.1 s while writers retry with their
  keys: never a 500 or an HTML page on the API, every write lands exactly once.

The app reaches PostgreSQL through a TCP relay the test cuts when it sees the COMMIT or ROLLBACK
go by (the app is built by `make_app`, as production builds it; nothing is wired into it). The
relay needs a network connection, so these run on PostgreSQL only.
"""
from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit, urlunsplit

import pytest
from sqlalchemy import func, select

from extensions import db
from models import IdempotencyKey, Section
from tests.fixtures.keys import auth
from tests.fixtures.servers import free_port
from tests.test_faults import served  # noqa: F401  (the gunicorn fixture)
from web.errors import PROBLEM_MIME

# PostgreSQL's simple-query messages for the two commands psycopg sends as such:
# 'Q', the length (4 + text + NUL), the text, NUL.
COMMIT = b"Q\x00\x00\x00\x0bCOMMIT\x00"
ROLLBACK = b"Q\x00\x00\x00\x0dROLLBACK\x00"


class CuttingRelay:
    """A TCP relay to PostgreSQL that can be armed to cut one connection when the client sends
    `pattern`: "drop" closes it without forwarding the message; "after" forwards it and closes
    the connection when the server's answer arrives, without forwarding that answer."""

    def __init__(self, target: tuple[str, int]):
        self.target, self.port = target, free_port()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.armed: tuple[bytes, str] | None = None
        self.fired = threading.Event()
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, pattern: bytes, mode: str) -> None:
        self.fired.clear()
        self.armed = (pattern, mode)

    def close(self) -> None:
        for sock in [self.listener, *self.sockets]:
            _close(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
            with self.lock:
                self.sockets += [client, upstream]
            pair = {"cut_answer": False}
            threading.Thread(target=self._up, args=(client, upstream, pair), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client, pair), daemon=True).start()

    def _take(self, data: bytes) -> str | None:
        with self.lock:
            if self.armed and self.armed[0] in data:
                mode, self.armed = self.armed[1], None
                return mode
        return None

    def _up(self, client, upstream, pair) -> None:
        try:
            while data := client.recv(65536):
                mode = self._take(data)
                if mode == "drop":
                    self.fired.set()
                    break
                if mode == "after":
                    pair["cut_answer"] = True
                upstream.sendall(data)
        except OSError:
            pass
        _close(client)
        _close(upstream)

    def _down(self, upstream, client, pair) -> None:
        try:
            while data := upstream.recv(65536):
                if pair["cut_answer"]:
                    self.fired.set()
                    break
                client.sendall(data)
        except OSError:
            pass
        _close(client)
        _close(upstream)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@pytest.fixture
def relayed(app, make_app):
    """(an app on the suite's PostgreSQL database through a CuttingRelay, the relay)."""
    if app.backend != "postgresql":
        pytest.skip("a lost connection needs a network connection: PostgreSQL only")
    parts = urlsplit(app.config["SQLALCHEMY_DATABASE_URI"])
    relay = CuttingRelay((parts.hostname, parts.port or 5432))
    netloc = f"{parts.username}@127.0.0.1:{relay.port}" if parts.username else f"127.0.0.1:{relay.port}"
    # sslmode=disable: the relay reads the protocol's plain messages to know when to cut.
    url = urlunsplit(parts._replace(netloc=netloc, query="sslmode=disable"))
    built = make_app(SQLALCHEMY_DATABASE_URI=url, CACHE_TYPE="NullCache")
    yield built, relay
    relay.close()


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    return {"paper": paper, "admin": desk.key(paper, "admin"), "read": desk.key(paper, "read")}


def sections(name: str) -> int:
    n = db.session.scalar(select(func.count()).select_from(Section).where(Section.name == name))
    db.session.rollback()
    return n


def records() -> int:
    n = db.session.scalar(select(func.count()).select_from(IdempotencyKey))
    db.session.rollback()
    return n


def assert_outcome_unknown(response) -> None:
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM_MIME
    assert int(response.headers["Retry-After"]) > 0
    body = response.get_json()
    assert "outcome unknown" in body["detail"] and "same Idempotency-Key" in body["detail"]
    text = response.get_data(as_text=True).lower()
    assert "psycopg" not in text and "traceback" not in text


@pytest.mark.parametrize("mode, landed", [("after", True), ("drop", False)],
                         ids=["answer-lost-retry-replays", "commit-never-arrives-retry-writes"])
def test_a_commit_with_an_unknown_outcome_is_a_503_and_the_retry_is_safe(relayed, newsroom, mode, landed):
    """The COMMIT's answer lost (the server committed) or the COMMIT itself lost (it did not):
    the client sees the same 503 either way, and its retry with the same key gives the one
    outcome that is right: the stored answer replayed, or the write made now."""
    faulty, relay = relayed
    client = faulty.test_client()
    headers = {**auth(newsroom["admin"], "X-Desk-Key"), "Idempotency-Key": f'"sport-{mode}"'}
    # A key's first use records `last_used_at` on a connection of its own (services/newsroom/
    # keys.py), with a COMMIT of its own: used once before, so the next COMMIT is the write's.
    assert client.get("/api/v1/config", headers=auth(newsroom["admin"])).status_code == 200
    relay.arm(COMMIT, mode)
    lost = client.post("/api/v1/sections", json={"name": "Sport"}, headers=headers)
    assert relay.fired.is_set()
    assert_outcome_unknown(lost)
    # The section and its record landed together, or neither did.
    assert sections("Sport") == records() == int(landed)
    retry = client.post("/api/v1/sections", json={"name": "Sport"}, headers=headers)
    assert retry.status_code == 201 and retry.get_json()["slug"] == "sport"
    assert retry.headers.get("Idempotent-Replayed") == ("true" if landed else None)
    assert sections("Sport") == records() == 1


def test_a_reader_form_whose_commit_is_lost_gets_the_html_503(relayed, newsroom):
    faulty, relay = relayed
    client = faulty.test_client()
    relay.arm(COMMIT, "after")
    page = client.post("/subscribe", data={"email": "reader@example.com", "sections": "World"})
    assert relay.fired.is_set()
    assert page.status_code == 503 and page.mimetype == "text/html"
    assert int(page.headers["Retry-After"]) > 0
    text = page.get_data(as_text=True).lower()
    # The reader gets the plain "briefly unavailable" page; Idempotency-Key is for API clients.
    assert "briefly unavailable" in text and "idempotency" not in text
    assert "psycopg" not in text and "traceback" not in text
    # Sending the form again is harmless: the same page whether or not the first landed.
    again = client.post("/subscribe", data={"email": "reader@example.com", "sections": "World"})
    assert again.status_code in (200, 202)


def test_a_connection_lost_after_the_answer_leaves_the_answer_as_built(relayed, newsroom):
    faulty, relay = relayed
    client = faulty.test_client()
    assert client.get("/api/v1/config", headers=auth(newsroom["read"])).status_code == 200
    # A keyed read runs in a transaction; the session's ROLLBACK at the end of the request never
    # reaches the server. The read had finished: its answer stands.
    relay.arm(ROLLBACK, "drop")
    read = client.get("/api/v1/config", headers=auth(newsroom["read"]))
    assert relay.fired.is_set()
    assert read.status_code == 200 and read.get_json()["paper"] == "demo"
    # A refused write rolls back at its commit point; that ROLLBACK lost too: still the 409.
    relay.arm(ROLLBACK, "drop")
    taken = client.post("/api/v1/sections", json={"name": "World"}, headers=auth(newsroom["admin"]))
    assert relay.fired.is_set()
    assert taken.status_code == 409 and taken.mimetype == PROBLEM_MIME
    # The lost connections were discarded; the next requests are served.
    assert client.get("/api/v1/config", headers=auth(newsroom["read"])).status_code == 200
    made = client.post("/api/v1/sections", json={"name": "Sport"}, headers=auth(newsroom["admin"]))
    assert made.status_code == 201


# ----------------------------------------------------------------------------- gunicorn


def _send(method: str, url: str, headers: dict, body: dict | None = None) -> tuple[int, str, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={**headers, "Content-Type": "application/json",
                                              "Host": "localhost"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


@pytest.mark.slow
def test_backends_terminated_under_load_never_give_a_500_and_writes_land_once(app, served):  # noqa: F811
    if app.backend != "postgresql":
        pytest.skip("pg_terminate_backend: PostgreSQL only")
    import psycopg

    base, _, admin, owner, log = served
    url = owner.config["SQLALCHEMY_DATABASE_URI"].replace("postgresql+psycopg://", "postgresql://")
    database = urlsplit(url).path.lstrip("/")
    stop = threading.Event()
    killed = []

    def killer():
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.wait(0.1):
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                    "AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
                    (database,)).fetchall()
                killed.append(len(rows))

    answers: list[tuple[str, int, str]] = []

    def write(i: int) -> int:
        headers = {**auth(admin, "X-Desk-Key"), "Idempotency-Key": f'"load-{i}"'}
        for _ in range(500):
            status, kind, body = _send("POST", f"{base}/api/v1/sections", headers, {"name": f"Load {i}"})
            answers.append(("write", status, kind))
            if status not in (409, 503):
                return status
        return -1

    def read(i: int) -> None:
        while not stop.is_set():
            for path, headers in (("/api/v1/stories", {}), ("/api/v1/config", auth(admin))):
                status, kind, _ = _send("GET", f"{base}{path}", headers)
                answers.append(("read", status, kind))

    # The readers read until the writers are done; the killer stops with them.
    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            reads = [pool.submit(read, i) for i in range(3)]
            final = list(pool.map(write, range(24)))
            stop.set()
            for future in reads:
                future.result()
    finally:
        stop.set()
        thread.join(timeout=10)
    print("terminated backends:", sum(killed), "answers:", sorted({(k, s) for k, s, _ in answers}))
    assert sum(killed) > 0
    for kind, status, content_type in answers:
        assert status in (200, 201, 409, 503), (kind, status)
        if status >= 400:
            assert content_type == PROBLEM_MIME, (kind, status, content_type)
    assert final == [201] * 24, final
    with owner.app_context():
        db.engine.dispose()  # its pooled connections were terminated too
        names = db.session.scalars(select(Section.name).where(Section.name.like("Load %"))).all()
        db.session.remove()
    assert sorted(names) == sorted(f"Load {i}" for i in range(24))
    # gunicorn's own error page (an exception out of the app) and web/errors.py's 500 never happened.
    assert not [line for line in log if "Error handling request" in line or "unhandled error" in line], log[-20:]
