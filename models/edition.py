"""Video editions (the cast): at most one per paper per UTC day."""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, Date, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime


class Edition(db.Model):
    """A published video edition. `length_bytes` and `mime_type` feed the podcast enclosure."""

    __tablename__ = "editions"
    __table_args__ = (UniqueConstraint("paper_id", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    day: Mapped[date] = mapped_column(Date)
    title: Mapped[str] = mapped_column(String(300))
    summary: Mapped[str] = mapped_column(Text, default="")
    video_url: Mapped[str] = mapped_column(String(2000))
    poster_url: Mapped[str] = mapped_column(String(2000))
    mime_type: Mapped[str] = mapped_column(String(80), default="video/mp4")
    length_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    duration_seconds: Mapped[int] = mapped_column(Integer, default=0)
    published_at: Mapped[datetime] = mapped_column(UTCDateTime)
