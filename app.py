"""The Paper Desk application factory.

`create_app()` wires config -> logging -> extensions -> blueprints -> error handlers -> the
request pipeline (web/pipeline.py, every before/after step in order) -> the replay of kept public
answers ahead of Flask (web/replay.py) -> ProxyFix when TRUSTED_PROXIES -> CLI commands. It has no side
effects beyond building the app: the schema is made by `flask init-db` (migrations), never here.
"""
from __future__ import annotations

import os

from flask import Flask, Response
from flask.sessions import SessionInterface
from sqlalchemy import event
from werkzeug.middleware.proxy_fix import ProxyFix

import config
from extensions import cache, db
from schemas.apidoc import api
from services.delivery import purge
from web import errors, pipeline, replay, request_log, security, state, static_assets
from web.jsonio import OrjsonProvider


def create_app(test_config: dict | None = None) -> Flask:
    """Build the app. `test_config` overrides settings read from the environment; without
    SQLALCHEMY_ENGINE_OPTIONS of its own, the engine options are production's for the app's
    final database URL (config.engine_options)."""
    overrides = test_config or {}
    settings = {**config.load(), **overrides}
    if "SQLALCHEMY_ENGINE_OPTIONS" not in overrides:
        # The options of the database the app runs on: config.load read them off DATABASE_URL,
        # which an overriding SQLALCHEMY_DATABASE_URI (the test suite's apps) may not name.
        settings["SQLALCHEMY_ENGINE_OPTIONS"] = config.engine_options(settings["SQLALCHEMY_DATABASE_URI"])
    app = PaperDesk(__name__, instance_path=settings["INSTANCE_PATH"])
    app.config.from_mapping(settings)
    os.makedirs(app.instance_path, exist_ok=True)
    app.config["SECRET_KEY"] = security.secret_key(app.config.get("SECRET_KEY"), app.instance_path)
    _sqlite_file_must_exist(app)
    app.json = OrjsonProvider(app)
    app.session_interface = NoSessions()
    check_sender_settings(app.config)

    request_log.configure(app)
    register_extensions(app)
    register_blueprints(app)
    static_assets.install(app)
    errors.register(app)
    pipeline.install(app)
    replay.install(app)
    trusted = app.config["TRUSTED_PROXIES"]
    if trusted > 0:
        # Outermost, so web/replay.py and Flask see the same client address and scheme. Host is
        # never taken from X-Forwarded-Host: tenancy trusts Host, which the proxy passes.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=trusted, x_proto=trusted)
    register_commands(app)
    state.install(app)
    return app


class PaperDesk(Flask):
    """Flask, remembering which of its hooks and views are plain `def`s. Flask passes the view
    and every hook of every request through `ensure_sync` (its documented place to change how
    async views run), which asks `inspect.iscoroutinefunction` each time: a dozen Python calls
    per function per request, for an answer that never changes. Async functions still go to
    Flask's own wrapping, every time."""

    _PLAIN_MAX = 4096  # per-request functions (`after_this_request`) must not grow it unbounded

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plain: set = set()

    def ensure_sync(self, func):
        """`func` itself when it is a plain function (remembered), else Flask's sync wrapper."""
        try:
            if func in self._plain:
                return func
        except TypeError:  # a method of an unhashable object: asked each time, as Flask does
            return super().ensure_sync(func)
        synced = super().ensure_sync(func)
        if synced is func:
            if len(self._plain) >= self._PLAIN_MAX:
                self._plain.clear()
            self._plain.add(func)
        return synced


class PaperDeskResponse(Response):
    """Flask's response, sent without the copy of its headers werkzeug makes to fix them up
    when there is nothing to fix. werkzeug's `get_wsgi_response` copies every header into a new
    `Headers` (each value checked again) so that it can make a Location absolute, drop a body's
    headers on a 1xx, 204 or 304 and add a missing Content-Length; an answer with none of
    those to do (most: a 200 with its length) is sent from its own headers, the same list."""

    def get_wsgi_response(self, environ):
        """(app_iter, status, headers) as werkzeug's `get_wsgi_response` gives them."""
        status = self.status_code
        if not 100 <= status < 200 and status not in (204, 304):
            length = False
            for name, _value in self.headers:
                lowered = name.lower()
                if lowered == "content-length":
                    length = True
                elif lowered in ("location", "content-location"):
                    break
            else:
                if length:  # werkzeug would change nothing: the same headers, in order
                    return self.get_app_iter(environ), self.status, self.headers.to_wsgi_list()
        return super().get_wsgi_response(environ)


PaperDesk.response_class = PaperDeskResponse


class NoSessions(SessionInterface):
    """No cookie sessions: nothing here keeps state in a cookie (readers are anonymous, desks
    send keys), and Flask's default would build a signing serializer on every request. A view
    that wrote to `flask.session` would get Flask's NullSession error."""

    def open_session(self, app, request):
        return self.make_null_session(app)

    def save_session(self, app, session, response) -> None:
        return None


def check_sender_settings(settings) -> None:
    """Refuse to start on a PUBLIC_BASE_URL or MAIL_FROM that mail could not use: a bad one
    would only show later as dead links or refused mail. Raises ValueError with the reason."""
    from services.delivery.subscriptions import parse_mail_from
    from services.links import PaperOrigins

    PaperOrigins.from_config(settings)
    parse_mail_from(settings.get("MAIL_FROM", ""))


def register_extensions(app: Flask) -> None:
    import models  # noqa: F401  (registers every table on the metadata)

    db.init_app(app)
    _sqlite_write_ahead_log(app)
    cache.init_app(app)
    purge.init_app(app)
    api.init_app(app)
    # Both ways of sending a desk key (docs/API.md "Keys").
    api.spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer",
                                                   "description": "Authorization: Bearer desk_..."})
    api.spec.components.security_scheme("deskKey", {"type": "apiKey", "in": "header",
                                                    "name": "X-Desk-Key",
                                                    "description": "X-Desk-Key: desk_..."})


def _sqlite_file_must_exist(app: Flask) -> None:
    """Open a SQLite file read-write only (`mode=rw`): a missing file is an error (503 while it
    lasts), never a new empty database. sqlite would otherwise create one in its place, e.g.
    when an operator moves the live file, and workers would then write to it and reset the
    old file's WAL. `flask init-db` alone creates the file (commands/database.py)."""
    from sqlalchemy.engine import make_url

    uri = app.config["SQLALCHEMY_DATABASE_URI"]
    path = config.sqlite_file(uri, app.instance_path)
    url = make_url(uri)
    if path is None or url.query.get("uri"):
        return  # another database, in memory, or a SQLite URI the operator wrote out in full
    url = url.set(database=f"file:{path}", query={**url.query, "mode": "rw", "uri": "true"})
    app.config["SQLALCHEMY_DATABASE_URI"] = url.render_as_string(hide_password=False)


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


def register_commands(app: Flask) -> None:
    from commands import COMMANDS

    for command in COMMANDS:
        app.cli.add_command(command)
