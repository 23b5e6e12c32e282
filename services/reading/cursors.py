"""Opaque paging cursors (docs/API.md "Paging and filters").

A cursor is the keyset position after the last row of a page, signed so that a client can only
hand back what this server gave it. Its text is itsdangerous' URL-safe signed payload (base64url
JSON and an HMAC under SECRET_KEY), salted per list, so a cursor of `/posts` is never read on
`/stories`. The payload binds the paper and the list's filter values: a cursor is valid only for
the same paper, the same list and the same filters it was made for. Anything else (malformed,
tampered, truncated, another paper's, another list's, other filters) is a 400 with
`errors: {"cursor": [...]}`; the page size (`limit`) may change between pages.

Keys are lists of JSON scalars; datetimes travel as RFC 3339 text with microseconds
(`moment`/`parse_moment`).
"""
from __future__ import annotations

from datetime import date, datetime, timezone
from functools import lru_cache

from itsdangerous import BadData, URLSafeSerializer

from services.errors import BadRequest

SALT = "paperdesk.cursor."
# Longer than any cursor this module makes; a longer text is refused before any decoding.
MAX_LENGTH = 1000


def _serializer(secret: str, list_name: str) -> URLSafeSerializer:
    return URLSafeSerializer(secret, salt=SALT + list_name)


def encode(secret: str, list_name: str, paper_id: int, filters: dict, key: list) -> str:
    """The cursor text for the position `key` (a list of JSON scalars: the last row's keyset
    values) on `list_name` of paper `paper_id` with `filters` (a dict of JSON scalars)."""
    return _encode(secret, list_name, paper_id, tuple(filters.items()), tuple(key))


# A pure function of its arguments, and the first pages of a list hand out the same cursor until
# a piece airs: signing one (JSON, zlib, HMAC) cost about as much as building the page's rows.
@lru_cache(maxsize=1024)
def _encode(secret: str, list_name: str, paper_id: int, filters: tuple, key: tuple) -> str:
    return _serializer(secret, list_name).dumps({"p": paper_id, "f": dict(filters), "k": list(key)})


def decode(secret: str, list_name: str, paper_id: int, filters: dict, text: str, size: int) -> list:
    """The keyset position of cursor `text` (a list of `size` JSON scalars). Raises BadRequest
    (400, `errors.cursor`) when it is malformed, tampered with, or was made for another paper,
    another list or other filter values."""
    if len(text) > MAX_LENGTH:
        raise _refused("The cursor is malformed.")
    try:
        payload = _serializer(secret, list_name).loads(text)
    except (BadData, ValueError, UnicodeError):
        raise _refused("The cursor is malformed or was not made for this list.") from None
    if not isinstance(payload, dict) or payload.get("p") != paper_id:
        raise _refused("The cursor was made for another paper.")
    if payload.get("f") != filters:
        raise _refused("The cursor was made for other filter values; keep the filters of the first page.")
    key = payload.get("k")
    if not isinstance(key, list) or len(key) != size:
        raise _refused("The cursor is malformed.")
    return key


def _refused(message: str) -> BadRequest:
    return BadRequest("The cursor cannot be used here.", errors={"cursor": [message]})


def moment(value: datetime | date | None) -> str | None:
    """A keyset timestamp (aware UTC datetime) or day as text for a cursor; None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).isoformat(timespec="microseconds")
    return value.isoformat()


def parse_moment(text: object) -> datetime:
    """The aware datetime of `moment()`'s text. Raises BadRequest as `decode` does when the text
    is not one (a signed cursor always holds one; this guards against our own older formats)."""
    try:
        value = datetime.fromisoformat(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _refused("The cursor is malformed.") from None
    if value.tzinfo is None:
        raise _refused("The cursor is malformed.")
    return value


def parse_day(text: object) -> date:
    """The day of `moment()`'s text for a date. Raises BadRequest as `decode` does."""
    try:
        return date.fromisoformat(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _refused("The cursor is malformed.") from None


def parse_id(value: object) -> int:
    """A keyset id from a cursor. Raises BadRequest as `decode` does when it is no int."""
    if type(value) is not int:
        raise _refused("The cursor is malformed.")
    return value
