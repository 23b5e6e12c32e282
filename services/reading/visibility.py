"""Which pieces the public sees: the one predicate every public surface uses (docs/API.md
"Scheduled airing").

A piece is public when it is on air and its `on_air_at` has come: `on_air AND on_air_at <=
now`. A piece put on air with a future `on_air_at` is scheduled; it appears everywhere at that
instant without any job running, because every public query compares with the clock.

`now` is an argument: every function here and every reading service that lists or finds
pieces on air takes the instant it judges at from its caller, and every statement built with
`on_air()` binds it at execution (`at(now)`). A request passes its one instant
(web/caching.py `request_now`), so the cache key and ETag of a public answer and every query
behind it see the same clock and an answer is never stored under a key that says a scheduled
piece has not aired while its body shows it (or the other way round); the CLI and the worker
pass the clock. No module keeps a clock: a statement run without its instant fails ("A value
is required for bind parameter 'air_now'") rather than judging at some other one.
"""
from __future__ import annotations

from bisect import bisect_right
from datetime import datetime

from sqlalchemy import and_, bindparam, func, select
from sqlalchemy.sql.elements import ColumnElement

from models import Piece
from models.types import UTCDateTime

# Bound at each execution (`at(now)`), so statements built once at import stay correct; required,
# so a statement run without an instant fails. One shared object: several uses in one statement
# are one parameter.
AIR_NOW = bindparam("air_now", type_=UTCDateTime())


def at(now: datetime) -> dict:
    """The parameters that bind `on_air()`'s instant to `now` (aware UTC): merge them into the
    parameters of any statement built with it (`{"air_now": now}`)."""
    return {"air_now": now}


def air_days(paper_id):
    """A recursive CTE `air_days(day)` of every `on_air_day` among the paper's pieces on air
    (scheduled ones included: callers keep a day by its airings against AIR_NOW), plus one
    NULL row that ends the walk: it hops the (paper_id, on_air, on_air_day, ...) indexes from
    one day to the next, one seek a day (a loose index scan), where a DISTINCT or GROUP BY
    reads every piece on air. `paper_id`: a value or a bound parameter. Used by the front's
    newsroom counts and the sitemap's day pages."""
    aired = and_(Piece.paper_id == paper_id, Piece.on_air.is_(True))
    first = select(func.min(Piece.on_air_day)).where(aired).scalar_subquery()
    days = select(first.label("day")).cte("air_days", recursive=True)
    following = select(func.min(Piece.on_air_day)).where(aired, Piece.on_air_day > days.c.day)
    return days.union_all(select(following.scalar_subquery()).where(days.c.day.is_not(None)))


def on_air() -> ColumnElement[bool]:
    """SQL: `pieces.on_air AND pieces.on_air_at <= :air_now`, the public predicate. Use it in
    every public query (and in joins' ON clauses) instead of testing `Piece.on_air` alone, and
    run the statement with `at(now)` among its parameters."""
    return and_(Piece.on_air.is_(True), Piece.on_air_at <= AIR_NOW)


def on_air_sql(alias: str = "") -> str:
    """The same predicate as text for raw SQLite statements (services/reading/search.py):
    `p.on_air = 1 AND p.on_air_at <= :air_now` for alias `p`; type it with
    `text(...).bindparams(AIR_NOW)` and run it with `at(now)` among its parameters."""
    prefix = f"{alias}." if alias else ""
    return f"{prefix}on_air = 1 AND {prefix}on_air_at <= :air_now"


def is_public(piece, now: datetime) -> bool:
    """The predicate for one loaded piece (or row with `on_air`, `on_air_at`) at `now`."""
    aired = piece.on_air_at
    return bool(piece.on_air) and aired is not None and aired <= now


def air_at(on_air: bool, on_air_at: datetime | None, now: datetime) -> datetime | None:
    """The scheduled instant of a piece on air (`on_air`, its `on_air_at`) whose instant has
    not come by `now`; None otherwise (a draft, or a piece already public). Keyed reads show it
    as `air_at`. Takes the two values, not the piece: the wire writers have them unpacked from
    a row already (a Core row's attribute lookup by name costs a caught AttributeError)."""
    if on_air and on_air_at is not None and on_air_at > now:
        return on_air_at
    return None


def passed(schedule: list | tuple | None, now: datetime) -> int:
    """How many instants of a paper's `air_schedule` (epoch seconds, ascending) have come by
    `now`: 0 for none. web/caching.py puts it into every key and ETag of the paper's answers."""
    if not schedule:
        return 0
    return bisect_right(schedule, now.timestamp())
