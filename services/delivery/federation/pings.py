"""Reach beyond the fediverse: WebSub hub pings and IndexNow (docs/FEDERATION.md "WebSub and
IndexNow"), both derived from the change feed like the activities.

`on_changes` is the `pings` consumer of services/delivery/change_stream.py; it only writes rows
(`ping_deliveries`), posted by `deliver_due` in `flask worker`:

- WebSub (W3C): with WEBSUB_HUB set, the feeds name it (`rel="hub"`, with their own
  `rel="self"`), and each batch of a paper's changes writes one `hub.mode=publish` ping per feed
  (`/rss.xml`, `/feed.json`), form-encoded, so subscribers of the hub fetch the feed at once.
- IndexNow: with INDEXNOW_ENDPOINT set, each batch writes one JSON POST `{host, key,
  keyLocation, urlList}` with the story pages of the pieces aired, revised or pulled. The key
  is the paper's own, derived from the instance secret (`indexnow_key`), and served as the
  IndexNow protocol asks at `/<key>.txt` on the paper's host.

Unsigned POSTs by the one HTTP client (services/http.py: SSRF checks at each attempt, bounded
time, no redirects), sent by the queue engine (services/delivery/queues.py) with the PING_*
settings (PING_CONCURRENCY, PING_RUN_SECONDS, PING_ALLOW_PRIVATE, PING_MAX_ATTEMPTS; the
WEBHOOK_* values when unset); a 2xx (IndexNow also answers 202) is delivered, a 4xx other than
408 and 429 given up, anything else retried with backoff up to MAX_ATTEMPTS.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from flask import current_app
from sqlalchemy import select

from extensions import db
from models import Paper, Piece, PingDelivery
from services import http, retry
from services.delivery import queues
from services.links import Links, PaperOrigins

MAX_ATTEMPTS = 6
USER_AGENT = "PaperDesk-Pings/1"
FEEDS = ("/rss.xml", "/feed.json")


def indexnow_key(secret: str, paper: Paper) -> str:
    """The paper's IndexNow key: 32 lowercase hex characters of HMAC-SHA256(SECRET_KEY,
    "indexnow:<paper id>:<slug>"): stable, never stored, and not guessable from outside."""
    mac = hmac.new(secret.encode("utf-8"), f"indexnow:{paper.id}:{paper.slug}".encode(), hashlib.sha256)
    return mac.hexdigest()[:32]


def _row(paper: Paper, kind: str, target: str, content_type: str, body: str, now: datetime) -> None:
    db.session.add(PingDelivery(paper_id=paper.id, kind=kind, target=target, content_type=content_type, body=body,
                                created_at=now, attempts=0, next_attempt_at=now))


def on_changes(paper: Paper, changes: list, now: datetime) -> None:
    """change_stream consumer (see the module): at most one WebSub ping per feed and one
    IndexNow list per batch, flushed in the caller's transaction; nothing for a private paper
    or with both settings empty."""
    config = current_app.config
    hub, endpoint = config.get("WEBSUB_HUB", ""), config.get("INDEXNOW_ENDPOINT", "")
    if not paper.is_public or not (hub or endpoint) or not changes:
        return
    links: Links = PaperOrigins.from_config(config).links(paper)
    if hub:
        for feed in FEEDS:
            _row(paper, "websub", hub, "application/x-www-form-urlencoded",
                 urlencode({"hub.mode": "publish", "hub.url": links.absolute(feed)}), now)
    if endpoint:
        slugs = dict(db.session.execute(select(Piece.id, Piece.slug).where(
            Piece.id.in_({c.piece_id for c in changes}))).all())
        # A piece deleted since has no page left to tell about.
        urls = list(dict.fromkeys(links.story_page(slugs[c.piece_id]) for c in changes if c.piece_id in slugs))
        if urls:
            key = indexnow_key(config["SECRET_KEY"], paper)
            _row(paper, "indexnow", endpoint, "application/json; charset=utf-8", json.dumps(
                {"host": links.host_name, "key": key, "keyLocation": links.absolute(f"/{key}.txt"),
                 "urlList": urls[:10000]}), now)
    db.session.flush()


@dataclass(frozen=True)
class _Job:
    id: int
    target: str
    content_type: str
    body: bytes
    attempts: int


def _load(row) -> _Job:
    return _Job(row.id, row.target, row.content_type, row.body.encode("utf-8"), row.attempts)


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> http.Attempt:
    return http.post(job.target, job.body, {"Content-Type": job.content_type, "User-Agent": USER_AGENT},
                     allow_private=allow_private, timeout=timeout)


QUEUE = queues.Queue(
    name="pings", model=PingDelivery, settings_prefix="PING", max_attempts=MAX_ATTEMPTS,
    returning=(PingDelivery.target, PingDelivery.content_type, PingDelivery.body, PingDelivery.attempts),
    load=_load, send=_send,
    # A hub or search engine that refuses a ping will refuse it again.
    gives_up=lambda job, attempt, attempts, at: retry.refused(attempt.status))
"""The queue of pings (services/delivery/queues.py runs it): PING_* settings, WEBHOOK_* as fallbacks."""
