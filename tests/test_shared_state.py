"""The deployment's generation under faults (web/state.py; docs/SECURITY.md "Never stale, under
faults"): a write whose generation cannot be moved is never answered as a success, generations
never repeat across Redis lifetimes, and the SQLite host's state file survives being deleted,
truncated or replaced under its workers. Real redis-servers on loopback, a TCP relay to cut one
"host" off, and two apps of one deployment (two workers) on the suite's database."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from extensions import db
from models import Paper
from tests.fixtures.keys import auth
from tests.relay import Relay, free_port
from web import state


class RedisServer:
    """A redis-server of the test's own on a loopback port, in `folder` (its RDB snapshot
    `dump.rdb` is written only by `save`), stopped and started again on the same port."""

    def __init__(self, folder: Path):
        self.binary = shutil.which("redis-server")
        if not self.binary:
            pytest.skip("redis-server is not installed")
        self.folder, self.port, self.process = folder, free_port(), None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder), "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None

    def save(self) -> None:
        import redis

        redis.Redis.from_url(self.url).save()


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def paper_and_key(desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again")
    return piece.id, desk.key(paper, "admin")


def _workers(make_app, url_a: str, url_b: str):
    """Two apps of one deployment ("hosts" A and B): A reaches Redis at `url_a`, B at `url_b`."""
    a = make_app(SHARED_STATE=url_a, RATELIMIT_KEY_PREFIX="fault")
    b = make_app(SHARED_STATE=url_b, RATELIMIT_KEY_PREFIX="fault")
    return a.test_client(), b.test_client()


# ----------------------------------------------------------------------------- a write that cannot move it


def _one_host_cut_off(make_app, paper_and_key, redis_server):
    """Hosts A and B of one deployment, B holding a snapshot of the paper, then A cut off from
    Redis (its relay stopped): (relay, host_a, host_b, the story's URL, the admin key)."""
    piece_id, admin = paper_and_key
    relay = Relay(("127.0.0.1", redis_server.port)).start()
    host_a, host_b = _workers(make_app, f"redis://127.0.0.1:{relay.port}/0", redis_server.url)
    story = f"/api/v1/stories/{piece_id}"
    assert host_b.get(story).status_code == 200
    relay.stop()
    return relay, host_a, host_b, story, admin


def test_a_pull_whose_generation_cannot_move_is_503_and_its_retry_completes_it(
        make_app, paper_and_key, redis_server):
    piece_id, admin = paper_and_key
    relay = Relay(("127.0.0.1", redis_server.port)).start()
    host_a, host_b = _workers(make_app, f"redis://127.0.0.1:{relay.port}/0", redis_server.url)
    story = f"/api/v1/stories/{piece_id}"
    assert host_b.get(story).status_code == 200  # B holds a snapshot of the paper
    assert host_a.get(story).status_code == 200

    relay.stop()  # A is cut off from Redis; B is not
    headers = {**auth(admin), "Idempotency-Key": "pull-55"}
    pulled = host_a.delete(f"{story}/air", headers=headers)
    assert pulled.status_code == 503, pulled.get_data(as_text=True)  # today: 200
    assert pulled.mimetype == "application/problem+json"
    assert "committed but not yet visible" in pulled.get_json()["detail"]
    assert pulled.headers["Retry-After"]
    again = host_a.delete(f"{story}/air", headers=headers)  # still cut off: still no success
    assert again.status_code == 503

    relay.start()
    retried = host_a.delete(f"{story}/air", headers=headers)
    assert retried.status_code == 200 and retried.headers.get("Idempotent-Replayed") == "true"
    assert host_b.get(story).status_code == 404  # every host sees it once the write succeeded


def test_a_host_that_owes_a_move_answers_no_further_write_with_success(make_app, paper_and_key, redis_server):
    """While host A owes a move (a pull committed, Redis unreachable), a second write there,
    even one that changes no paper (a webhook registered), is committed but answered 503, not
    201: a success would say the deployment shows this host's writes, and the pull is not
    shown yet. Once Redis answers, the next write makes the owed move and succeeds."""
    relay, host_a, host_b, story, admin = _one_host_cut_off(make_app, paper_and_key, redis_server)
    assert host_a.delete(f"{story}/air", headers=auth(admin)).status_code == 503
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["piece.aired"]}
    second = host_a.post("/api/v1/webhooks", json=hook, headers={**auth(admin), "Idempotency-Key": "hook-1"})
    assert second.status_code == 503, second.get_data(as_text=True)  # today: 201
    assert "committed but not yet visible" in second.get_json()["detail"]
    assert host_b.get(story).status_code == 200  # B still shows the pulled piece: nothing is visible yet
    relay.start()
    time.sleep(state.STATE_RETRY_SECONDS)
    retried = host_a.post("/api/v1/webhooks", json=hook, headers={**auth(admin), "Idempotency-Key": "hook-1"})
    assert retried.status_code == 201 and retried.headers.get("Idempotent-Replayed") == "true"
    assert host_b.get(story).status_code == 404
    assert len(host_a.get("/api/v1/webhooks", headers=auth(admin)).get_json()["webhooks"]) == 1  # made once


def test_a_key_first_answered_not_yet_visible_is_refused_for_another_request(
        make_app, paper_and_key, redis_server):
    """An Idempotency-Key whose first request was answered 503 "committed but not yet visible",
    sent again with another body or on another route: 422, as any key reused for another
    request, while the store is away and once it is back; never the first request's answer."""
    piece_id, admin = paper_and_key
    relay = Relay(("127.0.0.1", redis_server.port)).start()
    host_a, _ = _workers(make_app, f"redis://127.0.0.1:{relay.port}/0", redis_server.url)
    story = f"/api/v1/stories/{piece_id}"
    headers = {**auth(admin), "Idempotency-Key": "dek-7"}
    relay.stop()
    assert host_a.patch(story, json={"dek": "First."}, headers=headers).status_code == 503
    for back in (False, True):
        if back:
            relay.start()
            time.sleep(state.STATE_RETRY_SECONDS)
        other_body = host_a.patch(story, json={"dek": "Second."}, headers=headers)
        other_route = host_a.post("/api/v1/sections", json={"name": "Weather"}, headers=headers)
        for answer in (other_body, other_route):
            assert answer.status_code == 422, (back, answer.get_data(as_text=True))
            assert "Idempotency-Key" in answer.get_json()["errors"]
    assert host_a.get(story, headers=auth(admin)).get_json()["dek"] == "First."


def test_a_host_that_owes_a_move_makes_it_when_redis_answers_again(make_app, paper_and_key, redis_server):
    relay, host_a, host_b, story, admin = _one_host_cut_off(make_app, paper_and_key, redis_server)
    assert host_a.delete(f"{story}/air", headers=auth(admin)).status_code == 503  # no key: no retry
    assert host_a.get(story).status_code == 404  # A itself reads the database meanwhile
    relay.start()
    time.sleep(state.STATE_RETRY_SECONDS)  # A asks Redis again after its back-off
    host_a.get("/api/v1/sections")  # A's next request makes the move it owes
    assert host_b.get(story).status_code == 404


def test_a_cli_write_whose_generation_cannot_move_ends_with_status_1(make_app, paper_and_key):
    cut_off = make_app(SHARED_STATE=f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there

    @cut_off.cli.command("touch-paper")
    def touch_paper():
        paper = db.session.query(Paper).one()
        paper.bump()
        db.session.commit()

    # In a thread of its own, as `flask` runs it: the command pushes the app's context (the
    # test's own belongs to the suite's app) and ends it.
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(cut_off.test_cli_runner().invoke, args=["touch-paper"]).result()
    assert result.exit_code == 1, result.output  # today: 0
    assert "committed but not yet visible" in result.output


# ----------------------------------------------------------------------------- Redis lifetimes


def _state(make_app, url: str) -> state.SharedState:
    app = make_app(SHARED_STATE=url, RATELIMIT_KEY_PREFIX="lifetime")
    return state.for_app(app)


def test_generations_never_repeat_after_redis_restarts_empty(make_app, app, redis_server):
    writer, reader = _state(make_app, redis_server.url), _state(make_app, redis_server.url)
    writer.bump()  # the first lifetime's key made by a write (today: INCR from 0)
    held = reader.generation()  # a snapshot taken now holds this
    writer.bump()
    redis_server.stop()
    redis_server.start()  # empty
    seen = set()
    for _ in range(5):
        writer.bump()  # the worker's checkpoint signing, any flask command
        seen.add(reader.generation())
    assert held not in seen


def test_generations_never_repeat_after_redis_is_restored_from_a_snapshot(make_app, app, redis_server):
    writer, reader = _state(make_app, redis_server.url), _state(make_app, redis_server.url)
    held = reader.generation()
    redis_server.save()  # the snapshot holds `held`
    writer.bump()  # a write after the snapshot
    redis_server.stop()
    redis_server.start()  # restored from dump.rdb: the stored number is `held`'s again
    assert reader.generation() != held


# ----------------------------------------------------------------------------- the host file


def _host_files(tmp_path: Path, n: int = 2) -> list[state.HostFile]:
    return [state.HostFile(str(tmp_path / state.FILE_NAME)) for _ in range(n)]


def test_the_host_file_deleted_under_its_workers_is_made_again_once_and_shared(tmp_path):
    a, b = _host_files(tmp_path)
    held = b.generation()
    assert a.generation() == held
    os.unlink(a.path)
    assert b.generation() != held  # today: b keeps reading the deleted file's number
    a.bump()
    assert a.generation() == b.generation()  # one file again, not a split


@pytest.mark.parametrize("length", [0, 12, 4096])
def test_the_host_file_truncated_under_its_workers_crashes_none_and_drops_the_snapshots(tmp_path, length):
    a, b = _host_files(tmp_path)
    held = b.generation()
    a.incr("limit", 60)
    os.truncate(a.path, length)  # today: the next touch of the map is SIGBUS
    assert b.generation() != held
    assert a.generation() == b.generation()
    assert a.incr("limit", 60) == 1  # the counters start empty
    assert os.path.getsize(a.path) >= 4096


def test_the_host_file_replaced_under_its_workers_is_noticed(tmp_path):
    a, b = _host_files(tmp_path)
    held = b.generation()
    copy = tmp_path / "copy"
    shutil.copy(a.path, copy)  # the same bytes, another file (a restore from backup)
    os.replace(copy, a.path)
    assert b.generation() != held
    b.bump()
    assert a.generation() == b.generation()


def test_packed_slots_read_as_the_words_they_hold():
    """The host file's scope versions decoded one at a time read as decoding all of them does
    (little-endian uint64 per slot), and no slot past the last."""
    import struct

    from web.state import SCOPE_SLOTS, PackedSlots

    words = [0, 1, 2**63 + 5, 2**64 - 1, *range(7, 7 + SCOPE_SLOTS - 4)]
    slots = PackedSlots(struct.pack(f"<{SCOPE_SLOTS}Q", *words))
    assert len(slots) == SCOPE_SLOTS
    assert [slots[i] for i in range(SCOPE_SLOTS)] == words
    for past in (SCOPE_SLOTS, -1):
        with pytest.raises(IndexError):
            slots[past]
