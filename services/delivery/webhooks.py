"""Signed webhook deliveries through an outbox (docs/API.md "webhooks"; docs/ALERTS.md).

A delivery is a JSON POST `{id, type, created_at, data}` with `X-Desk-Event`,
`X-Desk-Delivery` and `X-Desk-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
`t` is taken when each request is sent. Only a 2xx answer counts; redirects are not followed;
each attempt is bounded in total (TIMEOUT_SECONDS for connecting, sending and the whole answer,
not per read), and a run's deliveries by CONCURRENCY POSTs at once and RUN_BUDGET_SECONDS.
Targets are checked when the URL is given and again at each attempt, against the addresses
the name resolves to *then*, and the connection goes to the checked address (no DNS rebinding).
"""
from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import secrets
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import select

from extensions import db
from models import Subscriber, WebhookDelivery
from models.clock import rfc3339, utcnow
from services.delivery import claims, post_queue
from services.errors import Invalid

TIMEOUT_SECONDS = 5.0
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


class WebhookTargetError(Invalid):
    """The URL is not an acceptable webhook target (scheme, host or resolved address): a 422
    on the `webhook` field when a request names it. `str()` is the reason alone, which a
    delivery attempt records as its error."""

    def __init__(self, reason: str):
        super().__init__(errors={"webhook": [reason]})
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


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


# IPv6 forms that carry an IPv4 address a translator or tunnel relays to: NAT64 (RFC 6052's
# well-known prefix, RFC 8215's local-use prefix, the IPv4 address in the last 32 bits) and the
# deprecated IPv4-compatible form (::a.b.c.d). 6to4, Teredo and IPv4-mapped have their own
# accessors in `ipaddress`.
_EMBEDDING_LAST_32 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"),
                      ipaddress.ip_network("::/96"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for: IPv4-mapped (::ffff:a.b.c.d), 6to4
    (2002::/16), Teredo (2001::/32: its server and its client), NAT64 (64:ff9b::/96,
    64:ff9b:1::/48) and IPv4-compatible (::/96); [] for any other address."""
    if ip.ipv4_mapped:
        return [ip.ipv4_mapped]
    if ip.sixtofour:
        return [ip.sixtofour]
    if ip.teredo:
        return list(ip.teredo)
    if any(ip in net for net in _EMBEDDING_LAST_32):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return []


def is_public_address(address: str) -> bool:
    """Whether a webhook may be delivered to `address` (an IPv4 or IPv6 literal, an IPv6 zone
    `%eth0` ignored): only a globally routable unicast address (`ipaddress` `is_global`), so
    loopback, private, shared (100.64.0.0/10), link-local, reserved, documentation, multicast
    and unspecified addresses are refused. An IPv6 form that embeds an IPv4 address (see
    `embedded_ipv4`) is judged by the IPv4 addresses it embeds. Raises ValueError on a string
    that is not an address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded:
            return all(is_public_address(str(v4)) for v4 in embedded)
    return ip.is_global and not (ip.is_multicast or ip.is_loopback or ip.is_link_local
                                 or ip.is_private or ip.is_reserved or ip.is_unspecified)


def check_url(url: str, *, allow_private: bool, resolve: bool = True) -> list[str]:
    """Check a webhook URL; return the addresses it may be delivered to.

    https only, unless `allow_private` (then http too). With `resolve`, every address the
    host resolves to must be public (`is_public_address`) unless `allow_private`. Raises
    WebhookTargetError (a 422 on the `webhook` field).
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. "https://[::1/hook": an unbalanced bracket
        raise WebhookTargetError("The webhook URL is malformed.") from exc
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise WebhookTargetError("The webhook URL must use https.")
    if not parts.hostname or parts.username or parts.password:
        raise WebhookTargetError("The webhook URL needs a host and no credentials.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise WebhookTargetError("The webhook URL has a bad port.") from exc
    if not resolve:
        return []
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise WebhookTargetError("The webhook host does not resolve.") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_private and not all(is_public_address(a) for a in addresses):
        raise WebhookTargetError("The webhook host resolves to an address that is not public (loopback, "
                                 "private, shared, link-local or reserved).")
    return addresses


class _Deadline:
    """Cuts a connection's socket once an attempt has run `seconds` in all. The socket timeout
    bounds each read, not the answer: a receiver dripping a byte a second would otherwise hold
    the sender for ever."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float):
        self.conn, self.expired = conn, False
        self.timer = threading.Timer(seconds, self._cut)
        self.timer.daemon = True

    def _cut(self) -> None:
        self.expired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the read blocked on it
            except OSError:
                pass

    def check(self) -> None:
        """Raise TimeoutError if the deadline passed before the socket could be cut."""
        if self.expired:
            raise TimeoutError("deadline passed while connecting")


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a pre-checked address, with SNI and certificate checks for the URL's host."""

    def __init__(self, host, address, deadline_seconds, **kwargs):
        super().__init__(host, **kwargs)
        self._address = address
        self.deadline = _Deadline(self, deadline_seconds)

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = sock  # visible to the deadline during the TLS handshake
        self.deadline.check()
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host, address, deadline_seconds, **kwargs):
        super().__init__(host, **kwargs)
        self._address = address
        self.deadline = _Deadline(self, deadline_seconds)

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self.deadline.check()


@dataclass
class Attempt:
    ok: bool
    status: int | None
    error: str | None


def post(url: str, body: bytes, headers: dict, *, allow_private: bool,
         timeout: float = TIMEOUT_SECONDS) -> Attempt:
    """One POST attempt of at most `timeout` seconds in all (connect, send, answer). Never
    follows a redirect (a 3xx is a failure); never raises for network trouble or a refused
    target: the outcome is in the returned Attempt."""
    try:
        addresses = check_url(url, allow_private=allow_private)
    except WebhookTargetError as exc:
        return Attempt(False, None, str(exc))
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
    extra = {"context": ssl.create_default_context()} if parts.scheme == "https" else {}
    conn = kind(parts.hostname, addresses[0], timeout, port=parts.port, timeout=timeout, **extra)
    conn.deadline.timer.start()
    try:
        conn.request("POST", path, body=body, headers={
            **headers, "Content-Type": "application/json", "User-Agent": USER_AGENT})
        response = conn.getresponse()
        response.read(65536)
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        if conn.deadline.expired:
            return Attempt(False, None, f"timed out: no complete answer within {timeout:g}s")
        return Attempt(False, None, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        conn.deadline.timer.cancel()
        conn.close()
    return Attempt(200 <= status < 300, status, None if 200 <= status < 300 else f"HTTP {status}")


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


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> Attempt:
    # Signed as the request leaves, not when the run started: receivers refuse a `t` more than
    # 300 seconds old, and a run behind slow receivers or a slow mail relay can be older.
    timestamp = int(clock().timestamp())
    return post(job.url, job.body, {"X-Desk-Event": job.event, "X-Desk-Delivery": job.delivery_id,
                                    "X-Desk-Signature": sign(job.secret, timestamp, job.body)},
                allow_private=allow_private, timeout=timeout)


def _record(job: _Job, attempt: Attempt, report: post_queue.Report, at: datetime) -> None:
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

    def send(job: _Job, timeout: float) -> Attempt:
        return _send(job, allow_private=allow_private, clock=clock, timeout=timeout)

    def record(job: _Job, attempt: Attempt) -> None:
        _record(job, attempt, report, clock())

    report.left = run_concurrently(claim, send, record, concurrency=concurrency, budget=budget, limit=limit)
    return report


def run_concurrently(claim: Callable[[set[int]], object | None], send: Callable[[object, float], Attempt],
                     record: Callable[[object, Attempt], None], *, concurrency: int, budget: float,
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
