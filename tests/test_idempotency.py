"""`Idempotency-Key` on keyed writes (web/idempotency.py, web/commit.py; docs/API.md
"Idempotency-Key"), through HTTP on SQLite and PostgreSQL: the same request with the same key
gets the first answer again and writes once; the key reused for another request is a 422; a key
still in flight is a 409; keys are scoped per paper and per desk key; a refused write stores
nothing; a record older than IDEMPOTENCY_TTL_SECONDS is ignored and purged; a malformed key is a
400; the public subscribe ignores the header."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import time_machine
from sqlalchemy import func, select, text

from extensions import db
from models import IdempotencyKey, Paper, Piece, Section, Subscriber
from tests.fixtures.keys import auth
from web import idempotency
from web.errors import PROBLEM_MIME

T0 = "2026-11-20T12:00:00Z"


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again", on_air_at=None)
    return {"paper": paper, "piece": str(piece.id), "admin": desk.key(paper, "admin"),
            "other_admin": desk.key(paper, "admin"), "read": desk.key(paper, "read")}


def keyed(key: str, idem: str | None) -> dict[str, str]:
    headers = auth(key, "X-Desk-Key")
    if idem is not None:
        headers["Idempotency-Key"] = idem
    return headers


def story(headline: str = "Filed once") -> dict:
    return {"headline": headline, "dek": "The standfirst.", "prose": "It happened[^1].",
            "section": "World", "byline": "Ada Quill",
            "cited_facts": [{"statement": "A fact", "source": "Office", "instrument": "Bulletin",
                             "claim_key": "c-1"}]}


def count(model) -> int:
    n = db.session.scalar(select(func.count()).select_from(model))
    db.session.rollback()
    return n


def version() -> int:
    v = db.session.scalar(select(Paper.version).where(Paper.slug == "demo"))
    db.session.rollback()
    return v


def assert_problem(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True))
    assert response.mimetype == PROBLEM_MIME
    body = response.get_json()
    assert body["status"] == status
    return body


# ----------------------------------------------------------------------------- replay


def test_a_retried_filing_replays_the_first_answer_and_files_once(client, newsroom):
    first = client.post("/api/v1/stories", json=story(), headers=keyed(newsroom["admin"], '"file-1"'))
    assert first.status_code == 201
    assert "Idempotent-Replayed" not in first.headers
    after_first = (count(Piece), version())
    # The bare token is the same key, leniently accepted.
    for sent in ('"file-1"', "file-1"):
        again = client.post("/api/v1/stories", json=story(), headers=keyed(newsroom["admin"], sent))
        assert again.status_code == 201
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.get_data() == first.get_data()
        for name in ("Location", "Content-Type", "Cache-Control"):
            assert again.headers[name] == first.headers[name], name
    assert (count(Piece), version()) == after_first
    row = db.session.scalars(select(IdempotencyKey)).one()
    assert (row.key, row.method, row.path, row.status) == ("file-1", "POST", "/api/v1/stories", 201)
    db.session.rollback()


WRITES = [
    ("POST", "/api/v1/sections", {"name": "Sport"}, 201),
    ("PATCH", "/api/v1/sections/world", {"description": "Abroad"}, 200),
    ("POST", "/api/v1/personas", {"name": "Nova Lark"}, 201),
    ("PATCH", "/api/v1/personas/ada-quill", {"beat": "Rates"}, 200),
    ("POST", "/api/v1/cast", {"day": "2026-11-19", "title": "Thursday",
                              "video_url": "https://cdn.example.com/19.mp4",
                              "poster_url": "https://cdn.example.com/19.jpg"}, 201),
    ("PATCH", "/api/v1/config", {"motto": "Changed once"}, 200),
    ("PATCH", "/api/v1/stories/{piece}", {"headline": "Revised once"}, 200),
    ("PUT", "/api/v1/stories/{piece}/air", None, 200),
    ("DELETE", "/api/v1/stories/{piece}/air", None, 200),
    ("POST", "/api/v1/subscribers", {"emails": ["batch@example.com"]}, 202),
]


@pytest.mark.parametrize("method, path, body, status", WRITES,
                         ids=[f"{m} {p}" for m, p, _, _ in WRITES])
def test_every_keyed_write_replays_its_first_answer(client, newsroom, method, path, body, status):
    url = path.format(piece=newsroom["piece"])
    headers = keyed(newsroom["admin"], '"write-1"')
    if method == "DELETE":  # something to take off air
        assert client.put(url, headers=auth(newsroom["admin"])).status_code == 200
    first = client.open(url, method=method, json=body, headers=headers)
    assert first.status_code == status, first.get_data(as_text=True)
    moved = version()
    again = client.open(url, method=method, json=body, headers=headers)
    assert again.status_code == status
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    assert version() == moved  # the replay wrote nothing
    if path == "/api/v1/subscribers":
        assert count(Subscriber) == 1


# ----------------------------------------------------------------------------- refusals


def test_the_same_key_for_another_request_is_a_422_and_writes_nothing(client, newsroom):
    headers = keyed(newsroom["admin"], '"k-1"')
    assert client.post("/api/v1/sections", json={"name": "Sport"}, headers=headers).status_code == 201
    before = (count(Section), version())
    other_body = client.post("/api/v1/sections", json={"name": "Arts"}, headers=headers)
    body = assert_problem(other_body, 422)
    assert "Idempotency-Key" in body["errors"]
    # The raw body is the fingerprint: the same JSON spelled differently is another request.
    spaced = client.post("/api/v1/sections", data='{"name":  "Sport"}', headers=headers,
                         content_type="application/json")
    assert_problem(spaced, 422)
    assert_problem(client.patch("/api/v1/sections/world", json={"name": "Sport"}, headers=headers), 422)
    assert_problem(client.put(f"/api/v1/stories/{newsroom['piece']}/air", headers=headers), 422)
    assert (count(Section), version()) == before


def test_keys_are_scoped_per_desk_key_and_per_paper(client, desk, newsroom):
    same = '"shared"'
    mine = client.post("/api/v1/stories", json=story("Mine"), headers=keyed(newsroom["admin"], same))
    theirs = client.post("/api/v1/stories", json=story("Mine"),
                         headers=keyed(newsroom["other_admin"], same))
    assert mine.status_code == theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs.headers
    assert mine.get_json()["id"] != theirs.get_json()["id"]
    other_paper = desk.paper("other")
    elsewhere = client.post("/api/v1/stories", json=story("Mine"), base_url="http://other.localhost",
                            headers=keyed(desk.key(other_paper, "admin"), same))
    assert elsewhere.status_code == 201 and "Idempotent-Replayed" not in elsewhere.headers
    assert count(Piece) == 1 + 3


def test_a_refused_write_stores_nothing_and_the_key_may_be_used_again(client, newsroom):
    headers = keyed(newsroom["admin"], '"retry-me"')
    taken = client.post("/api/v1/sections", json={"name": "World"}, headers=headers)
    assert_problem(taken, 409)
    invalid = client.post("/api/v1/sections", json={"name": ""}, headers=headers)
    assert_problem(invalid, 422)
    forbidden = client.post("/api/v1/sections", json={"name": "Sport"},
                            headers=keyed(newsroom["read"], '"retry-me"'))
    assert_problem(forbidden, 403)
    assert count(IdempotencyKey) == 0
    fixed = client.post("/api/v1/sections", json={"name": "Sport"}, headers=headers)
    assert fixed.status_code == 201 and "Idempotent-Replayed" not in fixed.headers
    assert count(IdempotencyKey) == 1


@pytest.mark.parametrize("value", [
    '""', '"never closed', '"a";p=1', '"a" "b"', '"bad \\x escape"', "two words", "x" * 256,
    '"' + "x" * 256 + '"', "caf\u00e9", '"tab\there"', "",
])
def test_a_malformed_key_is_a_400_before_any_write(client, newsroom, value):
    before = version()
    response = client.post("/api/v1/sections", json={"name": "Sport"},
                           headers=keyed(newsroom["admin"], value))
    body = assert_problem(response, 400)
    assert "Idempotency-Key" in body["detail"]
    assert version() == before


def test_two_key_headers_are_a_400(client, newsroom):
    headers = [("X-Desk-Key", newsroom["admin"]), ("Idempotency-Key", '"a"'), ("Idempotency-Key", '"b"')]
    assert_problem(client.post("/api/v1/sections", json={"name": "Sport"}, headers=headers), 400)


@pytest.mark.parametrize("value, key", [
    ('"with \\"quotes\\" and \\\\"', 'with "quotes" and \\'),
    ('"spaces are fine"', "spaces are fine"),
    ("urn:uuid:8e03978e-40d5-43e8-bc93-6894a57f9324", "urn:uuid:8e03978e-40d5-43e8-bc93-6894a57f9324"),
    ('"' + "x" * 255 + '"', "x" * 255),
])
def test_well_formed_keys_are_stored_unescaped(client, newsroom, value, key):
    response = client.post("/api/v1/sections", json={"name": "Sport"}, headers=keyed(newsroom["admin"], value))
    assert response.status_code == 201
    assert db.session.scalars(select(IdempotencyKey.key)).one() == key
    db.session.rollback()


def test_the_public_subscribe_ignores_the_header_but_refuses_a_malformed_one(client, newsroom):
    for value in ('"same"', '"same"', "token-1"):
        response = client.post("/api/v1/subscribers", json={"email": "reader@example.com"},
                               headers={"Idempotency-Key": value})
        assert response.status_code == 202 and "Idempotent-Replayed" not in response.headers
    assert count(IdempotencyKey) == 0
    # Validated at the door, as the document declares it, even where there is nothing to replay.
    before = count(Subscriber)
    refused = client.post("/api/v1/subscribers", json={"email": "other@example.com"},
                          headers={"Idempotency-Key": "not a key at all"})
    assert_problem(refused, 400)
    assert count(Subscriber) == before  # nothing written


# ----------------------------------------------------------------------------- retention


def test_a_record_older_than_the_ttl_is_ignored_then_purged(app, client, desk, newsroom):
    ttl = app.config["IDEMPOTENCY_TTL_SECONDS"]
    assert ttl == 24 * 3600  # the documented default
    headers = keyed(newsroom["admin"], '"daily"')
    with time_machine.travel(T0, tick=False) as clock:
        assert client.post("/api/v1/sections", json={"name": "Sport"}, headers=headers).status_code == 201
        other = keyed(newsroom["admin"], '"once"')
        assert client.post("/api/v1/sections", json={"name": "Arts"}, headers=other).status_code == 201
        clock.shift(timedelta(seconds=ttl - 1))
        assert_problem(client.post("/api/v1/sections", json={"name": "Games"}, headers=headers), 422)
        clock.shift(timedelta(seconds=1))
        # Expired: the key is free again; the new write is made and recorded.
        fresh = client.post("/api/v1/sections", json={"name": "Games"}, headers=headers)
        assert fresh.status_code == 201 and "Idempotent-Replayed" not in fresh.headers
        keys = db.session.scalars(select(IdempotencyKey.key)).all()
        db.session.rollback()
        # The other expired record was purged by that write.
        assert keys == ["daily"]
        assert count(Section) == 3 + 3


# ----------------------------------------------------------------------------- in flight


def _hold_the_writers(app):
    """Block every writer of the suite's database until the returned function is called:
    SQLite, a second connection holding the write lock; PostgreSQL, the demo paper's row
    locked FOR UPDATE (every write moves the paper's version)."""
    if app.backend == "sqlite":
        import sqlite3

        from config import sqlite_file

        conn = sqlite3.connect(sqlite_file(app.config["SQLALCHEMY_DATABASE_URI"], app.instance_path),
                               isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
    else:
        import psycopg

        url = app.config["SQLALCHEMY_DATABASE_URI"].replace("postgresql+psycopg://", "postgresql://")
        conn = psycopg.connect(url)
        conn.execute("SELECT id FROM papers WHERE slug = 'demo' FOR UPDATE")

    def release():
        conn.rollback()
        conn.close()

    return release


def _wait_until(predicate, what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)  # polling for another thread's progress, not a clock


def test_the_same_key_while_the_first_is_in_flight_is_a_409(app, newsroom):
    admin = newsroom["admin"]
    headers = keyed(admin, '"slow"')
    release = _hold_the_writers(app)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(lambda: app.test_client().post("/api/v1/sections", json={"name": "Sport"},
                                                               headers=headers))
            _wait_until(lambda: idempotency.in_flight(app), "the first request to be under way")
            second = app.test_client().post("/api/v1/sections", json={"name": "Sport"}, headers=headers)
            body = assert_problem(second, 409)
            assert "still being processed" in body["detail"]
            release()
            release = None
            assert first.result(timeout=30).status_code == 201
    finally:
        if release:
            release()
    third = app.test_client().post("/api/v1/sections", json={"name": "Sport"}, headers=headers)
    assert third.status_code == 201 and third.headers["Idempotent-Replayed"] == "true"
    assert count(Section) == 4


def test_another_worker_with_the_same_key_in_flight(app, make_app, newsroom):
    """PostgreSQL: the second worker gets a 409 while the first holds the key. SQLite serialises
    writers (BEGIN IMMEDIATE): the second waits for the first and gets its answer."""
    worker_a, worker_b = make_app(), make_app()
    headers = keyed(newsroom["admin"], '"two-workers"')
    release = _hold_the_writers(app)

    def post(worker):
        return worker.test_client().post("/api/v1/sections", json={"name": "Sport"}, headers=headers)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            first = pool.submit(post, worker_a)
            _wait_until(lambda: idempotency.in_flight(worker_a), "worker A to be under way")
            if app.backend == "postgresql":
                def waiting_on_the_paper() -> bool:
                    n = db.session.scalar(text("SELECT count(*) FROM pg_stat_activity WHERE "
                                               "wait_event_type = 'Lock' AND datname = current_database()"))
                    db.session.rollback()
                    return n > 0

                _wait_until(waiting_on_the_paper, "worker A to wait for the paper's row")
                body = assert_problem(post(worker_b), 409)
                assert "still being processed" in body["detail"]
                release()
                release = None
                assert first.result(timeout=30).status_code == 201
                answers = [first.result(), post(worker_b)]
            else:
                second = pool.submit(post, worker_b)
                _wait_until(lambda: idempotency.in_flight(worker_b), "worker B to be under way")
                release()
                release = None
                answers = [first.result(timeout=30), second.result(timeout=30)]
    finally:
        if release:
            release()
    assert [a.status_code for a in answers] == [201, 201]
    assert sorted(a.headers.get("Idempotent-Replayed", "") for a in answers) == ["", "true"]
    assert answers[0].get_data() == answers[1].get_data()
    assert count(Section) == 4


def test_concurrent_retries_write_once(app, make_app, newsroom):
    """Eight workers send the same filing with the same key at once: one writes, the others get
    409 (in flight) or the replay, never a second piece."""
    workers = [make_app() for _ in range(2)]
    headers = keyed(newsroom["admin"], '"storm"')
    barrier = threading.Barrier(8)

    def send(i):
        barrier.wait()
        return workers[i % 2].test_client().post("/api/v1/stories", json=story("Storm"), headers=headers)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(send, range(8)))
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {201, 409}, statuses
    made = [a for a in answers if a.status_code == 201 and "Idempotent-Replayed" not in a.headers]
    assert len(made) == 1, statuses
    assert all(a.get_data() == made[0].get_data() for a in answers if a.status_code == 201)
    assert count(Piece) == 2
