"""What an inbox POST does (docs/FEDERATION.md "Inbox").

Two steps, and the first touches no database:

`authenticate` (no database, no lock; the cheap checks before any fetch):
1. a signature: draft-cavage `Signature` (services/delivery/federation/httpsig.py) or RFC 9421
   `Signature-Input` + `Signature` (services/delivery/federation/messagesig.py), covering what
   it must, its digest equal to the body's, its `Date` / `created` within 5 minutes;
2. the body a JSON object whose `actor` is an http(s) id, and the keyId (without its
   fragment) on that actor's origin: same scheme, host and port;
3. only then the key, fetched and bound to the actor as Mastodon binds them (at most the keyId
   document and the actor, once each, within ACTIVITYPUB_KEY_FETCH_SECONDS in all, DNS
   included; services/delivery/federation/remote.py), and the signature checked under it (a
   cached key a minute old or more that fails is refetched once: the sender may have rotated it).
Any failure: 401 with the reason, nothing recorded; 503 with Retry-After when the key could not
be asked for now (too many fetches under way, or its origin did not answer lately).

`receive` (in the caller's transaction), of an authenticated activity:
- `Follow` of the paper's actor or a persona's: the follower is recorded with the inbox and
  shared inbox its actor document names, and a signed `Accept` is queued for its inbox, a
  delivery row posted by the worker. A Follow from an actor already following is not answered
  again when it is the same Follow (same id); a new Follow id (the peer lost our Accept) gets
  one Accept unless one to it is still pending. New followers from one origin are capped
  (ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN): past it, 403;
- `Undo` of such a Follow: the follower goes; an Undo of another actor's Follow is 403;
- `Delete` of the sender's own actor: it stops following everything on this paper (also when
  the key can no longer be fetched because the actor's key document answers 410 Gone: a deleted
  account's server signs its Delete with a key it no longer publishes);
- anything else (likes, replies, boosts, a Follow of no actor of ours): accepted and ignored.
Each of those is a 202.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urldefrag

from sqlalchemy import delete, func, select

from extensions import db
from models import PAPER_ACTOR, ApDelivery, ApFollower, Paper, Persona
from services.delivery.federation import documents, httpsig, messagesig, remote
from services.errors import BadRequest, Forbidden, Unauthorized, Unavailable
from services.links import Links

CHALLENGE = 'Signature realm="paperdesk",headers="(request-target) host date digest"'


class SignatureRequired(Unauthorized):
    """401 for an inbox POST without a valid HTTP signature; carries a Signature challenge."""

    default_detail = "Inbox POSTs need a valid HTTP signature (draft-cavage, rsa-sha256)."

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": CHALLENGE})


@dataclass(frozen=True)
class Request:
    """An inbox POST as received: `method`, `target` (path and query), `headers` (a mapping),
    `body` (bytes)."""

    method: str
    target: str
    headers: dict
    body: bytes


@dataclass(frozen=True)
class Outcome:
    """What was done: `action` (`followed`, `unfollowed`, `deleted`, `ignored`) and a sentence."""

    action: str
    detail: str


def _id(value) -> str | None:
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Sender:
    """Who sent an authenticated activity: `activity` (the JSON object), `actor` (its id) and
    the `key` bound to that actor (its inbox and shared inbox from the actor document), or
    `gone` (a Delete of itself whose key document answers 410: `key` is None)."""

    activity: dict
    actor: str
    key: remote.RemoteKey | None
    gone: bool = False


def _claim(request: Request, url: str, now: datetime) -> httpsig.Claim:
    lowered = {k.lower() for k in request.headers}
    try:
        if "signature-input" in lowered:
            return messagesig.read(request.method, url, request.headers, request.body, now)
        if "signature" in lowered:
            return httpsig.read(request.method, request.target, request.headers, request.body, now)
    except httpsig.SignatureError as exc:
        raise SignatureRequired(str(exc)) from None
    raise SignatureRequired()


def authenticate(request: Request, url: str, now: datetime, *, allow_private: bool, seconds: float,
                 slots: remote.FetchSlots | None = None) -> Sender:
    """The sender of an inbox POST (see the module), `url` the absolute URL it was sent to (RFC
    9421 signs it). Touches no database. Raises SignatureRequired (401) for a missing,
    malformed, stale or wrong signature, a key on another origin than the actor, or a key that
    cannot be fetched, bound to the actor or verified within `seconds` (every fetch included,
    each holding one of `slots`); Unavailable (503 with Retry-After) when the key could not be
    asked for now (too many fetches at once, or its origin did not answer lately); BadRequest
    (400) for a body that is not a JSON object naming an http(s) actor."""
    deadline = time.monotonic() + seconds
    claim = _claim(request, url, now)
    try:
        activity = json.loads(request.body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise BadRequest("The body is not JSON.") from None
    if not isinstance(activity, dict):
        raise BadRequest("The body is not a JSON object (an activity).")
    actor = _id(activity.get("actor"))
    if actor is None or len(actor) > 2000 or remote.origin_of(actor) is None:
        raise BadRequest("The activity names no actor (an http(s) id).")
    if remote.origin_of(urldefrag(claim.key_id)[0]) != remote.origin_of(actor):
        raise SignatureRequired("The signing key (keyId) is not on the actor's origin: scheme, host and port "
                                "must be the actor's.")
    key = None
    for fresh in (False, True):  # a cached key that fails may have been rotated: fetch it once more
        try:
            key, stale = remote.fetch_key(claim.key_id, actor, allow_private=allow_private, deadline=deadline,
                                           fresh=fresh, slots=slots)
        except remote.FetchError as exc:
            if exc.retry_after is not None:
                raise Unavailable(f"The signing key was not fetched: {exc}. Retry later.",
                                  headers={"Retry-After": str(exc.retry_after)}) from None
            if (exc.status == 410 and activity.get("type") == "Delete"
                    and _id(activity.get("object")) == actor == urldefrag(claim.key_id)[0]):
                return Sender(activity, actor, None, gone=True)
            raise SignatureRequired(f"The signing key could not be fetched and bound to the actor: {exc}.") from None
        try:
            claim.verify(key.pem)
            break
        except httpsig.SignatureError as exc:
            if not stale:
                raise SignatureRequired(str(exc)) from None
    return Sender(activity, actor, key)


def _local_of(paper: Paper, links: Links, target: str | None) -> str | None:
    """The local actor (PAPER_ACTOR or a persona slug) whose id is `target`, or None."""
    if not target:
        return None
    if target == documents.paper_actor(links):
        return PAPER_ACTOR
    prefix = documents.persona_actor(links, "")
    if target.startswith(prefix):
        slug = target[len(prefix):]
        found = db.session.scalar(select(Persona.slug).where(
            Persona.paper_id == paper.id, Persona.slug == slug, Persona.active.is_(True)))
        return found
    return None


def receive(paper: Paper, links: Links, inbox_of: str | None, sender: Sender, now: datetime, *,
            max_per_origin: int) -> Outcome:
    """Act on an authenticated activity (`authenticate`) posted to `inbox_of`'s inbox (a local
    actor, or None for the shared inbox) of `paper`, whose ids are under `links` (the paper's
    canonical origin). Flushes (the caller commits); raises Forbidden (403: an activity about
    another actor, a follower past `max_per_origin` from its origin) or BadRequest (400: no
    usable inbox), writing nothing."""
    activity, actor = sender.activity, sender.actor
    if sender.gone:
        count = db.session.execute(delete(ApFollower).where(
            ApFollower.paper_id == paper.id, ApFollower.actor_uri == actor)).rowcount or 0
        return Outcome("deleted", f"The actor is gone (its key answers 410); {count} follow(s) removed.")
    kind = activity.get("type")
    if kind == "Follow":
        local = _local_of(paper, links, _id(activity.get("object")))
        if local is None or (inbox_of is not None and local != inbox_of):
            return Outcome("ignored", "A Follow of no actor of this inbox; ignored.")
        return _follow(paper, links, local, activity, sender.key, now, max_per_origin=max_per_origin)
    if kind == "Undo" and isinstance(activity.get("object"), (dict, str)):
        inner = activity["object"]
        inner_id = _id(inner)
        if isinstance(inner, dict) and "actor" in inner and _id(inner.get("actor")) != actor:
            raise Forbidden("An activity about an actor is accepted only from that actor: this Undo's "
                            "Follow is another actor's.")
        query = delete(ApFollower).where(ApFollower.paper_id == paper.id, ApFollower.actor_uri == actor)
        if isinstance(inner, dict) and inner.get("type") == "Follow":
            local = _local_of(paper, links, _id(inner.get("object")))
            if local is None:
                return Outcome("ignored", "An Undo of a Follow of no actor of ours; ignored.")
            query = query.where(ApFollower.local == local)
        elif inner_id:
            query = query.where(ApFollower.follow_id == inner_id)
        else:
            return Outcome("ignored", "An Undo of nothing we know; ignored.")
        gone = db.session.execute(query).rowcount or 0
        return Outcome("unfollowed" if gone else "ignored", f"{gone} follow(s) undone.")
    if kind == "Delete" and _id(activity.get("object")) == actor:
        gone = db.session.execute(delete(ApFollower).where(
            ApFollower.paper_id == paper.id, ApFollower.actor_uri == actor)).rowcount or 0
        return Outcome("deleted", f"The actor is gone; {gone} follow(s) removed.")
    return Outcome("ignored", "Accepted; this inbox acts on Follow, Undo and Delete only.")


def _follow(paper: Paper, links: Links, local: str, activity: dict, key: remote.RemoteKey, now: datetime, *,
            max_per_origin: int) -> Outcome:
    inbox, shared = key.inbox, key.shared_inbox
    if not inbox:
        raise BadRequest("The follower's actor names no usable inbox.")
    row = db.session.scalar(select(ApFollower).where(
        ApFollower.paper_id == paper.id, ApFollower.local == local, ApFollower.actor_uri == key.owner))
    follow_id = _id(activity)
    follow_id = follow_id if follow_id and len(follow_id) <= 2000 else None
    if row is None:
        origin = remote.origin_of(key.owner)
        actors = select(ApFollower.actor_uri).where(ApFollower.paper_id == paper.id)
        known = db.session.scalar(actors.where(ApFollower.actor_uri == key.owner).limit(1)) is not None
        there = 0 if known else db.session.scalar(select(func.count(func.distinct(ApFollower.actor_uri))).where(
            ApFollower.paper_id == paper.id, ApFollower.actor_uri.startswith(f"{origin}/", autoescape=True))) or 0
        if not known and there >= max_per_origin:
            raise Forbidden(f"This paper already has {there} followers on {origin}, the most one origin may have "
                            f"(ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN = {max_per_origin}): Follow refused.")
        row = ApFollower(paper_id=paper.id, local=local, actor_uri=key.owner, created_at=now)
        db.session.add(row)
    elif follow_id == row.follow_id or _accept_pending(paper, local, inbox):
        # The same Follow again (or a new one while our Accept is still on its way): one Accept answers it.
        row.inbox, row.shared_inbox = inbox, shared
        db.session.flush()
        return Outcome("followed", "Already following; the Accept already sent (or on its way) answers this Follow.")
    row.inbox, row.shared_inbox, row.follow_id = inbox, shared, follow_id
    body = json.dumps(documents.accept(links, local, activity), separators=(",", ":"), ensure_ascii=False)
    db.session.add(ApDelivery(paper_id=paper.id, signer=local, inbox=inbox, kind="Accept", piece_id=None,
                              body=body, created_at=now, attempts=0, next_attempt_at=now))
    db.session.flush()
    return Outcome("followed", "Followed; an Accept is on its way.")


def _accept_pending(paper: Paper, local: str, inbox: str) -> bool:
    return db.session.scalar(select(ApDelivery.id).where(
        ApDelivery.paper_id == paper.id, ApDelivery.signer == local, ApDelivery.inbox == inbox,
        ApDelivery.kind == "Accept", ApDelivery.delivered_at.is_(None), ApDelivery.failed_at.is_(None))
        .limit(1)) is not None
