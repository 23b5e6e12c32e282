"""The papers' transparency logs (docs/PROOFS.md "The transparency log"): C2SP tlog-tiles
Merkle trees of every public change, derived from the change feed by the worker.

- `TransparencyLog`: one per paper: its origin (fixed when made), its Ed25519 key (the seed
  sealed like the receipt seeds, services/newsroom/seeds.py) and how many entries it holds.
- `LogEntry`: entry `idx` (0, 1, ...) of a paper's log: its canonical bytes and leaf hash.
- `LogTileHash`: the Merkle Tree Hash of each complete subtree of 256**level leaves (level >=
  1): exactly the hashes of the level-`level` tiles. Level 0 is `LogEntry.hash`.
- `LogCheckpoint`: every checkpoint signed, one per tree size (the primary key is the rule
  "never two different trees of one size"), with the cosignatures witnesses sent back.
- `LogWitness`: the size each configured witness last cosigned, and when to try it again.

All append-only but for `TransparencyLog.size`/`signed_size`, `LogCheckpoint.cosignatures`
and `LogWitness`.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime


class TransparencyLog(db.Model):
    """A paper's log. `origin` (`<paper host>/log`) is also the key name; `public_key` the
    base64 raw Ed25519 key; `private_seed` the sealed seed (never in an answer). `size` counts
    the entries appended; `signed_size` is the size of the newest checkpoint, signed at
    `signed_at`."""

    __tablename__ = "transparency_logs"

    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    origin: Mapped[str] = mapped_column(String(300))
    public_key: Mapped[str] = mapped_column(String(64))
    private_seed: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(Integer, default=0)
    signed_size: Mapped[int] = mapped_column(Integer, default=0)
    signed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LogEntry(db.Model):
    """Entry `idx` of a paper's log: `data` (RFC 8785 JSON, services/transparency/entries.py),
    `hash` its RFC 6962 leaf hash, and the change it records (`seq`, `piece_id`)."""

    __tablename__ = "log_entries"
    __table_args__ = (Index("ix_log_entries_piece", "paper_id", "piece_id", "idx"),)

    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    seq: Mapped[int] = mapped_column(Integer)
    piece_id: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32))


class LogTileHash(db.Model):
    """MTH(D[idx * 256**level : (idx + 1) * 256**level]) of a paper's log, level >= 1."""

    __tablename__ = "log_tile_hashes"

    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    level: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    idx: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32))


class LogCheckpoint(db.Model):
    """A signed checkpoint of `size` entries: `root` hash, `note` (text, blank line, the log's
    signature line) and `cosignatures` (witness cosignature lines, appended as they come)."""

    __tablename__ = "log_checkpoints"

    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    size: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    root: Mapped[bytes] = mapped_column(LargeBinary(32))
    note: Mapped[str] = mapped_column(Text)
    cosignatures: Mapped[str] = mapped_column(Text, default="")
    signed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LogWitness(db.Model):
    """What witness `name` (its key name) last cosigned of a paper's log (`size`; 0: nothing
    yet), and when the worker may submit to it again after a failure."""

    __tablename__ = "log_witnesses"

    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    size: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
