"""Idempotency records: the first answer to a keyed write sent with an `Idempotency-Key`
(docs/API.md "Idempotency-Key"; web/idempotency.py reads and writes them).

A record is inserted in the same transaction as the write it answers, at the request's commit
point (web/commit.py): a write that committed always has its record, and one that rolled back
(or whose COMMIT never reached the server) has none. Records are scoped to a paper and to the desk
key that sent the request; (paper_id, key_owner, key) is unique.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.paper import JSONType
from models.types import UTCDateTime


class IdempotencyKey(db.Model):
    """The answer to one keyed write, kept for IDEMPOTENCY_TTL_SECONDS.

    `key_owner` is the desk key's id (keys are never deleted, only revoked); `key` the client's
    Idempotency-Key (at most 255 printable ASCII characters). `method`, `path` and `fingerprint`
    (hex SHA-256 of the raw request body) identify the request the key was first used for; a
    reuse with anything else is refused. `status`, `headers` (a list of [name, value] pairs) and
    `body` are the answer as the client first got it, before the pipeline's after-steps.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (
        UniqueConstraint("paper_id", "key_owner", "key"),
        Index("ix_idempotency_keys_paper_created", "paper_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    key_owner: Mapped[int] = mapped_column(ForeignKey("desk_keys.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(String(2048))
    fingerprint: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer)
    headers: Mapped[list] = mapped_column(JSONType, default=list)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
