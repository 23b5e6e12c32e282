"""Values derived from a paper's data, kept in the worker for as long as the paper's version
stands (the front's newsroom counts stay flat as the archive grows; docs/PERFORMANCE.md).

Every write moves the paper's version (`Paper.bump`, in SQL), and the version is part of the
key, so a value is never served for data it was not computed from; a commit in this worker
also empties the memo at once, as it does tenancy's snapshots. Bounded: at most MAX_ENTRIES
values per app, oldest dropped first.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TypeVar

from flask import current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.orm import Session

T = TypeVar("T")
MAX_ENTRIES = 512
_KEY = "paperdesk.version_memo"
# app.extensions entries a commit in this worker empties: this memo and tenancy's snapshots.
FORGET_ON_COMMIT = [_KEY]


def per_version(name: str, state: str | None, compute: Callable[[], T]) -> T:
    """`compute()`'s value for a paper at version `state` (`{id}.{version}.{birth}`, as
    tenancy.PaperSnapshot.state writes it), computed at most once per (name, state) in this
    worker; kept in the app's `extensions`. With `state` None, or outside an app context,
    just `compute()`."""
    if state is None or not has_app_context():
        return compute()
    memo: OrderedDict = current_app.extensions.setdefault(_KEY, OrderedDict())
    key = (name, state)
    if key in memo:
        memo.move_to_end(key)  # least recently used goes first, not merely the oldest
        return memo[key]
    value = memo[key] = compute()
    while len(memo) > MAX_ENTRIES:
        memo.popitem(last=False)
    return value


def known(name: str, state: str | None) -> bool:
    """Whether `per_version(name, state, ...)` would answer from what this worker keeps (without
    computing, and without counting as a use); False for `state` None or outside an app
    context."""
    if state is None or not has_app_context():
        return False
    return (name, state) in current_app.extensions.get(_KEY, ())


def paper_state(paper, now) -> str:
    """The version state of a loaded Paper row, as web/caching.py `paper_state` writes it for
    the request's paper: `{id}.{version}.{birth}` (birth: creation time, hex seconds), then
    `.a{n}` once `n` > 0 of its scheduled instants have come by `now` (aware UTC: a request's
    instant, services/reading/visibility.py). Whatever is on air, and so every count of pieces,
    is a function of it."""
    from services.reading import visibility  # visibility imports models; memo stays a leaf

    birth = int(paper.created_at.timestamp()) if paper.created_at else 0
    state = f"{paper.id}.{paper.version}.{birth:x}"
    aired = visibility.passed(paper.air_schedule, now)
    return f"{state}.a{aired}" if aired else state


@event.listens_for(Session, "after_commit")
def _forget(session: Session) -> None:
    # Any commit may have moved a paper's version (Paper.bump) or its visibility.
    if has_app_context():
        for key in FORGET_ON_COMMIT:
            current_app.extensions.pop(key, None)
