"""What a revision writes: the piece's row once, and its cited facts only when they change.
A revision that leaves the facts as they are keeps their rows (no DELETE and re-INSERT of
every fact), in one UPDATE of the piece; one that changes them replaces them; and the facts
a reader gets, and the sealed revision, are the same either way. Counted through HTTP with
tests/fixtures/statements.py."""
from __future__ import annotations

import re

from sqlalchemy import text

from extensions import db
from tests.fixtures.keys import auth
from tests.fixtures.statements import statements


def _writes(seen: list[str], table: str) -> list[str]:
    return [s for s in seen if re.match(rf"\s*(UPDATE|INSERT INTO|DELETE FROM) {table}\b", s)]


def _facts_of(client, id: int) -> list[dict]:
    return client.get(f"/api/v1/stories/{id}").get_json()["cited_facts"]


def test_a_revision_that_keeps_the_facts_writes_the_piece_once_and_no_fact(client, desk, runner):
    paper = desk.paper("demo")
    piece = desk.piece(paper, facts=3)
    admin = desk.key(paper, "admin")
    facts = _facts_of(client, piece.id)
    ids = db.session.execute(text("SELECT id FROM cited_facts WHERE piece_id = :p ORDER BY n"),
                             {"p": piece.id}).scalars().all()
    with statements() as seen:
        answer = client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin),
                              json={"headline": "Rates rise for a third month", "kind": "update"})
    assert answer.status_code == 200, answer.get_json()
    assert _writes(seen, "cited_facts") == []
    assert len(_writes(seen, "pieces")) == 1  # headline, rev, hash, notices: one row write
    assert answer.get_json()["cited_facts"] == facts and _facts_of(client, piece.id) == facts
    db.session.rollback()
    assert db.session.execute(text("SELECT id FROM cited_facts WHERE piece_id = :p ORDER BY n"),
                              {"p": piece.id}).scalars().all() == ids
    assert answer.get_json()["rev"] == 2
    checked = runner.invoke(args=["verify-proof", "--paper", "demo", "--piece", str(piece.id)])
    assert checked.exit_code == 0, checked.output  # the kept facts are the sealed ones


def test_a_revision_that_changes_a_fact_replaces_them(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, facts=2)
    admin = desk.key(paper, "admin")
    facts = _facts_of(client, piece.id)
    changed = [{k: f[k] for k in ("statement", "source", "instrument", "claim_key")} for f in facts]
    changed[1]["claim_key"] = "claim-2b"  # one field of one fact
    with statements() as seen:
        answer = client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin),
                              json={"cited_facts": changed, "kind": "correction", "note": "The claim key."})
    assert answer.status_code == 200, answer.get_json()
    assert _writes(seen, "cited_facts")  # replaced
    assert len(_writes(seen, "pieces")) == 1
    assert [f["claim_key"] for f in _facts_of(client, piece.id)] == ["claim-1", "claim-2b"]


def test_a_fact_edited_behind_the_api_is_what_the_next_revision_seals(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, facts=2)
    admin = desk.key(paper, "admin")
    db.session.execute(text("UPDATE cited_facts SET statement = 'Edited in SQL' WHERE piece_id = :p AND n = 1"),
                       {"p": piece.id})
    db.session.commit()
    answer = client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin),
                          json={"headline": "A new headline", "kind": "update"})
    assert answer.status_code == 200, answer.get_json()
    assert _facts_of(client, piece.id)[0]["statement"] == "Edited in SQL"
    revision = client.get(f"/api/v1/stories/{piece.id}/revisions/2").get_json()
    assert "Edited in SQL" in str(revision)
