"""The subscriber aggregate: an address on a paper's alert list (double opt-in), the record of each
alert window sent to it, and the outbox of webhook deliveries (docs/API.md "subscribe", "webhooks";
docs/ALERTS.md).
"""
from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from extensions import db
from models.delivery_state import DeliveryState
from models.paper import JSONType, Paper
from models.types import UTCDateTime

CADENCES = ("instant", "daily", "weekly")
# `paused_until` of a pause with no end ("until I resume"): later than any window ever reaches.
PAUSED_INDEFINITELY = datetime(9999, 12, 31, tzinfo=timezone.utc)


class Subscriber(db.Model):
    """One address on one paper. Unconfirmed while `confirmed_at` is null; only confirmed rows
    get alerts. `sections` is a list of section names, or null for every section (those added
    later too). `unsubscribed_at` set means off the list (the row stays so the history of what
    was sent survives a re-subscription). `email` is stored lower-cased: the unique key.

    The suppression list: `bounces` counts the alerts the mail server refused for good (5xx);
    `suppressed_at` set (with `suppressed_reason`, the last refusal) means the address is never
    sent an alert again, though it stays on the list (services/delivery/alerts.py decides when).

    A pause (the preference centre): no alert is planned while `paused_until` is in the future
    (PAUSED_INDEFINITELY: until the reader resumes). Once it has passed it stays as a floor: the
    next window starts no earlier, so what aired during the pause is never sent."""

    __tablename__ = "subscribers"
    __table_args__ = (
        UniqueConstraint("paper_id", "email"),
        Index("ix_subscribers_paper_confirmed", "paper_id", "confirmed_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    paper_id: Mapped[int] = mapped_column(ForeignKey("papers.id", ondelete="CASCADE"))
    email: Mapped[str] = mapped_column(String(320))
    cadence: Mapped[str] = mapped_column(String(16), default="daily")
    sections: Mapped[list | None] = mapped_column(JSONType)
    cast: Mapped[bool] = mapped_column(Boolean, default=True)
    webhook_url: Mapped[str | None] = mapped_column(String(2000))
    webhook_secret: Mapped[str | None] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    confirm_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    unsubscribed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    bounces: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    suppressed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    suppressed_reason: Mapped[str | None] = mapped_column(String(1000))
    paused_until: Mapped[datetime | None] = mapped_column(UTCDateTime)

    paper: Mapped[Paper] = relationship(lazy="raise_on_sql")


class AlertDelivery(db.Model):
    """One alert window of one subscriber, recorded BEFORE it is sent and marked `sent_at` after.

    The window is half-open, [`window_start`, `window_end`): pieces that went on air in it are
    the alert; a subscriber's next window starts where this one ends.
    `period` names the cadence slot (`2026-11-20` daily, `2026-W47` weekly, the run time for
    instant); the two unique constraints make a second run, or a concurrent one, unable to
    record the same slot or fork the chain of windows twice.

    Failures: `attempts` counts every try and `last_error` keeps the last one. A temporary
    refusal (4xx) sets `next_attempt_at` (no row is read before it); a permanent one (5xx), too
    many temporary ones, or a message that cannot be built set `failed_at`: the row is done,
    never sent. A row is pending while `sent_at` and `failed_at` are both null.
    """

    __tablename__ = "alert_deliveries"
    __table_args__ = (
        UniqueConstraint("subscriber_id", "period"),
        UniqueConstraint("subscriber_id", "window_start"),
        Index("ix_alert_deliveries_unsent", "sent_at", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    subscriber_id: Mapped[int] = mapped_column(ForeignKey("subscribers.id", ondelete="CASCADE"))
    period: Mapped[str] = mapped_column(String(40))
    window_start: Mapped[datetime] = mapped_column(UTCDateTime)
    window_end: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A sender's lease: until then no other sender takes the row (services/delivery/claims.py).
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime)

    subscriber: Mapped[Subscriber] = relationship(lazy="raise_on_sql")


class WebhookDelivery(DeliveryState, db.Model):
    """The webhook outbox: one signed JSON POST to a subscriber's webhook. `body` is the exact
    raw body (retries send the same bytes; the signature is made at each attempt). Delivered
    when `delivered_at` is set; given up when `failed_at` is set; else retried at
    `next_attempt_at` with exponential backoff. `last_status` is the HTTP status or null when
    the connection failed."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "delivered_at", "failed_at", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[str] = mapped_column(String(40), unique=True)
    subscriber_id: Mapped[int] = mapped_column(ForeignKey("subscribers.id", ondelete="CASCADE"), index=True)
    alert_id: Mapped[int | None] = mapped_column(ForeignKey("alert_deliveries.id", ondelete="CASCADE"), unique=True)
    event: Mapped[str] = mapped_column(String(40))
    url: Mapped[str] = mapped_column(String(2000))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)

    subscriber: Mapped[Subscriber] = relationship(lazy="raise_on_sql")
