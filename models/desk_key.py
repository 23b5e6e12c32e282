"""Desk keys (docs/API.md "keys") and the papers' Ed25519 receipt signing keys."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from extensions import db
from models.paper import Paper, Persona
from models.types import UTCDateTime

KEY_KINDS = ("read", "admin", "agent")


class DeskKey(db.Model):
    """A desk key for one paper. Only `key_hash` (SHA-256 hex of the whole key) is stored;
    `prefix` (the first characters after `desk_`) is kept for display and revocation."""

    __tablename__ = "desk_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    prefix: Mapped[str] = mapped_column(String(32), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    label: Mapped[str] = mapped_column(String(200), default="")
    persona_id: Mapped[int | None] = mapped_column(ForeignKey("personas.id"))
    capabilities: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    paper: Mapped[Paper] = relationship(lazy="raise_on_sql")
    persona: Mapped[Persona | None] = relationship(lazy="raise_on_sql")


class SigningKey(db.Model):
    """A paper's Ed25519 key pair for filing receipts. `kid` names it in receipts; a retired key
    signs nothing new but stays published so old receipts still verify. The private seed never
    leaves the database (it is in no schema)."""

    __tablename__ = "signing_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), index=True)
    kid: Mapped[str] = mapped_column(String(64), unique=True)
    public_key: Mapped[str] = mapped_column(String(64))
    private_seed: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
