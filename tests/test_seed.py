"""`flask seed-demo` and `flask run-info` through the CLI, checked through HTTP and the database:
the demo papers, their spread over days, drafts, footnotes, signed receipts and the bulk path."""
from __future__ import annotations

import re
import shutil
from datetime import timedelta
from multiprocessing import resource_tracker
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from extensions import db
from models import Edition, Paper, Persona, Piece, PieceRevision, Section, clock
from services.newsroom import provenance
from tests.fixtures.keys import auth

MARKER = re.compile(r"\[\^(\d+)\]")


def seed(runner, *args):
    result = runner.invoke(args=["seed-demo", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _paper(slug: str) -> Paper:
    return db.session.scalar(select(Paper).where(Paper.slug == slug))


def _on_air(slug: str) -> int:
    return db.session.scalar(select(func.count(Piece.id)).join(Paper)
                             .where(Paper.slug == slug, Piece.on_air.is_(True)))


def _published_keys(client, base_url: str, headers=None) -> dict[str, str]:
    body = client.get("/api/v1/receipt-keys", base_url=base_url, headers=headers).get_json()
    return {key["kid"]: key["public_key"] for key in body["keys"]}


def _check_receipts(client, slug: str, base_url: str, headers=None) -> int:
    """Every revision of `slug` verifies against the paper's published receipt key, hashes to its
    content hash, and matches the piece it belongs to. Returns how many were checked."""
    public = _published_keys(client, base_url, headers)
    revisions = db.session.scalars(select(PieceRevision).join(Piece).join(Paper)
                                   .where(Paper.slug == slug)).all()
    pieces = {p.id: p for p in db.session.scalars(
        select(Piece).join(Paper).where(Paper.slug == slug)
        .options(selectinload(Piece.cited_facts)))}
    for rev in revisions:
        piece = pieces[rev.piece_id]
        assert rev.rev == 1 and rev.prev_hash is None and rev.filer == "seed-demo"
        assert rev.content_hash == provenance.content_hash(rev.basis) == piece.content_hash
        assert rev.signed_string == provenance.signed_string(
            paper=slug, piece=str(piece.id), rev=1, content_hash=rev.content_hash, prev_hash=None,
            filed_at=rev.filed_at, filer="seed-demo")
        assert provenance.verify(public[rev.kid], rev.signed_string, rev.receipt)
        assert rev.basis["prose"] == piece.prose and rev.basis["headline"] == piece.headline
        assert rev.basis["cited_facts"] == [
            {"n": f.n, "statement": f.statement, "source": f.source, "instrument": f.instrument,
             "claim_key": f.claim_key} for f in piece.cited_facts]
    assert len(revisions) == len(pieces)
    return len(revisions)


def _check_markers(slug: str) -> None:
    """Every `[^N]` marker has cited fact N, facts run 1..k (2-4 of them), each one cited."""
    pieces = db.session.scalars(select(Piece).join(Paper).where(Paper.slug == slug)
                                .options(selectinload(Piece.cited_facts))).all()
    for piece in pieces:
        numbers = [f.n for f in piece.cited_facts]
        assert numbers == list(range(1, len(numbers) + 1)) and 2 <= len(numbers) <= 4
        assert {int(n) for n in MARKER.findall(piece.prose)} == set(numbers), piece.slug
        assert 2 <= len(piece.prose.split("\n\n")) <= 4


def test_seed_demo_builds_the_public_paper(runner, client, desk):
    before = clock.utcnow().date()
    result = seed(runner)
    assert "demo: 60 on air" in result.stdout and "demo-private:" in result.stdout
    index = client.get("/api/v1").get_json()
    assert index["paper"] == "demo" and index["nameplate"] == "The Demo Desk"
    assert index["motto"] and index["description"]
    assert index["endpoints"]["subscribe"].endswith("/api/v1/subscribers")

    stories = client.get("/api/v1/stories?limit=200").get_json()["stories"]
    assert len(stories) == _on_air("demo") == 60
    days = {s["on_air_at"][:10] for s in stories}
    assert len(days) >= 10
    assert max(days) in {before.isoformat(), clock.utcnow().date().isoformat()}
    assert all(s["on_air_at"] <= clock.rfc3339(clock.utcnow()) for s in stories)

    paper = _paper("demo")
    assert (paper.is_public, paper.index_style, paper.subscribe_path) == (
        True, "levels", "subscribers")
    sections = db.session.scalars(select(Section.name).where(Section.paper_id == paper.id)
                                  .order_by(Section.position)).all()
    assert sections == ["World", "Politics", "Business", "Science", "Culture", "Sport"]
    assert {s["section"] for s in stories} == set(sections)
    personas = db.session.scalars(select(Persona).where(Persona.paper_id == paper.id)).all()
    assert 4 <= len(personas) <= 6
    assert all(p.active and p.title and p.beat and p.bio for p in personas)
    editions = db.session.scalars(select(Edition).where(Edition.paper_id == paper.id)).all()
    assert 3 <= len(editions) <= 4
    assert all(before - timedelta(days=7) <= e.day < clock.utcnow().date() for e in editions)
    images = db.session.scalar(select(func.count(Piece.id)).where(
        Piece.paper_id == paper.id, Piece.image.is_not(None)))
    assert images >= 3


def test_drafts_stay_off_the_public_lane(runner, client, desk):
    seed(runner)
    drafts = db.session.scalars(select(Piece).join(Paper).where(
        Paper.slug == "demo", Piece.on_air.is_(False))).all()
    assert len(drafts) >= 2
    public_ids = {s["id"] for s in client.get("/api/v1/stories?limit=200").get_json()["stories"]}
    for draft in drafts:
        assert str(draft.id) not in public_ids
        assert client.get(f"/api/v1/stories/{draft.id}").status_code == 404


def test_private_paper_is_404_on_its_host(runner, client, desk):
    seed(runner)
    private = _paper("demo-private")
    assert (private.is_public, private.index_style, private.subscribe_path) == (
        False, "keyed", "subscribe")
    host = "http://demo-private.localhost"
    for path in ("/api/v1", "/api/v1/stories", "/api/v1/receipt-keys"):
        assert client.get(path, base_url=host).status_code == 404
    key = desk.key(private, "read")
    opened = client.get("/api/v1/stories?limit=200", base_url=host,
                        headers=auth(key))
    assert opened.status_code == 200
    assert sum(1 for s in opened.get_json()["stories"] if s.get("on_air", True)) >= 20


def test_every_marker_has_its_cited_fact(runner, client, desk):
    seed(runner)
    _check_markers("demo")
    _check_markers("demo-private")
    for row in client.get("/api/v1/stories?limit=12").get_json()["stories"]:
        story = client.get(f"/api/v1/stories/{row['id']}").get_json()
        numbers = {f["n"] for f in story["cited_facts"]}
        assert {int(n) for n in MARKER.findall(story["prose"])} == numbers
        assert all(f["statement"] and f["source"] and f["instrument"] and f["claim_key"]
                   for f in story["cited_facts"])


def test_every_seeded_receipt_verifies(runner, client, desk):
    seed(runner)
    assert _check_receipts(client, "demo", "http://localhost") == 63
    key = desk.key(_paper("demo-private"), "read")
    assert _check_receipts(client, "demo-private", "http://demo-private.localhost",
                           auth(key)) == 27


def test_same_seed_writes_the_same_text(runner, desk):
    def texts():
        return db.session.execute(select(Piece.slug, Piece.headline, Piece.prose).join(Paper)
                                  .where(Paper.slug == "demo").order_by(Piece.id)).all()

    seed(runner)
    first = texts()
    seed(runner, "--reset")
    assert texts() == first
    seed(runner, "--reset", "--seed", "2")
    assert texts() != first


def test_if_empty_is_idempotent(runner, desk):
    seed(runner, "--if-empty")
    ids = db.session.scalars(select(Piece.id).order_by(Piece.id)).all()
    again = seed(runner, "--if-empty")
    assert "left as it is" in again.stdout
    assert db.session.scalars(select(Piece.id).order_by(Piece.id)).all() == ids
    assert db.session.scalar(select(func.count(Paper.id))) == 2


def test_existing_paper_needs_reset(runner, client, desk):
    seed(runner)
    refused = runner.invoke(args=["seed-demo"])
    assert refused.exit_code == 1
    assert "already exists" in refused.stderr and "--reset" in refused.stderr
    assert "Traceback" not in refused.output
    key = desk.key(_paper("demo"), "admin")
    seed(runner, "--reset", "--pieces", "45")
    assert _on_air("demo") == 45 and _on_air("demo-private") == 24
    assert db.session.scalar(select(func.count(Paper.id))) == 2
    # The reset took the old paper's keys with it.
    assert client.get("/api/v1", headers=auth(key)).status_code == 401


@pytest.mark.slow
def test_bulk_path_gives_exactly_n_signed_pieces_and_the_orm_files_after(runner, client, desk):
    result = seed(runner, "--pieces", "2000")
    assert "demo: 2,000 on air" in result.stdout
    assert _on_air("demo") == 2000
    assert _check_receipts(client, "demo", "http://localhost") == 2003
    _check_markers("demo")
    days = db.session.scalar(select(func.count(func.distinct(Piece.on_air_day))).join(Paper)
                             .where(Paper.slug == "demo"))
    assert days >= 300
    highest = db.session.scalar(select(func.max(Piece.id)))
    # Sequences moved past the explicit ids (PostgreSQL): the ORM files and signs a new piece.
    piece = desk.piece(_paper("demo"), "Filed after the seed", section="Science",
                       byline="Theo Lumen", on_air_at=clock.utcnow())
    assert piece.id > highest
    assert client.get(f"/api/v1/stories/{piece.id}").status_code == 200
    key = desk.key(_paper("demo"), "admin")
    assert key.startswith("desk_")


def test_the_subscribers_option_seeds_that_many(runner, desk):
    result = seed(runner, "--subscribers", "5", "--pieces", "48")
    assert "demo: 5 confirmed subscribers (mixed), no email sent" in result.stdout
    assert _on_air("demo") == 48


def test_bad_options_exit_non_zero(runner, desk):
    for args in (["--pieces", "-1"], ["--pieces", "many"], ["--paper", "Not A Slug"],
                 ["--paper", "x" * 60], ["--if-empty", "--reset"]):
        result = runner.invoke(args=["seed-demo", *args])
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output
    assert db.session.scalar(select(func.count(Paper.id))) == 0


def test_seed_another_slug(runner, client, desk):
    seed(runner, "--paper", "gazette", "--pieces", "40")
    assert {p for p in db.session.scalars(select(Paper.slug))} == {"gazette", "gazette-private"}
    body = client.get("/api/v1/stories", base_url="http://gazette.localhost").get_json()
    assert body["count"] == 40


def test_run_info_prints_urls_and_a_working_admin_key(runner, client, desk):
    seed(runner)
    result = runner.invoke(args=["run-info", "--port", "5123"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for path in ("/api/v1", "/api/v1/stories", "/api/v1/sections", "/api/v1/days",
                 "/api/v1/search?q=", "/api/v1/front", "/api/v1/cast", "/api/v1/posts",
                 "/api/v1/masthead", "/api/v1/openapi.json", "/api/v1/receipt-keys"):
        assert f"http://127.0.0.1:5123{path}" in out
    story_id = re.search(r"http://127\.0\.0\.1:5123/api/v1/stories/(\d+)\s", out).group(1)
    assert client.get(f"/api/v1/stories/{story_id}").status_code == 200
    key = out.strip().splitlines()[-1]
    assert key.startswith("desk_")
    response = client.get("/api/v1/stories?limit=200", headers=auth(key))
    assert response.status_code == 200
    assert any(s.get("on_air") is False for s in response.get_json()["stories"])
    listed = runner.invoke(args=["keys", "list", "--paper", "demo"])
    assert "make run" in listed.stdout and "admin" in listed.stdout


def test_run_info_without_the_paper_fails_cleanly(runner):
    result = runner.invoke(args=["run-info"])
    assert result.exit_code == 1
    assert "seed-demo" in result.stderr and "Traceback" not in result.output


def test_sealing_processes_write_the_same_pieces_on_every_run(runner, client, desk, app):
    """The same seed writes the same rows whether the pieces are hashed and signed (and the
    edition videos made) in this process or in two of their own (`--seal-workers`, two chunks
    here): same slugs, text, bases and content hashes, in the same order, every receipt
    verifying, the same videos."""
    def rows():
        return db.session.execute(
            select(Piece.id, Piece.slug, Piece.headline, Piece.prose, Piece.image, Piece.content_hash,
                   PieceRevision.basis, PieceRevision.content_hash, PieceRevision.kid)
            .join(PieceRevision, PieceRevision.piece_id == Piece.id).join(Paper)
            .where(Paper.slug == "demo").order_by(Piece.id)).all()

    def editions():
        return db.session.execute(
            select(Edition.day, Edition.video_url, Edition.length_bytes, Edition.poster_url,
                   Edition.captions_url, Edition.transcript).join(Paper)
            .where(Paper.slug == "demo").order_by(Edition.id)).all()

    seed(runner, "--pieces", "700", "--seal-workers", "0")
    first, first_editions = rows(), editions()
    assert len(first) == 703 and all(row[5] == row[7] for row in first)
    # Drawn and encoded again, not found in the instance folder: the videos are made in the
    # processes this time.
    shutil.rmtree(Path(app.instance_path) / "media")
    seed(runner, "--reset", "--pieces", "700", "--seal-workers", "2")
    again = rows()
    # Only the signing key (made anew for the new paper) differs between the runs.
    assert [row[:8] for row in again] == [row[:8] for row in first]
    assert _check_receipts(client, "demo", "http://localhost") == 703
    # The edition videos, made in processes of their own this time, are the same files.
    assert editions() == first_editions and len(first_editions) == 4


def test_a_sealing_process_that_dies_fails_the_command_cleanly(runner, desk, tmp_path, monkeypatch):
    # Every new Python process exits at start-up from here on: so do the sealing processes
    # (multiprocessing's resource tracker, started first, is not one of them).
    resource_tracker.ensure_running()
    (tmp_path / "sitecustomize.py").write_text("raise SystemExit(3)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    result = runner.invoke(args=["seed-demo", "--pieces", "40", "--seal-workers", "1"])
    assert result.exit_code == 1
    assert "demo: sealing pieces 1-43: a seeding process stopped" in result.stderr
    assert "nothing was written" in result.stderr
    assert "Traceback" not in result.output
    assert db.session.scalar(select(func.count(Paper.id))) == 0
