"""The Paper Desk application factory.

`create_app()` wires config -> extensions -> tenancy and caching hooks -> blueprints -> error
handlers -> CLI commands. It has no side effects beyond building the app: the schema is made by
`flask init-db` (migrations), never here.
"""
from __future__ import annotations

import os

from flask import Flask
from sqlalchemy import event
from werkzeug.middleware.proxy_fix import ProxyFix

import config
import errors
import http_cache
import logging_setup
import security
import tenancy
from extensions import api, cache, cors, db, limiter, migrate
from services.delivery import purge


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app. `test_config` overrides settings read from the environment."""
    settings = {**config.load(), **(test_config or {})}
    app = Flask(__name__, instance_path=settings["INSTANCE_PATH"])
    app.config.from_mapping(settings)
    os.makedirs(app.instance_path, exist_ok=True)
    app.json.sort_keys = False
    trusted = app.config["TRUSTED_PROXIES"]
    if trusted > 0:
        # Host is never taken from X-Forwarded-Host: tenancy trusts Host, which the proxy passes.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=trusted, x_proto=trusted)

    logging_setup.configure(app)  # first: its hooks open and close every request
    register_extensions(app)
    register_blueprints(app)
    errors.register(app)
    security.register(app)
    register_commands(app)
    http_cache.register_store(app)  # last: it must see the view's answer before other hooks
    return app


def register_extensions(app: Flask) -> None:
    import models  # noqa: F401  (registers every table on the metadata)

    db.init_app(app)
    _sqlite_write_ahead_log(app)
    migrate.init_app(app, db, directory=os.path.join(os.path.dirname(__file__), "migrations"))
    cache.init_app(app)
    purge.init_app(app)
    limiter.init_app(app)
    # Order matters: fresh cache state, tenancy sets g.paper and g.key, then the 304 shortcut or
    # the response cache may answer at once.
    app.before_request(http_cache.begin)
    app.before_request(http_cache.answer_from_recent_paper)
    tenancy.register(app)
    http_cache.register(app)
    cors.init_app(
        app,
        resources={
            r"/api/v1*": {"origins": "*"},
            r"/oembed": {"origins": "*"},
            r"/front.json": {"origins": "*"},
        },
        allow_headers=["Content-Type", "If-None-Match"],
        expose_headers=["ETag", "Retry-After", "Location"],
        max_age=600,
        send_wildcard=True,
        vary_header=False,
    )
    api.init_app(app)
    # CONTRACT.md "the document": both ways of sending a desk key.
    api.spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer",
                                                   "description": "Authorization: Bearer desk_..."})
    api.spec.components.security_scheme("deskKey", {"type": "apiKey", "in": "header",
                                                    "name": "X-Desk-Key"})


def _sqlite_write_ahead_log(app: Flask) -> None:
    """On a SQLite file, put every connection in WAL mode (SQLITE_WAL, on by default): readers
    no longer wait for a writer, and a commit appends to the log instead of rewriting pages, at
    the same durability (synchronous stays FULL). `send-alerts` commits once per batch of sent
    messages, and needs this to keep up on SQLite (docs/PERFORMANCE.md)."""
    uri = app.config["SQLALCHEMY_DATABASE_URI"]
    if not app.config["SQLITE_WAL"] or not uri.startswith("sqlite") or "memory" in uri:
        return
    with app.app_context():
        engine = db.engine

    @event.listens_for(engine, "connect")
    def _wal(dbapi_connection, _record) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()


def register_blueprints(app: Flask) -> None:
    from blueprints import API_BLUEPRINTS, PLAIN_BLUEPRINTS

    for bp in API_BLUEPRINTS:
        api.register_blueprint(bp)
    for bp in PLAIN_BLUEPRINTS:
        app.register_blueprint(bp)
    if app.config["BENCH_BARE"]:
        # The benchmark's ceiling: every hook a public GET passes (limiter, request log,
        # security headers), no paper lookup and no database (tenancy.UNSCOPED).
        app.add_url_rule("/bench/bare", "bench_bare", lambda: {"status": "ok"})


def register_commands(app: Flask) -> None:
    from commands import COMMANDS

    for command in COMMANDS:
        app.cli.add_command(command)
