"""Flask extensions, created without an app so models and services import them freely.

A leaf: it imports nothing of the app's (tests/test_layers.py), so any module may import it.
The OpenAPI `api` (flask-smorest) lives in schemas/apidoc.py."""
from __future__ import annotations

from flask import current_app
from flask_caching import Cache
from flask_cors import CORS
from flask_sqlalchemy import SQLAlchemy
from flask_sqlalchemy.session import Session as FlaskSession
from sqlalchemy import MetaData, create_engine
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase

# One naming convention so constraint names match on SQLite and PostgreSQL (alembic needs them).
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


# Session.info key: the engine a public read's session runs on (tenancy.load_paper).
READS = "paperdesk.reads"


class Session(FlaskSession):
    """flask-sqlalchemy's session, which runs everything on the engine its `info[READS]` names
    while that is set (a public read on PostgreSQL: `reads_engine`), else as flask-sqlalchemy
    chooses. An explicit bind (search's `per_value_engine`) still wins."""

    def get_bind(self, mapper=None, clause=None, bind=None, **kwargs):
        if bind is None:
            reads = self.info.get(READS)
            if reads is not None:
                return reads
        return super().get_bind(mapper=mapper, clause=clause, bind=bind, **kwargs)


db = SQLAlchemy(model_class=Base, session_options={"class_": Session})
cors = CORS()


cache = Cache()


def reads_engine() -> Engine | None:
    """On PostgreSQL, the engine public reads run on (tenancy.load_paper): a second engine on
    the app's database, created on first use in each process, with the app's engine options,
    every connection in autocommit from its start. Under READ COMMITTED each statement sees its
    own snapshot in a transaction or not, so a read needs none, and autocommit saves the BEGIN
    and ROLLBACK round trips. Switching one of the app's connections to autocommit for the
    request and back as it returned to the pool (SQLAlchemy's `isolation_level` execution
    option) cost a cold read as many instructions as psycopg's whole execution of its statement;
    here the switch is made once per connection. None elsewhere (SQLite: the app's engine)."""
    engine = db.engine
    if engine.dialect.name != "postgresql":
        return None
    made = current_app.extensions.get("paperdesk.reads_engine")
    if made is None:
        options = current_app.config.get("SQLALCHEMY_ENGINE_OPTIONS") or {}
        # No reset as a connection returns to the pool: in autocommit there is no transaction
        # to roll back (the reset was a second, empty rollback through psycopg per request).
        made = create_engine(engine.url, **{**options, "isolation_level": "AUTOCOMMIT",
                                            "pool_reset_on_return": None})
        current_app.extensions["paperdesk.reads_engine"] = made
    return made


def per_value_engine() -> Engine:
    """The engine for reads whose best plan depends on their values (search: a common term is
    best read in on-air order, a rare one from the text index). On PostgreSQL, a second engine
    on the app's database, created on first use in each process, with the app's engine options
    but server setting `plan_cache_mode=force_custom_plan`, so every execution is planned for
    its values (the app's own connections plan each prepared statement once:
    config.postgres_engine_options; PostgreSQL's own choice, `auto`, settles on one plan after
    five executions, which may be the rare term's for every common one), and autocommit (one
    read statement at a time, no BEGIN or ROLLBACK). Elsewhere, the app's engine."""
    engine = db.engine
    if engine.dialect.name != "postgresql":
        return engine
    made = current_app.extensions.get("paperdesk.per_value_engine")
    if made is None:
        options = dict(current_app.config.get("SQLALCHEMY_ENGINE_OPTIONS") or {})
        connect_args = dict(options.get("connect_args") or {})
        if "plan_cache_mode" in connect_args.get("options", ""):
            # libpq's startup options: a setting given twice takes its last value. (Without
            # one, as behind a pooler that refuses `options`, the server's setting serves both.)
            connect_args["options"] += " -c plan_cache_mode=force_custom_plan"
        if "pool_size" in options:
            options["pool_size"] = 1  # a sync worker runs one search at a time
        made = create_engine(engine.url, **{**options, "connect_args": connect_args,
                                            "isolation_level": "AUTOCOMMIT"})
        current_app.extensions["paperdesk.per_value_engine"] = made
    return made
