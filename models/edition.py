"""Video editions (the cast): at most one per paper per UTC day."""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import BigInteger, Date, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.types import UTCDateTime


class Edition(db.Model):
    """A published video edition. `length_bytes` and `mime_type` feed the podcast enclosure.

    `video_url` is None for a poster-only edition (the demo's, where no video could be made):
    its page shows the poster and the transcript, and the podcast feed leaves it out. Media
    URLs are absolute, or a path on the paper's own host (`/media/...`, `Links.media`).
    `captions_url` names WebVTT captions for the video, `transcript` is its words as text
    (WCAG 1.2.2); both may be empty."""

    __tablename__ = "editions"
    __table_args__ = (UniqueConstraint("paper_id", "day"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    day: Mapped[date] = mapped_column(Date)
    title: Mapped[str] = mapped_column(String(300))
    summary: Mapped[str] = mapped_column(Text, default="")
    video_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    poster_url: Mapped[str] = mapped_column(String(2000))
    mime_type: Mapped[str] = mapped_column(String(80), default="video/mp4")
    length_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    duration_seconds: Mapped[int] = mapped_column(Integer, default=0)
    published_at: Mapped[datetime] = mapped_column(UTCDateTime)
    captions_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    transcript: Mapped[str] = mapped_column(Text, default="", server_default="")
