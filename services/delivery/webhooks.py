"""Signed webhook deliveries through an outbox (docs/API.md "webhooks"; docs/ALERTS.md).

A delivery is a JSON POST `{id, type, created_at, data}` with `X-Desk-Event`,
`X-Desk-Delivery` and `X-Desk-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
`t` is taken when each request is sent. Only a 2xx answer counts; redirects are not followed;
each attempt is bounded in total by the one HTTP client (services/http.py: 5 s for resolving,
connecting, sending and the whole answer; the target checked when the URL is given and again
at each attempt, no DNS rebinding). `QUEUE` is run by the queue engine
(services/delivery/queues.py): WEBHOOK_CONCURRENCY POSTs at once, WEBHOOK_RUN_SECONDS a run,
MAX_ATTEMPTS with the one backoff (1 min doubling, 6 h cap); a refusal is retried too.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from extensions import db
from models import Subscriber, WebhookDelivery
from models.clock import rfc3339
from services import http
from services.delivery import queues

MAX_ATTEMPTS = 8
USER_AGENT = "PaperDesk-Webhooks/1"


def new_secret() -> str:
    """A fresh webhook secret: `whsec_` + 32 random bytes, URL-safe."""
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Desk-Signature` value for `body` sent at `timestamp` (unix seconds)."""
    mac = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(secret: str, header: str, body: bytes, now: int, tolerance: int = 300) -> bool:
    """The receiver's check (the recipe in docs/ALERTS.md): a `v1` matching the HMAC of
    "<t>.<body>" and `t` within `tolerance` seconds of `now`."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


def post(url: str, body: bytes, headers: dict, *, allow_private: bool,
         timeout: float = http.TIMEOUT_SECONDS) -> http.Attempt:
    """One webhook POST of the JSON `body` with `headers` (services/http.py `post`: at
    most `timeout` seconds in all, no redirects, the target checked at the attempt)."""
    return http.post(url, body, {**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT},
                     allow_private=allow_private, timeout=timeout)


def enqueue(subscriber: Subscriber, event: str, data: dict, now: datetime,
            alert_id: int | None = None) -> WebhookDelivery:
    """Add a delivery of `data` to the outbox (flushes; the caller commits)."""
    delivery_id = "dlv_" + secrets.token_hex(12)
    body = json.dumps({"id": delivery_id, "type": event, "created_at": rfc3339(now), "data": data},
                      separators=(",", ":"), ensure_ascii=False)
    row = WebhookDelivery(delivery_id=delivery_id, subscriber_id=subscriber.id, alert_id=alert_id,
                          event=event, url=subscriber.webhook_url, body=body, created_at=now,
                          attempts=0, next_attempt_at=now)
    db.session.add(row)
    db.session.flush()
    return row


@dataclass(frozen=True)
class _Job:
    id: int
    delivery_id: str
    event: str
    url: str
    body: bytes
    secret: str
    attempts: int

    @property
    def target(self) -> str:
        """Where it goes (the circuit breaker's host)."""
        return self.url


def _load(row) -> _Job:
    secret = db.session.scalar(select(Subscriber.webhook_secret).where(Subscriber.id == row.subscriber_id))
    return _Job(row.id, row.delivery_id, row.event, row.url, row.body.encode("utf-8"), secret or "", row.attempts)


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> http.Attempt:
    # Signed as the request leaves, not when the run started: receivers refuse a `t` more than
    # 300 seconds old, and a run behind slow receivers or a slow mail relay can be older.
    timestamp = int(clock().timestamp())
    return post(job.url, job.body, {"X-Desk-Event": job.event, "X-Desk-Delivery": job.delivery_id,
                                    "X-Desk-Signature": sign(job.secret, timestamp, job.body)},
                allow_private=allow_private, timeout=timeout)


QUEUE = queues.Queue(
    name="webhooks", model=WebhookDelivery, settings_prefix="WEBHOOK", max_attempts=MAX_ATTEMPTS,
    returning=(WebhookDelivery.delivery_id, WebhookDelivery.event, WebhookDelivery.url, WebhookDelivery.body,
               WebhookDelivery.attempts, WebhookDelivery.subscriber_id),
    # A subscriber's receiver that refuses is tried again: it may be fixed within the attempts.
    load=_load, send=_send)
"""The queue of subscriber webhook deliveries (services/delivery/queues.py runs it): WEBHOOK_*."""
