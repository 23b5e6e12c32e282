"""The data migrations, run for real: the suite's database is taken down to revision 0007
(alembic downgrade), rows are written the way the code of that time wrote them, and `flask
init-db` (the CLI operators run) brings it back to head. Then the rows are read through HTTP.

- 0009 seals the receipt signing seeds under the instance secret (services/newsroom/seeds.py);
- 0010 rewrites subscriber addresses to normalize_email's form (IDNA domains) and merges the
  rows of one paper that collapse to one address (rule in the migration's docstring).

Each test leaves the database at head (the fixture upgrades again whatever happens).
"""
from __future__ import annotations

import base64
from datetime import timedelta

import pytest
from flask_migrate import downgrade, upgrade
from sqlalchemy import insert, select, text

from extensions import db
from models import AlertDelivery, SigningKey, Subscriber
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.test_proof import FILING, fetch_proof, holds, published_keys

T1, T2, T3 = T0 + timedelta(days=1), T0 + timedelta(days=2), T0 + timedelta(days=3)


@pytest.fixture
def down_to(app, desk):
    """`down_to("0007")`: the suite's database down to that revision (alembic downgrade, each
    step's downgrade run); back at head after the test, whatever happens."""

    def down(target: str) -> None:
        # The test's session must hold no transaction: DDL on PostgreSQL waits for its locks.
        db.session.remove()
        downgrade(revision=target)
        assert revision() == target

    yield down
    db.session.remove()
    upgrade()


def revision() -> str:
    version = db.session.scalar(text("SELECT version_num FROM alembic_version"))
    db.session.rollback()
    return version


def init_db(runner) -> None:
    db.session.remove()
    result = runner.invoke(args=["init-db"])
    assert result.exit_code == 0, result.output


# ----------------------------------------------------------------------------- 0009


def test_0009_seals_the_seeds_written_in_the_clear_and_receipts_keep_verifying(client, runner, desk,
                                                                                down_to):
    paper = desk.paper("demo")
    admin, read = desk.key(paper, "admin"), desk.key(paper, "read")
    before = published_keys(client)
    down_to("0007")  # 0009's downgrade opens the seed again
    stored = db.session.scalar(select(SigningKey.private_seed))
    db.session.rollback()
    # What the code before 0009 wrote: the 32-byte seed, plain base64. It still signs.
    assert not stored.startswith("v1:") and len(base64.b64decode(stored)) == 32
    filed = client.post("/api/v1/stories", json=FILING, headers=auth(admin))
    assert filed.status_code == 201
    init_db(runner)
    assert revision() != "0007"
    sealed = db.session.scalar(select(SigningKey.private_seed))
    db.session.rollback()
    assert sealed.startswith("v1:") and stored not in sealed
    # Same key, same public half; the receipt made before and one made after both verify.
    assert published_keys(client) == before
    assert holds(fetch_proof(client, read, filed.get_json()["id"]), before)
    again = client.post("/api/v1/stories", json=FILING, headers=auth(admin))
    assert again.status_code == 201
    assert holds(fetch_proof(client, read, again.get_json()["id"]), before)


# ----------------------------------------------------------------------------- 0010


def _subscriber(paper_id: int, email, *, created, confirmed=None, unsubscribed=None, **fields) -> int:
    # A Core INSERT names only these columns: the model may have columns added after 0007.
    return db.session.execute(insert(Subscriber.__table__).values(
        paper_id=paper_id, email=email, created_at=created, confirmed_at=confirmed,
        unsubscribed_at=unsubscribed, **fields).returning(Subscriber.__table__.c.id)).scalar_one()


def test_0010_rewrites_unicode_domains_and_merges_rows_that_collapse(client, runner, desk, down_to):
    demo, other = desk.paper("demo"), desk.paper("other")
    admin, read = desk.key(demo, "admin"), desk.key(demo, "read")
    paper, other_id = demo.id, other.id  # the session (and its objects) goes with the downgrade
    down_to("0007")
    ids = {
        # The old confirmed row wins over a newer unconfirmed spelling of the same mailbox.
        "ann_old": _subscriber(paper, "ann@bücher.example", created=T0, confirmed=T1, last_sent_at=T2),
        "ann_new": _subscriber(paper, "ann@xn--bcher-kva.example", created=T2,
                               webhook_url="https://hooks.example.com/ann", webhook_secret="whsec_ann"),
        # A confirmed newer row wins over an older unconfirmed one: no confirmed subscription lost.
        "cy_old": _subscriber(paper, "cy@müller.example", created=T0),
        "cy_new": _subscriber(paper, "cy@xn--mller-kva.example", created=T1, confirmed=T2),
        # A live subscription wins over an unsubscribed one confirmed earlier; a bounce stays.
        "dee_gone": _subscriber(paper, "dee@café.example", created=T0, confirmed=T0, unsubscribed=T1,
                                suppressed_at=T1, suppressed_reason="550 no such user", bounces=1),
        "dee_live": _subscriber(paper, "dee@xn--caf-dma.example", created=T1, confirmed=T2),
        # Alone: only rewritten.
        "bob": _subscriber(paper, "bob@café.example", created=T0),
        "eve": _subscriber(paper, "eve@example.com", created=T0, confirmed=T1),
        # Another paper's row is another paper's: never merged across papers.
        "ann_other": _subscriber(other_id, "ann@bücher.example", created=T0, confirmed=T1),
    }
    db.session.add(AlertDelivery(subscriber_id=ids["ann_new"], period="2026-11-20", window_start=T0,
                                 window_end=T1, created_at=T1))
    db.session.commit()

    init_db(runner)

    rows = {r["email"]: r for r in client.get("/api/v1/subscribers", headers=auth(admin)).get_json()["subscribers"]}
    assert set(rows) == {"ann@xn--bcher-kva.example", "cy@xn--mller-kva.example", "dee@xn--caf-dma.example",
                         "bob@xn--caf-dma.example", "eve@example.com"}
    kept = {row.email: row for row in db.session.scalars(select(Subscriber).where(Subscriber.paper_id == paper))}
    assert kept["ann@xn--bcher-kva.example"].id == ids["ann_old"]
    assert kept["cy@xn--mller-kva.example"].id == ids["cy_new"]
    assert kept["dee@xn--caf-dma.example"].id == ids["dee_live"]
    assert kept["bob@xn--caf-dma.example"].id == ids["bob"]
    ann = rows["ann@xn--bcher-kva.example"]
    assert ann["confirmed_at"] is not None and ann["last_sent_at"] is not None
    # The removed row's webhook carried over, secret and all; its deliveries went with it.
    assert (ann["webhook"], ann["webhook_secret"]) == ("https://hooks.example.com/ann", "whsec_ann")
    assert db.session.scalar(select(AlertDelivery.id)) is None
    # The hard bounce of the mailbox stays in force on the row kept.
    dee = rows["dee@xn--caf-dma.example"]
    assert dee["suppressed_reason"] == "550 no such user" and dee["bounces"] == 1
    assert rows["cy@xn--mller-kva.example"]["confirmed_at"] is not None
    others = db.session.scalars(select(Subscriber).where(Subscriber.paper_id == other_id)).all()
    assert [(r.id, r.email) for r in others] == [(ids["ann_other"], "ann@xn--bcher-kva.example")]
    db.session.rollback()
    assert client.get("/api/v1/subscribers", headers=auth(read)).get_json() == {
        "count": 5, "confirmed": 4}


def test_0010_leaves_an_address_it_cannot_read_and_changes_nothing_twice(client, runner, desk, down_to):
    paper = desk.paper("demo").id
    down_to("0007")
    odd = "x" * 70 + "@example.com"  # a local part over 64: refused today, stored long ago
    kept_id = _subscriber(paper, odd, created=T0, confirmed=T1)
    db.session.commit()
    init_db(runner)
    assert db.session.scalar(select(Subscriber.email).where(Subscriber.id == kept_id)) == odd
    db.session.rollback()
    # At head already: init-db again runs nothing and changes nothing.
    init_db(runner)
    assert db.session.scalar(select(Subscriber.email).where(Subscriber.id == kept_id)) == odd
    db.session.rollback()
