"""The delivery state shared by the outboxes of HTTP posts (subscriber webhooks in
models/subscriber.py, content webhooks in models/webhook.py): one mixin, so both tables keep the
same columns with the same types, defaults and nullability that their migrations created."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.types import UTCDateTime


class DeliveryState:
    """Columns of a retried POST. `attempts`: tries so far (int, 0 before the first);
    `next_attempt_at`: aware UTC datetime when it is next due (also a claim's lease);
    `last_status`: the last HTTP status, null when the connection failed or before any try;
    `last_error`: the last failure's text; `delivered_at` / `failed_at`: aware UTC datetimes
    of success / giving up. Pending while both of those are null."""

    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_status: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
