"""Time helpers: the app's one notion of "now" and of RFC 3339 text (docs/API.md "time")."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache


def utcnow() -> datetime:
    """The current time, aware UTC, microseconds dropped (RFC 3339 output stays short)."""
    return datetime.now(timezone.utc).replace(microsecond=0)


def rfc3339_fresh(moment: datetime) -> str:
    """Aware datetime -> RFC 3339 in UTC with a `Z` suffix ('2026-11-01T12:00:00Z'); fractional
    seconds appear only when present. Raises ValueError for a naive datetime. Made afresh each
    call: for a bulk writer of many distinct instants (a sitemap's 50 000), which would only
    evict `rfc3339`'s remembered ones."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime")
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


@lru_cache(maxsize=8192)
def rfc3339(moment: datetime) -> str:
    """`rfc3339_fresh(moment)`, remembered per instant (a bounded LRU): `isoformat` costs over
    a microsecond, and a list writes the same pieces' times on every request. The text is a
    function of the instant alone (equal aware datetimes are one instant, whatever their zone:
    the same UTC text), so a remembered one is never another's; a naive datetime raises and is
    not remembered."""
    return rfc3339_fresh(moment)
