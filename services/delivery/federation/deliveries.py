"""Activities derived from the change feed, and the sender that posts them (docs/FEDERATION.md
"Delivery").

`on_changes` is the `activitypub` consumer of services/delivery/change_stream.py: handed a
paper's new public changes in feed order, inside the transaction that moves its cursor, it only
writes rows, one `ApDelivery` per inbox (one shared inbox per host for all the followers there
when the host has one; issue 31: many actors on one host cost that host one POST):

| change   | activity, signed as                | to the inboxes of                         |
|----------|------------------------------------|-------------------------------------------|
| aired    | `Create` of the Article, persona   | the persona's followers                   |
|          | `Announce` of it, the paper        | the paper's followers                     |
| revised  | `Update` of the Article, persona   | the persona's and the paper's followers   |
| unaired  | `Delete` with a Tombstone, persona | the persona's and the paper's followers   |

Only followers who followed by the change's instant (`at`) are sent it: a new follower is not
sent the back catalogue, whenever the consumer gets to the changes.

The Article is built from the piece as it is when the consumer runs (so a late pass sends the
newest text of a piece, never an older one under a newer revision); a piece no longer on air by
then is not created or updated (its `unaired` change follows), and a piece deleted since has only
its Delete, signed by the paper when its persona is unknown.

`QUEUE` is run by the worker's queue engine (services/delivery/queues.py) after the
consumers: each due row is claimed with a lease, signed as it leaves (draft-cavage rsa-sha256
over `(request-target) host date digest`, services/delivery/federation/httpsig.py; on a 401,
once more signed RFC 9421, services/delivery/federation/messagesig.py, and the host
remembered) and posted
by the one HTTP client (services/http.py: SSRF rules, 5 s per attempt) with the ACTIVITYPUB_*
settings (ACTIVITYPUB_CONCURRENCY, ACTIVITYPUB_RUN_SECONDS, ACTIVITYPUB_ALLOW_PRIVATE; the
WEBHOOK_* values when unset), one at a time per inbox in the order written (a row waits while
an earlier one to its inbox is pending). A 2xx is delivered; a 4xx other than 408 and 429 is
given up at once (the inbox refuses it); any other failure is retried with the one backoff
(1 min doubling, 6 h cap) until ACTIVITYPUB_MAX_ATTEMPTS (10).
"""
from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from flask import current_app
from sqlalchemy import exists, func, select
from sqlalchemy.orm import aliased, joinedload, selectinload

from extensions import db
from models import PAPER_ACTOR, ApDelivery, ApFollower, Paper, Piece
from models.clock import utcnow
from services import http, retry
from services.delivery import queues
from services.delivery.federation import documents, httpsig, keys, messagesig, remote
from services.links import PaperOrigins

CONTENT_TYPE = 'application/activity+json'


def _dumps(document: dict) -> str:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _inboxes(followers: list[ApFollower], locals_: set[str], at: datetime) -> list[str]:
    """Where an activity for a change public at `at` goes: the followers of `locals_` who
    followed by then (a new follower is not sent the back catalogue), one POST per host that
    has a shared inbox (the first one named there, for every follower whose inbox is on that
    host: the server hands it to each of its actors), else each follower's own inbox; each
    inbox once, in first-follow order."""
    chosen = [f for f in followers if f.local in locals_ and f.created_at <= at]
    shared: dict[str, str] = {}  # origin -> the first shared inbox named on it
    for follower in chosen:
        if follower.shared_inbox:
            shared.setdefault(remote.origin_of(follower.shared_inbox) or follower.shared_inbox, follower.shared_inbox)
    targets = (f.shared_inbox or f.inbox for f in chosen)
    return list(dict.fromkeys(shared.get(remote.origin_of(target) or target, target) for target in targets))


def _queue(paper: Paper, signer: str, kind: str, piece_id: int | None, body: str, inboxes: list[str],
           now: datetime) -> None:
    for inbox in inboxes:
        db.session.add(ApDelivery(paper_id=paper.id, signer=signer, inbox=inbox, kind=kind, piece_id=piece_id,
                                  body=body, created_at=now, attempts=0, next_attempt_at=now))


def on_changes(paper: Paper, changes: list, now: datetime) -> None:
    """change_stream consumer (see the module): one delivery row per activity and inbox,
    flushed in the caller's transaction. Writes nothing when the paper has no followers,
    is private, or ACTIVITYPUB_ENABLED is off. Raises SeedLocked (services/newsroom/seeds.py) when the receipt key
    does not open (the cursor stays; the next pass retries)."""
    config = current_app.config
    if not config.get("ACTIVITYPUB_ENABLED", True) or not paper.is_public:
        return
    followers = list(db.session.scalars(select(ApFollower).where(ApFollower.paper_id == paper.id)
                                         .order_by(ApFollower.id)))
    if not followers:
        return
    links = PaperOrigins.from_config(config).links(paper)
    receipt = keys.receipt_key(paper)
    pieces = {piece.id: piece for piece in db.session.scalars(
        select(Piece).where(Piece.id.in_({c.piece_id for c in changes}))
        .options(joinedload(Piece.section), joinedload(Piece.persona), selectinload(Piece.cited_facts)))}
    for change in changes:
        piece = pieces.get(change.piece_id)
        if change.type == "unaired":
            author = piece.persona.slug if piece is not None else PAPER_ACTOR
            actor = documents.actor_of(links, author)
            body = _dumps(documents.delete(links, actor, change.piece_id, change.seq, change.at))
            _queue(paper, author, "Delete", change.piece_id, body,
                   _inboxes(followers, {author, PAPER_ACTOR}, change.at), now)
            continue
        if piece is None or not piece.on_air or piece.on_air_at is None or piece.on_air_at > now:
            continue
        article = documents.article(paper, piece, links, receipt=receipt, secret=config["SECRET_KEY"])
        author = piece.persona.slug
        if change.type == "aired":
            _queue(paper, author, "Create", piece.id, _dumps(documents.create(links, article, change.at)),
                   _inboxes(followers, {author}, change.at), now)
            _queue(paper, PAPER_ACTOR, "Announce", piece.id,
                   _dumps(documents.announce(links, article["id"], article["attributedTo"], change.at)),
                   _inboxes(followers, {PAPER_ACTOR}, change.at), now)
        elif change.type == "revised":
            _queue(paper, author, "Update", piece.id,
                   _dumps(documents.update(links, article, change.rev, change.at, kind=change.kind,
                                           note=change.note)),
                   _inboxes(followers, {author, PAPER_ACTOR}, change.at), now)
    db.session.flush()


# ----------------------------------------------------------------------------- sending


@dataclass(frozen=True)
class _Job:
    id: int
    inbox: str
    body: bytes
    key_id: str
    private_key: object  # rsa.RSAPrivateKey, or None when the paper's key does not open
    error: str | None
    attempts: int

    @property
    def target(self) -> str:
        """Where it goes (the circuit breaker's host)."""
        return self.inbox


def _due() -> list:
    # One activity at a time per inbox, in the order written: an Update or a Delete must not
    # overtake its Create. An earlier row still pending (in flight, or backing off) holds the
    # rows after it; one delivered or given up does not.
    earlier = aliased(ApDelivery)
    return [~exists().where(earlier.inbox == ApDelivery.inbox, earlier.id < ApDelivery.id,
                            earlier.delivered_at.is_(None), earlier.failed_at.is_(None))]


def _load(row) -> _Job:
    # The signing key is opened here, in the engine's thread (SECRET_KEY, the paper's origin).
    config = current_app.config
    secret = config["SECRET_KEY"]
    paper = db.session.get(Paper, row.paper_id)
    key_id, private, error = "", None, None
    try:
        links = PaperOrigins.from_config(config).links(paper)
        key_id = documents.actor_of(links, row.signer) + "#main-key"
        private = keys.private_key(keys.ensure_rsa_key(paper, secret, utcnow()), secret)
    except keys.KeyLocked as exc:
        error = str(exc)
    return _Job(row.id, row.inbox, row.body.encode("utf-8"), key_id, private, error, row.attempts)


def signed_headers(job_inbox: str, body: bytes, key_id: str, private_key, at: datetime, *,
                   rfc9421: bool = False) -> dict:
    """The headers of a POST of `body` to `job_inbox` signed at `at`: Host, Date,
    Content-Type, and draft-cavage `Digest` and `Signature`, or with `rfc9421` RFC 9421
    `Content-Digest`, `Signature-Input` and `Signature` (messagesig.sign)."""
    parts = urlsplit(job_inbox)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    headers = {"Host": host, "Date": httpsig.http_date(at), "Content-Type": CONTENT_TYPE}
    if rfc9421:
        return messagesig.sign(private_key, key_id, "POST", job_inbox, headers, body, at)
    headers["Digest"] = httpsig.digest(body)
    headers["Signature"] = httpsig.sign(private_key, key_id, "POST", target, headers)
    return headers


KNOCK_MEMORY = 4096  # hosts remembered as RFC 9421 only (each a short string: ~0.5 MB at most)


class HostMemory:
    """Hosts that answered 401 to draft-cavage and took RFC 9421 (this process's memory): their
    next POSTs are signed that way first. At most KNOCK_MEMORY hosts (read when a host is
    added), the one used least recently forgotten first (it is knocked twice again, once);
    safe to use from the queue's sending threads at once."""

    def __init__(self):
        self._hosts: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, host: str) -> bool:
        with self._lock:
            if host not in self._hosts:
                return False
            self._hosts.move_to_end(host)
            return True

    def __len__(self) -> int:
        return len(self._hosts)

    def add(self, host: str) -> None:
        """Remember `host` as used now, forgetting the least recently used past KNOCK_MEMORY."""
        with self._lock:
            self._hosts[host] = None
            self._hosts.move_to_end(host)
            while len(self._hosts) > KNOCK_MEMORY:
                self._hosts.popitem(last=False)

    def discard(self, host: str) -> None:
        """Forget `host` (it took draft-cavage again)."""
        with self._lock:
            self._hosts.pop(host, None)

    def clear(self) -> None:
        """Forget every host."""
        with self._lock:
            self._hosts.clear()


knocked = HostMemory()


def _post(job: _Job, headers: dict, *, allow_private: bool, timeout: float) -> http.Attempt:
    try:
        status, _ = remote.exchange("POST", job.inbox, headers=headers, body=job.body, allow_private=allow_private,
                                    seconds=timeout, max_bytes=65536)
    except remote.FetchError as exc:
        return http.Attempt(False, None, str(exc))
    return http.Attempt(200 <= status < 300, status, None if 200 <= status < 300 else f"HTTP {status}")


def _send(job: _Job, *, allow_private: bool, timeout: float, clock: Callable[[], datetime]) -> http.Attempt:
    """POST one activity, signed draft-cavage; on a 401, once more signed RFC 9421 (the
    "double knock"), within `timeout` in all. The host's answer is remembered: a host that took
    RFC 9421 after refusing draft-cavage gets RFC 9421 first from then on (and draft-cavage on
    its 401)."""
    if job.private_key is None:
        return http.Attempt(False, None, job.error or "no signing key")
    deadline = time.monotonic() + timeout
    host = remote.origin_of(job.inbox) or job.inbox
    order = [True, False] if host in knocked else [False, True]
    attempt = None
    for rfc9421 in order:
        # Dated and signed as the request leaves: inboxes refuse a Date far from their clock.
        headers = signed_headers(job.inbox, job.body, job.key_id, job.private_key, clock(), rfc9421=rfc9421)
        attempt = _post(job, headers, allow_private=allow_private, timeout=deadline - time.monotonic())
        if attempt.status != 401 or deadline - time.monotonic() < 0.5:
            break
    if attempt.ok:
        (knocked.add if rfc9421 else knocked.discard)(host)
    return attempt


QUEUE = queues.Queue(
    name="activitypub", model=ApDelivery, settings_prefix="ACTIVITYPUB", max_attempts=10,
    returning=(ApDelivery.paper_id, ApDelivery.signer, ApDelivery.inbox, ApDelivery.body, ApDelivery.attempts),
    load=_load, send=_send, due=_due,
    # An inbox that refuses an activity will refuse it again.
    gives_up=lambda job, attempt, attempts, at: retry.refused(attempt.status))
"""The queue of activities (services/delivery/queues.py runs it): ACTIVITYPUB_* settings,
WEBHOOK_* as fallbacks."""


def followers_count(paper: Paper, local: str) -> int:
    return db.session.scalar(select(func.count()).select_from(ApFollower).where(
        ApFollower.paper_id == paper.id, ApFollower.local == local)) or 0

