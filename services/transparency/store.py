"""A paper's transparency log in the database: appending the entries derived from the change
feed, the stored tile hashes, signed checkpoints, tiles and bundles as served, and proofs.

Storage (models/log.py): each entry's bytes and leaf hash (`log_entries`, the level-0 tiles);
the hash of every complete subtree of 256**L leaves (`log_tile_hashes`, the level-L tiles,
L >= 1); every checkpoint signed. So a tile is one indexed range read, and any subtree hash
a root or a proof needs is at most 128 stored hashes folded together (`Reader`).

Who writes: `on_changes` is the change feed consumer "transparency-log"
(services/delivery/change_stream.py), run by the worker inside the transaction that moves its
cursor, so each change becomes exactly one entry, in feed order; the consumer's lease keeps a
paper's appends to one worker at a time. `sign_due` (the worker's checkpoint step, and `flask
log checkpoint`) signs what was appended; a compare-and-set on `signed_size` and the checkpoint
table's key (paper, size) keep two workers from signing twice, and nothing is ever signed that
does not extend the previous checkpoint (`TreeRewritten`).

Functions flush; the caller commits (the consumer's pass, the worker, the CLI). Needs an app
context for SECRET_KEY (the log seeds open with it: services/transparency/sealing.py) and
PAPER_DOMAIN (the origin).
"""
from __future__ import annotations

import base64
import logging
from datetime import datetime, timedelta

from flask import current_app
from nacl.signing import SigningKey
from sqlalchemy import insert, select, update

from extensions import cache, db
from models import LogCheckpoint, LogEntry, LogTileHash, Paper, Piece, PieceChange, TransparencyLog
from services import sealing as services_sealing
from services.errors import DeskError, NotFound
from services.transparency import entries, merkle, note, sealing, tiles

log = logging.getLogger("paperdesk.transparency")

CONSUMER = "transparency-log"
PROOF_HEADER = "c2sp.org/tlog-proof@v1"


class TreeRewritten(DeskError):
    """The stored hashes no longer give the root of a checkpoint already signed (rows changed
    behind the log): nothing more is signed for that paper until an operator looks."""

    status = 500
    default_detail = "The transparency log's stored tree no longer matches a checkpoint it signed."


class NotYetLogged(NotFound):
    """404: the piece's newest public change is not in a signed checkpoint yet (Retry-After)."""


# The one answer to every log-proof miss: an unknown id or slug, a draft's, a scheduled piece's
# before it airs. Byte for byte the same, so the proof cannot confirm that an unpublished
# headline's slug exists.
NEVER_PUBLIC = "No piece with this id or slug has ever been public on this paper; drafts are never logged."


def ever_public_piece(paper: Paper, slug: str, now: datetime) -> int | None:
    """The id of the piece of `paper` with `slug` if it was ever public by `now` (it has a
    public change), else None: a draft's or a scheduled piece's slug is not found, as an
    unknown one is (one query either way)."""
    return db.session.scalar(select(Piece.id).where(
        Piece.paper_id == paper.id, Piece.slug == slug,
        select(PieceChange.seq).where(PieceChange.piece_id == Piece.id, PieceChange.at <= now).exists()))


def origin_for(paper: Paper) -> str:
    """`<paper host>/log`: the paper's own host, else `{slug}.{PAPER_DOMAIN}`."""
    host = paper.host or f"{paper.slug}.{current_app.config['PAPER_DOMAIN']}"
    return f"{host.lower()}/log"


def _secret() -> str:
    return current_app.config["SECRET_KEY"]


def get_log(paper_id: int) -> TransparencyLog | None:
    return db.session.get(TransparencyLog, paper_id)


def ensure_log(paper: Paper, now: datetime) -> TransparencyLog:
    """The paper's log, made now if it has none: a fresh Ed25519 key (seed sealed under
    SECRET_KEY), the origin fixed from the paper's host, and a signed checkpoint of the empty
    tree so `/log/checkpoint` answers from the start. Flushes."""
    row = get_log(paper.id)
    if row is not None:
        return row
    key = SigningKey.generate()
    origin = origin_for(paper)
    row = TransparencyLog(paper_id=paper.id, origin=origin,
                          public_key=base64.b64encode(bytes(key.verify_key)).decode(),
                          private_seed=sealing.seal(bytes(key), _secret()),
                          size=0, signed_size=0, signed_at=now, created_at=now)
    db.session.add(row)
    text = note.checkpoint_text(origin, 0, merkle.EMPTY)
    db.session.add(LogCheckpoint(paper_id=paper.id, size=0, root=merkle.EMPTY, cosignatures="",
                                 note=note.signed_note(text, [note.sign_line(text, origin, bytes(key))]),
                                 signed_at=now))
    db.session.flush()
    return row


def vkey_of(row: TransparencyLog) -> str:
    """The log's signed-note verifier key: `<origin>+<key id>+<base64 0x01||key>`."""
    return note.vkey(row.origin, base64.b64decode(row.public_key))


# ----------------------------------------------------------------------------- appending


def on_changes(paper: Paper, changes: list[PieceChange], now: datetime) -> None:
    """The change feed consumer: one entry per change, in the order given (feed order), each
    dated the change's `at`. Runs in the transaction that moves the consumer's cursor."""
    row = ensure_log(paper, now)
    append(row, [(c.seq, c.piece_id, entries.entry_bytes(
        paper=paper.slug, seq=c.seq, event=c.type, piece=c.piece_id, rev=c.rev,
        content_hash=c.content_hash, at=c.at)) for c in changes])


def append(row: TransparencyLog, new: list[tuple[int, int, bytes]]) -> None:
    """Append entries `(seq, piece_id, bytes)` to the log and store the tile hashes they
    complete. Flushes; `row.size` grows by len(new)."""
    if not new:
        return
    start = row.size
    db.session.execute(insert(LogEntry), [
        {"paper_id": row.paper_id, "idx": start + i, "seq": seq, "piece_id": piece_id, "data": data,
         "hash": merkle.leaf_hash(data)} for i, (seq, piece_id, data) in enumerate(new)])
    end = start + len(new)
    level = 1
    while True:
        span = tiles.WIDTH ** level
        done = range(start // span, end // span)  # blocks of this level completed by this append
        if not done:
            break
        for block in done:
            children = _stored(row.paper_id, level - 1, block * tiles.WIDTH, (block + 1) * tiles.WIDTH)
            db.session.add(LogTileHash(paper_id=row.paper_id, level=level, idx=block,
                                       hash=merkle.root_of(children)))
        db.session.flush()
        level += 1
    row.size = end
    db.session.flush()


def _stored(paper_id: int, level: int, lo: int, hi: int) -> list[bytes]:
    """The stored hashes of tile level `level`, indices lo..hi-1, in order."""
    if level == 0:
        query = (select(LogEntry.hash).where(LogEntry.paper_id == paper_id, LogEntry.idx >= lo,
                                             LogEntry.idx < hi).order_by(LogEntry.idx))
    else:
        query = (select(LogTileHash.hash).where(LogTileHash.paper_id == paper_id, LogTileHash.level == level,
                                                LogTileHash.idx >= lo, LogTileHash.idx < hi)
                 .order_by(LogTileHash.idx))
    return [bytes(h) for h in db.session.scalars(query)]


class Reader:
    """Subtree hashes of one paper's log from its stored tiles, one query per tile touched
    (kept for the reader's life): `subtree(h, i)` is MTH of leaves [i * 2**h, (i+1) * 2**h)."""

    def __init__(self, paper_id: int):
        self.paper_id = paper_id
        self._tiles: dict[tuple[int, int], list[bytes]] = {}

    def _tile(self, level: int, n: int) -> list[bytes]:
        key = (level, n)
        if key not in self._tiles:
            self._tiles[key] = _stored(self.paper_id, level, n * tiles.WIDTH, (n + 1) * tiles.WIDTH)
        return self._tiles[key]

    def subtree(self, height: int, index: int) -> bytes:
        level, rest = divmod(height, tiles.HEIGHT)
        lo, hi = index << rest, (index + 1) << rest
        tile = self._tile(level, lo // tiles.WIDTH)
        part = tile[lo % tiles.WIDTH:(hi - 1) % tiles.WIDTH + 1]
        if len(part) != hi - lo:
            raise LookupError(f"the log of paper {self.paper_id} has no subtree {height}/{index}")
        return merkle.root_of(part)


# ----------------------------------------------------------------------------- checkpoints


def sign(row: TransparencyLog, now: datetime) -> LogCheckpoint | None:
    """Sign a checkpoint of the log's current size, unless one of that size exists. Checks
    first that the stored tree still gives the newest checkpoint's root (TreeRewritten if
    not). Returns the new checkpoint (flushed), or None when another worker signed first or
    there was nothing new."""
    size, old = row.size, row.signed_size
    if size == old and db.session.get(LogCheckpoint, (row.paper_id, size)) is not None:
        return None
    reader = Reader(row.paper_id)
    previous = db.session.get(LogCheckpoint, (row.paper_id, old))
    if previous is not None and merkle.tree_hash(old, reader.subtree) != bytes(previous.root):
        raise TreeRewritten(f"{TreeRewritten.default_detail} (paper {row.paper_id}, size {old})")
    root = merkle.tree_hash(size, reader.subtree)
    text = note.checkpoint_text(row.origin, size, root)
    seed = sealing.unseal(row.private_seed, _secret(), origin=row.origin)
    # Compare-and-set: only the worker that moves signed_size from `old` signs this size.
    moved = db.session.execute(
        update(TransparencyLog).where(TransparencyLog.paper_id == row.paper_id,
                                      TransparencyLog.signed_size == old)
        .values(signed_size=size, signed_at=now).execution_options(synchronize_session=False))
    if moved.rowcount != 1:
        return None
    checkpoint = LogCheckpoint(paper_id=row.paper_id, size=size, root=root, cosignatures="", signed_at=now,
                               note=note.signed_note(text, [note.sign_line(text, row.origin, seed)]))
    db.session.add(checkpoint)
    served_changed(row.paper_id)
    db.session.flush()
    db.session.refresh(row)
    return checkpoint


def served_changed(paper_id: int) -> None:
    """What the paper's log serves changed (a new checkpoint, a cosignature): move the paper's
    version, so every cached and replayed answer of the paper (the checkpoint, tiles, proofs)
    is made again, on every worker and host (web/state.py's generation moves with it)."""
    paper = db.session.get(Paper, paper_id)
    if paper is not None:
        paper.bump()


def papers_without_log() -> list[int]:
    """Ids of the papers that have no log yet."""
    return list(db.session.scalars(select(Paper.id).where(
        ~select(TransparencyLog.paper_id).where(TransparencyLog.paper_id == Paper.id).exists())
        .order_by(Paper.id)))


def due_logs(now: datetime, interval: float) -> list[int]:
    """Paper ids of the logs with entries past their newest checkpoint, signed at least
    `interval` seconds ago (or only the empty tree so far: a new log's first entries wait for
    no one)."""
    before = now - timedelta(seconds=interval)
    return list(db.session.scalars(select(TransparencyLog.paper_id).where(
        TransparencyLog.size > TransparencyLog.signed_size,
        (TransparencyLog.signed_size == 0) | TransparencyLog.signed_at.is_(None)
        | (TransparencyLog.signed_at <= before))
        .order_by(TransparencyLog.paper_id)))


def newest_checkpoint(paper_id: int) -> LogCheckpoint | None:
    """The newest checkpoint signed for the paper (None before its log exists)."""
    return db.session.scalar(select(LogCheckpoint).where(LogCheckpoint.paper_id == paper_id)
                             .order_by(LogCheckpoint.size.desc()).limit(1))


def served(checkpoint: LogCheckpoint) -> str:
    """The checkpoint as `/log/checkpoint` serves it: the log's note, then the cosignatures."""
    return checkpoint.note + (checkpoint.cosignatures or "")


# ----------------------------------------------------------------------------- serving


def tile_bytes(paper_id: int, tile: tiles.Tile, size: int) -> bytes | None:
    """The bytes of `tile` (hashes concatenated, or an entry bundle) of a tree of `size` (the
    newest checkpoint's), or None when the tile reaches past it."""
    if not tiles.covered(tile, size):
        return None
    lo, hi = tile.index * tiles.WIDTH, tile.index * tiles.WIDTH + tile.width
    if tile.level is None:
        data = list(db.session.scalars(select(LogEntry.data).where(
            LogEntry.paper_id == paper_id, LogEntry.idx >= lo, LogEntry.idx < hi).order_by(LogEntry.idx)))
        return entries.bundle([bytes(d) for d in data]) if len(data) == tile.width else None
    hashes = _stored(paper_id, tile.level, lo, hi)
    return b"".join(hashes) if len(hashes) == tile.width else None


def consistency(paper_id: int, old: int, new: int) -> list[bytes]:
    """The RFC 6962 consistency proof from tree size `old` to `new` of the paper's log."""
    return merkle.consistency_proof(old, new, Reader(paper_id).subtree)


def piece_proof(paper: Paper, piece_id: int, now: datetime, *, retry_after: int) -> str:
    """The c2sp.org/tlog-proof@v1 of the newest entry of piece `piece_id`, against the newest
    checkpoint (which holds it), with the entry as `extra`. Raises NotFound when the piece has
    no public change (a draft, or no such piece), NotYetLogged (Retry-After `retry_after`
    seconds) when its newest public change is not in a signed checkpoint yet."""
    # By piece id alone (its own index; a piece has a handful of changes): with the paper and
    # the instant in the WHERE clause SQLite would walk the paper's whole feed instead.
    changes = db.session.execute(select(PieceChange.paper_id, PieceChange.seq, PieceChange.at).where(
        PieceChange.piece_id == piece_id)).all()
    newest_change = max((c.seq for c in changes if c.paper_id == paper.id and c.at <= now), default=None)
    entry = db.session.execute(select(LogEntry.idx, LogEntry.seq, LogEntry.data).where(
        LogEntry.paper_id == paper.id, LogEntry.piece_id == piece_id)
        .order_by(LogEntry.idx.desc()).limit(1)).first()
    if newest_change is None and entry is None:
        raise NotFound(NEVER_PUBLIC)
    checkpoint = newest_checkpoint(paper.id)
    # A piece's changes follow one another (a scheduled airing is its last until it airs), so
    # its newest public change has its highest public seq; entries follow feed order.
    pending = (entry is None or checkpoint is None or entry.idx >= checkpoint.size
               or (newest_change is not None and entry.seq != newest_change))
    if pending:
        raise NotYetLogged(f"The piece's newest public change is not in a signed checkpoint yet; the log "
                           f"signs new entries within about {retry_after} seconds.",
                           headers={"Retry-After": str(retry_after)})
    lines = [PROOF_HEADER, "extra " + base64.b64encode(bytes(entry.data)).decode(), f"index {entry.idx}",
             *_inclusion(paper.id, entry.idx, checkpoint.size, bytes(checkpoint.root))]
    return "\n".join(lines) + "\n\n" + served(checkpoint)


def _inclusion(paper_id: int, index: int, size: int, root: bytes) -> list[str]:
    """The base64 lines of the inclusion proof of entry `index` in the tree of `size` (root
    `root`). A proof never changes once both exist, so it is kept in the app cache, keyed by the
    root too (a paper made again under a reused id has another log); a cache outage only costs
    the recomputation."""
    key = f"tlog-inclusion:{paper_id}:{root.hex()}:{index}"
    try:
        kept = cache.get(key)
    except Exception:  # noqa: BLE001 - a cache outage must never fail a request
        kept = None
    if kept is not None:
        return kept
    lines = [base64.b64encode(h).decode()
             for h in merkle.inclusion_proof(index, size, Reader(paper_id).subtree)]
    try:
        cache.set(key, lines, timeout=24 * 3600)
    except Exception:  # noqa: BLE001 - a cache outage must never fail a request
        log.warning("inclusion proof cache write failed", exc_info=True)
    return lines


# ----------------------------------------------------------------------------- keys at rest


def locked_logs(secret: str) -> list[str]:
    """Origins of the logs whose seed does not open under `secret`."""
    locked = []
    for row in db.session.scalars(select(TransparencyLog).order_by(TransparencyLog.paper_id)):
        try:
            sealing.unseal(row.private_seed, secret, origin=row.origin)
        except sealing.LogKeyLocked:
            locked.append(row.origin)
    return locked


def reseal(old_secret: str, new_secret: str) -> dict[str, list[str]]:
    """Seal every log seed under `new_secret` (see provenance.reseal_seeds): `{"resealed",
    "kept"}` origins. Raises sealing.LogKeyLocked naming the logs whose seed opens under neither,
    before changing any row. Flushes."""
    rows = db.session.scalars(select(TransparencyLog).order_by(TransparencyLog.paper_id))
    done = services_sealing.reseal(
        rows, old_secret, new_secret, column="private_seed", name=lambda row: row.origin,
        opens=lambda stored, secret, row: sealing.unseal(stored, secret, origin=row.origin), seals=sealing.seal,
        locked=sealing.LogKeyLocked,
        refuse=lambda lost: sealing.LogKeyLocked(f"These transparency log keys open under neither the old nor the "
                                                 f"current SECRET_KEY: {', '.join(lost)}. Nothing was changed."))
    db.session.flush()
    return {"resealed": done["resealed"], "kept": done["kept"]}


# ----------------------------------------------------------------------------- the worker's step


def sign_due(now: datetime, interval: float) -> tuple[list[tuple[int, int]], list[str]]:
    """The worker's checkpoint step: make the log of every paper that has none (with its empty
    checkpoint), then sign a checkpoint for every log with new entries whose newest checkpoint
    is at least `interval` seconds old (0: all of them). Commits per paper, like the outbox
    senders: one paper's failure (TreeRewritten, a locked seed) is logged and stops no other.
    Returns ([(paper id, size signed)], [failures as "paper id: reason"])."""
    signed, failed = [], []
    for paper_id in papers_without_log():
        try:
            ensure_log(db.session.get(Paper, paper_id), now)
            db.session.commit()
        except Exception as exc:  # noqa: BLE001 - another worker made it first, or a locked secret
            db.session.rollback()
            if get_log(paper_id) is None:
                failed.append(f"{paper_id}: {exc}")
    for paper_id in due_logs(now, interval):
        try:
            checkpoint = sign(get_log(paper_id), now)
            db.session.commit()
        except Exception as exc:  # noqa: BLE001 - one paper's failure must not stop the others
            db.session.rollback()
            log.exception("transparency log of paper %s: no checkpoint signed", paper_id)
            failed.append(f"{paper_id}: {exc}")
            continue
        if checkpoint is not None:
            signed.append((paper_id, checkpoint.size))
    db.session.rollback()
    return signed, failed
