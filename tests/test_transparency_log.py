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
import shutil
import subprocess
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import rfc8785
import time_machine
from nacl.signing import SigningKey
from sqlalchemy import select, text

from extensions import db
from models import LogCheckpoint, LogEntry, Paper, Piece, TransparencyLog
from services.transparency import entries, merkle, note, tiles
from tests.fixtures.keys import auth

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
    shape = [(t.level, t.index, t.width) for t in tiles.tiles_for(70_000) if t.level is not None and (t.level or t.index >= 272)]
    assert shape == [(0, 272, 256), (0, 273, 112), (1, 0, 256), (1, 1, 17), (2, 0, 1)]


def test_notes_and_vkeys_match_the_signed_note_spec_example():
    # c2sp.org/signed-note's example key and note.
    verifier = note.parse_vkey("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k")
    signed = ("This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7"
              "Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n")
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
