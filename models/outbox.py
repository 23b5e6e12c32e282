"""The mail outbox: mail a request decided to send, waiting for `flask worker` (docs/ALERTS.md
"The outbox"). A request only writes a row; the drainer, another process, talks to SMTP.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.paper import JSONType
from models.types import UTCDateTime

OUTBOX_KINDS = ("confirm",)


class OutboxMessage(db.Model):
    """One message to send. `kind` says how the drainer builds it ("confirm": the confirm email
    of `subscriber_id`); `payload` holds what the request knew and the drainer cannot
    (`{"origin": "https://demo.example.com"}`: the links' origin, the request's own host).

    Pending while `sent_at` and `failed_at` are both null; due once `next_attempt_at` has come
    and no drainer holds it (`claimed_until` null or past). `attempts` counts tries,
    `last_error` keeps the last failure's reason."""

    __tablename__ = "outbox_messages"
    __table_args__ = (Index("ix_outbox_messages_due", "sent_at", "failed_at", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    subscriber_id: Mapped[int | None] = mapped_column(ForeignKey("subscribers.id", ondelete="CASCADE"))
    payload: Mapped[dict] = mapped_column(JSONType, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(String(1000))
