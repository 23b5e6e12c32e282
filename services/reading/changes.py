"""The change feed's reading side (docs/API.md "Change feed"): a paper's public changes in the
order a mirror must apply them, paged by an opaque cursor.

Rows are `PieceChange`s (written by services/newsroom/filing.py in the transaction of each
change). Listed: those with `at <= now` (the instant the caller passes), ordered by
(`at`, `seq`). Why that order is safe for a poller: piece writes on one paper are serialised
by `filing.lock_paper` and each takes its `now` after the lock, so an immediate change commits
after every change with a smaller (`at`, `seq`); a scheduled airing is dated its future instant
and listed only once that instant has come, after every change dated before it, so a cursor
(never past `now`) cannot have passed it; a cancelled schedule removes its change before anyone
could list it.
"""
from __future__ import annotations

import base64
import binascii
from datetime import datetime, timedelta, timezone

from sqlalchemy import and_, bindparam, or_, select

from extensions import db, reads_engine
from models import Paper, PieceChange
from services.reading import stories, visibility

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_PREFIX = "chg1"

# In the order of ix_piece_changes_paper_at_seq (paper_id, at, seq), so a page of N reads N
# index entries however deep the cursor. The plain `at >= after_at` repeats what the OR says so
# that it bounds the index range: without it a poller near the end of a long feed would walk
# every change since the first.
_PAGE = (select(PieceChange.seq, PieceChange.type, PieceChange.piece_id, PieceChange.rev,
                PieceChange.content_hash, PieceChange.at, PieceChange.kind)
         .where(PieceChange.paper_id == bindparam("paper_id"), PieceChange.at <= visibility.AIR_NOW,
                PieceChange.at >= bindparam("after_at"),
                or_(PieceChange.at > bindparam("after_at"),
                    and_(PieceChange.at == bindparam("after_at"), PieceChange.seq > bindparam("after_seq"))))
         .order_by(PieceChange.at, PieceChange.seq)
         .limit(stories.limit_param()))


def legacy_position(paper: Paper, text: str) -> tuple[datetime, int] | None:
    """(`at`, `seq`) of a cursor in the feed's first format (`chg1:` base64), which mirrors may
    hold from before the one cursor format (blueprints/api/paging.py); None when `text` is not
    one for this paper. Kept for a release so stored cursors keep working; docs/API.md."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
        prefix, paper_id, micros, seq = raw.split(":")
        if prefix != _PREFIX or int(paper_id) != paper.id or int(micros) < 0 or int(seq) < 0:
            return None
        return EPOCH + timedelta(microseconds=int(micros)), int(seq)
    except (ValueError, UnicodeError, binascii.Error, OverflowError):
        return None


def settle_writes(paper_id: int) -> None:
    """Wait until the paper's writes in flight have committed: a barrier, taken and released
    on a connection of its own, so nothing is held after it. A change takes its `at` after the
    writers' lock (filing.lock_paper) but commits later: without this, a scheduled airing whose
    instant has passed (committed long ago, with a later `at`) could carry a reader's cursor
    past a change not yet committed, which that reader would then never see. A writer that
    starts after the barrier takes an `at` later than any instant taken before it, so: take the
    instant, call this, then read the changes up to that instant. PostgreSQL: a share lock on
    the paper's row (writers hold it for update); SQLite: the write lock (BEGIN IMMEDIATE).
    A PostgreSQL session reading in autocommit (a public read) takes the barrier on its own
    connection, where the statement's end releases it: one round trip instead of a second
    connection's BEGIN, SELECT and ROLLBACK."""
    own = db.session.connection()
    if own.engine is reads_engine():  # PostgreSQL's autocommit connections of public reads
        own.execute(_BARRIER, {"paper_id": paper_id})
        return
    with db.engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            connection.exec_driver_sql("ROLLBACK")
        else:
            connection.execute(_BARRIER, {"paper_id": paper_id})
            connection.rollback()


_BARRIER = select(Paper.id).where(Paper.id == bindparam("paper_id")).with_for_update(read=True)


def page(paper: Paper, after: tuple[datetime, int] | None, limit: int, *,
         now: datetime) -> tuple[list[dict], tuple, bool]:
    """At most `limit` changes dated at or before `now` after position `after` ((`at`, `seq`);
    from the beginning when None), in feed order: `([{"seq", "type", "id", "rev", "content_hash", "at"}], last, more)`
    (a typed revision's change has `kind` too).
    `id` is the piece id as text, `at` aware UTC, `content_hash` None on an `unaired` tombstone.
    `last` is never None: the position after the last change listed (or `after` itself, or the
    beginning, when none is), to poll again from; `more` is True when further changes are
    listable now. Two statements: `settle_writes`, then the page. `now` must be taken before
    this call (a request's instant is), so that the writers settled are every one that took
    an earlier `at`."""
    after_at, after_seq = after or (EPOCH, 0)
    settle_writes(paper.id)
    rows = db.session.execute(_PAGE, {"paper_id": paper.id, "after_at": after_at, "after_seq": after_seq,
                                      "limit": limit + 1, **visibility.at(now)}).all()
    more = len(rows) > limit
    rows = rows[:limit]
    changes = [{"seq": row.seq, "type": row.type, "id": str(row.piece_id), "rev": row.rev,
                "content_hash": row.content_hash, "at": row.at, **({"kind": row.kind} if row.kind else {})}
               for row in rows]
    last = (rows[-1].at, rows[-1].seq) if rows else (after_at, after_seq)
    return changes, last, more
