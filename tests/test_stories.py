"""`/api/v1`, `/api/v1/stories` and `/api/v1/stories/{id}` through HTTP."""
from __future__ import annotations

from datetime import timedelta

from tests.fixtures.newsroom import T0


def test_index_urls_are_absolute_for_the_request_host(client, desk):
    desk.paper("demo")
    body = client.get("/api/v1").get_json()
    assert body["paper"] == "demo"
    assert body["endpoints"]["story"] == "http://localhost/api/v1/stories/{id}"
    assert body["endpoints"]["search"].endswith("/api/v1/search?q=")
    assert body["endpoints"]["subscribe"] == "POST http://localhost/api/v1/subscribers"
    assert set(body["levels"]) == {"public", "read", "admin", "auth"}
    assert "keyed" not in body
    other = client.get("/api/v1", base_url="http://demo.localhost:8080").get_json()
    assert other["home"] == "http://demo.localhost:8080/"


def test_stories_newest_first_on_air_only(client, desk):
    paper = desk.paper("demo")
    for i in range(5):
        desk.piece(paper, f"Story {i}", on_air_at=T0 + timedelta(hours=i))
    desk.piece(paper, "A draft", on_air_at=None)
    body = client.get("/api/v1/stories").get_json()
    assert [s["headline"] for s in body["stories"]] == [f"Story {i}" for i in range(4, -1, -1)]
    row = body["stories"][0]
    assert set(row) >= {"id", "slug", "headline", "dek", "section", "byline", "rev", "url", "on_air_at"}
    assert row["url"] == f"http://localhost/stories/{row['slug']}"
    assert row["on_air_at"] == "2026-11-01T12:00:00Z"
    assert row["rev"] == 1 and isinstance(row["id"], str)


def test_full_story_by_id_and_slug(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again", facts=3)
    by_id = client.get(f"/api/v1/stories/{piece.id}").get_json()
    by_slug = client.get("/api/v1/stories/rates-rise-again").get_json()
    assert by_id == by_slug
    assert by_id["category"] == by_id["section"] == "World"
    assert [f["n"] for f in by_id["cited_facts"]] == [1, 2, 3]
    assert "[^3]" in by_id["prose"]
    assert by_id["persona"]["declared_ai"] is True
    assert "AI persona" in by_id["disclosure"]


def test_unknown_paper_and_piece_are_404_problems(client, desk):
    paper = desk.paper("demo")
    draft = desk.piece(paper, "Secret", on_air_at=None)
    for url, base in [("/api/v1/stories/nope", "http://localhost"),
                      (f"/api/v1/stories/{draft.id}", "http://localhost"),
                      ("/api/v1", "http://nowhere.localhost")]:
        response = client.get(url, base_url=base)
        assert response.status_code == 404
        assert response.mimetype == "application/problem+json"
        assert response.get_json()["status"] == 404


def test_limit_clamps_and_rejects_non_integers(client, desk):
    paper = desk.paper("demo")
    for i in range(3):
        desk.piece(paper, f"Story {i}", on_air_at=T0 + timedelta(hours=i))
    assert len(client.get("/api/v1/stories?limit=0").get_json()["stories"]) == 1
    assert len(client.get("/api/v1/stories?limit=-5").get_json()["stories"]) == 1
    assert len(client.get("/api/v1/stories?limit=100000").get_json()["stories"]) == 3
    bad = client.get("/api/v1/stories?limit=abc")
    assert bad.status_code == 400 and bad.mimetype == "application/problem+json"
    assert "limit" in bad.get_json()["errors"]


def test_private_paper_is_invisible(client, desk):
    desk.paper("demo")
    desk.paper("secret", public=False)
    assert client.get("/api/v1", base_url="http://secret.localhost").status_code == 404


def test_etag_and_304(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper)
    first = client.get("/api/v1/stories")
    assert first.headers["ETag"] and "max-age" in first.headers["Cache-Control"]
    again = client.get("/api/v1/stories", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    desk.piece(paper, "Newer", on_air_at=T0 + timedelta(days=1))
    assert client.get("/api/v1/stories", headers={"If-None-Match": first.headers["ETag"]}).status_code == 200


def test_cors_open_on_public_lane(client, desk):
    desk.paper("demo")
    response = client.get("/api/v1/stories", headers={"Origin": "https://elsewhere.example"})
    assert response.headers["Access-Control-Allow-Origin"] == "*"
