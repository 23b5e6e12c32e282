"""Content webhooks for site owners (docs/API.md "Content webhooks"), after Standard Webhooks
(standardwebhooks.com).

An admin registers an endpoint (`create_endpoint`) for some of CONTENT_EVENTS. The newsroom
calls `emit` (through `piece_aired`, `piece_revised`, `piece_unaired`, `edition_published`)
inside its own transaction: one `content_deliveries` row per active endpoint subscribed to the
event, committed with the change itself or not at all (the outbox pattern). `flask
drain-outbox` posts them (`deliver_due`): the body is `{"type", "timestamp", "data"}`, the
headers `webhook-id` (the message id, the same on every retry and redelivery),
`webhook-timestamp` (unix seconds, taken as each attempt leaves) and `webhook-signature:
v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, signed by the `standardwebhooks` package
with the endpoint's `whsec_` secret.

Only a 2xx counts; redirects are not followed; targets are checked at input and again at each
attempt, against the resolved address, by the subscriber webhooks' own code
(services/delivery/webhooks.py `check_url`, `post`, `run_concurrently`). A failed attempt is
retried with exponential backoff (1 minute doubling, at most 6 hours) until the message is 24
hours old, then given up. An endpoint whose attempts have all failed for 24 hours (its first
failure of the current streak is that old) is disabled with the reason; any success ends the
streak. A disabled endpoint gets no new messages and its pending ones are given up.
"""
from __future__ import annotations

import base64
import functools
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import delete, func, select, update
from standardwebhooks import Webhook

from extensions import db
from models import CONTENT_EVENTS, PING_EVENT, ContentDelivery, Edition, Paper, Piece, PieceRevision, WebhookEndpoint
from models.clock import rfc3339, utcnow
from services.delivery import claims, post_queue, webhooks
from services.errors import Conflict, Invalid, NotFound
from services.links import Links, PaperOrigins

# How long a message is retried, and how long an endpoint may fail before it is disabled.
RETRY_WINDOW = timedelta(hours=24)
DISABLE_AFTER = timedelta(hours=24)
MAX_ENDPOINTS = 20  # per paper: each airing writes one row per endpoint
PAGE = 50


def new_secret() -> str:
    """A fresh signing secret in the form the `standardwebhooks` package reads:
    `whsec_` + standard base64 of 24 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def sign(secret: str, message_id: str, at: datetime, body: str) -> str:
    """The `webhook-signature` value (`v1,<base64>`) of `body` sent as `message_id` at `at`
    (aware UTC; whole seconds count)."""
    return Webhook(secret).sign(message_id, at, body)


# ----------------------------------------------------------------------------- endpoints


def check_target(url: str) -> None:
    """Refuse a URL subscriber webhooks would refuse (https only; loopback, private, shared,
    link-local and reserved addresses unless WEBHOOK_ALLOW_PRIVATE): Invalid (422) on `url`."""
    try:
        webhooks.check_url(url, allow_private=current_app.config["WEBHOOK_ALLOW_PRIVATE"])
    except webhooks.WebhookTargetError as exc:
        raise Invalid(errors={"url": [exc.reason]}) from exc


def create_endpoint(paper: Paper, url: str, events: list[str], *, now: datetime) -> WebhookEndpoint:
    """Register `url` for `events` (a subset of CONTENT_EVENTS, kept in that order) on
    `paper`; the row carries its new secret. Raises Invalid (422) for a refused target or an
    unknown event, Conflict (409) past MAX_ENDPOINTS. Flushes; the caller commits."""
    unknown = [e for e in events if e not in CONTENT_EVENTS]
    if unknown or not events:
        raise Invalid(errors={"events": [f"Unknown event(s): {', '.join(unknown)}; known: {', '.join(CONTENT_EVENTS)}."
                                         if unknown else "Name at least one event."]})
    check_target(url)
    count = db.session.scalar(select(func.count()).select_from(WebhookEndpoint)
                              .where(WebhookEndpoint.paper_id == paper.id))
    if count >= MAX_ENDPOINTS:
        raise Conflict(f"This paper already has {MAX_ENDPOINTS} webhook endpoints; delete one first.")
    endpoint = WebhookEndpoint(public_id="wh_" + secrets.token_hex(10), paper_id=paper.id, url=url,
                               events=[e for e in CONTENT_EVENTS if e in events], secret=new_secret(),
                               created_at=now)
    db.session.add(endpoint)
    db.session.flush()
    return endpoint


def endpoints(paper: Paper) -> list[WebhookEndpoint]:
    """The paper's endpoints, oldest first."""
    return list(db.session.scalars(select(WebhookEndpoint).where(WebhookEndpoint.paper_id == paper.id)
                                   .order_by(WebhookEndpoint.id)))


def find_endpoint(paper: Paper, public_id: str) -> WebhookEndpoint:
    """The paper's endpoint `public_id` (`wh_...`). Raises NotFound."""
    endpoint = db.session.scalar(select(WebhookEndpoint).where(
        WebhookEndpoint.paper_id == paper.id, WebhookEndpoint.public_id == public_id))
    if endpoint is None:
        raise NotFound("No such webhook endpoint on this paper.")
    return endpoint


def delete_endpoint(endpoint: WebhookEndpoint) -> None:
    """Delete the endpoint and its whole delivery log: nothing more is posted to it, pending
    messages included (a drainer holding one mid-POST finishes that attempt only)."""
    db.session.execute(delete(ContentDelivery).where(ContentDelivery.endpoint_id == endpoint.id))
    db.session.delete(endpoint)
    db.session.flush()


# ----------------------------------------------------------------------------- emission


def _body(event_type: str, at: datetime, data: dict) -> str:
    return _dumps({"type": event_type, "timestamp": rfc3339(at), "data": data})


def _dumps(message: dict) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def _row(endpoint_id: int, event_type: str, body: str, message_id: str, due: datetime,
         piece_id: int | None) -> ContentDelivery:
    row = ContentDelivery(delivery_id="dlv_" + secrets.token_hex(12), message_id=message_id,
                          endpoint_id=endpoint_id, event=event_type, piece_id=piece_id, body=body,
                          created_at=due, attempts=0, next_attempt_at=due)
    db.session.add(row)
    return row


def emit(paper: Paper, event_type: str, data: dict | Callable[[], dict], *, now: datetime,
         deliver_at: datetime | None = None, piece_id: int | None = None) -> list[ContentDelivery]:
    """Write one message of `event_type` (one of CONTENT_EVENTS) with `data` (or what
    `data()` returns, called only when some endpoint listens) for every active endpoint of
    `paper` subscribed to it, in the caller's transaction (flushed, not committed), due at
    `deliver_at` or `now`; the body's `timestamp` is `now` (when the event happened).
    `piece_id` lets `cancel_for_piece` find it. Returns the rows (none without endpoints)."""
    targets = [endpoint_id for endpoint_id, events in db.session.execute(
        select(WebhookEndpoint.id, WebhookEndpoint.events).where(
            WebhookEndpoint.paper_id == paper.id, WebhookEndpoint.disabled_at.is_(None))).all()
        if event_type in (events or [])]
    if not targets:
        return []
    due = deliver_at or now
    body = _body(event_type, now, data() if callable(data) else data)
    rows = [_row(endpoint_id, event_type, body, "msg_" + secrets.token_hex(12), due, piece_id)
            for endpoint_id in targets]
    db.session.flush()
    return rows


def _links(paper: Paper) -> Links:
    # The paper's canonical origin, not a request's host: a scheduled airing has no request,
    # and a site owner's mirror wants one stable URL per piece.
    return PaperOrigins.from_config(current_app.config).links(paper)


# The revision kinds that tell a reader the piece they saw was wrong or unclear.
CORRECTING = ("correction", "clarification", "retraction")


def piece_data(paper: Paper, piece: Piece) -> dict:
    """A piece event's `data`: `{id, slug, rev, content_hash, headline, url, api_url,
    on_air_at}` (no prose: the receiver fetches `api_url`)."""
    links = _links(paper)
    return {"id": piece.id, "slug": piece.slug, "rev": piece.rev, "content_hash": piece.content_hash,
            "headline": piece.headline, "url": links.story_page(piece.slug),
            "api_url": links.api(f"/stories/{piece.id}"),
            "on_air_at": rfc3339(piece.on_air_at) if piece.on_air_at else None}


def on_changes(paper: Paper, changes: list, now: datetime) -> None:
    """change_stream consumer: one message per change for every endpoint subscribed to it,
    `piece.aired`, `piece.revised` or `piece.unaired`, timestamped when the change became
    public (its `at`), due now; a correction, clarification or retraction also `piece.corrected`
    (docs/CORRECTIONS.md). A piece's data is that of the revision the change names, so a
    late pass never sends a newer headline under an older `rev`; a piece deleted since has no
    content to announce, and only its `unaired` tombstone `{id, rev}` is sent."""
    pieces = {piece.id: piece for piece in db.session.scalars(
        select(Piece).where(Piece.id.in_({change.piece_id for change in changes})))}
    for change in changes:
        piece = pieces.get(change.piece_id)
        if change.type == "unaired":
            emit(paper, "piece.unaired", {"id": change.piece_id, "rev": change.rev}, now=change.at,
                 deliver_at=now, piece_id=change.piece_id)
        elif piece is not None:
            emit(paper, f"piece.{change.type}", functools.partial(_change_data, paper, piece, change),
                 now=change.at, deliver_at=now, piece_id=piece.id)
            if change.kind in CORRECTING:
                emit(paper, "piece.corrected", functools.partial(_change_data, paper, piece, change),
                     now=change.at, deliver_at=now, piece_id=piece.id)


def _change_data(paper: Paper, piece: Piece, change) -> dict:
    data = piece_data(paper, piece)
    if change.rev != piece.rev:
        basis = db.session.scalar(select(PieceRevision.basis).where(
            PieceRevision.piece_id == piece.id, PieceRevision.rev == change.rev)) or {}
        data["headline"] = basis.get("headline", data["headline"])
    data["rev"], data["content_hash"] = change.rev, change.content_hash
    if change.kind is not None:  # a typed revision says what it is and why
        data["kind"], data["note"] = change.kind, change.note
    return data


def edition_published(paper: Paper, edition: Edition, *, now: datetime) -> None:
    """Emit `edition.published`: `{day, title, summary, url, video_url, poster_url,
    published_at}`."""
    emit(paper, "edition.published", lambda: {
        "day": edition.day.isoformat(), "title": edition.title, "summary": edition.summary,
        "url": _links(paper).edition_page(edition.day), "video_url": edition.video_url,
        "poster_url": edition.poster_url, "published_at": rfc3339(edition.published_at)}, now=now)


def _require_active(endpoint: WebhookEndpoint) -> None:
    if endpoint.disabled_at is not None:
        raise Conflict(f"This endpoint is disabled ({endpoint.disabled_reason}); delete it and register it again.")


def ping(endpoint: WebhookEndpoint, *, now: datetime) -> ContentDelivery:
    """Queue a `webhook.ping` test message to `endpoint`, due now. Raises Conflict (409) for a
    disabled endpoint. Flushes; the caller commits."""
    _require_active(endpoint)
    row = _row(endpoint.id, PING_EVENT, _body(PING_EVENT, now, {"endpoint": endpoint.public_id}),
               "msg_" + secrets.token_hex(12), now, None)
    db.session.flush()
    return row


def redeliver(endpoint: WebhookEndpoint, delivery_id: str, *, now: datetime) -> ContentDelivery:
    """Queue a new attempt series of delivery `delivery_id`'s message: a new row with the same
    `message_id` (so the same `webhook-id`) and body, due now. Raises NotFound, or Conflict for
    a disabled endpoint. Flushes; the caller commits."""
    old = db.session.scalar(select(ContentDelivery).where(
        ContentDelivery.endpoint_id == endpoint.id, ContentDelivery.delivery_id == delivery_id))
    if old is None:
        raise NotFound("No such delivery of this webhook endpoint.")
    _require_active(endpoint)
    row = _row(endpoint.id, old.event, old.body, old.message_id, now, old.piece_id)
    db.session.flush()
    return row


# ----------------------------------------------------------------------------- the log


def status_of(row: ContentDelivery) -> str:
    """`delivered`, `failed` or `pending`."""
    return "delivered" if row.delivered_at else "failed" if row.failed_at else "pending"


def deliveries_page(endpoint: WebhookEndpoint, *, before: int | None, limit: int = PAGE
                    ) -> tuple[list[ContentDelivery], int | None]:
    """The endpoint's deliveries, newest first, `limit` at a time, those with an id below
    `before` (None: from the newest); returns (rows, the last row's id when more follow, else
    None). The view pages them with the one cursor format (blueprints/api/paging.py)."""
    query = select(ContentDelivery).where(ContentDelivery.endpoint_id == endpoint.id)
    if before is not None:
        query = query.where(ContentDelivery.id < before)
    rows = list(db.session.scalars(query.order_by(ContentDelivery.id.desc()).limit(limit + 1)))
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].id if more and rows else None)


# ----------------------------------------------------------------------------- sending


@dataclass(frozen=True)
class _Job:
    id: int
    endpoint_id: int
    message_id: str
    url: str
    secret: str
    body: str
    attempts: int
    created_at: datetime


def _claim(now: datetime, tried: set[int], clock: Callable[[], datetime]) -> _Job | None:
    # Same lease as subscriber webhooks: `next_attempt_at` moved LEASE ahead, committed.
    active = select(WebhookEndpoint.id).where(WebhookEndpoint.disabled_at.is_(None))
    due = [ContentDelivery.delivered_at.is_(None), ContentDelivery.failed_at.is_(None),
           ContentDelivery.next_attempt_at <= now, ContentDelivery.endpoint_id.in_(active)]
    if tried:
        due.append(ContentDelivery.id.not_in(tried))
    claimed = claims.claim(db.session, ContentDelivery, due=due, order_by=(ContentDelivery.id,), limit=1,
                           lease={"next_attempt_at": clock() + webhooks.LEASE},
                           returning=(ContentDelivery.id, ContentDelivery.endpoint_id, ContentDelivery.message_id,
                                      ContentDelivery.body, ContentDelivery.attempts, ContentDelivery.created_at))
    if not claimed:
        db.session.commit()
        return None
    [row] = claimed
    target = db.session.execute(select(WebhookEndpoint.url, WebhookEndpoint.secret)
                                .where(WebhookEndpoint.id == row.endpoint_id)).first()
    db.session.commit()
    if target is None:  # deleted between the claim and now: its rows went with it
        return _Job(row.id, row.endpoint_id, row.message_id, "", "", row.body, row.attempts, row.created_at)
    return _Job(row.id, row.endpoint_id, row.message_id, target.url, target.secret, row.body, row.attempts,
                row.created_at)


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> webhooks.Attempt:
    if not job.url:
        return webhooks.Attempt(False, None, "the endpoint was deleted")
    # Timestamped and signed as the request leaves: receivers refuse a timestamp more than
    # five minutes off, and a run behind slow receivers can be older than that.
    at = clock().replace(microsecond=0)
    headers = {"webhook-id": job.message_id, "webhook-timestamp": str(int(at.timestamp())),
               "webhook-signature": sign(job.secret, job.message_id, at, job.body)}
    return webhooks.post(job.url, job.body.encode("utf-8"), headers, allow_private=allow_private, timeout=timeout)


def _record(job: _Job, attempt: webhooks.Attempt, report: post_queue.Report, at: datetime) -> None:
    values: dict = {"attempts": job.attempts + 1, "last_status": attempt.status, "last_error": attempt.error}
    endpoint = update(WebhookEndpoint).where(WebhookEndpoint.id == job.endpoint_id)
    if attempt.ok:
        values["delivered_at"] = at
        report.delivered += 1
        db.session.execute(endpoint.values(failing_since=None))
    else:
        report.failed += 1
        db.session.execute(endpoint.values(failing_since=func.coalesce(WebhookEndpoint.failing_since, at)))
        since = db.session.scalar(select(WebhookEndpoint.failing_since).where(WebhookEndpoint.id == job.endpoint_id))
        if at - job.created_at >= RETRY_WINDOW:
            values["failed_at"] = at
            report.given_up += 1
        else:
            values["next_attempt_at"] = at + post_queue.backoff(job.attempts + 1)
        if since is not None and at - since >= DISABLE_AFTER:
            values["failed_at"] = at
            _disable(job.endpoint_id, since, attempt, at)
            report.disabled += 1
    post_queue.record(ContentDelivery, job.id, values)


def _disable(endpoint_id: int, since: datetime, attempt: webhooks.Attempt, at: datetime) -> None:
    reason = (f"Every delivery attempt failed for 24 hours (since {rfc3339(since)}); "
              f"the last one: {attempt.error or 'no answer'}.")[:1000]
    db.session.execute(update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id,
                                                     WebhookEndpoint.disabled_at.is_(None))
                       .values(disabled_at=at, disabled_reason=reason))
    db.session.execute(update(ContentDelivery).where(
        ContentDelivery.endpoint_id == endpoint_id, ContentDelivery.delivered_at.is_(None),
        ContentDelivery.failed_at.is_(None)).values(failed_at=at, last_error=func.coalesce(
            ContentDelivery.last_error, "not sent: the endpoint was disabled")))


def deliver_due(now: datetime, *, allow_private: bool, concurrency: int = webhooks.CONCURRENCY,
                budget: float = webhooks.RUN_BUDGET_SECONDS, limit: int | None = None,
                clock: Callable[[], datetime] = utcnow) -> post_queue.Report:
    """Post every content message due at `now` to its endpoint, up to `concurrency` at once
    within `budget` seconds (webhooks.run_concurrently), each result committed as it comes:
    a 2xx marks it delivered and ends its endpoint's failure streak; a failure schedules the
    next attempt at `clock() + backoff(attempts)` (1 min, 2, 4, ... at most 6 h) or gives it up
    once the message is RETRY_WINDOW old, and disables the endpoint once its streak is
    DISABLE_AFTER old. A run killed mid-POST leaves its rows leased for webhooks.LEASE."""
    report = post_queue.Report()
    report.left = webhooks.run_concurrently(
        lambda tried: _claim(now, tried, clock),
        lambda job, timeout: _send(job, allow_private=allow_private, timeout=timeout, clock=clock),
        lambda job, attempt: _record(job, attempt, report, clock()),
        concurrency=concurrency, budget=budget, limit=limit)
    return report


def pending_count() -> int:
    """Messages neither delivered nor given up."""
    return post_queue.pending_count(ContentDelivery)


def prune(before: datetime) -> int:
    """Delete deliveries delivered or given up before `before`; returns how many. The caller
    commits."""
    return post_queue.prune(ContentDelivery, before)
