"""The piece aggregate: a piece's current published state, its cited facts and its revisions.

`Piece` and `CitedFact` hold the current revision, shaped for reading; `PieceRevision` is the
append-only filing record (basis, content hash, receipt) that proofs are built from.
"""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import (
    Boolean,
    Date,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from extensions import db
from models.paper import JSONType, Persona, Section
from models.types import UTCDateTime


class Piece(db.Model):
    """A story. Public only while `on_air` and once `on_air_at` (UTC) has come: a piece put on
    air with a future `on_air_at` is scheduled, and airs at that instant with no job to run
    (services/reading/visibility.py is the one public predicate). `on_air_day` is the UTC date
    of `on_air_at`, kept as a column so the archive is an indexed GROUP BY."""

    __tablename__ = "pieces"
    # Every list is read in the order of one of these indexes, so a page of N reads about N
    # index entries and sorts nothing (docs/PERFORMANCE.md "Lists in index order"; migration
    # 0017; tests/test_postgres_plans.py). Each leads with the equality columns of its lists
    # (the paper, its section or persona, `on_air` of the visibility rule), then the keyset
    # order: `on_air_at, id` for pieces on air, `filed_at, id` for drafts. `id` is spelled out
    # for PostgreSQL (SQLite appends the rowid to every index anyway), so ties on the instant
    # come out in keyset order too. Ascending columns serve `ORDER BY ... DESC, id DESC` by a
    # backward scan on both databases; DESC columns would only make the newest-first walk
    # forward and the oldest-first one (`/posts?since=`) backward. The section and persona
    # indexes lead with `paper_id` too: PostgreSQL prices an index scan by the physical
    # correlation of its first column, and a section id cycling through the table made it walk
    # the whole paper's index filtering on the section instead (3 rows read per row listed).
    # The sitemap's lastmods (docs/PERFORMANCE.md "The sitemap's lastmods", migration 0025):
    # the newest `updated_at` per day, section and persona is one backward seek each in the
    # `*_updated` indexes (`on_air_at` after it, so a scheduled piece is stepped over from the
    # index); per sitemap page it is a slice of ix_pieces_paper_air, which ends with `updated_at`
    # so the slice reads no table row.
    __table_args__ = (
        UniqueConstraint("paper_id", "slug"),
        Index("ix_pieces_paper_air", "paper_id", "on_air", "on_air_at", "id", "updated_at"),
        Index("ix_pieces_paper_air_day", "paper_id", "on_air", "on_air_day", "on_air_at", "id"),
        Index("ix_pieces_section_air", "paper_id", "section_id", "on_air", "on_air_at", "id"),
        Index("ix_pieces_persona_air", "paper_id", "persona_id", "on_air", "on_air_at", "id"),
        Index("ix_pieces_paper_filed", "paper_id", "on_air", "filed_at", "id"),
        Index("ix_pieces_day_updated", "paper_id", "on_air", "on_air_day", "updated_at", "on_air_at"),
        Index("ix_pieces_section_updated", "paper_id", "section_id", "on_air", "updated_at", "on_air_at"),
        Index("ix_pieces_persona_updated", "paper_id", "persona_id", "on_air", "updated_at", "on_air_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    slug: Mapped[str] = mapped_column(String(120))
    section_id: Mapped[int] = mapped_column(ForeignKey("sections.id"))
    persona_id: Mapped[int] = mapped_column(ForeignKey("personas.id"), index=True)
    headline: Mapped[str] = mapped_column(String(300))
    dek: Mapped[str] = mapped_column(String(600), default="")
    prose: Mapped[str] = mapped_column(Text)
    image: Mapped[str | None] = mapped_column(String(2000))
    rev: Mapped[int] = mapped_column(Integer, default=1)
    content_hash: Mapped[str] = mapped_column(String(80))
    on_air: Mapped[bool] = mapped_column(Boolean, default=False)
    on_air_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    on_air_day: Mapped[date | None] = mapped_column(Date)
    filed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    filed_by_key_id: Mapped[int | None] = mapped_column(ForeignKey("desk_keys.id"))
    # The typed revisions (rev 2 on), `[{rev, kind, note, at}]` in rev order, as their bases
    # hold them (docs/CORRECTIONS.md): read with the piece, no second query. None: none yet.
    notices: Mapped[list | None] = mapped_column(JSONType)
    # How many figures of the current revision no cited fact states (services/newsroom/
    # figures.py); None for a piece filed before the check existed.
    unsupported_figures: Mapped[int | None] = mapped_column(Integer)

    section: Mapped[Section] = relationship(lazy="raise_on_sql")
    persona: Mapped[Persona] = relationship(lazy="raise_on_sql")
    cited_facts: Mapped[list[CitedFact]] = relationship(
        order_by="CitedFact.n", lazy="raise_on_sql", cascade="all, delete-orphan"
    )


class CitedFact(db.Model):
    """Cited fact `n` (1..k) of a piece's current revision; prose marker `[^n]` points at it."""

    __tablename__ = "cited_facts"
    __table_args__ = (UniqueConstraint("piece_id", "n"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    piece_id: Mapped[int] = mapped_column(ForeignKey("pieces.id", ondelete="CASCADE"))
    n: Mapped[int] = mapped_column(Integer)
    statement: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(300))
    instrument: Mapped[str] = mapped_column(String(300))
    claim_key: Mapped[str] = mapped_column(String(300))


class PieceRevision(db.Model):
    """One filing of a piece (rev 1, 2, ...): the signed, append-only provenance record.

    `basis` is the exact JSON whose RFC 8785 canonical form hashes to `content_hash`;
    `prev_hash` links to the previous revision's hash (None for rev 1); `receipt` is the base64
    Ed25519 signature over `signed_string` made with the paper's key `kid`.
    """

    __tablename__ = "piece_revisions"
    __table_args__ = (UniqueConstraint("piece_id", "rev"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    piece_id: Mapped[int] = mapped_column(ForeignKey("pieces.id", ondelete="CASCADE"))
    rev: Mapped[int] = mapped_column(Integer)
    basis: Mapped[dict] = mapped_column(JSONType)
    content_hash: Mapped[str] = mapped_column(String(80))
    prev_hash: Mapped[str | None] = mapped_column(String(80))
    signed_string: Mapped[str] = mapped_column(Text)
    receipt: Mapped[str] = mapped_column(String(120))
    kid: Mapped[str] = mapped_column(String(64))
    filer: Mapped[str] = mapped_column(String(200))
    filed_at: Mapped[datetime] = mapped_column(UTCDateTime)


CHANGE_TYPES = ("aired", "revised", "unaired")


class PieceChange(db.Model):
    """One public change of a piece, for the change feed (`GET /api/v1/changes`): `aired`,
    `revised` (while on air) or `unaired` (a tombstone: `content_hash` is None, never content).

    `seq` numbers a paper's changes 1, 2, ... in the order they were written (writes of pieces
    on one paper are serialised by services.newsroom.filing.lock_paper); `at` is when the change
    is public: the write's own time, or the scheduled instant of a scheduled airing, so the feed
    lists `at <= now` keyed on (`at`, `seq`). `piece_id` is no foreign key: a tombstone outlives
    its piece."""

    __tablename__ = "piece_changes"
    __table_args__ = (
        UniqueConstraint("paper_id", "seq"),
        Index("ix_piece_changes_paper_at_seq", "paper_id", "at", "seq"),
        Index("ix_piece_changes_piece", "piece_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    piece_id: Mapped[int] = mapped_column(Integer)
    type: Mapped[str] = mapped_column(String(16))
    rev: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str | None] = mapped_column(String(80))
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    # A `revised` change's revision kind and public note (docs/CORRECTIONS.md); None otherwise.
    kind: Mapped[str | None] = mapped_column(String(16))
    note: Mapped[str | None] = mapped_column(Text)
