"""The transparency log (docs/PROOFS.md "The transparency log"; issue 23): a C2SP tlog-tiles
log per public paper under `/log/`, derived from the change feed by the worker's
`transparency-log` consumer; signed checkpoints; `/api/v1/log`; per-piece tlog proofs; `flask
log checkpoint`; the `flask log verify` monitor against a live server; witnesses on loopback;
and Go's own golang.org/x/mod/sumdb/note and tlog as the independent verifier (tests/go/).
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
import rfc8785
import time_machine
from nacl.signing import SigningKey
from sqlalchemy import select, text

from commands import log_monitor
from extensions import db
from models import LogCheckpoint, LogEntry, Paper, Piece, TransparencyLog
from services.transparency import entries, merkle, note, tiles
from tests.fixtures.keys import auth
from tests.fixtures.statements import statements

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
ROOT = Path(__file__).resolve().parent.parent


def filing(headline: str, **extra) -> dict:
    return {"headline": headline, "dek": "A standfirst.", "prose": "It happened[^1].", "section": "World",
            "byline": "Ada Quill", "cited_facts": [{"statement": "It happened", "source": "Office",
                                                    "instrument": "Bulletin", "claim_key": "k-1"}], **extra}


def file(client, admin, headline: str, host: str | None = None, **extra) -> str:
    headers = {**auth(admin), **({"Host": host} if host else {})}
    filed = client.post("/api/v1/stories", json=filing(headline, **extra), headers=headers)
    assert filed.status_code == 201, filed.get_json()
    return filed.get_json()["id"]


def worker(runner) -> str:
    """One pass of `flask drain-outbox --once`: the change consumers, then the checkpoint step."""
    result = runner.invoke(args=["drain-outbox", "--once"])
    assert result.exit_code == 0, result.output
    return result.output


def checkpoint_now(runner) -> str:
    result = runner.invoke(args=["log", "checkpoint"])
    assert result.exit_code == 0, result.output
    return result.output


def logged(client, host: str | None = None) -> list[dict]:
    """Every entry of the newest checkpoint's tree, read through the tile and bundle URLs."""
    headers = {"Host": host} if host else {}
    size = client.get("/api/v1/log", headers=headers).get_json()["size"]
    out = []
    for tile in tiles.tiles_for(size):
        if tile.level is None:
            body = client.get("/log/" + tile.path(), headers=headers).data
            out += [json.loads(e) for e in entries.unbundle(body)]
    return out


def vkey_of(client, host: str | None = None) -> note.Verifier:
    return note.parse_vkey(client.get("/api/v1/log", headers={"Host": host} if host else {}).get_json()["vkey"])


# ----------------------------------------------------------------------------- pure parts


def test_merkle_roots_and_proofs_agree_with_a_plain_rfc6962_tree():
    leaves = [merkle.leaf_hash(str(i).encode()) for i in range(600)]

    def mth(items):  # RFC 6962 2.1 word for word
        if len(items) == 1:
            return items[0]
        k = 1
        while k * 2 < len(items):
            k *= 2
        return merkle.node_hash(mth(items[:k]), mth(items[k:]))

    def subtree(height, index):
        return mth(leaves[index << height:(index + 1) << height])

    for size in (1, 2, 3, 7, 8, 255, 256, 257, 511, 600):
        root = merkle.tree_hash(size, subtree)
        assert root == mth(leaves[:size]) == merkle.root_of(leaves[:size])
        for index in {0, size // 2, size - 1}:
            proof = merkle.inclusion_proof(index, size, subtree)
            assert merkle.check_inclusion(leaves[index], index, size, proof, root)
            assert not merkle.check_inclusion(leaves[index], index, size, proof, merkle.EMPTY)
        for old in {o for o in (1, 2, size // 3 or 1, size - 1 or 1, size) if o <= size}:
            proof = merkle.consistency_proof(old, size, subtree)
            assert merkle.check_consistency(old, size, mth(leaves[:old]), root, proof), (old, size)
            if old < size:
                assert not merkle.check_consistency(old, size, merkle.EMPTY, root, proof)


def test_tile_paths_follow_tlog_tiles():
    assert tiles.encode_index(1234067) == "x001/x234/067" and tiles.encode_index(5) == "005"
    assert tiles.parse_path("0/x001/x234/067") == tiles.Tile(0, 1234067, 256)
    assert tiles.parse_path("entries/000.p/7") == tiles.Tile(None, 0, 7)
    assert tiles.parse_path("2/001") == tiles.Tile(2, 1, 256)
    for bad in ("0/1", "0/0001", "00/000", "64/000", "0/x000/001", "0/000.p/0", "0/000.p/256", "0/000.p/07",
                "entries/x12/000", "0", "a/000", "0/000/"):
        assert tiles.parse_path(bad) is None, bad
    # tlog-tiles' own example: 70 000 leaves.
    shape = [(t.level, t.index, t.width) for t in tiles.tiles_for(70_000)
             if t.level is not None and (t.level or t.index >= 272)]
    assert shape == [(0, 272, 256), (0, 273, 112), (1, 0, 256), (1, 1, 17), (2, 0, 1)]


def test_notes_and_vkeys_match_the_signed_note_spec_example():
    # c2sp.org/signed-note's example key and note.
    verifier = note.parse_vkey("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k")
    signed = ("This is an example message.\n\n\u2014 example.com/foo "
              "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n")
    assert note.verify_note(signed, verifier) == "This is an example message.\n"
    with pytest.raises(note.NoteError):
        note.verify_note(signed.replace("example message", "example massage"), verifier)
    with pytest.raises(note.NoteError):
        note.parse_vkey("example.com/foo+530d903b+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k")


def test_an_entry_is_canonical_json_with_exactly_its_fields():
    data = entries.entry_bytes(paper="demo", seq=3, event="revised", piece=12, rev=2,
                               content_hash="sha256:ab", at=NOW + timedelta(microseconds=5))
    assert data == rfc8785.dumps(json.loads(data))
    assert json.loads(data) == {"log": "paperdesk-log/1", "paper": "demo", "seq": 3, "event": "revised",
                                "piece": "12", "rev": 2, "content_hash": "sha256:ab",
                                "at": "2026-11-20T12:00:00.000005Z"}
    assert json.loads(entries.entry_bytes(paper="demo", seq=4, event="unaired", piece=12, rev=2,
                                          content_hash="sha256:ab", at=NOW))["content_hash"] is None
    assert entries.unbundle(entries.bundle([b"a", b"", b"xyz"])) == [b"a", b"", b"xyz"]
    assert entries.parse_entry(data) == json.loads(data)
    # What the monitor refuses: anything but the canonical bytes (its orjson fast path included).
    for bent in (data.replace(b'{"at"', b'{ "at"'), data.replace(b'"rev":2', b'"rev":2.0'),
                 data.replace(b'"rev":2', b'"rev":9007199254740993'), data.replace(b'"seq":3', b'"seq":3e0'),
                 data.replace(b'"piece":"12"', b'"piece":"\\u0031\\u0032"'), data + b" ", b"[]", b"\xff"):
        with pytest.raises(ValueError):
            entries.parse_entry(bent)


# ----------------------------------------------------------------------------- through HTTP


def test_airing_revising_pulling_and_scheduling_append_the_right_entries(client, runner, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    at = NOW + timedelta(hours=1)
    with time_machine.travel(NOW, tick=False) as clock:
        first, second = file(client, admin, "Harbour reopens"), file(client, admin, "Rates rise")
        draft, later = file(client, admin, "Still a draft"), file(client, admin, "Later")
        aired = client.put(f"/api/v1/stories/{first}/air", headers=auth(admin)).get_json()
        client.put(f"/api/v1/stories/{later}/air", json={"at": at.isoformat()}, headers=auth(admin))
        clock.shift(60)
        client.put(f"/api/v1/stories/{second}/air", headers=auth(admin))
        revised = client.patch(f"/api/v1/stories/{first}", json={"dek": "New standfirst."},
                               headers=auth(admin)).get_json()
        client.patch(f"/api/v1/stories/{draft}", json={"dek": "Drafts are never logged."}, headers=auth(admin))
        clock.shift(60)
        client.delete(f"/api/v1/stories/{second}/air", headers=auth(admin))
        output = worker(runner)
        assert "handled by transparency-log" in output and "log: paper" in output
        got = logged(client)
        assert [(e["seq"], e["event"], e["piece"], e["rev"]) for e in got] == [
            (1, "aired", first, 1), (3, "aired", second, 1), (4, "revised", first, 2), (5, "unaired", second, 1)]
        assert got[0] == {"log": "paperdesk-log/1", "paper": "demo", "seq": 1, "event": "aired", "piece": first,
                          "rev": 1, "content_hash": aired["content_hash"], "at": "2026-11-20T12:00:00Z"}
        assert got[2]["content_hash"] == revised["content_hash"] and got[2]["at"] == "2026-11-20T12:01:00Z"
        assert got[3]["content_hash"] is None and got[3]["at"] == "2026-11-20T12:02:00Z"
        # The scheduled airing is logged when it airs, dated its instant, not before.
        clock.move_to(at + timedelta(seconds=30))
        worker(runner)
        assert [(e["event"], e["piece"], e["at"]) for e in logged(client)][4:] == [
            ("aired", later, "2026-11-20T13:00:00Z")]
        size = client.get("/api/v1/log").get_json()["size"]
        assert size == 5 and draft not in {e["piece"] for e in logged(client)}


def test_airing_does_no_log_work_the_worker_does(client, desk):
    """The issue's budget (appending costs the airing at most 10%): the request writes the change
    feed's row as before and touches no log table; the worker derives the entry."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    piece = file(client, admin, "Harbour reopens")
    with statements() as seen:
        assert client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin)).status_code == 200
    assert any("piece_changes" in s for s in seen)
    assert not [s for s in seen if "log_" in s or "transparency_logs" in s]


def test_checkpoints_are_signed_notes_kept_one_per_size_and_served_with_their_validators(client, runner, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        worker(runner)  # the log is made with its empty checkpoint
        empty = client.get("/log/checkpoint")
        assert empty.status_code == 200 and empty.content_type == "text/plain; charset=utf-8"
        verifier = vkey_of(client)
        assert verifier.name == "demo.localhost/log"
        text = note.verify_note(empty.get_data(as_text=True), verifier)
        assert text == f"demo.localhost/log\n0\n{base64.b64encode(hashlib.sha256(b'').digest()).decode()}\n"
        ids = [file(client, admin, f"Story {n}") for n in range(3)]
        for piece in ids:
            client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
        worker(runner)  # appended and signed: the last checkpoint is older than LOG_CHECKPOINT_SECONDS
        assert client.get("/api/v1/log").get_json()["size"] == 3
        client.patch(f"/api/v1/stories/{ids[0]}", json={"dek": "Again."}, headers=auth(admin))
        clock.shift(2)
        worker(runner)  # appended, but not signed: the last checkpoint is 2 seconds old
        assert client.get("/api/v1/log").get_json()["size"] == 3
        clock.shift(10)
        worker(runner)
        assert client.get("/api/v1/log").get_json()["size"] == 4
        assert "signed" not in worker(runner)  # nothing new: nothing signed
        with desk.app.app_context():
            sizes = db.session.scalars(select(LogCheckpoint.size).where(LogCheckpoint.paper_id == paper.id)
                                       .order_by(LogCheckpoint.size)).all()
        assert sizes == [0, 3, 4]  # every checkpoint kept, one per size
        served = client.get("/log/checkpoint")
        checkpoint = note.parse_checkpoint(note.verify_note(served.get_data(as_text=True), verifier))
        assert checkpoint.size == 4
        assert served.headers["Cache-Control"] == "public, max-age=5"
        cross = client.get("/log/checkpoint", headers={"Origin": "https://monitor.example"})
        assert cross.headers["Access-Control-Allow-Origin"] == "*"  # any site's script may verify it
        again = client.get("/log/checkpoint", headers={"If-None-Match": served.headers["ETag"]})
        assert again.status_code == 304 and again.headers["Cache-Control"] == "public, max-age=5"
        tile = client.get("/log/tile/0/000.p/4")
        assert tile.status_code == 200 and tile.content_type == "application/octet-stream"
        assert tile.headers["Cache-Control"] == "public, max-age=31536000, immutable" and len(tile.data) == 128
        assert merkle.root_of([tile.data[i:i + 32] for i in range(0, 128, 32)]) == checkpoint.root
        bundle = client.get("/log/tile/entries/000.p/4", headers={"Accept-Encoding": "gzip"})
        assert "Accept-Encoding" in bundle.headers["Vary"]
        assert client.get("/log/tile/0/000.p/3").status_code == 200  # the checkpoint of size 3 needs it
        for path in ("/log/tile/0/000.p/5", "/log/tile/0/000", "/log/tile/1/000.p/1", "/log/tile/entries/000.p/5",
                     "/log/tile/0/0", "/log/tile/x/000", "/log/tile/0/000.p/0"):
            missing = client.get(path)
            assert missing.status_code == 404 and missing.mimetype == "application/problem+json", path


def test_a_malformed_tile_path_is_the_same_404_as_any_tile_miss_and_reads_no_log(client, runner, desk):
    """A path that names no tile is refused before anything of the log is looked up: no
    statement touches the log's tables (the paper's version moved just before, so nothing of
    the log is remembered), and its 404 is byte for byte the one a tile past the newest
    checkpoint gets."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False):
        client.put(f"/api/v1/stories/{file(client, admin, 'Story')}/air", headers=auth(admin))
        worker(runner)
        past = client.get("/log/tile/0/000.p/5")
        assert past.status_code == 404
        for path in ("/log/tile/x/000", "/log/tile/0/0", "/log/tile/0/000.p/0", "/log/tile/entries/x001/..",
                     "/log/tile/" + "x000/" * 40 + "000", "/log/tile/64/000", "/log/tile/entries/000.p/256"):
            file(client, admin, f"Draft for {path[:40]}")  # the paper's version moves: nothing remembered
            with statements() as seen:
                answer = client.get(path)
            assert answer.status_code == 404 and answer.mimetype == "application/problem+json", path
            assert answer.data == past.data, (path, answer.data, past.data)
            assert not [sql for sql in seen if "log" in sql.lower()], (path, seen)


def test_api_log_and_the_piece_proof(client, runner, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        assert client.get("/api/v1/log").status_code == 404  # no log yet
        pieces = [file(client, admin, f"Story {n}") for n in range(5)]
        draft = file(client, admin, "A draft")
        for piece in pieces:
            client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
        client.delete(f"/api/v1/stories/{pieces[4]}/air", headers=auth(admin))
        worker(runner)
        info = client.get("/api/v1/log")
        assert info.status_code == 200 and info.headers["Cache-Control"] == "public, max-age=5"
        assert client.get("/api/v1/log", headers={"If-None-Match": info.headers["ETag"]}).status_code == 304
        body = info.get_json()
        assert body == {"origin": "demo.localhost/log", "vkey": body["vkey"],
                        "checkpoint": "http://localhost/log/checkpoint", "prefix": "http://localhost/log",
                        "size": 6, "entry_format": "paperdesk-log/1", "witnesses": [],
                        "proof": "http://localhost/api/v1/stories/{id}/log-proof"}
        verifier = note.parse_vkey(body["vkey"])
        for piece, event in [(pieces[1], "aired"), (pieces[4], "unaired")]:
            proof = client.get(f"/api/v1/stories/{piece}/log-proof")
            assert proof.status_code == 200 and proof.content_type == "text/plain; charset=utf-8"
            assert client.get(f"/api/v1/stories/{piece}/log-proof",
                              headers={"If-None-Match": proof.headers["ETag"]}).status_code == 304
            head, checkpoint_note = proof.get_data(as_text=True).split("\n\n", 1)
            lines = head.split("\n")
            assert lines[0] == "c2sp.org/tlog-proof@v1" and lines[1].startswith("extra ")
            entry = base64.b64decode(lines[1][6:])
            assert json.loads(entry)["event"] == event and json.loads(entry)["piece"] == piece
            index = int(lines[2].removeprefix("index "))
            checkpoint = note.parse_checkpoint(note.verify_note(checkpoint_note, verifier))
            assert merkle.check_inclusion(merkle.leaf_hash(entry), index, checkpoint.size,
                                          [base64.b64decode(line) for line in lines[3:]], checkpoint.root)
        for missing in (draft, "999999", "no-such-slug", "99999999999", "\u00b2", "%00"):
            answer = client.get(f"/api/v1/stories/{missing}/log-proof")
            assert answer.status_code == 404 and answer.mimetype == "application/problem+json"
        # Revised, not yet signed: 404 until the worker signs (it says when to try again).
        client.patch(f"/api/v1/stories/{pieces[0]}", json={"dek": "Newer."}, headers=auth(admin))
        pending = client.get(f"/api/v1/stories/{pieces[0]}/log-proof")
        assert pending.status_code == 404 and "signs new entries within" in pending.get_json()["detail"]
        assert 0 < int(pending.headers["Retry-After"]) <= 60
        clock.shift(11)
        worker(runner)
        proof = client.get(f"/api/v1/stories/{pieces[0]}/log-proof").get_data(as_text=True)
        assert json.loads(base64.b64decode(proof.split("\n")[1][6:]))["event"] == "revised"


def test_private_papers_and_unknown_hosts_have_no_log(client, runner, desk):
    desk.paper("demo")
    hidden = desk.paper("hidden", public=False, host="hidden.example")
    key = desk.key(hidden, "admin")
    file(client, key, "Secret", host="hidden.example")
    worker(runner)
    for path in ("/log/checkpoint", "/log/tile/entries/000.p/1", "/api/v1/log"):
        assert client.get(path, headers={"Host": "hidden.example"}).status_code == 404
        assert client.get(path, headers={"Host": "hidden.example", **auth(key)}).status_code == 404
        assert client.get(path, headers={"Host": "nowhere.example"}).status_code == 404
    assert client.get("/log/checkpoint").status_code == 200


# ----------------------------------------------------------------------------- the monitor


def newsroom_on_air(client, desk, runner, count: int = 6) -> tuple[Paper, str, list[str]]:
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    ids = [file(client, admin, f"Story number {n}", image="https://cdn.example.com/art.png" if n % 2 else None)
           for n in range(count)]
    # What the demo seeder stores: art on the paper's own host, served as an absolute URL.
    desk.piece(paper, "Story with local art", image="/media/art.png", on_air_at=None)
    ids.append(str(db.session.scalar(select(Piece.id).where(Piece.slug == "story-with-local-art"))))
    ids[-1], ids[-2] = ids[-2], ids[-1]
    for piece in ids:
        client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    client.patch(f"/api/v1/stories/{ids[0]}", json={"dek": "Revised on air."}, headers=auth(admin))
    client.delete(f"/api/v1/stories/{ids[-1]}/air", headers=auth(admin))
    checkpoint_now(runner)
    return paper, admin, ids


def monitor(runner, live: str, state: Path | None = None, *extra: str):
    args = ["log", "verify", "--url", live, *(["--state", str(state)] if state else []), *extra]
    return runner.invoke(args=args)


@pytest.mark.slow
def test_the_monitor_passes_an_honest_paper_and_proves_each_run_consistent(client, runner, desk, live, tmp_path):
    paper, admin, ids = newsroom_on_air(client, desk, runner)
    state = tmp_path / "state.json"
    first = monitor(runner, live, state)
    assert first.exit_code == 0, first.output
    # Every answer read from the list's one full page: log, index, checkpoint, 2 tiles, 1 page;
    # and the history of the piece revised on air (an update): its list and its 2 revisions.
    assert "OK: demo.localhost/log size 9" in first.output
    assert "6 pieces on air (6 recomputed, 2 revisions of corrected pieces), 9 requests" in first.output
    assert json.loads(state.read_text())["size"] == 9
    more = file(client, admin, "Another one")
    client.put(f"/api/v1/stories/{more}/air", headers=auth(admin))
    checkpoint_now(runner)
    second = monitor(runner, live, state)
    assert second.exit_code == 0, second.output
    assert "consistency: size 9 -> 10 proved" in second.output
    # A change the log has not signed yet is pending, not a failure (within --grace).
    client.patch(f"/api/v1/stories/{more}", json={"dek": "Fresh."}, headers=auth(admin))
    third = monitor(runner, live, state)
    assert third.exit_code == 0, third.output
    assert f"pending (newer than the checkpoint, in the change feed): piece {more}" in third.output
    sampled = monitor(runner, live, state, "--sample", "0")  # nothing changed since the last run
    assert sampled.exit_code == 0 and "7 pieces on air (0 recomputed)" in sampled.output
    # A walk of many pages (following each Link), and a sample of single GETs, see the same.
    paged = log_monitor.verify(log_monitor.Client(live), state=None, page=2)
    assert paged.ok and (paged.pieces, paged.recomputed) == (7, 7), paged.problems
    assert len(paged.pending) == 1 and paged.pending[0].startswith(f"piece {more} (another-one): served rev 2")
    one_by_one = log_monitor.verify(log_monitor.Client(live), state=None, sample=3)
    assert one_by_one.ok and (one_by_one.pieces, one_by_one.recomputed) == (7, 3)


@pytest.mark.slow
def test_the_monitor_fails_a_piece_rewritten_behind_the_api(client, runner, desk, live, app):
    paper, admin, ids = newsroom_on_air(client, desk, runner)
    with app.app_context():
        # The prose changed in the database, hash left alone: the public answer no longer hashes to it.
        db.session.execute(text("UPDATE pieces SET prose = 'It never happened.' WHERE id = :id"), {"id": int(ids[1])})
        db.session.commit()
    result = monitor(runner, live)
    assert result.exit_code == 1
    assert f"FAIL: piece {ids[1]} (story-number-1): its public answer hashes to" in result.output
    with app.app_context():
        # Now with a matching hash as well: the served hash is not the one the log holds.
        row = db.session.get(Piece, int(ids[2]))
        story = client.get(f"/api/v1/stories/{ids[2]}").get_json()
        basis = {"paper": "demo", "piece": ids[2], "slug": story["slug"], "rev": story["rev"],
                 "headline": "Quietly rewritten", "dek": story["dek"], "prose": story["prose"],
                 "section": story["section"], "byline": story["byline"], "image": None,
                 "cited_facts": story["cited_facts"]}
        row.headline = "Quietly rewritten"
        row.content_hash = "sha256:" + hashlib.sha256(rfc8785.dumps(basis)).hexdigest()
        paper_row = db.session.get(Paper, paper.id)
        paper_row.bump()
        db.session.commit()
    result = monitor(runner, live)
    assert result.exit_code == 1
    assert f"FAIL: piece {ids[2]} (story-number-2): served rev 1" in result.output
    assert "hashes to" not in result.output.split(f"piece {ids[2]}")[1].split("\n")[0]


@pytest.mark.slow
def test_the_monitor_fails_a_log_that_rewrote_its_past(client, runner, desk, live, app, tmp_path):
    paper, admin, ids = newsroom_on_air(client, desk, runner)
    state = tmp_path / "state.json"
    assert monitor(runner, live, state).exit_code == 0
    with app.app_context():
        # Rewrite an entry (and its leaf hash) behind the log, then let the worker sign again.
        entry = db.session.get(LogEntry, (paper.id, 1))
        forged = entry.data.replace(b'"rev":1', b'"rev":7')
        entry.data, entry.hash = forged, merkle.leaf_hash(forged)
        db.session.commit()
    result = monitor(runner, live, state)
    assert result.exit_code == 1 and "does not hash to its level-0 tile hash" not in result.output
    assert "the tiles do not give the checkpoint's root hash" in result.output
    more = file(client, admin, "After the forgery")
    client.put(f"/api/v1/stories/{more}/air", headers=auth(admin))
    # The log refuses to sign a tree that does not extend its own last checkpoint.
    output = runner.invoke(args=["log", "checkpoint"]).output
    assert "no checkpoint for paper" in output
    with app.app_context():
        assert db.session.get(TransparencyLog, paper.id).signed_size == 9


def test_full_story_lists_answer_each_piece_as_its_own_story_does(client, desk):
    """`/api/v1/stories?full=true` (what the monitor reads): each row is the piece's full answer,
    the same walk and cursors as the plain list, and the next-page link keeps `full`."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    ids = [file(client, admin, f"Listed {n}", image="https://cdn.example.com/a.png" if n % 2 else None)
           for n in range(3)]
    desk.piece(paper, "Listed with local art", image="/media/art.png")
    for piece in ids:
        client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    plain = client.get("/api/v1/stories?limit=2").get_json()
    assert "prose" not in plain["stories"][0]  # the plain rows stay light
    first = client.get("/api/v1/stories?limit=2&full=true")
    assert first.status_code == 200 and first.get_json()["count"] == 2
    assert "full=true" in first.headers["Link"]
    rows, page = first.get_json()["stories"], first.get_json()
    while page["next_cursor"]:
        page = client.get(f"/api/v1/stories?limit=2&full=true&cursor={page['next_cursor']}").get_json()
        rows += page["stories"]
    assert [r["id"] for r in rows] == [r["id"] for r in client.get("/api/v1/stories?limit=200").get_json()["stories"]]
    assert len(rows) == 4
    for row in rows:
        assert row == client.get(f"/api/v1/stories/{row['id']}").get_json()
    assert any(row["image"] and row["image"].endswith("/media/art.png") for row in rows)
    assert all(row["cited_facts"] for row in rows if row["slug"].startswith("listed-") and row["id"] in ids)
    # A desk key's draft lane, full too; the public lane never shows a draft.
    draft = file(client, admin, "Still a draft")
    keyed = client.get("/api/v1/stories?status=draft&full=true", headers=auth(admin)).get_json()["stories"]
    assert [r["id"] for r in keyed] == [draft] and keyed[0]["prose"] == "It happened[^1]."
    assert draft not in {r["id"] for r in client.get("/api/v1/stories?full=true").get_json()["stories"]}
    assert client.get("/api/v1/stories?full=maybe").status_code == 400


def test_the_monitors_fast_canonical_bytes_are_rfc8785s():
    """The monitor hashes bases with orjson (sorted keys) and asks rfc8785 only on a mismatch:
    for every kind of value a basis holds the two give the same bytes."""
    tricky = ["", "plain", "quote \" back \\ slash /", "\x00\x01\x07\x08\t\n\x0b\x0c\r\x1b\x1f\x7f",
              "\u2028\u2029", "é ß 中文 \u00ad", "emoji \U0001F600 and \U00010000", "<script>&amp;</script>",
              "\ufeff bom", "\\u0000 not an escape"]
    for n, value in enumerate(tricky):
        basis = {"paper": "demo", "piece": str(n), "slug": value, "rev": 2**53 - 1 if n % 2 else n,
                 "headline": value, "dek": value * 3, "prose": value, "section": value, "byline": value,
                 "image": None if n % 3 == 0 else value,
                 "cited_facts": [{"n": i, "statement": value, "source": value, "instrument": value,
                                  "claim_key": value} for i in range(n % 3)]}
        assert orjson.dumps(basis, option=orjson.OPT_SORT_KEYS) == rfc8785.dumps(basis), repr(value)
        story = {"id": str(n), "slug": value, "rev": basis["rev"], "headline": value, "dek": value * 3,
                 "prose": value, "section": value, "byline": value, "image": basis["image"],
                 "cited_facts": basis["cited_facts"], "content_hash": log_monitor.content_hash(basis)}
        assert log_monitor.hashes_to(story, "demo", "https://demo.example") == (True, story["content_hash"])
        assert log_monitor.hashes_to({**story, "rev": float(story["rev"])}, "demo", "https://demo.example") == (
            story["rev"] < 2**53, story["content_hash"])  # a float goes to rfc8785, which writes 1.0 as 1
        changed = {**story, "prose": value + "!"}
        assert log_monitor.hashes_to(changed, "demo", "https://demo.example")[0] is False


# ----------------------------------------------------------------------------- Go's own verifier

GO = shutil.which("go")
GOPATH = "/usr/share/gocode"


@pytest.fixture(scope="session")
def go_verifier(tmp_path_factory) -> Path:
    if GO is None or not Path(GOPATH, "src/golang.org/x/mod/sumdb/tlog").is_dir():
        pytest.skip("needs go and golang.org/x/mod (Debian: golang-go, golang-golang-x-mod-dev)")
    out = tmp_path_factory.mktemp("go") / "tlogverify"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": GOPATH, "GOFLAGS": "",
           "GOCACHE": str(tmp_path_factory.mktemp("gocache"))}
    built = subprocess.run([GO, "build", "-o", str(out), "."], cwd=ROOT / "tests/go/tlogverify", env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return out


def go_verify(binary: Path, live: str, vkey: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), "-url", live, "-vkey", vkey, *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_go_sumdb_note_and_tlog_accept_checkpoint_tiles_entries_proofs_and_consistency(
        client, runner, desk, live, app, tmp_path, go_verifier):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    # Enough changes for full tiles and a level-1 tile: 300 pieces aired, some revised, one pulled.
    with app.app_context():
        from services.newsroom import filing
        section, persona = desk.section(paper, "World"), desk.persona(paper)
        for n in range(300):
            draft = filing.Draft(headline=f"Bulk {n}", dek="d", prose="p", section=section, persona=persona)
            piece = filing.file_piece(db.session.get(Paper, paper.id), draft, filer="t", now=NOW)
            filing.put_on_air(db.session.get(Paper, paper.id), piece, NOW + timedelta(seconds=n))
        db.session.commit()
    checkpoint_now(runner)
    vkey = client.get("/api/v1/log").get_json()["vkey"]
    old = tmp_path / "old.checkpoint"
    old.write_bytes(client.get("/log/checkpoint").data)
    first = go_verify(go_verifier, live, vkey)
    assert first.returncode == 0, first.stderr
    assert "ok: 300 entries give the signed root" in first.stdout
    for piece in ("2", "260"):
        client.patch(f"/api/v1/stories/{piece}", json={"dek": "Changed."}, headers=auth(admin))
    client.delete("/api/v1/stories/5/air", headers=auth(admin))
    checkpoint_now(runner)
    proofs = []
    for piece in ("2", "5", "299"):
        path = tmp_path / f"{piece}.tlog-proof"
        path.write_bytes(client.get(f"/api/v1/stories/{piece}/log-proof").data)
        proofs += ["-proof", str(path)]
    second = go_verify(go_verifier, live, vkey, "-old", str(old), *proofs)
    assert second.returncode == 0, second.stderr
    assert "ok: 303 entries give the signed root" in second.stdout
    assert "ok: consistent with the checkpoint of size 300" in second.stdout
    assert second.stdout.count("proves entry") == 3
    # A forged older checkpoint (same size, another root) is refused.
    forged_text = note.checkpoint_text("demo.localhost/log", 300, hashlib.sha256(b"x").digest())
    assert note.parse_checkpoint(forged_text).size == 300
    assert go_verify(go_verifier, live, vkey.replace(vkey[-8:], "AAAAAAAA")).returncode == 1


# ----------------------------------------------------------------------------- witnesses


class Witness:
    """A small c2sp.org/tlog-witness on loopback: add-checkpoint checks the log's signature,
    the old size (409 with text/x.tlog.size) and the consistency proof (422), keeps the newest
    checkpoint per origin and answers an Ed25519 cosignature/v1 line. `logs` maps origin ->
    log vkey (unknown origins: 404)."""

    def __init__(self, name: str = "witness.test/w1"):
        self.name, self.key = name, SigningKey.generate()
        self.vkey = note.vkey(name, bytes(self.key.verify_key), note.COSIGNATURE)
        self.logs: dict[str, str] = {}
        self.seen: dict[str, tuple[int, bytes]] = {}
        self.requests: list[int] = []
        self.down = False
        self.lock = threading.Lock()

    def add_checkpoint(self, body: str) -> tuple[int, str, str]:
        head, checkpoint_note = body.split("\n\n", 1)
        lines = head.split("\n")
        if not lines[0].startswith("old ") or not lines[0][4:].isdigit():
            return 400, "text/plain", "bad old line\n"
        old = int(lines[0][4:])
        proof = [base64.b64decode(line) for line in lines[1:]]
        try:
            text_ = note.split_note(checkpoint_note)[0]
            checkpoint = note.parse_checkpoint(text_)
        except note.NoteError:
            return 400, "text/plain", "bad checkpoint\n"
        if checkpoint.origin not in self.logs:
            return 404, "text/plain", "unknown log\n"
        try:
            note.verify_note(checkpoint_note, note.parse_vkey(self.logs[checkpoint.origin]))
        except note.NoteError:
            return 403, "text/plain", "bad signature\n"
        if old > checkpoint.size:
            return 400, "text/plain", "old size past the checkpoint\n"
        with self.lock:
            known, root = self.seen.get(checkpoint.origin, (0, merkle.EMPTY))
            if old != known:
                return 409, "text/x.tlog.size", f"{known}\n"
            if not merkle.check_consistency(old, checkpoint.size, root, checkpoint.root, proof):
                return 422, "text/plain", "inconsistent\n"
            self.seen[checkpoint.origin] = (checkpoint.size, checkpoint.root)
        stamp = int(datetime.now(timezone.utc).timestamp())
        return 200, "text/plain; charset=utf-8", note.cosign_line(text_, self.name, bytes(self.key), stamp)

    def serve(self):
        witness = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                if witness.down:
                    status, kind, answer = 503, "text/plain", "down\n"
                else:
                    status, kind, answer = witness.add_checkpoint(body)
                witness.requests.append(status)
                data = answer.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server


@pytest.fixture
def witness(app):
    w = Witness()
    server = w.serve()
    before = app.config["LOG_WITNESSES"]
    app.config["LOG_WITNESSES"] = f"http://127.0.0.1:{server.server_port} {w.vkey}"
    yield w
    app.config["LOG_WITNESSES"] = before
    server.shutdown()
    server.server_close()


def cosignatures(client, w: Witness) -> list[int]:
    served = client.get("/log/checkpoint").get_data(as_text=True)
    text_, signatures = note.split_note(served)
    verifier = note.parse_vkey(w.vkey)
    return [note.verify_cosignature(text_, s, verifier) for s in signatures if s.name == w.name]


@pytest.mark.slow
def test_witnesses_cosign_each_checkpoint_and_the_log_serves_their_cosignatures(client, runner, desk, witness):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        worker(runner)  # the log is made (size 0: nothing to cosign)
        witness.logs["demo.localhost/log"] = client.get("/api/v1/log").get_json()["vkey"]
        assert client.get("/api/v1/log").get_json()["witnesses"] == [{"name": "witness.test/w1", "vkey": witness.vkey}]
        ids = [file(client, admin, f"Story {n}") for n in range(3)]
        for piece in ids:
            client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
        output = worker(runner)
        assert "log: witness witness.test/w1 cosigned paper" in output and witness.requests == [200]
        assert len(cosignatures(client, witness)) == 1
        # The next checkpoint comes with a consistency proof from size 3.
        client.patch(f"/api/v1/stories/{ids[0]}", json={"dek": "Again."}, headers=auth(admin))
        clock.shift(11)
        worker(runner)
        assert witness.seen["demo.localhost/log"][0] == 4 and len(cosignatures(client, witness)) == 1
        # A witness that forgot the log answers 409 with the size it knows; the log starts from there.
        witness.seen.clear()
        client.patch(f"/api/v1/stories/{ids[1]}", json={"dek": "Again."}, headers=auth(admin))
        clock.shift(11)
        worker(runner)
        assert witness.requests[-2:] == [409, 200] and witness.seen["demo.localhost/log"][0] == 5
        # A witness that is down costs the pass nothing and is tried again later.
        witness.down = True
        client.patch(f"/api/v1/stories/{ids[2]}", json={"dek": "Again."}, headers=auth(admin))
        clock.shift(11)
        output = worker(runner)
        assert "log: witness witness.test/w1 failed paper" in output and "503" in output
        assert cosignatures(client, witness) == []  # size 6 is served without a cosignature yet
        witness.down = False
        worker(runner)  # backing off: not tried again at once
        assert witness.requests[-1] == 503
        clock.shift(11)
        worker(runner)
        assert witness.requests[-1] == 200 and len(cosignatures(client, witness)) == 1


@pytest.mark.slow
def test_go_checks_the_witness_cosignature(client, runner, desk, live, witness, go_verifier):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    worker(runner)
    witness.logs["demo.localhost/log"] = vkey = client.get("/api/v1/log").get_json()["vkey"]
    piece = file(client, admin, "Witnessed")
    client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    checkpoint_now(runner)
    result = go_verify(go_verifier, live, vkey, "-witness", witness.vkey)
    assert result.returncode == 0, result.stderr
    assert "ok: cosigned by witness.test/w1" in result.stdout
    monitored = monitor(runner, live)
    assert monitored.exit_code == 0 and "cosigned by: witness.test/w1" in monitored.output


def test_the_index_and_receipt_keys_link_the_log_and_rotate_secret_reseals_its_key(client, runner, desk, make_app):
    paper = desk.paper("demo")
    assert client.get("/api/v1").get_json()["endpoints"]["log"] == "http://localhost/api/v1/log"
    assert client.get("/api/v1/receipt-keys").get_json()["log"] == "http://localhost/api/v1/log"
    worker(runner)
    vkey = client.get("/api/v1/log").get_json()["vkey"]
    old_secret = desk.app.config["SECRET_KEY"]
    moved = make_app(SECRET_KEY="another secret of enough length for the instance")

    def cli(*args):
        with moved.app_context():  # the CLI runs in the app whose context is current
            return moved.test_cli_runner().invoke(args=list(args))

    assert cli("init-db").exit_code == 1  # the seeds are locked
    result = cli("rotate-secret", "--old-secret", old_secret)
    assert result.exit_code == 0, result.output
    assert "resealed the log key of demo.localhost/log" in result.output
    admin = desk.key(paper, "admin")
    moved_client = moved.test_client()
    piece = file(moved_client, admin, "After the move")
    moved_client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    assert cli("init-db").exit_code == 0
    assert "demo: demo.localhost/log size 1" in cli("log", "checkpoint").output
    served = moved.test_client().get("/log/checkpoint").get_data(as_text=True)
    assert note.parse_checkpoint(note.verify_note(served, note.parse_vkey(vkey))).size == 1


@pytest.mark.slow
def test_0018_an_existing_paper_starts_its_log_with_its_feed_from_the_beginning(client, runner, desk, app):
    """Genesis: a paper with pieces on air (and a revision and a pull) before 0018 logs its whole
    feed from the first change, which since 0012 begins with one `aired` change per piece on air."""
    from flask_migrate import downgrade, upgrade

    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    # Written by today's code (it writes columns later migrations add), then the database is
    # taken back to before the log (0018 and everything after undone) and brought to head again.
    ids = [file(client, admin, f"Before {n}") for n in range(3)]
    for piece in ids:
        client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    client.patch(f"/api/v1/stories/{ids[0]}", json={"dek": "Revised before."}, headers=auth(admin))
    client.delete(f"/api/v1/stories/{ids[2]}/air", headers=auth(admin))
    with app.app_context():
        db.session.remove()
        downgrade(revision="0016")
        db.session.remove()
        upgrade()
    worker(runner)
    got = [(e["seq"], e["event"], e["piece"]) for e in logged(client)]
    assert got == [(1, "aired", ids[0]), (2, "aired", ids[1]), (3, "aired", ids[2]), (4, "revised", ids[0]),
                   (5, "unaired", ids[2])]


def test_the_cli_refuses_what_it_cannot_read_and_signs_nothing_twice(client, runner, desk, tmp_path):
    desk.paper("demo")
    unreachable = runner.invoke(args=["log", "verify", "--url", "http://127.0.0.1:9"])
    assert unreachable.exit_code == 1 and "cannot read the log" in unreachable.output
    assert runner.invoke(args=["log", "verify", "--url", "ftp://x"]).exit_code == 1
    bad_state = tmp_path / "state.json"
    bad_state.write_text("not json")
    stateful = runner.invoke(args=["log", "verify", "--url", "http://127.0.0.1:9", "--state", str(bad_state)])
    assert stateful.exit_code == 1
    first, again = checkpoint_now(runner), checkpoint_now(runner)
    assert "demo: demo.localhost/log size 0" in first and "signed" not in again


def test_log_answers_are_replayed_and_a_new_checkpoint_reaches_every_worker_at_once(runner, desk, make_app):
    # Two apps with every cache on stand for two workers; the worker that signs is the CLI.
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    reader, writer = make_app(), make_app()
    with time_machine.travel(NOW, tick=False) as clock:
        worker(runner)
        client = reader.test_client()
        sizes = []
        for _ in range(3):
            sizes.append(note.parse_checkpoint(note.verify_note(client.get("/log/checkpoint").get_data(as_text=True),
                                                               vkey_of(client))).size)
        assert sizes == [0, 0, 0] and reader.extensions["paperdesk.replay.stats"]["replayed"] >= 1
        piece = file(writer.test_client(), admin, "Harbour reopens")
        writer.test_client().put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
        clock.shift(11)
        worker(runner)  # appended and signed by the worker: the paper's version moved
        fresh = client.get("/log/checkpoint")
    assert note.parse_checkpoint(note.verify_note(fresh.get_data(as_text=True), vkey_of(client))).size == 1
    assert fresh.headers["Cache-Control"] == "public, max-age=5"


def test_the_checkpoint_is_read_once_per_paper_version(client, runner, desk):
    """`/log/checkpoint` reads the log once per paper version in a worker, with no response
    cache in front: a second read runs no statement on the log's tables; a newly signed
    checkpoint moves the version and is served at once."""
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        worker(runner)
        first = client.get("/log/checkpoint").get_data(as_text=True)
        with statements() as seen:
            assert client.get("/log/checkpoint").get_data(as_text=True) == first
        assert not [s for s in seen if re.search(r"\b(transparency_logs|log_checkpoints)\b", s)], seen
        client.put(f"/api/v1/stories/{file(client, admin, 'Story')}/air", headers=auth(admin))
        clock.shift(60)
        worker(runner)
        newer = note.parse_checkpoint(note.verify_note(client.get("/log/checkpoint").get_data(as_text=True),
                                                       vkey_of(client)))
    assert newer.size == 1
