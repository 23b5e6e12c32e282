"""The paper aggregate: a paper, its sections (in the paper's order) and its masthead personas."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, inspect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from extensions import db
from models.types import UTCDateTime, utcnow

JSONType = JSON().with_variant(JSONB(), "postgresql")

INDEX_STYLES = ("levels", "keyed")
SUBSCRIBE_PATHS = ("subscribers", "subscribe")


class Paper(db.Model):
    """A news paper served on its own host (docs/API.md "tenancy").

    `version` moves on every write to the paper or anything in it; it drives ETags and caches.
    `index_style` picks whether `GET /api/v1` carries `levels` or `keyed`; `subscribe_path` picks
    which of the two equivalent subscribe paths the index advertises.
    """

    __tablename__ = "papers"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(63), unique=True)
    host: Mapped[str | None] = mapped_column(String(253), unique=True)
    nameplate: Mapped[str] = mapped_column(String(200))
    motto: Mapped[str] = mapped_column(String(300), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    index_style: Mapped[str] = mapped_column(String(16), default="levels")
    subscribe_path: Mapped[str] = mapped_column(String(16), default="subscribers")
    config: Mapped[dict] = mapped_column(JSONType, default=dict)
    version: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The instants (UTC epoch seconds, ascending) at which scheduled pieces air, as of the last
    # write: how many have passed is part of every cached answer's key and ETag (web/caching.py),
    # so no cached answer outlives the instant a scheduled piece airs.
    air_schedule: Mapped[list | None] = mapped_column(JSONType)

    sections: Mapped[list[Section]] = relationship(
        back_populates="paper", order_by="Section.position", lazy="raise_on_sql"
    )

    def bump(self) -> None:
        """Move the paper's version: every cached answer and ETag for this paper goes stale.

        Written as `version = version + 1` in SQL once the row exists, so two concurrent
        writes each move it: a Python increment of a value read earlier would let them both
        write N + 1, and answers cached at N + 1 after the first would outlive the second."""
        if inspect(self).persistent:
            self.version = type(self).version + 1
        else:
            self.version = (self.version or 0) + 1


class Section(db.Model):
    """A section; `name` is the string stories carry in `section` and `category`."""

    __tablename__ = "sections"
    __table_args__ = (
        UniqueConstraint("paper_id", "name"),
        UniqueConstraint("paper_id", "slug"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    slug: Mapped[str] = mapped_column(String(80))
    description: Mapped[str] = mapped_column(Text, default="")
    position: Mapped[int] = mapped_column(Integer, default=0)
    active: Mapped[bool] = mapped_column(Boolean, default=True)

    paper: Mapped[Paper] = relationship(back_populates="sections", lazy="raise_on_sql")


class Persona(db.Model):
    """A declared AI persona of the masthead. Every byline is one, and always says so.

    `declared_ai` is not stored: it is true by construction, and nothing can make it false.
    """

    __tablename__ = "personas"
    __table_args__ = (
        UniqueConstraint("paper_id", "name"),
        UniqueConstraint("paper_id", "slug"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    slug: Mapped[str] = mapped_column(String(120))
    title: Mapped[str] = mapped_column(String(120), default="")
    beat: Mapped[str] = mapped_column(String(200), default="")
    bio: Mapped[str] = mapped_column(Text, default="")
    position: Mapped[int] = mapped_column(Integer, default=0)
    active: Mapped[bool] = mapped_column(Boolean, default=True)

    @property
    def declared_ai(self) -> bool:
        return True
