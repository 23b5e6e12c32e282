"""The transparency log's public surfaces under probing (issue 32; docs/PROOFS.md, docs/SECURITY.md):
one byte-identical answer for every log-proof miss, and tile paths parsed strictly (ASCII digits,
bounded length): 404, never 500."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import pytest
import rfc8785
import time_machine
from sqlalchemy import select, text

from commands import log_monitor
from extensions import db
from models import Paper, Persona, Piece, PieceRevision
from services.newsroom import filing
from tests.fixtures.keys import auth
from tests.test_transparency_log import NOW, file, monitor, newsroom_on_air, worker


@pytest.fixture
def logged_paper(client, runner, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False):
        aired = file(client, admin, "Rates rise again")
        client.put(f"/api/v1/stories/{aired}/air", headers=auth(admin))
        draft = file(client, admin, "Minister to resign on Friday")
        scheduled = file(client, admin, "Budget leaks ahead of the speech")
        later = (datetime.now(timezone.utc) + timedelta(days=1)).isoformat()
        assert client.put(f"/api/v1/stories/{scheduled}/air", json={"at": later},
                          headers=auth(admin)).status_code == 200
        worker(runner)
    return {"aired": aired, "draft": draft, "scheduled": scheduled}


def test_every_log_proof_miss_is_the_same_answer(client, logged_paper):
    with time_machine.travel(NOW, tick=False):
        assert client.get(f"/api/v1/stories/{logged_paper['aired']}/log-proof").status_code == 200
        assert client.get("/api/v1/stories/rates-rise-again/log-proof").status_code == 200
        misses = [logged_paper["draft"], logged_paper["scheduled"], "minister-to-resign-on-friday",
                  "budget-leaks-ahead-of-the-speech", "no-such-slug", "999999", "99999999999",
                  "x" * 200]
        answers = {m: client.get(f"/api/v1/stories/{m}/log-proof") for m in misses}
    bodies = {m: (a.status_code, a.mimetype, a.get_data()) for m, a in answers.items()}
    assert {b[0] for b in bodies.values()} == {404}
    # Today a draft's or a scheduled piece's slug answers another 404 than an unknown slug.
    assert len(set(bodies.values())) == 1, bodies


@pytest.mark.parametrize("path", [
    "0/" + "1" * 4300,                                   # today: a bare 500 (int of 4300 digits)
    "0/" + "/".join(["x001"] * 1500) + "/000",           # the same, in groups
    "0/" + "/".join(["x999"] * 7) + "/000",              # past any 63-bit tree
    "0/\u0660\u0660\u0660",                             # Arabic-Indic 000: today the tile 0/000 again
    "entries/\u0661\u0662\u0663",
    "\u0660/000",
    "0/000.p/\u0663",
    "0/000\n",
])
def test_tile_paths_take_ascii_digits_in_bounded_groups_only(client, logged_paper, path):
    with time_machine.travel(NOW, tick=False):
        answer = client.get(f"/log/tile/{path}")
    assert answer.status_code == 404 and answer.mimetype == "application/problem+json"


def test_a_tile_has_one_spelling_in_ascii_digits(client, logged_paper):
    with time_machine.travel(NOW, tick=False):
        size = int(client.get("/log/checkpoint").get_data(as_text=True).split("\n")[1])
        arabic = str(size).translate(str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664"
                                                                 "\u0665\u0666\u0667\u0668\u0669"))
        assert client.get(f"/log/tile/0/000.p/{size}").status_code == 200
        for other in (f"0/\u0660\u0660\u0660.p/{size}", f"0/000.p/{arabic}", f"entries/\u0660\u0660\u0660.p/{size}"):
            answer = client.get(f"/log/tile/{other}")  # today: the same tile, under another URL
            assert answer.status_code == 404 and answer.mimetype == "application/problem+json", other


# ----------------------------------------------------------------------------- the monitor under rewrites


def test_the_monitor_fails_a_backdated_piece_and_a_retitled_or_renamed_persona_naming_the_field(
        client, runner, desk, live, app, tmp_path):
    paper, _admin, ids = newsroom_on_air(client, desk, runner)
    state = tmp_path / "state.json"
    first = monitor(runner, live, state)
    assert first.exit_code == 0, first.output
    with app.app_context():
        # Aired a month earlier, as the public answer now says (the log's entry says otherwise).
        db.session.execute(text("UPDATE pieces SET on_air_at = on_air_at - INTERVAL '30 days' WHERE id = :id")
                           if app.backend == "postgresql" else
                           text("UPDATE pieces SET on_air_at = datetime(on_air_at, '-30 days') WHERE id = :id"),
                           {"id": int(ids[1])})
        db.session.get(Paper, paper.id).bump()
        db.session.commit()
    backdated = monitor(runner, live, state)
    assert backdated.exit_code == 1, backdated.output  # today: OK
    assert f"FAIL: piece {ids[1]} (story-number-1): field on_air_at is served as" in backdated.output

    with app.app_context():
        persona = db.session.scalar(select(Persona).where(Persona.paper_id == paper.id, Persona.name == "Ada Quill"))
        persona.title = "Chief Economist"  # every piece bylined Ada Quill now shows it
        db.session.get(Paper, paper.id).bump()
        db.session.commit()
    retitled = monitor(runner, live, state)
    assert retitled.exit_code == 1  # today: OK
    assert "changed behind its hash (field byline_title changed since the last run verified it)" in retitled.output

    with app.app_context():
        persona = db.session.scalar(select(Persona).where(Persona.paper_id == paper.id, Persona.name == "Ada Quill"))
        persona.name, persona.title = "Ada Quell", "Correspondent"
        db.session.get(Paper, paper.id).bump()
        db.session.commit()
    renamed = monitor(runner, live, state)
    assert renamed.exit_code == 1
    assert "changed behind its hash (field byline changed since the last run verified it)" in renamed.output


def test_a_revision_signed_under_basis_1_still_verifies(client, runner, desk, live, app):
    paper, _admin, ids = newsroom_on_air(client, desk, runner)
    with app.app_context():
        # A revision filed before basis 2: its basis and hash as they were (no byline_title).
        piece = db.session.get(Piece, int(ids[2]))
        revision = db.session.scalar(select(PieceRevision).where(PieceRevision.piece_id == piece.id,
                                                                PieceRevision.rev == piece.rev))
        old = {k: v for k, v in revision.basis.items() if k not in ("basis", "byline_title")}
        digest = "sha256:" + hashlib.sha256(rfc8785.dumps(old)).hexdigest()
        revision.basis, revision.content_hash, piece.content_hash = old, digest, digest
        db.session.commit()
    assert filing.BASIS_VERSION == 2 and "byline_title" not in old
    # Its served hash is the basis-1 one; the monitor recomputes it with the fields of basis 1.
    story = client.get(f"/api/v1/stories/{ids[2]}").get_json()
    assert log_monitor.hashes_to(story, "demo", "http://localhost") == (True, digest)
