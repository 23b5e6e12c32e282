"""The change feed as the one record of a public change, and its consumers.

A public change of a piece (aired, revised while on air, unaired) is written once, as a
`PieceChange` row in the change's own transaction (services/newsroom/filing.py). Everything else
that follows from it is derived here, in the worker (`flask worker`), never on the write
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

Editions are a feed of their own (EDITIONS: one row per published edition, in
(`published_at`, `id`) order, under the same lock), followed the same way: content webhooks'
`edition.published` is derived from it here, not written by the newsroom.

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
from models import ChangeCursor, Edition, Paper, PieceChange
from services.delivery import alerts, content_webhooks, corrections, purge
from services.delivery.federation import deliveries, pings
from services.reading import changes as changes_feed
from services.reading.changes import EPOCH
from services.transparency import store as transparency_log

log = logging.getLogger("paperdesk.change_stream")

BATCH = 200          # changes handed to one consumer per paper per pass, at most
LEASE = timedelta(seconds=60)


@dataclass(frozen=True)
class Feed:
    """A record of public changes a consumer follows: rows of `model` per paper (its
    `paper_id`), in (`at`, `seq`) order, the two named columns. Both are written under the
    paper's writers' lock (filing.lock_paper), with `at` taken after it."""

    model: type
    at: str
    seq: str

    def columns(self):
        """The (`at`, `seq`) columns."""
        return getattr(self.model, self.at), getattr(self.model, self.seq)

    def position(self, row) -> tuple[datetime, int]:
        """Where `row` is in the feed."""
        return getattr(row, self.at), getattr(row, self.seq)


# The change feed of pieces (`GET /api/v1/changes`), and the editions as they are published
# (one row each, never changed after: `edition.published`).
PIECES = Feed(PieceChange, "at", "seq")
EDITIONS = Feed(Edition, "published_at", "id")


@dataclass(frozen=True)
class Consumer:
    """A consumer of a feed (PIECES unless `feed` says otherwise): `name` (its cursor's key,
    at most 40 characters) and `handle(paper, rows, now)`, given a paper and a list of its
    feed rows in feed order. Unless `after_commit`, `handle` runs in the transaction that
    moves the cursor and may only flush; with `after_commit` it runs after that commit (best
    effort, at most once). `before_now`: handed only rows strictly before the pass's `now`
    (not at it), for a handler that works on the half-open window [.., now): a row at `now`
    itself is handed to the next pass rather than passed over."""

    name: str
    handle: Callable[[Paper, list, datetime], None]
    after_commit: bool = False
    feed: Feed = PIECES
    before_now: bool = False

    def due(self, now: datetime):
        """The condition on the feed's `at` of the rows this consumer is handed at `now`."""
        at, _seq = self.feed.columns()
        return at < now if self.before_now else at <= now


# Every consumer, in the order a pass runs them. A consumer added to a running deployment starts
# at the beginning of each paper's feed unless its migration places its cursors.
CONSUMERS: tuple[Consumer, ...] = (
    Consumer("content-webhooks", content_webhooks.on_changes),
    Consumer("cdn-purge", purge.on_changes, after_commit=True),
    Consumer("activitypub", deliveries.on_changes),
    Consumer("pings", pings.on_changes),
    Consumer(transparency_log.CONSUMER, transparency_log.on_changes),
    Consumer(corrections.CONSUMER, corrections.on_changes),
    # Instant alerts of what aired (migration 0024 placed this cursor and the editions' one at
    # each paper's newest row, so an upgrade plans nothing for what aired before it).
    Consumer(alerts.CONSUMER, alerts.on_changes, before_now=True),
    # Editions (migration 0022 placed this cursor at each paper's newest edition).
    Consumer("edition-webhooks", content_webhooks.on_editions, feed=EDITIONS),
    Consumer(alerts.EDITIONS_CONSUMER, alerts.on_changes, feed=EDITIONS, before_now=True),
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


def _due(consumer: Consumer, cursor: ChangeCursor, now: datetime, limit: int) -> list:
    feed = consumer.feed
    at, seq = feed.columns()
    return list(db.session.scalars(
        select(feed.model).where(
            feed.model.paper_id == cursor.paper_id, consumer.due(now),
            or_(at > cursor.after_at, and_(at == cursor.after_at, seq > cursor.after_seq)))
        .order_by(at, seq).limit(limit)))


def _pending_papers(consumer: Consumer, now: datetime) -> list[int]:
    """Ids of papers with rows due that `consumer` has not handled (one statement)."""
    feed = consumer.feed
    at, seq = feed.columns()
    cursor = select(ChangeCursor).where(ChangeCursor.consumer == consumer.name).subquery()
    rows = db.session.execute(
        select(feed.model.paper_id).distinct()
        .outerjoin(cursor, cursor.c.paper_id == feed.model.paper_id)
        .where(consumer.due(now),
               or_(cursor.c.paper_id.is_(None), at > cursor.c.after_at,
                   and_(at == cursor.c.after_at, seq > cursor.c.after_seq)))
    ).scalars().all()
    db.session.rollback()
    return sorted(rows)


def run(consumer: Consumer, now: datetime, *, batch: int = BATCH) -> tuple[int, list[str]]:
    """Hand `consumer` the changes due by `now` (aware UTC) on every paper, up to `batch` per
    paper, committing per paper; returns (changes handled, failures as "consumer/paper id").
    A handler that raises leaves its paper's cursor where it was (rolled back, logged) and
    does not stop the papers after it."""
    handled, failed = 0, []
    for paper_id in _pending_papers(consumer, now):
        cursor = _claim(consumer.name, paper_id, now)
        if cursor is None:
            continue
        try:
            changes_feed.settle_writes(paper_id)
            changes = _due(consumer, cursor, now, batch)
            paper = db.session.get(Paper, paper_id)
            if changes and paper is not None and not consumer.after_commit:
                consumer.handle(paper, changes, now)
            if changes:
                cursor.after_at, cursor.after_seq = consumer.feed.position(changes[-1])
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
