"""`flask keys create|list|revoke` through the CLI; the keys they print are tried over HTTP."""
from __future__ import annotations

from sqlalchemy import select, update

from extensions import db
from models import DeskKey
from tests.fixtures.keys import auth


def create(runner, *args):
    result = runner.invoke(args=["keys", "create", *args])
    assert result.exit_code == 0, (result.output, result.exception)
    key = result.stdout.strip().splitlines()[-1]
    assert key.startswith("desk_") and " " not in key
    return key


def fails(runner, *args, code: int = 1, says: str = "") -> str:
    result = runner.invoke(args=list(args))
    assert result.exit_code == code, (args, result.output)
    assert "Traceback" not in result.output and result.stdout == ""
    assert says.lower() in result.stderr.lower(), result.stderr
    return result.stderr


def test_admin_key_authenticates_and_opens_drafts(runner, client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "On air")
    desk.piece(paper, "Still a draft", on_air_at=None)
    key = create(runner, "--paper", "demo", "--kind", "admin", "--label", "ops laptop")
    row = db.session.scalar(select(DeskKey))
    assert row.key_hash != key and key not in (row.prefix, row.label)
    assert key[len("desk_"):].startswith(row.prefix)
    response = client.get("/api/v1/stories", headers=auth(key))
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "private, no-store"
    headlines = {s["headline"] for s in response.get_json()["stories"]}
    assert headlines == {"On air", "Still a draft"}
    public = client.get("/api/v1/stories").get_json()["stories"]
    assert {s["headline"] for s in public} == {"On air"}
    assert client.get("/api/v1/stories", headers=auth(key, "X-Desk-Key")).status_code == 200


def test_revoke_makes_the_key_401(runner, client, desk):
    desk.paper("demo")
    key = create(runner, "--paper", "demo", "--kind", "read")
    prefix = db.session.scalar(select(DeskKey.prefix))
    result = runner.invoke(args=["keys", "revoke", prefix[:6]])
    assert result.exit_code == 0, result.output
    assert f"revoked read key {prefix}" in result.stdout
    response = client.get("/api/v1/stories", headers=auth(key))
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="desk"'
    listed = runner.invoke(args=["keys", "list"]).stdout.splitlines()
    assert listed[0].split() == ["prefix", "paper", "kind", "label", "persona", "capabilities",
                                 "created", "revoked"]
    assert listed[1].split()[-1].endswith("Z")  # the revoked column holds a time now


def test_revoke_accepts_the_whole_key(runner, client, desk):
    desk.paper("demo")
    key = create(runner, "--paper", "demo", "--kind", "admin")
    assert runner.invoke(args=["keys", "revoke", key]).exit_code == 0
    assert client.get("/api/v1", headers=auth(key)).status_code == 401


def test_agent_key_with_persona_and_capabilities(runner, client, desk):
    paper = desk.paper("demo")
    key = create(runner, "--paper", "demo", "--kind", "agent", "--persona", "ada quill",
                 "--capability", "file", "--capability", "revise", "--capability", "file")
    row = db.session.scalar(select(DeskKey))
    assert row.kind == "agent" and row.capabilities == ["file", "revise"]
    assert row.persona_id == desk.persona(paper, "Ada Quill").id
    assert client.get("/api/v1/stories", headers=auth(key)).status_code == 200
    line = runner.invoke(args=["keys", "list", "--paper", "demo"]).stdout.splitlines()[1]
    assert "agent" in line and "Ada Quill" in line and "file,revise" in line


def test_list_shows_each_paper_and_never_the_key(runner, desk):
    desk.paper("demo")
    desk.paper("gazette")
    demo_key = create(runner, "--paper", "demo", "--kind", "read", "--label", "reader one")
    create(runner, "--paper", "gazette", "--kind", "admin")
    everything = runner.invoke(args=["keys", "list"]).stdout
    assert "demo" in everything and "gazette" in everything and "reader one" in everything
    assert demo_key not in everything
    only_demo = runner.invoke(args=["keys", "list", "--paper", "demo"]).stdout.splitlines()
    assert len(only_demo) == 2 and "gazette" not in only_demo[1]
    desk.paper("empty")
    assert "(no keys)" in runner.invoke(args=["keys", "list", "--paper", "empty"]).stdout


def test_bad_inputs_exit_non_zero_with_a_message(runner, desk):
    desk.paper("demo")
    fails(runner, "keys", "create", "--paper", "nope", "--kind", "read", says="no paper 'nope'")
    fails(runner, "keys", "create", "--paper", "demo", "--kind", "owner", code=2, says="owner")
    fails(runner, "keys", "create", "--paper", "demo", code=2, says="--kind")
    fails(runner, "keys", "create", "--paper", "demo", "--kind", "agent", says="--persona")
    fails(runner, "keys", "create", "--paper", "demo", "--kind", "agent", "--persona", "Nobody",
          "--capability", "file", says="no persona 'Nobody'")
    fails(runner, "keys", "create", "--paper", "demo", "--kind", "agent", "--persona", "Ada Quill",
          "--capability", "publish", says="unknown capability publish")
    fails(runner, "keys", "create", "--paper", "demo", "--kind", "read", "--capability", "file",
          says="agent keys only")
    fails(runner, "keys", "create", "--paper", "demo", "--kind", "admin", "--persona", "Ada Quill",
          says="agent keys only")
    fails(runner, "keys", "list", "--paper", "nope", says="no paper")
    fails(runner, "keys", "revoke", "zzzzzzzz", says="no key with prefix")
    fails(runner, "keys", "revoke", "ab", says="at least 4")
    assert db.session.scalar(select(DeskKey.id)) is None


def test_ambiguous_prefix_revokes_nothing(runner, desk):
    desk.paper("demo")
    first = create(runner, "--paper", "demo", "--kind", "read")
    second = create(runner, "--paper", "demo", "--kind", "read")
    # Display prefixes are random; give two of them a common start to make the prefix ambiguous.
    for n, key in enumerate((first, second)):
        db.session.execute(update(DeskKey).where(DeskKey.prefix == key[5:17])
                           .values(prefix=f"same_{n}" + key[11:17]))
    db.session.commit()
    fails(runner, "keys", "revoke", "same_", says="more than one key")
    assert db.session.scalars(select(DeskKey.revoked_at)).all() == [None, None]
    # `_` is a LIKE wildcard in SQL; in a prefix it must match only itself.
    fails(runner, "keys", "revoke", "sam__0", says="no key with prefix")
    assert runner.invoke(args=["keys", "revoke", "same_1"]).exit_code == 0
    assert [r is None for r in db.session.scalars(select(DeskKey.revoked_at)
                                                  .order_by(DeskKey.prefix))] == [True, False]


def test_a_prefix_that_begins_with_a_dash_is_a_prefix(runner, client, desk):
    # Display prefixes are base64url: one in 64 begins with `-`, which a command line would
    # otherwise take for an option ("No such option"), so that key could not be revoked as
    # `keys list` shows it.
    desk.paper("demo")
    key = create(runner, "--paper", "demo", "--kind", "read")
    db.session.execute(update(DeskKey).values(prefix="-" + key[6:17]))
    db.session.commit()
    result = runner.invoke(args=["keys", "revoke", "-" + key[6:11]])
    assert result.exit_code == 0, result.output
    assert f"revoked read key -{key[6:17]}" in result.stdout
    assert db.session.scalar(select(DeskKey.revoked_at)) is not None
