"""Content webhooks for site owners (docs/API.md "Content webhooks"): the endpoints an admin
registers and the outbox of Standard Webhooks messages posted to them."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from extensions import db
from models.delivery_state import DeliveryState
from models.types import UTCDateTime

# What an endpoint may subscribe to; `webhook.ping` is sent on demand to any endpoint.
CONTENT_EVENTS = ("piece.aired", "piece.revised", "piece.corrected", "piece.unaired", "edition.published")
PING_EVENT = "webhook.ping"


class WebhookEndpoint(db.Model):
    """A site owner's endpoint on one paper. `public_id` (`wh_...`) names it in the API;
    `secret` is the Standard Webhooks `whsec_<base64>` signing secret. `failing_since` is the
    first failed attempt of the current streak (null after any success); once it is 24 hours
    old the endpoint is disabled (`disabled_at`, `disabled_reason`) and receives nothing more."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[int] = mapped_column(primary_key=True)
    public_id: Mapped[str] = mapped_column(String(40), unique=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[list] = mapped_column(JSON, default=list)
    secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    failing_since: Mapped[datetime | None] = mapped_column(UTCDateTime)
    disabled_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    disabled_reason: Mapped[str | None] = mapped_column(String(1000))


class ContentDelivery(DeliveryState, db.Model):
    """One attempt series of a message to an endpoint. `message_id` (`msg_...`) is the
    `webhook-id` header: the same on every retry and on a redelivery (which is a new row with
    the same message and body). `body` is the exact raw body; the signature and
    `webhook-timestamp` are made at each attempt. Pending while `delivered_at` and `failed_at`
    are null, due at `next_attempt_at` (also the claim's lease). `piece_id` lets a cancelled
    scheduled airing withdraw its `piece.aired` message."""

    __tablename__ = "content_deliveries"
    __table_args__ = (
        Index("ix_content_deliveries_due", "delivered_at", "failed_at", "next_attempt_at"),
        Index("ix_content_deliveries_endpoint", "endpoint_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(40), unique=True)
    message_id: Mapped[str] = mapped_column(String(40), index=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(40))
    piece_id: Mapped[int | None] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    endpoint: Mapped[WebhookEndpoint] = relationship(lazy="raise_on_sql")
