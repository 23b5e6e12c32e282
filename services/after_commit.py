"""Side effects that may happen only once the current transaction has committed (the confirm
email of a subscribe): a rolled-back request must send nothing, and a mail must never announce
a row that was not written.

A service calls `defer(fn)` inside the transaction. When the session's outermost transaction
commits, the deferred callables become due; when it rolls back, they are dropped (a savepoint
rolled back inside it drops nothing). The commit point (transaction.py for requests; a CLI
command after its own commit) then calls `run_due()`, which runs each once, in order, outside
any transaction: a callable may read and write, and commits its own bookkeeping. The lists live
on the session (`Session.info`), never in `g`, so they follow the transaction they belong to.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from extensions import db

log = logging.getLogger("paperdesk.after_commit")

_PENDING = "paperdesk.after_commit.pending"
_DUE = "paperdesk.after_commit.due"


def defer(fn: Callable[[], object]) -> None:
    """Run `fn()` (no arguments) after the current transaction of `db.session` commits; never
    if it rolls back."""
    db.session.info.setdefault(_PENDING, []).append(fn)


def run_due() -> int:
    """Run every callable whose transaction has committed; returns how many ran. An exception
    in one is logged and does not stop the others (the data is already committed)."""
    due = db.session.info.pop(_DUE, [])
    for fn in due:
        try:
            fn()
        except Exception:  # noqa: BLE001 - a side effect's failure must not undo the answer
            log.exception("after-commit step %s failed", getattr(fn, "__qualname__", fn))
            db.session.rollback()
    return len(due)


def discard() -> None:
    """Forget everything deferred in this session, pending or due (the request failed)."""
    db.session.info.pop(_PENDING, None)
    db.session.info.pop(_DUE, None)


@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    pending = session.info.pop(_PENDING, None)
    if pending:
        session.info.setdefault(_DUE, []).extend(pending)


@event.listens_for(Session, "after_soft_rollback")
def _rolled_back(session: Session, previous_transaction: SessionTransaction) -> None:
    # Savepoints (begin_nested) end here too; only the outermost transaction owns the list.
    if not previous_transaction.nested and previous_transaction.parent is None:
        session.info.pop(_PENDING, None)
