"""The filing desk through HTTP (docs/API.md "writes", "status codes"): filing, revising, airing,
the cast, sections, personas and config; agent keys within their capability and persona; every
rejected write answers a problem and writes nothing."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

from extensions import db
from models import CitedFact, Edition, Paper, Persona, Piece, PieceRevision, Section
from tests.fixtures.keys import auth

PROBLEM = "application/problem+json"


def facts(n: int) -> list[dict]:
    return [{"statement": f"Fact {i}", "source": "Statistics Office", "instrument": "Bulletin",
             "claim_key": f"claim-{i}"} for i in range(1, n + 1)]


def filing(**changes) -> dict:
    body = {"headline": "Harbour reopens", "dek": "Ships return.",
            "prose": "The harbour reopened[^1] after repairs[^2].", "section": "World",
            "byline": "Rex Ledger", "cited_facts": facts(2)}
    body.update(changes)
    return {k: v for k, v in body.items() if v is not ...}


def counts() -> dict:
    """Rows that a write could touch, and the paper version (which every write moves)."""
    result = {model.__name__: db.session.scalar(select(func.count()).select_from(model))
              for model in (Piece, PieceRevision, CitedFact, Section, Persona, Edition)}
    result["versions"] = tuple(db.session.scalars(select(Paper.version).order_by(Paper.id)))
    result["configs"] = [dict(c) for c in db.session.scalars(select(Paper.config).order_by(Paper.id))]
    db.session.rollback()
    return result


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    return {
        "paper": paper,
        "admin": desk.key(paper, "admin"),
        "read": desk.key(paper, "read"),
        "ada": desk.key(paper, "agent", persona=desk.persona(paper, "Ada Quill"),
                        capabilities=["file", "revise"]),
        "ada_file_only": desk.key(paper, "agent", persona=desk.persona(paper, "Ada Quill"),
                                  capabilities=["file"]),
    }


# ----------------------------------------------------------------------------- filing


def test_admin_files_a_draft_that_stays_off_air(client, newsroom):
    response = client.post("/api/v1/stories", json=filing(image="https://cdn.example.com/a.jpg"),
                           headers=auth(newsroom["admin"]))
    assert response.status_code == 201, response.get_json()
    story = response.get_json()
    assert response.headers["Location"] == f"http://localhost/api/v1/stories/{story['id']}"
    assert story["rev"] == 1 and story["on_air"] is False and story["on_air_at"] is None
    assert story["byline"] == "Rex Ledger" and story["persona"]["declared_ai"] is True
    assert [f["n"] for f in story["cited_facts"]] == [1, 2]
    assert story["image"] == "https://cdn.example.com/a.jpg"
    assert story["content_hash"].startswith("sha256:")
    assert client.get("/api/v1/stories").get_json()["count"] == 0
    assert client.get(f"/api/v1/stories/{story['id']}").status_code == 404
    keyed = client.get("/api/v1/stories", headers=auth(newsroom["read"])).get_json()
    assert [(s["id"], s["on_air"]) for s in keyed["stories"]] == [(story["id"], False)]


def test_agent_files_as_its_own_persona(client, newsroom):
    body = filing(byline=...)
    response = client.post("/api/v1/stories", json=body, headers=auth(newsroom["ada"]))
    assert response.status_code == 201
    assert response.get_json()["byline"] == "Ada Quill"
    same = client.post("/api/v1/stories", json=filing(byline="Ada Quill"), headers=auth(newsroom["ada"]))
    assert same.status_code == 201
    before = counts()
    other = client.post("/api/v1/stories", json=filing(byline="Rex Ledger"), headers=auth(newsroom["ada"]))
    assert other.status_code == 403 and other.mimetype == PROBLEM
    assert counts() == before


def test_agent_without_file_capability_cannot_file(client, desk, newsroom):
    key = desk.key(newsroom["paper"], "agent", persona=desk.persona(newsroom["paper"], "Ada Quill"),
                   capabilities=["revise"])
    assert client.post("/api/v1/stories", json=filing(byline=...), headers=auth(key)).status_code == 403


def test_admin_must_name_a_byline(client, newsroom):
    response = client.post("/api/v1/stories", json=filing(byline=...), headers=auth(newsroom["admin"]))
    assert response.status_code == 422 and "byline" in response.get_json()["errors"]


@pytest.mark.parametrize("body, field", [
    (filing(prose="Only two facts, yet a third marker[^3]."), "prose"),
    (filing(section="Sport"), "section"),
    (filing(byline="Nobody Known"), "byline"),
    (filing(cited_facts=facts(21), prose="Too many."), "cited_facts"),
    (filing(cited_facts=[{**facts(1)[0], "n": 2}], prose="x"), "cited_facts"),
    (filing(cited_facts=[{**facts(1)[0], "source": ""}], prose="x"), "cited_facts"),
    (filing(cited_facts=[{"statement": "s"}], prose="x"), "cited_facts"),
    (filing(headline=""), "headline"),
    (filing(headline="   "), "headline"),
    (filing(headline="x" * 301), "headline"),
    (filing(headline="nul\x00byte"), "headline"),
    (filing(headline=12), "headline"),
    (filing(prose=...), "prose"),
    (filing(image="not a url"), "image"),
    (filing(image="ftp://cdn.example.com/a.jpg"), "image"),
    (filing(cited_facts=[{**facts(1)[0], "n": True}], prose="x"), "cited_facts"),
    (filing(cited_facts="none"), "cited_facts"),
    (filing(extra="unknown fields are refused"), "extra"),
])
def test_a_rejected_filing_is_422_and_writes_nothing(client, newsroom, body, field):
    before = counts()
    response = client.post("/api/v1/stories", json=body, headers=auth(newsroom["admin"]))
    assert response.status_code == 422, response.get_json()
    assert response.mimetype == PROBLEM
    errors = response.get_json()["errors"]
    assert any(name == field or name.startswith(field + ".") for name in errors), errors
    assert counts() == before


def test_inactive_persona_and_section_refuse_filings(client, desk, newsroom):
    paper = newsroom["paper"]
    desk.persona(paper, "Rex Ledger").active = False
    desk.section(paper, "Science").active = False
    db.session.commit()
    before = counts()
    response = client.post("/api/v1/stories", json=filing(section="Science"),
                           headers=auth(newsroom["admin"]))
    assert response.status_code == 422
    assert set(response.get_json()["errors"]) >= {"byline", "section"}
    assert counts() == before


@pytest.mark.parametrize("kwargs, status", [
    ({"data": "headline=x", "content_type": "text/plain"}, 415),
    ({"data": "headline=x", "content_type": "application/x-www-form-urlencoded"}, 415),
    ({"data": ""}, 415),
    ({"data": "{not json", "content_type": "application/json"}, 400),
    ({"data": "[" * 20000 + "]" * 20000, "content_type": "application/json"}, 400),
    ({"data": "[1, 2]", "content_type": "application/json"}, 422),
    ({"data": "null", "content_type": "application/json"}, 422),
    ({"data": '{"headline": NaN}', "content_type": "application/json"}, 422),
])
def test_bodies_that_are_not_a_json_object(client, newsroom, kwargs, status):
    before = counts()
    response = client.post("/api/v1/stories", headers=auth(newsroom["admin"]), **kwargs)
    assert response.status_code == status, response.get_json()
    assert response.mimetype == PROBLEM
    assert counts() == before


def test_a_body_over_64_kib_is_413(client, newsroom):
    response = client.post("/api/v1/stories", json=filing(prose="x" * 70_000),
                           headers=auth(newsroom["admin"]))
    assert response.status_code == 413 and response.mimetype == PROBLEM


# ----------------------------------------------------------------------------- revising and airing


def test_revision_changes_only_the_given_fields_and_files_a_new_rev(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], "Rates rise again", facts=2, on_air_at=None)
    first = client.get(f"/api/v1/stories/{piece.id}", headers=auth(newsroom["admin"])).get_json()
    response = client.patch(f"/api/v1/stories/{piece.id}", json={"headline": "Rates rise, again"},
                            headers=auth(newsroom["admin"]))
    assert response.status_code == 200
    story = response.get_json()
    assert story["rev"] == 2 and story["headline"] == "Rates rise, again"
    assert story["content_hash"] != first["content_hash"]
    assert {k: story[k] for k in ("prose", "dek", "section", "byline", "cited_facts", "slug")} == \
        {k: first[k] for k in ("prose", "dek", "section", "byline", "cited_facts", "slug")}
    # New facts and prose together; section and byline move by name.
    response = client.patch(f"/api/v1/stories/{piece.id}", headers=auth(newsroom["admin"]), json={
        "prose": "Three now[^1][^2][^3].", "cited_facts": facts(3), "section": "Business",
        "byline": "Rex Ledger"})
    story = response.get_json()
    assert story["rev"] == 3 and len(story["cited_facts"]) == 3
    assert story["section"] == story["category"] == "Business" and story["byline"] == "Rex Ledger"


def test_a_revision_that_changes_nothing_files_nothing(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], on_air_at=None)
    before = counts()
    for body in [{}, {"headline": "Rates rise again"}]:
        response = client.patch(f"/api/v1/stories/{piece.id}", json=body, headers=auth(newsroom["admin"]))
        assert response.status_code == 200 and response.get_json()["rev"] == 1
    assert counts() == before


def test_a_rejected_revision_writes_nothing(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], facts=2)
    before = counts()
    for body in [{"prose": "Now cites[^3]."}, {"cited_facts": facts(1)}, {"section": "Nowhere"},
                 {"headline": None}, {"slug": "no-such-field"}]:
        response = client.patch(f"/api/v1/stories/{piece.id}", json=body, headers=auth(newsroom["admin"]))
        assert response.status_code == 422, body
    assert counts() == before
    assert client.patch("/api/v1/stories/999999", json={"headline": "x"},
                        headers=auth(newsroom["admin"])).status_code == 404


def test_agent_revises_only_its_own_drafts(client, desk, newsroom):
    paper = newsroom["paper"]
    own = desk.piece(paper, "Ada's draft", byline="Ada Quill", on_air_at=None)
    theirs = desk.piece(paper, "Rex's draft", byline="Rex Ledger", on_air_at=None)
    aired = desk.piece(paper, "Ada on air", byline="Ada Quill")
    ok = client.patch(f"/api/v1/stories/{own.id}", json={"dek": "Sharper."}, headers=auth(newsroom["ada"]))
    assert ok.status_code == 200 and ok.get_json()["rev"] == 2
    before = counts()
    for piece_id, body in [(theirs.id, {"dek": "Mine now."}), (aired.id, {"dek": "Live edit."}),
                           (own.id, {"byline": "Rex Ledger"})]:
        response = client.patch(f"/api/v1/stories/{piece_id}", json=body, headers=auth(newsroom["ada"]))
        assert response.status_code == 403, (piece_id, body)
    # `file` alone does not open revising.
    response = client.patch(f"/api/v1/stories/{own.id}", json={"dek": "Again."},
                            headers=auth(newsroom["ada_file_only"]))
    assert response.status_code == 403
    assert counts() == before


def test_admin_airs_and_unairs_and_agents_cannot(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], byline="Ada Quill", on_air_at=None)
    etag = client.get("/api/v1/stories").headers["ETag"]
    for key in ("ada", "read"):
        for method in ("put", "delete"):
            response = getattr(client, method)(f"/api/v1/stories/{piece.id}/air", headers=auth(newsroom[key]))
            assert response.status_code == 403
    assert client.get("/api/v1/stories", headers={"If-None-Match": etag}).status_code == 304

    aired = client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(newsroom["admin"]))
    assert aired.status_code == 200
    story = aired.get_json()
    assert story["on_air"] is True and story["on_air_at"].endswith("Z")
    public = client.get("/api/v1/stories", headers={"If-None-Match": etag})
    assert public.status_code == 200 and [s["id"] for s in public.get_json()["stories"]] == [story["id"]]
    # Airing again keeps the first on-air time.
    again = client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(newsroom["admin"])).get_json()
    assert again["on_air_at"] == story["on_air_at"]

    unaired = client.delete(f"/api/v1/stories/{piece.id}/air", headers=auth(newsroom["admin"]))
    assert unaired.status_code == 200 and unaired.get_json()["on_air"] is False
    assert client.get("/api/v1/stories").get_json()["count"] == 0
    assert client.get(f"/api/v1/stories/{piece.id}").status_code == 404
    assert client.put("/api/v1/stories/999999/air", headers=auth(newsroom["admin"])).status_code == 404


# ----------------------------------------------------------------------------- the cast


def test_publish_an_edition_once_per_day(client, newsroom):
    body = {"day": "2026-11-20", "title": "The cast, 20 November", "summary": "Two minutes.",
            "video_url": "https://cdn.example.com/2026-11-20.mp4",
            "poster_url": "https://cdn.example.com/2026-11-20.jpg", "length_bytes": 1234,
            "duration_seconds": 120}
    response = client.post("/api/v1/cast", json=body, headers=auth(newsroom["admin"]))
    assert response.status_code == 201, response.get_json()
    edition = response.get_json()
    assert edition["day"] == "2026-11-20" and edition["mime_type"] == "video/mp4"
    assert edition["url"] == response.headers["Location"] == "http://localhost/cast/2026-11-20"
    assert client.get("/api/v1/cast").get_json()["count"] == 1
    before = counts()
    again = client.post("/api/v1/cast", json={**body, "title": "Twice"}, headers=auth(newsroom["admin"]))
    assert again.status_code == 409 and again.mimetype == PROBLEM
    for bad in [{**body, "day": "2026-02-30"}, {**body, "video_url": "nope"},
                {**body, "length_bytes": -1}, {**body, "duration_seconds": 1.5},
                {**body, "mime_type": "text/html"}, {k: v for k, v in body.items() if k != "title"}]:
        assert client.post("/api/v1/cast", json=bad, headers=auth(newsroom["admin"])).status_code == 422, bad
    assert counts() == before


# ----------------------------------------------------------------------------- sections and personas


def test_sections_are_created_reordered_renamed_and_deactivated(client, newsroom):
    admin = auth(newsroom["admin"])
    names = lambda: [s["name"] for s in client.get("/api/v1/sections").get_json()["sections"]]  # noqa: E731
    assert names() == ["World", "Business", "Science"]
    created = client.post("/api/v1/sections", json={"name": "Sport", "description": "Games.",
                                                     "position": 1}, headers=admin)
    assert created.status_code == 201
    assert created.get_json() == {"name": "Sport", "slug": "sport", "description": "Games.",
                                  "position": 1, "active": True,
                                  "url": "http://localhost/sections/sport"}
    assert created.headers["Location"] == "http://localhost/sections/sport"
    assert names() == ["World", "Sport", "Business", "Science"]
    moved = client.patch("/api/v1/sections/world", json={"position": 99}, headers=admin)
    assert moved.status_code == 200 and moved.get_json()["position"] == 3
    assert names() == ["Sport", "Business", "Science", "World"]
    renamed = client.patch("/api/v1/sections/sport", json={"name": "Sports"}, headers=admin).get_json()
    assert renamed["name"] == "Sports" and renamed["slug"] == "sport"
    client.patch("/api/v1/sections/sport", json={"active": False}, headers=admin)
    response = client.post("/api/v1/stories", json=filing(section="Sports"), headers=admin)
    assert response.status_code == 422 and "section" in response.get_json()["errors"]

    before = counts()
    assert client.post("/api/v1/sections", json={"name": "World"}, headers=admin).status_code == 409
    assert client.patch("/api/v1/sections/business", json={"name": "Science"}, headers=admin).status_code == 409
    assert client.patch("/api/v1/sections/nowhere", json={"name": "X"}, headers=admin).status_code == 404
    for bad in [{"name": ""}, {"position": -1}, {"active": "yes"}, {"active": 1}, {"slug": "x"}]:
        assert client.patch("/api/v1/sections/business", json=bad, headers=admin).status_code == 422, bad
    assert counts() == before


def test_personas_are_always_declared_ai(client, newsroom):
    admin = auth(newsroom["admin"])
    created = client.post("/api/v1/personas", json={"name": "Nova Reed", "title": "Science desk",
                                                     "beat": "space", "bio": "Writes on launches.",
                                                     "declared_ai": True}, headers=admin)
    assert created.status_code == 201
    body = created.get_json()
    assert body["slug"] == "nova-reed" and body["declared_ai"] is True and body["position"] == 2
    assert body["avatar"] == "http://localhost/masthead/nova-reed/avatar.svg"
    before = counts()
    refused = client.post("/api/v1/personas", json={"name": "Human Hand", "declared_ai": False}, headers=admin)
    assert refused.status_code == 422 and "declared_ai" in refused.get_json()["errors"]
    patched = client.patch("/api/v1/personas/nova-reed", json={"declared_ai": False}, headers=admin)
    assert patched.status_code == 422
    assert client.post("/api/v1/personas", json={"name": "Ada Quill"}, headers=admin).status_code == 409
    assert counts() == before
    # Filing under the new persona, then deactivating it, which stops its filings.
    assert client.post("/api/v1/stories", json=filing(byline="Nova Reed"), headers=admin).status_code == 201
    changed = client.patch("/api/v1/personas/nova-reed", json={"active": False, "title": "Emerita"},
                           headers=admin).get_json()
    assert changed["active"] is False and changed["title"] == "Emerita" and changed["declared_ai"] is True
    assert client.post("/api/v1/stories", json=filing(byline="Nova Reed"), headers=admin).status_code == 422


# ----------------------------------------------------------------------------- config


def test_config_patch_merges_and_moves_the_public_etag(client, newsroom):
    admin = auth(newsroom["admin"])
    etag = client.get("/api/v1").headers["ETag"]
    response = client.patch("/api/v1/config", headers=admin, json={
        "nameplate": "The Harbour Herald", "index_style": "keyed",
        "config": {"help_desk": "https://help.example.com/desk", "timezone": None, "rails": [1, 2]}})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["nameplate"] == "The Harbour Herald" and body["index_style"] == "keyed"
    assert body["config"] == {"help_desk": "https://help.example.com/desk", "rails": [1, 2]}
    index = client.get("/api/v1", headers={"If-None-Match": etag})
    assert index.status_code == 200 and index.get_json()["nameplate"] == "The Harbour Herald"
    assert "keyed" in index.get_json()
    agent = client.get("/api/v1/agent", headers=auth(newsroom["ada"])).get_json()
    assert agent["search_help"] == "https://help.example.com/desk"

    before = counts()
    for bad in [{"index_style": "fancy"}, {"is_public": "false"}, {"nameplate": ""},
                {"config": {"help_desk": "call us"}}, {"config": {"k": "nul\x00"}},
                {"config": "not an object"}, {"host": "evil.example"},
                {"config": {"deep": [[[[[[[[[[1]]]]]]]]]]}}]:
        assert client.patch("/api/v1/config", json=bad, headers=admin).status_code == 422, bad
    assert counts() == before

    assert client.patch("/api/v1/config", json={"is_public": False}, headers=admin).status_code == 200
    assert client.get("/api/v1/stories").status_code == 404
    assert client.get("/api/v1/stories", headers=auth(newsroom["read"])).status_code == 200


def test_odd_path_values_are_404_never_500(client, newsroom):
    admin = auth(newsroom["admin"])
    for method, url, body in [("get", "/api/v1/stories/%00/proof", None),
                              ("patch", "/api/v1/stories/%00", {"dek": "x"}),
                              ("put", "/api/v1/stories/%00/air", None),
                              ("patch", "/api/v1/sections/%00", {"active": True}),
                              ("patch", "/api/v1/personas/%00", {"active": True}),
                              ("patch", "/api/v1/personas/" + "x" * 500, {"active": True}),
                              ("get", "/api/v1/stories/99999999999999999999999/proof", None)]:
        response = getattr(client, method)(url, json=body, headers=admin)
        assert response.status_code == 404, (method, url)


def test_slugs_are_unique_bounded_and_never_look_like_ids(client, newsroom):
    admin = auth(newsroom["admin"])
    first = client.post("/api/v1/sections", json={"name": "2026"}, headers=admin).get_json()
    assert first["slug"] == "section-2026"
    second = client.post("/api/v1/sections", json={"name": "2026!"}, headers=admin).get_json()
    assert second["slug"] == "section-2026-2"
    long = client.post("/api/v1/personas", json={"name": "0" * 120}, headers=admin)
    assert long.status_code == 201 and len(long.get_json()["slug"]) <= 120
    assert long.get_json()["slug"].startswith("persona-")
