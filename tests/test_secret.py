"""SECRET_KEY: never a constant. Unset, each instance generates its own secret once and keeps it;
a known placeholder or a short value refuses to start; links signed with another instance's
secret are refused."""
from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor

import pytest

from app import create_app
from web import security


def build(tmp_path, **config):
    return create_app({"INSTANCE_PATH": str(tmp_path), "TESTING": True,
                       "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.db'}", **config})


def test_an_unset_secret_is_generated_once_per_instance_and_kept(tmp_path, monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    first = build(tmp_path / "a", SECRET_KEY="").config["SECRET_KEY"]
    again = build(tmp_path / "a", SECRET_KEY="").config["SECRET_KEY"]
    other = build(tmp_path / "b", SECRET_KEY="").config["SECRET_KEY"]
    assert first == again and first != other
    assert len(first) >= 64 and first != "dev-only-secret-change-me"
    mode = stat.S_IMODE((tmp_path / "a" / "secret_key").stat().st_mode)
    assert mode == 0o600


def test_processes_starting_at_once_agree_on_one_secret(tmp_path):
    (tmp_path / "inst").mkdir()
    with ThreadPoolExecutor(8) as pool:
        values = set(pool.map(lambda _: security.secret_key("", str(tmp_path / "inst")), range(32)))
    assert len(values) == 1
    assert [p.name for p in (tmp_path / "inst").iterdir()] == ["secret_key"]


@pytest.mark.parametrize("value", ["dev-only-secret-change-me", "change-me-to-64-random-characters",
                                   "changeme", "short"])
def test_a_placeholder_or_short_secret_refuses_to_start(tmp_path, value):
    with pytest.raises(RuntimeError, match="SECRET_KEY"):
        build(tmp_path, SECRET_KEY=value)


def test_a_confirm_link_forged_with_the_old_default_is_refused(client, desk):
    from itsdangerous import URLSafeTimedSerializer
    from sqlalchemy import select

    from extensions import db
    from models import Subscriber

    desk.paper("demo")
    assert client.post("/api/v1/subscribers", json={"email": "r@example.com"}).status_code == 202
    row = db.session.scalars(select(Subscriber)).one()
    # The token format is public (docs/ALERTS.md); only the secret keeps it unforgeable.
    forged = URLSafeTimedSerializer("dev-only-secret-change-me",
                                    salt="paperdesk.subscriber.confirm").dumps(
        [row.paper_id, row.id, row.email])
    assert client.post("/subscribe/confirm", data={"token": forged}).status_code == 400
    db.session.expire_all()
    assert db.session.get(Subscriber, row.id).confirmed_at is None
