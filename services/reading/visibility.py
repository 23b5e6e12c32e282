"""Which pieces the public sees: the one predicate every public surface uses (docs/API.md
"Scheduled airing").

A piece is public when it is on air and its `on_air_at` has come: `on_air AND on_air_at <=
now`. A piece put on air with a future `on_air_at` is scheduled; it appears everywhere at that
instant without any job running, because every public query compares with the clock.

`now` is one instant per request (`request_now`): the cache key and ETag of a public answer
(web/caching.py) and every query behind it see the same clock, so an answer is never stored
under a key that says a scheduled piece has not aired while its body shows it (or the other
way round). The web layer provides that instant (`use_clock`, called by web/caching.py: a
service never reads the request); without it, or outside a request (CLI, worker), it is the
clock at each use.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import and_, bindparam
from sqlalchemy.sql.elements import ColumnElement

from models import Piece
from models.clock import utcnow
from models.types import UTCDateTime

_clock: Callable[[], datetime] = utcnow


def use_clock(clock: Callable[[], datetime]) -> None:
    """Judge visibility by `clock()` (aware UTC) from now on: the web layer passes one that
    answers one instant per request and the clock outside requests."""
    global _clock
    _clock = clock


def request_now() -> datetime:
    """The instant public visibility is judged at (aware UTC, whole seconds): one per request
    once the web layer has called `use_clock`, else the clock."""
    return _clock()


# Evaluated at each execution (`callable_`), so statements built once at import stay correct.
# One shared object: several uses in one statement are one parameter.
AIR_NOW = bindparam("air_now", callable_=request_now, type_=UTCDateTime())


def on_air() -> ColumnElement[bool]:
    """SQL: `pieces.on_air AND pieces.on_air_at <= now`, the public predicate. Use it in every
    public query (and in joins' ON clauses) instead of testing `Piece.on_air` alone."""
    return and_(Piece.on_air.is_(True), Piece.on_air_at <= AIR_NOW)


def on_air_sql(alias: str = "") -> str:
    """The same predicate as text for raw SQLite statements (services/reading/search.py):
    `p.on_air = 1 AND p.on_air_at <= :air_now` for alias `p`; bind AIR_NOW to the statement
    with `text(...).bindparams(AIR_NOW)`."""
    prefix = f"{alias}." if alias else ""
    return f"{prefix}on_air = 1 AND {prefix}on_air_at <= :air_now"


def is_public(piece, now: datetime | None = None) -> bool:
    """The predicate for one loaded piece (or row with `on_air`, `on_air_at`)."""
    at = piece.on_air_at
    return bool(piece.on_air) and at is not None and at <= (now or request_now())


def air_at(piece, now: datetime | None = None) -> datetime | None:
    """The scheduled instant of a piece on air whose instant has not come; None otherwise
    (a draft, or a piece already public). Keyed reads show it as `air_at`."""
    at = piece.on_air_at
    if piece.on_air and at is not None and at > (now or request_now()):
        return at
    return None


def passed(schedule: list | tuple | None, now: datetime | None = None) -> int:
    """How many instants of a paper's `air_schedule` (epoch seconds, ascending) have come by
    `now`: 0 for none. web/caching.py puts it into every key and ETag of the paper's answers."""
    if not schedule:
        return 0
    return bisect_right(schedule, (now or request_now()).timestamp())
