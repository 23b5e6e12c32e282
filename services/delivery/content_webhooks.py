"""Content webhooks for site owners (docs/API.md "Content webhooks"), after Standard Webhooks
(standardwebhooks.com).

An admin registers an endpoint (`create_endpoint`) for some of CONTENT_EVENTS. The worker's
change feed consumers (`on_changes` for pieces, `on_editions` for editions:
services/delivery/change_stream.py) call `emit`: one `content_deliveries` row per active
endpoint subscribed to the event, in the transaction that moves the consumer's cursor. `flask
worker` posts them (`deliver_due`): the body is `{"type", "timestamp", "data"}`, the
headers `webhook-id` (the message id, the same on every retry and redelivery),
`webhook-timestamp` (unix seconds, taken as each attempt leaves) and `webhook-signature:
v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, signed by the `standardwebhooks` package
with the endpoint's `whsec_` secret.

Only a 2xx counts; redirects are not followed; targets are checked at input and again at each
attempt, against the resolved address, by the one HTTP client (services/http.py). `QUEUE` is
sent by the queue engine (services/delivery/queues.py; CONTENT_WEBHOOK_* settings, the WEBHOOK_*
ones when unset). A failed attempt is retried with the one backoff (1 minute doubling, at most
6 hours) until the message is 24 hours old, then given up. An endpoint whose attempts have all
failed for 24 hours (its first failure of the current streak is that old) is disabled with the
reason; any success ends the streak. A disabled endpoint gets no new messages and its pending ones are given up.
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
from models.clock import rfc3339
from services import http
from services.delivery import queues, webhooks
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
        http.check_url(url, allow_private=current_app.config["WEBHOOK_ALLOW_PRIVATE"])
    except http.TargetError as exc:
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
    public (its `at`), due now. A piece's data is that of the revision the change names, so a
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


def _change_data(paper: Paper, piece: Piece, change) -> dict:
    data = piece_data(paper, piece)
    if change.rev != piece.rev:
        basis = db.session.scalar(select(PieceRevision.basis).where(
            PieceRevision.piece_id == piece.id, PieceRevision.rev == change.rev)) or {}
        data["headline"] = basis.get("headline", data["headline"])
    data["rev"], data["content_hash"] = change.rev, change.content_hash
    return data


def on_editions(paper: Paper, editions: list[Edition], now: datetime) -> None:
    """change_stream consumer of the editions feed: `edition.published` for each edition newly
    published, `{day, title, summary, url, video_url, poster_url, published_at}`, timestamped
    when it was published, due now."""
    for edition in editions:
        emit(paper, "edition.published", functools.partial(_edition_data, paper, edition),
             now=edition.published_at, deliver_at=now)


def _edition_data(paper: Paper, edition: Edition) -> dict:
    return {"day": edition.day.isoformat(), "title": edition.title, "summary": edition.summary,
            "url": _links(paper).edition_page(edition.day), "video_url": edition.video_url,
            "poster_url": edition.poster_url, "published_at": rfc3339(edition.published_at)}


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

    @property
    def target(self) -> str:
        """Where it goes (the circuit breaker's host)."""
        return self.url


def _due() -> list:
    # A disabled endpoint's messages were given up with it; none is claimed meanwhile.
    return [ContentDelivery.endpoint_id.in_(select(WebhookEndpoint.id).where(WebhookEndpoint.disabled_at.is_(None)))]


def _load(row) -> _Job:
    target = db.session.execute(select(WebhookEndpoint.url, WebhookEndpoint.secret)
                                .where(WebhookEndpoint.id == row.endpoint_id)).first()
    if target is None:  # deleted between the claim and now: its rows went with it
        return _Job(row.id, row.endpoint_id, row.message_id, "", "", row.body, row.attempts, row.created_at)
    return _Job(row.id, row.endpoint_id, row.message_id, target.url, target.secret, row.body, row.attempts,
                row.created_at)


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> http.Attempt:
    if not job.url:
        return http.Attempt(False, None, "the endpoint was deleted")
    # Timestamped and signed as the request leaves: receivers refuse a timestamp more than
    # five minutes off, and a run behind slow receivers can be older than that.
    at = clock().replace(microsecond=0)
    headers = {"webhook-id": job.message_id, "webhook-timestamp": str(int(at.timestamp())),
               "webhook-signature": sign(job.secret, job.message_id, at, job.body)}
    return webhooks.post(job.url, job.body.encode("utf-8"), headers, allow_private=allow_private, timeout=timeout)


def _after(job: _Job, attempt: http.Attempt, values: dict, at: datetime, report: queues.Report) -> None:
    # The endpoint's failure streak: any success ends it; one DISABLE_AFTER old disables it.
    endpoint = update(WebhookEndpoint).where(WebhookEndpoint.id == job.endpoint_id)
    if attempt.ok:
        db.session.execute(endpoint.values(failing_since=None))
        return
    db.session.execute(endpoint.values(failing_since=func.coalesce(WebhookEndpoint.failing_since, at)))
    since = db.session.scalar(select(WebhookEndpoint.failing_since).where(WebhookEndpoint.id == job.endpoint_id))
    if since is not None and at - since >= DISABLE_AFTER:
        values["failed_at"] = at
        values.pop("next_attempt_at", None)
        _disable(job.endpoint_id, since, attempt, at)
        report.disabled += 1


def _disable(endpoint_id: int, since: datetime, attempt: http.Attempt, at: datetime) -> None:
    reason = (f"Every delivery attempt failed for 24 hours (since {rfc3339(since)}); "
              f"the last one: {attempt.error or 'no answer'}.")[:1000]
    db.session.execute(update(WebhookEndpoint).where(WebhookEndpoint.id == endpoint_id,
                                                     WebhookEndpoint.disabled_at.is_(None))
                       .values(disabled_at=at, disabled_reason=reason))
    db.session.execute(update(ContentDelivery).where(
        ContentDelivery.endpoint_id == endpoint_id, ContentDelivery.delivered_at.is_(None),
        ContentDelivery.failed_at.is_(None)).values(failed_at=at, last_error=func.coalesce(
            ContentDelivery.last_error, "not sent: the endpoint was disabled")))


QUEUE = queues.Queue(
    name="content-webhooks", model=ContentDelivery, settings_prefix="CONTENT_WEBHOOK",
    # No count of attempts: a message is given up once it is RETRY_WINDOW old.
    max_attempts=1_000_000, gives_up=lambda job, attempt, attempts, at: at - job.created_at >= RETRY_WINDOW,
    returning=(ContentDelivery.endpoint_id, ContentDelivery.message_id, ContentDelivery.body,
               ContentDelivery.attempts, ContentDelivery.created_at),
    load=_load, send=_send, after=_after, due=_due)
"""The queue of content webhook messages (services/delivery/queues.py runs it):
CONTENT_WEBHOOK_* settings if set, else the WEBHOOK_* ones."""
