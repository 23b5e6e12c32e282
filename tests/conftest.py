"""Fixtures: the app on SQLite (always) and PostgreSQL (when TEST_DATABASE_URL is set), a test
client, a CLI runner and `desk`, a small newsroom factory that files through the real services.

Each backend's schema is built once by the real migrations; every test starts from empty tables.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest
from sqlalchemy import text

from app import create_app
from extensions import db
from tests.factories import Desk

BACKENDS = ["sqlite"] + (["postgresql"] if os.environ.get("TEST_DATABASE_URL") else [])


def _database_url(backend: str, tmp_path_factory) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    url = os.environ["TEST_DATABASE_URL"]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


@pytest.fixture(scope="session", params=BACKENDS)
def app(request, tmp_path_factory):
    """One app per backend, schema migrated to head (dropping whatever a previous run left)."""
    url = _database_url(request.param, tmp_path_factory)
    instance = tmp_path_factory.mktemp("instance")
    app = create_app({
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": url,
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_pre_ping": True},
        "RATELIMIT_ENABLED": False,
        "INSTANCE_PATH": str(instance),
        "OUTBOX_DIR": str(instance / "outbox"),
        "WEBHOOK_ALLOW_PRIVATE": True,
        "CACHE_TYPE": "NullCache",
        "CACHE_NO_NULL_WARNING": True,
        # Every request resolves its paper afresh, so statement counts do not depend on what
        # ran before; tests/test_production.py covers the snapshots (on by default).
        "PAPER_SNAPSHOT_SECONDS": 0,
    })
    app.backend = request.param
    with app.app_context():
        if request.param == "postgresql":
            with db.engine.begin() as conn:
                conn.execute(text("DROP SCHEMA public CASCADE"))
                conn.execute(text("CREATE SCHEMA public"))
        from flask_migrate import upgrade

        upgrade()
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


@pytest.fixture(autouse=True)
def _empty_tables(request):
    """Every test starts from empty tables (only for tests that use the app)."""
    if "app" not in request.fixturenames:
        yield
        return
    app = request.getfixturevalue("app")
    yield
    with app.app_context():
        db.session.remove()
        tables = [t.name for t in reversed(db.metadata.sorted_tables)]
        with db.engine.begin() as conn:
            if app.backend == "postgresql":
                conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))
            else:
                for name in tables:
                    conn.execute(text(f"DELETE FROM {name}"))
        app.extensions.pop("paperdesk.openapi", None)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def desk(app):
    """A newsroom factory bound to the app (see tests/factories.py)."""
    with app.app_context():
        yield Desk(app)


@pytest.fixture
def now():
    return datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def pytest_sessionfinish(session, exitstatus):
    """Collect connections some tests' throwaway apps left open, with their ResourceWarning
    silenced: at interpreter exit it would surface as an unraisable error and fail the run."""
    import gc
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
