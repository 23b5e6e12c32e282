"""The change feed as the one record of a public change, and its consumers.

A public change of a piece (aired, revised while on air, unaired) is written once, as a
`PieceChange` row in the change's own transaction (services/newsroom/filing.py). Everything else
that follows from it is derived here, in the worker (`flask drain-outbox`), never on the write
path: each consumer in CONSUMERS keeps its own position per paper (`ChangeCursor`)
and is handed the changes after it, in the feed's order ((`at`, `seq`), only those with
`at <= now`, so a scheduled airing reaches consumers at its instant and a cancelled one, whose
row is deleted before its instant, never does).

Exactly once per consumer: a consumer's handler writes its own rows (content webhook messages,
log entries, activities) and the cursor moves in the same transaction, so a crash either keeps
both or neither. A handler must not call out (it writes rows that a sender posts later), except
consumers marked `after_commit` (CDN purge), which are called once the move is committed:
at most once.

Several workers share the consumers with leases (`leased_until`), like the outbox tables
(services/delivery/claims.py): a cursor another worker holds is skipped, not waited for.

Why per paper: changes of one paper are serialised by `filing.lock_paper`, and each takes its
`at` after the lock, so a change commits after every change of that paper with a smaller
(`at`, `seq`): a cursor that has seen a change can never pass one not yet committed. Across
papers no such order holds, hence one cursor per (consumer, paper).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update

from extensions import db
from models import ChangeCursor, Paper, PieceChange
from services.delivery import content_webhooks, corrections, purge
from services.delivery.federation import deliveries, pings
from services.reading import changes as changes_feed
from services.reading.changes import EPOCH
from services.transparency import store as transparency_log

log = logging.getLogger("paperdesk.change_stream")

BATCH = 200          # changes handed to one consumer per paper per pass, at most
LEASE = timedelta(seconds=60)


@dataclass(frozen=True)
class Consumer:
    """A consumer of the change feed: `name` (its cursor's key, at most 40 characters) and
    `handle(paper, changes, now)`, given a paper and a list of its `PieceChange` rows in feed
    order. Unless `after_commit`, `handle` runs in the transaction that moves the cursor and
    may only flush; with `after_commit` it runs after that commit (best effort, at most once)."""

    name: str
    handle: Callable[[Paper, list[PieceChange], datetime], None]
    after_commit: bool = False


# Every consumer, in the order a pass runs them. A consumer added to a running deployment starts
# at the beginning of each paper's feed unless its migration places its cursors.
CONSUMERS: tuple[Consumer, ...] = (
    Consumer("content-webhooks", content_webhooks.on_changes),
    Consumer("cdn-purge", purge.on_changes, after_commit=True),
    Consumer("activitypub", deliveries.on_changes),
    Consumer("pings", pings.on_changes),
    Consumer(transparency_log.CONSUMER, transparency_log.on_changes),
    Consumer(corrections.CONSUMER, corrections.on_changes),
)


@dataclass
class Report:
    """What one pass did: `handled[name]` changes per consumer, `failed` consumer/paper pairs
    (logged; their cursor did not move and the next pass retries them)."""

    handled: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)


def _claim(name: str, paper_id: int, now: datetime) -> ChangeCursor | None:
    """Lease the cursor of (`name`, paper) until now + LEASE; None when another worker holds
    it. Creates the row (at the beginning of the feed) when the paper has none yet."""
    cursor = db.session.get(ChangeCursor, (name, paper_id))
    if cursor is None:
        cursor = ChangeCursor(consumer=name, paper_id=paper_id, after_at=EPOCH, after_seq=0,
                              leased_until=now + LEASE)
        db.session.add(cursor)
        try:
            db.session.commit()
        except Exception:  # noqa: BLE001 - another worker made it first: it holds it now
            db.session.rollback()
            return None
        return cursor
    taken = db.session.execute(
        update(ChangeCursor)
        .where(ChangeCursor.consumer == name, ChangeCursor.paper_id == paper_id,
               or_(ChangeCursor.leased_until.is_(None), ChangeCursor.leased_until < now))
        .values(leased_until=now + LEASE).execution_options(synchronize_session=False))
    db.session.commit()
    if taken.rowcount != 1:
        return None
    db.session.refresh(cursor)
    return cursor


def _due(cursor: ChangeCursor, now: datetime, limit: int) -> list[PieceChange]:
    return list(db.session.scalars(
        select(PieceChange).where(
            PieceChange.paper_id == cursor.paper_id, PieceChange.at <= now,
            or_(PieceChange.at > cursor.after_at,
                and_(PieceChange.at == cursor.after_at, PieceChange.seq > cursor.after_seq)))
        .order_by(PieceChange.at, PieceChange.seq).limit(limit)))


def _pending_papers(name: str, now: datetime) -> list[int]:
    """Ids of papers with changes due that `name` has not handled (one statement)."""
    cursor = select(ChangeCursor).where(ChangeCursor.consumer == name).subquery()
    rows = db.session.execute(
        select(PieceChange.paper_id).distinct()
        .outerjoin(cursor, cursor.c.paper_id == PieceChange.paper_id)
        .where(PieceChange.at <= now,
               or_(cursor.c.paper_id.is_(None), PieceChange.at > cursor.c.after_at,
                   and_(PieceChange.at == cursor.c.after_at, PieceChange.seq > cursor.c.after_seq)))
    ).scalars().all()
    db.session.rollback()
    return sorted(rows)


def run(consumer: Consumer, now: datetime, *, batch: int = BATCH) -> tuple[int, list[str]]:
    """Hand `consumer` the changes due by `now` (aware UTC) on every paper, up to `batch` per
    paper, committing per paper; returns (changes handled, failures as "consumer/paper id").
    A handler that raises leaves its paper's cursor where it was (rolled back, logged) and
    does not stop the papers after it."""
    handled, failed = 0, []
    for paper_id in _pending_papers(consumer.name, now):
        cursor = _claim(consumer.name, paper_id, now)
        if cursor is None:
            continue
        try:
            changes_feed.settle_writes(paper_id)
            changes = _due(cursor, now, batch)
            paper = db.session.get(Paper, paper_id)
            if changes and paper is not None and not consumer.after_commit:
                consumer.handle(paper, changes, now)
            if changes:
                cursor.after_at, cursor.after_seq = changes[-1].at, changes[-1].seq
            cursor.leased_until = None
            db.session.commit()
        except Exception:  # noqa: BLE001 - one paper's failure must not stop the others
            db.session.rollback()
            log.exception("change consumer %s failed on paper %s", consumer.name, paper_id)
            failed.append(f"{consumer.name}/{paper_id}")
            _release(consumer.name, paper_id)
            continue
        if changes and paper is not None and consumer.after_commit:
            try:
                consumer.handle(paper, changes, now)
            except Exception:  # noqa: BLE001 - best effort by design (see the module)
                log.exception("change consumer %s failed after commit on paper %s", consumer.name, paper_id)
        handled += len(changes)
    return handled, failed


def _release(name: str, paper_id: int) -> None:
    try:
        db.session.execute(update(ChangeCursor).where(
            ChangeCursor.consumer == name, ChangeCursor.paper_id == paper_id).values(leased_until=None))
        db.session.commit()
    except Exception:  # noqa: BLE001 - the lease runs out by itself
        db.session.rollback()


def run_all(now: datetime, *, batch: int = BATCH) -> Report:
    """One pass of every consumer in CONSUMERS (see `run`), in that order."""
    report = Report()
    for consumer in CONSUMERS:
        handled, failed = run(consumer, now, batch=batch)
        report.handled[consumer.name] = handled
        report.failed += failed
    return report
