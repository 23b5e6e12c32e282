"""SQLite: the app never creates its database. A missing file (an operator moved the live one)
is a 503 while it lasts and nothing is written anywhere else; when the file is back, the app
serves it with every write it had acknowledged. `flask init-db` alone creates the file."""
from __future__ import annotations

import pytest
from sqlalchemy import func, select

import config
from extensions import db
from models import PieceRevision
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import Desk


@pytest.fixture
def own_file(app, make_app, runner, tmp_path):
    if app.backend != "sqlite":
        pytest.skip("a SQLite file")
    path = tmp_path / "data" / "paper.db"
    built = make_app(SQLALCHEMY_DATABASE_URI=f"sqlite:///{path}", CACHE_TYPE="NullCache",
                     CACHE_NO_NULL_WARNING=True)
    return built, path


def test_the_app_opens_an_existing_file_only_and_init_db_makes_it(own_file):
    built, path = own_file
    assert "mode=rw" in built.config["SQLALCHEMY_DATABASE_URI"]
    assert config.sqlite_file(built.config["SQLALCHEMY_DATABASE_URI"], built.instance_path) == path
    # Before init-db: a 503 problem, and no file appears.
    response = built.test_client().get("/api/v1/stories")
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert not path.exists()
    result = built.test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 0, result.output
    assert path.exists()


def test_a_moved_file_is_a_503_never_a_new_database_and_nothing_is_lost(own_file):
    built, path = own_file
    assert built.test_cli_runner().invoke(args=["init-db"]).exit_code == 0
    with built.app_context():
        desk = Desk(built)
        paper = desk.paper("demo")
        piece_id = desk.piece(paper, "Filed before the move").id
        admin = desk.key(paper, "admin")
        db.session.remove()
        db.engine.dispose()  # the next request opens a fresh connection, as a new worker does
    client = built.test_client()
    revise = {"headline": "Revised before the move"}
    assert client.patch(f"/api/v1/stories/{piece_id}", json=revise, headers=auth(admin)).status_code == 200
    with built.app_context():
        db.engine.dispose()
    moved = path.with_name("moved.db")
    path.rename(moved)
    try:
        for _ in range(3):
            down = client.patch(f"/api/v1/stories/{piece_id}", json={"headline": "During"},
                                headers=auth(admin))
            assert down.status_code == 503, down.get_data(as_text=True)
            assert down.mimetype == "application/problem+json"
            assert client.get("/api/v1/stories").status_code == 503
        assert not path.exists(), "the app made a new, empty database in the file's place"
    finally:
        moved.rename(path)
    back = client.get(f"/api/v1/stories/{piece_id}", headers=auth(admin))
    assert back.status_code == 200 and back.get_json()["headline"] == "Revised before the move"
    with built.app_context():
        assert db.session.scalar(select(func.count()).select_from(PieceRevision)) == 2
