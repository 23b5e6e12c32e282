"""Leases on the outbox tables: how several senders, on one host or many, share a queue of rows
with no global lock (docs/ALERTS.md "Several senders").

Each of the three tables of things that leave the building (`outbox_messages`: confirm mail,
`alert_deliveries`: alert mail, `webhook_deliveries`: webhook POSTs) is claimed the same way:
one statement, `UPDATE t SET <lease> WHERE id IN (SELECT id ... LIMIT n) RETURNING ...`, sets a
lease on up to `n` due rows and names them. On PostgreSQL the inner SELECT is `FOR UPDATE SKIP
LOCKED`: a row another sender is claiming at that instant is skipped, not waited for, and one it
has claimed no longer matches the due condition. On SQLite the UPDATE takes the database's one
write lock before it reads, so two senders cannot both see a row as free. The lease, not a lock
held while sending, keeps a row claimed: results are committed one by one while other messages
are in flight, and a sender killed mid-batch leaves its rows to whoever claims after the lease.

A lease only protects a row while its holder keeps to it: a sender stops handing out claimed
rows `margin` before the lease ends (`Lease.usable`), where `margin` bounds one message's send
time, so no row is still in flight when another sender may take it. That holds while the
senders' clocks agree to well within the margin (NTP does).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update


@dataclass(frozen=True)
class Lease:
    """A claim's terms: rows are held until `until` (the stored lease, compared with other
    senders' clocks) and this sender hands them out only while `time.monotonic()` is below
    `usable_until` (the lease less the margin, on this process's own clock)."""

    until: datetime
    usable_until: float

    @classmethod
    def starting(cls, now: datetime, length: timedelta, margin: timedelta) -> Lease:
        """A lease of `length` from `now`, usable for `length - margin` (at least 1 s)."""
        usable = max(1.0, (length - margin).total_seconds())
        return cls(until=now + length, usable_until=time.monotonic() + usable)

    def usable(self) -> bool:
        """True while a claimed row may still be handed to a sender."""
        return time.monotonic() < self.usable_until


def claim(executor, model, *, due: Sequence, order_by: Sequence, limit: int, lease: dict,
          returning: Sequence) -> list:
    """Lease up to `limit` rows of `model` matching every condition in `due`, first by
    `order_by`, by setting the `lease` column values (e.g. `{"claimed_until": until}`); return
    the `returning` columns of the rows claimed, in `order_by`'s order when `order_by` names
    columns in `returning` (else in no set order). `executor` is the Session or Connection to
    run on; the caller commits (an autocommit connection commits at once).

    An idle poll writes nothing: it first asks whether any row is due (on SQLite a write would
    take the one write lock that web requests need). Raises what the database raises."""
    pick = select(model.id).where(*due).order_by(*order_by).limit(limit)
    if executor.execute(select(pick.exists())).scalar() is not True:
        return []
    if _dialect(executor) == "postgresql":
        pick = pick.with_for_update(skip_locked=True)
    rows = executor.execute(
        update(model).where(model.id.in_(pick.scalar_subquery())).values(**lease)
        .returning(*returning).execution_options(synchronize_session=False)).all()
    # RETURNING comes back in no set order.
    keys = [getattr(column, "key", None) for column in order_by]
    if rows and all(key in rows[0]._fields for key in keys):
        rows.sort(key=lambda row: tuple(getattr(row, key) for key in keys))
    return rows


def release(executor, model, ids: Sequence[int], *, column, until: datetime) -> None:
    """Give claimed rows back at once (their lease column set to NULL), but only those still
    under this claim's lease `until`; the caller commits."""
    if ids:
        executor.execute(update(model).where(model.id.in_(list(ids)), column == until)
                         .values({column.key: None}).execution_options(synchronize_session=False))


def _dialect(executor) -> str:
    bind = executor.get_bind() if hasattr(executor, "get_bind") else executor
    return bind.dialect.name
