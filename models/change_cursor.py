"""Where each consumer of the change feed stands, per paper."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime


class ChangeCursor(db.Model):
    """A consumer's position in one paper's change feed (`piece_changes`, listed in (`at`,
    `seq`) order): every change up to and including (`after_at`, `after_seq`) has been handled.
    `leased_until` (None when free) lets several workers share the consumers without a lock
    held while they work (services/delivery/change_stream.py). Consumers are named in
    change_stream.CONSUMERS; a paper with no row for a consumer starts at the beginning."""

    __tablename__ = "change_cursors"

    consumer: Mapped[str] = mapped_column(String(40), primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    after_at: Mapped[datetime] = mapped_column(UTCDateTime)
    after_seq: Mapped[int] = mapped_column(Integer)
    leased_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
