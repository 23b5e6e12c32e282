"""gzip over HTTP: answers over 1 KB go compressed to clients that accept gzip, with a weak ETag
(the identity answer keeps the strong one) and `Vary: Accept-Encoding`; either tag revalidates
to 304; small answers and clients that refuse gzip get identity; a warm response-cache hit is
served compressed without touching the database."""
from __future__ import annotations

import gzip
import json

from tests.fixtures.keys import auth
from tests.fixtures.statements import statements

GZIP = {"Accept-Encoding": "gzip, deflate, br"}


def _newsroom(desk, pieces: int = 12):
    paper = desk.paper("demo")
    for n in range(pieces):
        desk.piece(paper, f"Council weighs the harbour plan, part {n}", dek="A long dek " * 10)
    return paper


def test_large_answers_are_gzipped_with_a_weak_etag_and_revalidate(client, desk):
    _newsroom(desk)
    plain = client.get("/api/v1/stories?limit=50")
    packed = client.get("/api/v1/stories?limit=50", headers=GZIP)
    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain.headers and len(plain.data) > 1024
    assert packed.headers["Content-Encoding"] == "gzip"
    assert int(packed.headers["Content-Length"]) == len(packed.data) < len(plain.data) / 2
    assert json.loads(gzip.decompress(packed.data)) == plain.get_json()
    for answer in (plain, packed):
        assert "Accept-Encoding" in answer.headers["Vary"] and "X-Desk-Key" in answer.headers["Vary"]
    strong = plain.headers["ETag"]
    assert strong.startswith('"') and packed.headers["ETag"] == f"W/{strong}"

    for held, headers in ((strong, {}), (packed.headers["ETag"], GZIP)):
        again = client.get("/api/v1/stories?limit=50", headers={**headers, "If-None-Match": held})
        assert again.status_code == 304 and again.headers["ETag"] == held and again.data == b""


def test_activitypub_documents_are_gzipped_like_other_json(client, desk):
    """An Article (application/activity+json) and the JSON-LD context (application/ld+json)
    go compressed like every JSON answer: ActivityPub was not a compressible type."""
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Council weighs the harbour plan", dek="A long dek " * 10, facts=2)
    for path in (f"/ap/stories/{piece.id}", "/ap/paper"):
        plain = client.get(path, headers={"Accept": "application/activity+json"})
        packed = client.get(path, headers={"Accept": "application/activity+json", **GZIP})
        assert plain.mimetype == packed.mimetype == "application/activity+json"
        assert len(plain.data) > 1024 and "Content-Encoding" not in plain.headers
        assert packed.headers["Content-Encoding"] == "gzip", path
        assert "Accept-Encoding" in packed.headers["Vary"]
        assert json.loads(gzip.decompress(packed.data)) == plain.get_json()


def test_small_answers_and_refusing_clients_get_identity(client, desk):
    paper = _newsroom(desk)
    small = client.get("/api/v1/stories?limit=1", headers=GZIP)
    assert small.status_code == 200 and len(small.data) < 1024
    assert "Content-Encoding" not in small.headers and "Accept-Encoding" in small.headers["Vary"]
    refused = client.get("/api/v1/stories?limit=50", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "Content-Encoding" not in refused.headers and refused.get_json()["stories"]
    # Pages, feeds and keyed answers too; images are left alone.
    for path in ("/", "/rss.xml", "/sitemap.xml"):
        answer = client.get(path, headers=GZIP)
        assert answer.status_code == 200 and answer.headers["Content-Encoding"] == "gzip", path
        assert gzip.decompress(answer.data) == client.get(path).data
    key = desk.key(paper, "read")
    keyed = client.get("/api/v1/stories?limit=50", headers={**GZIP, **auth(key)})
    assert keyed.headers["Content-Encoding"] == "gzip" and keyed.headers["Cache-Control"] == "private, no-store"


def test_a_warm_hit_is_served_compressed_from_the_cache(make_app, desk):
    _newsroom(desk)
    app = make_app()
    client = app.test_client()
    first = client.get("/api/v1/stories?limit=50", headers=GZIP)
    with statements(app) as seen:
        hit = client.get("/api/v1/stories?limit=50", headers=GZIP)
        plain_hit = client.get("/api/v1/stories?limit=50")
    assert seen == []  # both from the response cache and the worker's copy of the paper
    assert hit.headers["Content-Encoding"] == "gzip" and hit.data == first.data
    assert hit.headers["ETag"] == first.headers["ETag"]
    assert "Content-Encoding" not in plain_hit.headers
    assert json.loads(gzip.decompress(hit.data)) == plain_hit.get_json()
