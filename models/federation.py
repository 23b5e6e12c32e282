"""The federation aggregate (docs/FEDERATION.md): a paper's ActivityPub signing key, the remote
actors that follow the paper or one of its personas, and the outbox of signed activities.

The change feed (`piece_changes`) stays the one record of a public change: activities are
derived from it by the `activitypub` consumer (services/delivery/federation/deliveries.py), which writes
one `ApDelivery` row per follower inbox (shared inboxes once), posted by `flask worker`.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from extensions import db
from models.delivery_state import DeliveryState
from models.types import UTCDateTime

# The local actor a follower follows: the paper itself, or one persona (by its slug).
PAPER_ACTOR = ""


class ApKey(db.Model):
    """A paper's RSA key for HTTP signatures (one per paper, shared by the paper's actor and
    its personas' actors, each of which publishes it as `<actor>#main-key`). Made the first
    time it is needed; `private_key` holds the PKCS#8 DER sealed under the instance secret
    ("v1:" + base64 SecretBox, services/delivery/federation/keys.py), never the key in the clear."""

    __tablename__ = "ap_keys"

    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), primary_key=True)
    public_pem: Mapped[str] = mapped_column(Text)
    private_key: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ApFollower(db.Model):
    """A remote actor (`actor_uri`) following a local actor of the paper: `local` is
    PAPER_ACTOR ("") for the paper, else a persona's slug. `inbox` and `shared_inbox` (None when
    the remote server has none) are where activities go; `follow_id` is the id of the Follow it
    sent (an Undo names it)."""

    __tablename__ = "ap_followers"
    __table_args__ = (UniqueConstraint("paper_id", "local", "actor_uri"),
                      Index("ix_ap_followers_actor", "actor_uri"))

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    local: Mapped[str] = mapped_column(String(120))
    actor_uri: Mapped[str] = mapped_column(String(2000))
    inbox: Mapped[str] = mapped_column(String(2000))
    shared_inbox: Mapped[str | None] = mapped_column(String(2000))
    follow_id: Mapped[str | None] = mapped_column(String(2000))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ApDelivery(DeliveryState, db.Model):
    """One signed POST of an activity to one inbox: `body` (the activity's JSON, UTF-8 text),
    signed as `signer` (PAPER_ACTOR or a persona slug: whose `#main-key` the HTTP signature names)
    when it leaves; `kind` the activity type (Create, Announce, Update, Delete, Accept);
    `piece_id` the piece it is about (None for an Accept)."""

    __tablename__ = "ap_deliveries"
    __table_args__ = (Index("ix_ap_deliveries_due", "delivered_at", "failed_at", "next_attempt_at"),
                      Index("ix_ap_deliveries_paper", "paper_id", "id"),
                      Index("ix_ap_deliveries_inbox", "inbox", "id"))

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    signer: Mapped[str] = mapped_column(String(120))
    inbox: Mapped[str] = mapped_column(String(2000))
    kind: Mapped[str] = mapped_column(String(20))
    piece_id: Mapped[int | None] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


PING_KINDS = ("websub", "indexnow")


class PingDelivery(DeliveryState, db.Model):
    """One unsigned POST telling a search or feed service that a paper changed (issue 24 part
    7): `kind` "websub" (a W3C WebSub hub's `hub.mode=publish` for one feed URL) or "indexnow"
    (an IndexNow URL list); `target` the service's URL, `body` what is posted with
    `content_type`."""

    __tablename__ = "ping_deliveries"
    __table_args__ = (Index("ix_ping_deliveries_due", "delivered_at", "failed_at", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(20))
    target: Mapped[str] = mapped_column(String(2000))
    content_type: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
