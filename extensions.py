"""Flask extensions, created without an app so models and services import them freely."""
from __future__ import annotations

from flask_caching import Cache
from flask_cors import CORS
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_migrate import Migrate
from flask_smorest import Api
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

from schemas.common import ProblemSchema

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
limiter = Limiter(key_func=get_remote_address)
cors = CORS()


class DeskApi(Api):
    """flask-smorest's Api with problem+json documented as the error body. Error *handling* is
    ours (errors.py), so the stock JSON error handler is not installed."""

    ERROR_SCHEMA = ProblemSchema
    DEFAULT_ERROR_RESPONSE_NAME = "Problem"

    def _register_error_handlers(self):
        pass


api = DeskApi()
cache = Cache()
