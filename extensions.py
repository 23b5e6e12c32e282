"""Flask extensions, created without an app so models and services import them freely.

A leaf: it imports nothing of the app's (tests/test_layers.py), so any module may import it.
The OpenAPI `api` (flask-smorest) lives in schemas/apidoc.py."""
from __future__ import annotations

from flask_caching import Cache
from flask_cors import CORS
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData
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


db = SQLAlchemy(model_class=Base)
migrate = Migrate(render_as_batch=True)
cors = CORS()


cache = Cache()
