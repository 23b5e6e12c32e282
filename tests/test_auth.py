"""Desk keys on the keyed lane, through HTTP (docs/API.md "keys", "status codes", "caching",
"CORS"): every key kind on its own paper, on another paper's host, revoked, missing and malformed;
keyed answers are private and carry no CORS headers."""
from __future__ import annotations

import pytest

from extensions import db
from models import Subscriber
from services.newsroom import keys
from tests.fixtures.keys import auth

OTHER = "http://other.localhost"
KEYED_GETS = ["/api/v1/agent", "/api/v1/config", "/api/v1/stories/{id}/proof"]


@pytest.fixture
def newsroom(desk):
    """Paper `demo` (bare host) with one filed piece and a key of each kind; paper `other`."""
    paper = desk.paper("demo")
    other = desk.paper("other")
    piece = desk.piece(paper, "Rates rise again")
    return {
        "paper": paper,
        "piece": piece,
        "read": desk.key(paper, "read"),
        "admin": desk.key(paper, "admin"),
        "agent": desk.key(paper, "agent", persona=desk.persona(paper, "Ada Quill"),
                          capabilities=["file"]),
        "other_admin": desk.key(other, "admin"),
    }


@pytest.mark.parametrize("kind", ["read", "admin", "agent"])
def test_every_kind_reads_the_keyed_lane_of_its_own_paper(client, newsroom, kind):
    for url in KEYED_GETS:
        response = client.get(url.format(id=newsroom["piece"].id), headers=auth(newsroom[kind]))
        assert response.status_code == 200, (url, response.get_json())
    body = client.get("/api/v1/agent", headers=auth(newsroom[kind], "X-Desk-Key")).get_json()
    assert body["key"]["active"] is True and body["key"]["kind"] == kind
    assert body["key"]["paper"] == "demo"


@pytest.mark.parametrize("kind", ["read", "admin", "agent"])
def test_a_key_on_another_papers_host_is_403(client, newsroom, kind):
    for url in KEYED_GETS + ["/api/v1/stories"]:
        response = client.get(url.format(id=1), headers=auth(newsroom[kind]), base_url=OTHER)
        assert response.status_code == 403, url
        assert response.mimetype == "application/problem+json"
    # Also on writes: the key is refused before the body is looked at.
    response = client.post("/api/v1/sections", json={"name": "Sport"}, base_url=OTHER,
                           headers=auth(newsroom[kind]))
    assert response.status_code == 403


@pytest.mark.parametrize("kind", ["read", "admin", "agent"])
def test_a_revoked_key_is_401(client, newsroom, kind):
    plain = newsroom[kind]
    keys.revoke(plain[len("desk_"):][:12])
    db.session.commit()
    for url in KEYED_GETS + ["/api/v1/stories"]:
        response = client.get(url.format(id=newsroom["piece"].id), headers=auth(plain))
        assert response.status_code == 401, url
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="desk"'
        assert "revoked" in response.get_json()["detail"]


def test_a_missing_key_is_401_on_keyed_routes_only(client, newsroom):
    piece_id = newsroom["piece"].id
    for url in KEYED_GETS:
        response = client.get(url.format(id=piece_id))
        assert response.status_code == 401, url
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="desk"'
        assert response.mimetype == "application/problem+json"
    for method, url in [("post", "/api/v1/stories"), ("patch", f"/api/v1/stories/{piece_id}"),
                        ("put", f"/api/v1/stories/{piece_id}/air"),
                        ("delete", f"/api/v1/stories/{piece_id}/air"), ("post", "/api/v1/cast"),
                        ("post", "/api/v1/sections"), ("patch", "/api/v1/sections/world"),
                        ("post", "/api/v1/personas"), ("patch", "/api/v1/personas/ada-quill"),
                        ("patch", "/api/v1/config")]:
        response = getattr(client, method)(url, json={})
        assert response.status_code == 401, (method, url)
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="desk"'
    # The public lane needs none.
    assert client.get("/api/v1/stories").status_code == 200


@pytest.mark.parametrize("headers", [
    {"Authorization": "Bearer nope"},
    {"Authorization": "Basic ZGVzazpkZXNr"},
    {"Authorization": "Bearer desk_short"},
    {"X-Desk-Key": "desk_" + "x" * 43},
    {"X-Desk-Key": ""},
])
def test_malformed_or_unknown_keys_are_401_even_on_the_public_lane(client, newsroom, headers):
    for url in ["/api/v1/agent", "/api/v1/stories"]:
        response = client.get(url, headers=headers)
        assert response.status_code == 401, (url, headers)
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="desk"'


def test_a_tampered_key_with_a_known_prefix_is_401(client, newsroom):
    plain = newsroom["admin"]
    forged = plain[:-1] + ("A" if plain[-1] != "A" else "B")
    response = client.get("/api/v1/agent", headers=auth(forged))
    assert response.status_code == 401


def test_a_read_key_cannot_write(client, newsroom):
    piece_id = newsroom["piece"].id
    headers = auth(newsroom["read"])
    for method, url, body in [
        ("post", "/api/v1/stories", {"headline": "x", "prose": "y", "section": "World", "byline": "Ada Quill"}),
        ("patch", f"/api/v1/stories/{piece_id}", {"headline": "Changed"}),
        ("put", f"/api/v1/stories/{piece_id}/air", None),
        ("delete", f"/api/v1/stories/{piece_id}/air", None),
        ("post", "/api/v1/cast", {"day": "2026-11-01", "title": "t", "video_url": "https://v.example/a.mp4",
                                  "poster_url": "https://v.example/a.jpg"}),
        ("post", "/api/v1/sections", {"name": "Sport"}),
        ("patch", "/api/v1/sections/world", {"position": 2}),
        ("post", "/api/v1/personas", {"name": "Nova"}),
        ("patch", "/api/v1/personas/ada-quill", {"active": False}),
        ("patch", "/api/v1/config", {"motto": "Read keys write nothing"}),
    ]:
        response = getattr(client, method)(url, json=body, headers=headers)
        assert response.status_code == 403, (method, url, response.get_json())
    story = client.get(f"/api/v1/stories/{piece_id}").get_json()
    assert story["headline"] == "Rates rise again" and story["rev"] == 1


@pytest.mark.parametrize("kind", ["read", "admin", "agent"])
def test_keyed_answers_are_private_without_cors(client, newsroom, kind):
    origin = {"Origin": "https://elsewhere.example"}
    for url in KEYED_GETS + ["/api/v1/stories", "/api/v1"]:
        response = client.get(url.format(id=newsroom["piece"].id),
                              headers={**auth(newsroom[kind]), **origin})
        assert response.status_code == 200, url
        assert response.headers["Cache-Control"] == "private, no-store", url
        assert "ETag" not in response.headers
        assert not [h for h in response.headers.keys() if h.lower().startswith("access-control-")], url
    # A keyed write answer too.
    response = client.patch("/api/v1/config", json={"motto": "New"},
                            headers={**auth(newsroom["admin"]), **origin})
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "private, no-store"
    assert "Access-Control-Allow-Origin" not in response.headers


def test_a_private_paper_is_readable_with_its_key(client, desk):
    paper = desk.paper("secret", public=False)
    piece = desk.piece(paper, "Only for the desk")
    draft = desk.piece(paper, "Still a draft", on_air_at=None)
    key = desk.key(paper, "read")
    base = "http://secret.localhost"
    assert client.get("/api/v1/stories", base_url=base).status_code == 404
    listed = client.get("/api/v1/stories", base_url=base, headers=auth(key)).get_json()
    assert {s["headline"] for s in listed["stories"]} == {"Only for the desk", "Still a draft"}
    assert {s["on_air"] for s in listed["stories"] if s["headline"] == "Still a draft"} == {False}
    assert client.get(f"/api/v1/stories/{piece.id}", base_url=base,
                      headers=auth(key)).status_code == 200
    assert client.get(f"/api/v1/stories/{draft.id}/proof", base_url=base,
                      headers=auth(key)).status_code == 200
    assert client.get("/api/v1/config", base_url=base,
                      headers=auth(key)).get_json()["is_public"] is False


def test_a_private_paper_answers_a_key_not_its_own_as_an_unknown_host_does(client, desk):
    secret = desk.paper("secret", public=False)
    other = desk.paper("other")
    revoked_key = desk.key(secret, "admin")
    keys.revoke(revoked_key[len("desk_"):][:12])
    db.session.commit()
    presented = {
        "another paper's admin key": desk.key(other, "admin"),
        "an unknown key": "desk_" + "A" * 43,
        "a revoked key": revoked_key,
    }
    for base in ("http://secret.localhost", "http://nowhere.localhost"):
        for path in ("/api/v1", "/api/v1/stories", "/api/v1/config", "/rss.xml", "/"):
            for what, key in presented.items():
                response = client.get(path, base_url=base, headers=auth(key))
                assert response.status_code == 404, (base, path, what, response.status_code)
                assert "secret" not in response.get_data(as_text=True).lower().replace(
                    "secret.localhost", ""), (base, path, what)
    # A malformed key is refused before any paper is looked up: the same 401 on every host.
    statuses = {client.get("/api/v1", base_url=base, headers={"X-Desk-Key": "x"}).status_code
                for base in ("http://secret.localhost", "http://nowhere.localhost",
                             "http://other.localhost")}
    assert statuses == {401}
    # On a public paper the same keys keep their 401 and 403.
    public = "http://other.localhost"
    assert client.get("/api/v1/config", base_url=public,
                      headers=auth(presented["an unknown key"])).status_code == 401
    assert client.get("/api/v1/config", base_url=public,
                      headers=auth(revoked_key)).status_code == 401
    assert client.get("/api/v1/config", base_url=public,
                      headers=auth(desk.key(secret, "read"))).status_code == 403


def test_config_as_read_and_admin_sees_key_summaries_never_keys(client, newsroom):
    as_read = client.get("/api/v1/config", headers=auth(newsroom["read"])).get_json()
    assert as_read["nameplate"] == "The Demo Times" and as_read["config"] == {"timezone": "UTC"}
    assert "desk_keys" not in as_read
    as_admin = client.get("/api/v1/config", headers=auth(newsroom["admin"]))
    body = as_admin.get_json()
    assert {k["kind"] for k in body["desk_keys"]} == {"read", "admin", "agent"}
    assert newsroom["admin"] not in as_admin.get_data(as_text=True)
    agent_row = next(k for k in body["desk_keys"] if k["kind"] == "agent")
    assert agent_row["persona"] == "Ada Quill" and agent_row["capabilities"] == ["file"]


def test_the_index_read_with_a_key_lists_the_routes_its_level_reaches(client, newsroom):
    def routes(kind):
        body = client.get("/api/v1", headers=auth(newsroom[kind])).get_json()
        return {(r["method"], r["path"].removeprefix("http://localhost"), r["access"])
                for r in body["routes"]}

    read, admin, agent = [{(m, p) for m, p, _ in routes(kind)} for kind in ("read", "admin", "agent")]
    assert ("GET", "/api/v1/stories/{id}/proof") in read and ("GET", "/api/v1/agent") in read
    assert not {(m, p) for m, p, access in routes("read") if access == "admin"}
    assert {("POST", "/api/v1/stories"), ("PUT", "/api/v1/stories/{id}/air"),
            ("PATCH", "/api/v1/config"), ("POST", "/api/v1/sections")} <= admin
    # The agent key holds `file`: it may file, and nothing else beyond reading.
    assert ("POST", "/api/v1/stories") in agent
    assert ("PUT", "/api/v1/stories/{id}/air") not in agent
    assert ("PATCH", "/api/v1/stories/{id}") not in agent


# ----------------------------------------------------------------------------- least privilege

INTEGRATIONS = {"timezone": "Europe/Paris", "help_desk": "mailto:desk@example.com",
                "crm_api_token": "tok_live_0123456789", "analytics": {"id": "UA-1", "secret": "s3"}}


def test_only_admin_keys_see_the_whole_config_others_its_public_part(client, newsroom):
    client.patch("/api/v1/config", json={"config": INTEGRATIONS}, headers=auth(newsroom["admin"]))
    as_admin = client.get("/api/v1/config", headers=auth(newsroom["admin"])).get_json()
    assert as_admin["config"] == INTEGRATIONS
    for kind in ("read", "agent"):
        response = client.get("/api/v1/config", headers=auth(newsroom[kind]))
        assert response.status_code == 200
        body = response.get_json()
        assert body["config"] == {"timezone": "Europe/Paris", "help_desk": "mailto:desk@example.com"}
        assert body["nameplate"] == "The Demo Times" and "desk_keys" not in body
        text = response.get_data(as_text=True)
        assert "tok_live" not in text and "UA-1" not in text, kind


def test_an_agent_key_gets_no_subscriber_counts_a_read_key_does(client, desk, newsroom, now):
    db.session.add(Subscriber(paper_id=newsroom["paper"].id, email="ann@example.com", created_at=now,
                              confirmed_at=now))
    db.session.commit()
    refused = client.get("/api/v1/subscribers", headers=auth(newsroom["agent"]))
    assert refused.status_code == 403 and refused.mimetype == "application/problem+json"
    assert "count" not in refused.get_json()
    # The contract promises read keys the counts (spec: "Subscriber count (read key)").
    assert client.get("/api/v1/subscribers", headers=auth(newsroom["read"])).get_json() == {
        "count": 1, "confirmed": 1}


def test_an_agent_key_is_told_only_what_it_may_call(client, newsroom):
    index = client.get("/api/v1", headers=auth(newsroom["agent"])).get_json()
    listed = {(r["method"], r["path"].removeprefix("http://localhost")) for r in index["routes"]}
    assert ("GET", "/api/v1/subscribers") not in listed
    assert {("GET", "/api/v1/config"), ("GET", "/api/v1/agent"), ("POST", "/api/v1/stories"),
            ("GET", "/api/v1/stories/{id}/proof")} <= listed
    may = client.get("/api/v1/agent", headers=auth(newsroom["agent"])).get_json()["may"]
    assert not [m for m in may if m["url"].endswith("/subscribers")]
    read_may = client.get("/api/v1/agent", headers=auth(newsroom["read"])).get_json()["may"]
    assert ("GET", "http://localhost/api/v1/subscribers") in {(m["method"], m["url"]) for m in read_may}


def test_an_agent_key_sees_only_its_own_personas_drafts(client, desk, newsroom):
    paper = newsroom["paper"]
    own = desk.piece(paper, "Ada's draft", byline="Ada Quill", on_air_at=None)
    others = desk.piece(paper, "Rex's draft", byline="Rex Ledger", on_air_at=None)
    aired = desk.piece(paper, "Rex on air", byline="Rex Ledger")

    def listed(kind):
        body = client.get("/api/v1/stories", headers=auth(newsroom[kind])).get_json()
        return {row["headline"] for row in body["stories"]}

    assert listed("read") >= {"Ada's draft", "Rex's draft", "Rex on air"}
    assert "Rex's draft" not in listed("agent")
    assert {"Ada's draft", "Rex on air"} <= listed("agent")
    agent = auth(newsroom["agent"])
    for url in ("/api/v1/stories/{}", "/api/v1/stories/{}/proof"):
        hidden = client.get(url.format(others.id), headers=agent)
        assert hidden.status_code == 404 and hidden.mimetype == "application/problem+json", url
        assert client.get(url.format(own.id), headers=agent).status_code == 200, url
        assert client.get(url.format(aired.id), headers=agent).status_code == 200, url
        assert client.get(url.format(others.id), headers=auth(newsroom["read"])).status_code == 200, url
    # Filing still answers with the agent's own new draft.
    filed = client.post("/api/v1/stories", headers=agent, json={
        "headline": "Filed by the bot", "dek": "d", "prose": "p[^1]", "section": "World",
        "cited_facts": [{"statement": "s", "source": "o", "instrument": "i", "claim_key": "k"}]})
    assert filed.status_code == 201, filed.get_json()
    assert client.get(f"/api/v1/stories/{filed.get_json()['id']}", headers=agent).status_code == 200
