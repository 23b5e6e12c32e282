"""Agents that publish within their persona: a key made with `flask keys create` as the README
says files, airs and pulls its own persona's pieces (capability `air`) and no one else's; a
refusal names the missing capability; `/agent` lists what each capability opens; keyed lists
put drafts first with `status=draft`; `last_used_at` is kept, at most once a minute per key.
Through the CLI and HTTP."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import time_machine
from sqlalchemy import select

from extensions import db
from models import DeskKey
from tests.fixtures.keys import auth

PROBLEM = "application/problem+json"
T = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)


def filing(**changes) -> dict:
    body = {"headline": "Harbour reopens", "dek": "Ships return.",
            "prose": "The harbour reopened[^1].", "section": "World",
            "cited_facts": [{"statement": "The harbour reopened on Monday.", "source": "Port Authority",
                             "instrument": "Press release", "claim_key": "port/2026-11-16"}]}
    return {**body, **changes}


@pytest.fixture
def paper(desk):
    paper = desk.paper("demo")
    desk.persona(paper, "Ada Quill")
    desk.persona(paper, "Rex Ledger")
    return paper


def _cli_key(runner, *args) -> str:
    result = runner.invoke(args=["keys", "create", "--paper", "demo", *args])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def test_an_agent_key_made_as_the_readme_says_files_airs_and_pulls_its_own_pieces(client, desk, runner, paper):
    key = _cli_key(runner, "--kind", "agent", "--persona", "Ada Quill", "--capability", "file",
                   "--capability", "revise", "--capability", "air", "--label", "my agent")
    filed = client.post("/api/v1/stories", json=filing(), headers=auth(key))
    assert filed.status_code == 201, filed.get_json()
    story = filed.get_json()
    assert story["byline"] == "Ada Quill" and story["on_air"] is False
    aired = client.put(f"/api/v1/stories/{story['id']}/air", headers=auth(key))
    assert aired.status_code == 200 and aired.get_json()["on_air"] is True
    assert client.get(f"/api/v1/stories/{story['id']}").status_code == 200  # public now
    pulled = client.delete(f"/api/v1/stories/{story['id']}/air", headers=auth(key))
    assert pulled.status_code == 200 and pulled.get_json()["on_air"] is False
    assert client.get(f"/api/v1/stories/{story['id']}").status_code == 404

    # Someone else's piece: neither aired nor pulled.
    other = desk.piece(paper, "Rex's scoop", byline="Rex Ledger", on_air_at=None)
    refused = client.put(f"/api/v1/stories/{other.id}/air", headers=auth(key))
    assert refused.status_code == 403 and refused.mimetype == PROBLEM
    assert "own persona" in refused.get_json()["detail"]
    on_air = desk.piece(paper, "Rex's column", byline="Rex Ledger")
    assert client.delete(f"/api/v1/stories/{on_air.id}/air", headers=auth(key)).status_code == 403
    assert client.get(f"/api/v1/stories/{on_air.id}").status_code == 200


def test_a_refusal_names_the_missing_capability(client, desk, runner, paper):
    key = _cli_key(runner, "--kind", "agent", "--persona", "Ada Quill")
    filed = client.post("/api/v1/stories", json=filing(), headers=auth(key))
    assert filed.status_code == 403 and filed.mimetype == PROBLEM
    assert "'file'" in filed.get_json()["detail"] and "--capability file" in filed.get_json()["detail"]
    piece = desk.piece(paper, "Ada's draft", byline="Ada Quill", on_air_at=None)
    aired = client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(key))
    assert aired.status_code == 403 and "'air'" in aired.get_json()["detail"]
    # A route no capability opens says so, and names the capabilities there are.
    config = client.patch("/api/v1/config", json={"motto": "x"}, headers=auth(key))
    assert config.status_code == 403
    assert "no agent capability opens it" in config.get_json()["detail"]
    assert "air" in config.get_json()["detail"]


def test_keys_create_help_and_agent_cockpit_name_every_capability(client, runner, paper):
    help_text = runner.invoke(args=["keys", "create", "--help"]).output
    for capability in ("file", "revise", "air"):
        assert capability in help_text
    key = _cli_key(runner, "--kind", "agent", "--persona", "Ada Quill", "--capability", "air")
    cockpit = client.get("/api/v1/agent", headers=auth(key)).get_json()
    assert cockpit["capability"] == ["air"]
    # Every capability there is, named with what it opens: an agent learns what to ask for.
    assert set(cockpit["agent_capabilities"]) == {"file", "revise", "air"}
    assert "/stories/{id}/air" in cockpit["agent_capabilities"]["air"]
    may = {(m["method"], m["url"]) for m in cockpit["may"]}
    assert ("PUT", "http://localhost/api/v1/stories/{id}/air") in may
    assert ("DELETE", "http://localhost/api/v1/stories/{id}/air") in may
    assert ("POST", "http://localhost/api/v1/stories") not in may
    assert runner.invoke(args=["keys", "create", "--paper", "demo", "--kind", "agent", "--persona",
                               "Ada Quill", "--capability", "publish"]).exit_code != 0


def test_status_draft_lists_an_agents_drafts_first(client, desk, paper):
    for n in range(5):
        desk.piece(paper, f"On air {n}", byline="Ada Quill", on_air_at=T - timedelta(hours=n))
    draft = desk.piece(paper, "Ada's draft", byline="Ada Quill", on_air_at=None)
    key = desk.key(paper, "agent", persona=desk.persona(paper, "Ada Quill"), capabilities=["file"])
    first = client.get("/api/v1/stories?status=draft&limit=2", headers=auth(key)).get_json()
    assert [s["id"] for s in first["stories"]] == [str(draft.id)]


def _last_used(prefix: str):
    value = db.session.scalar(select(DeskKey.last_used_at).where(DeskKey.prefix == prefix))
    db.session.rollback()
    return value


def test_last_used_at_is_kept_at_most_once_a_minute(client, desk, paper):
    key = desk.key(paper, "read")
    prefix = key[len("desk_"):][:12]
    assert _last_used(prefix) is None
    with time_machine.travel(T, tick=False) as clock:
        assert client.get("/api/v1/agent", headers=auth(key)).status_code == 200
        assert _last_used(prefix) == T
        clock.shift(timedelta(seconds=59))
        assert client.get("/api/v1/stories", headers=auth(key)).status_code == 200
        assert _last_used(prefix) == T  # within the minute: not written again
        clock.shift(timedelta(seconds=2))
        assert client.get("/api/v1/stories", headers=auth(key)).status_code == 200
        assert _last_used(prefix) == T + timedelta(seconds=61)
    # A refused request still counts as a use of a valid key (the key was presented and known).
    with time_machine.travel(T + timedelta(minutes=5), tick=False):
        assert client.patch("/api/v1/config", json={"motto": "x"}, headers=auth(key)).status_code == 403
        assert _last_used(prefix) == T + timedelta(minutes=5)
