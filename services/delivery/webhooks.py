"""Signed webhook deliveries through an outbox (docs/API.md "webhooks"; docs/ALERTS.md).

A delivery is a JSON POST `{id, type, created_at, data}` with `X-Desk-Event`,
`X-Desk-Delivery` and `X-Desk-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
`t` is taken when each request is sent. Only a 2xx answer counts; redirects are not followed;
each attempt is bounded in total (TIMEOUT_SECONDS for connecting, sending and the whole answer,
not per read), and a run's deliveries by CONCURRENCY POSTs at once and RUN_BUDGET_SECONDS.
Targets are checked when the URL is given and again at each attempt by the one HTTP client
(services/http.py: no DNS rebinding, one deadline for the whole call).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select

from extensions import db
from models import Subscriber, WebhookDelivery
from models.clock import rfc3339, utcnow
from services import http
from services.delivery import claims, post_queue

TIMEOUT_SECONDS = http.TIMEOUT_SECONDS
# An attempt cut short by the end of the run's budget still gets this long.
MIN_TIMEOUT_SECONDS = 1.0
# POSTs in flight at once in one run: a hanging receiver holds one of them, not the run.
CONCURRENCY = 4
# Wall time one run spends starting deliveries; the rest waits for the next run.
RUN_BUDGET_SECONDS = 120.0
# How long a claimed delivery stays out of every run's reach (one attempt takes at most
# TIMEOUT_SECONDS); a run killed mid-POST leaves it to be retried after this.
LEASE = timedelta(minutes=2)
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
         timeout: float = TIMEOUT_SECONDS) -> http.Attempt:
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


def _claim(now: datetime, tried: set[int], clock: Callable[[], datetime]) -> _Job | None:
    """Take the next due delivery out of every sender's reach for LEASE (its `next_attempt_at`
    moved ahead, committed), or None when nothing is due. `claims.claim` makes it one
    statement, so senders running at once, on any hosts (PostgreSQL) or in turn (SQLite),
    never claim one row twice; the lease, not a lock held during the POST, keeps it claimed,
    so each result can be committed while other POSTs are in flight."""
    due = [WebhookDelivery.delivered_at.is_(None), WebhookDelivery.failed_at.is_(None),
           WebhookDelivery.next_attempt_at <= now]
    if tried:
        due.append(WebhookDelivery.id.not_in(tried))
    claimed = claims.claim(db.session, WebhookDelivery, due=due, order_by=(WebhookDelivery.id,), limit=1,
                           lease={"next_attempt_at": clock() + LEASE},
                           returning=(WebhookDelivery.id, WebhookDelivery.delivery_id, WebhookDelivery.event,
                                      WebhookDelivery.url, WebhookDelivery.body, WebhookDelivery.attempts,
                                      WebhookDelivery.subscriber_id))
    if not claimed:
        db.session.commit()
        return None
    [row] = claimed
    secret = db.session.scalar(select(Subscriber.webhook_secret).where(Subscriber.id == row.subscriber_id))
    db.session.commit()
    return _Job(row.id, row.delivery_id, row.event, row.url, row.body.encode("utf-8"), secret or "",
                row.attempts)


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> http.Attempt:
    # Signed as the request leaves, not when the run started: receivers refuse a `t` more than
    # 300 seconds old, and a run behind slow receivers or a slow mail relay can be older.
    timestamp = int(clock().timestamp())
    return post(job.url, job.body, {"X-Desk-Event": job.event, "X-Desk-Delivery": job.delivery_id,
                                    "X-Desk-Signature": sign(job.secret, timestamp, job.body)},
                allow_private=allow_private, timeout=timeout)


def _record(job: _Job, attempt: http.Attempt, report: post_queue.Report, at: datetime) -> None:
    # A subscriber's receiver that refuses is tried again: it may be fixed within the attempts.
    post_queue.record(WebhookDelivery, job.id, post_queue.outcome(
        attempt, job.attempts + 1, report, at, max_attempts=MAX_ATTEMPTS, refusal_gives_up=False))


def deliver_due(now: datetime, *, allow_private: bool, limit: int | None = None,
                concurrency: int = CONCURRENCY, budget: float = RUN_BUDGET_SECONDS,
                clock: Callable[[], datetime] = utcnow) -> post_queue.Report:
    """Attempt every outbox delivery due at `now`, up to `concurrency` POSTs at once (each in a
    worker thread; the database work stays in the caller's thread), within `budget` seconds.

    Each delivery is claimed (`_claim`: a lease of LEASE, committed), posted and signed with
    `clock()` as its request leaves, and its result committed as soon as it is known: a 2xx
    marks it delivered; a failure schedules the next attempt at `clock() + post_queue.backoff(attempts)`;
    after MAX_ATTEMPTS it is given up. No new delivery starts once `budget` seconds (wall
    time) have passed since the call, and each attempt's own timeout (TIMEOUT_SECONDS) is cut
    to what is left of the budget, so a run lasts at most about `budget` + 1 second whatever
    the receivers do; what is still due waits for the next run (`report.left`). `limit` caps
    the deliveries tried. A run killed mid-POST leaves its rows leased: they are tried again
    once the lease has passed."""
    report = post_queue.Report()

    def claim(tried: set[int]) -> _Job | None:
        return _claim(now, tried, clock)

    def send(job: _Job, timeout: float) -> http.Attempt:
        return _send(job, allow_private=allow_private, clock=clock, timeout=timeout)

    def record(job: _Job, attempt: http.Attempt) -> None:
        _record(job, attempt, report, clock())

    report.left = run_concurrently(claim, send, record, concurrency=concurrency, budget=budget, limit=limit)
    return report


def run_concurrently(claim: Callable[[set[int]], object | None], send: Callable[[object, float], http.Attempt],
                     record: Callable[[object, http.Attempt], None], *, concurrency: int, budget: float,
                     limit: int | None = None) -> bool:
    """The delivery loop shared by subscriber webhooks and content webhooks
    (services/delivery/content_webhooks.py): `claim(tried)` takes the next due job not in `tried`
    (a set of row ids; it needs an `id`) or None; `send(job, timeout)` runs in a worker thread,
    up to `concurrency` at once, with `timeout` seconds (TIMEOUT_SECONDS, cut to what is left
    of the budget, at least MIN_TIMEOUT_SECONDS); `record(job, attempt)` runs in the caller's
    thread (all database work stays there). No job starts after `budget` seconds (wall time);
    `limit` caps the jobs tried. Returns True when the budget ran out with jobs still due."""
    tried: set[int] = set()
    deadline = time.monotonic() + budget
    running: dict[Future, object] = {}
    exhausted = left = False
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="webhook") as pool:
        while True:
            while not exhausted and len(running) < max(1, concurrency) and (limit is None or len(tried) < limit):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    left = True
                    break
                job = claim(tried)
                if job is None:
                    exhausted = True
                    break
                tried.add(job.id)
                running[pool.submit(send, job, max(MIN_TIMEOUT_SECONDS, min(TIMEOUT_SECONDS, remaining)))] = job
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                record(running.pop(future), future.result())
    return left


def pending_count() -> int:
    """Deliveries neither delivered nor given up."""
    return post_queue.pending_count(WebhookDelivery)
