"""Time helpers: the app's one notion of "now" and of RFC 3339 text (docs/API.md "time")."""
from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    """The current time, aware UTC, microseconds dropped (RFC 3339 output stays short)."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def rfc3339(moment: datetime) -> str:
    """Aware datetime -> RFC 3339 in UTC with a `Z` suffix ('2026-11-01T12:00:00Z'); fractional
    seconds appear only when present. Raises ValueError for a naive datetime."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime")
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
