"""What an inbox POST does (docs/FEDERATION.md "Inbox").

Every POST must carry a draft-cavage HTTP signature (services/delivery/federation/httpsig.py) by a key
that its `keyId` document publishes (services/delivery/federation/remote.py fetches it, bounded), and the
activity's `actor` must be that key's owner. Otherwise: 401 and nothing recorded.

Then, of a signed activity:
- `Follow` of the paper's actor or a persona's: the follower is recorded (again: its inbox
  refreshed) and a signed `Accept` is queued for its inbox, a delivery row posted by the worker;
- `Undo` of such a Follow: the follower goes;
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

from sqlalchemy import delete, select

from extensions import db
from models import PAPER_ACTOR, ApDelivery, ApFollower, Paper, Persona
from services.delivery.federation import documents, httpsig, remote
from services.errors import BadRequest, Unauthorized
from services.links import Links

CHALLENGE = 'Signature realm="paperdesk",headers="(request-target) host date digest"'


class SignatureRequired(Unauthorized):
    """401 for an inbox POST without a valid HTTP signature; carries a Signature challenge."""

    default_detail = "Inbox POSTs need a valid HTTP signature (draft-cavage, rsa-sha256)."

    def __init__(self, detail: str | None = None) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": CHALLENGE})


class ActorGone(Exception):
    """A `Delete` of its own actor whose key document answers 410 Gone: the server deleted the
    actor (and so its key), which is what the Delete says. `actor` is its id."""

    def __init__(self, actor: str):
        super().__init__(actor)
        self.actor = actor


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


def authenticate(request: Request, now: datetime, *, allow_private: bool,
                 seconds: float) -> tuple[dict, remote.RemoteKey]:
    """The activity of a signed POST and the key that signed it. Raises SignatureRequired (401)
    for a missing, malformed or wrong signature, a key that cannot be fetched, or an actor that
    is not the key's owner; BadRequest (400) for a body that is not a JSON object."""
    header = {k.lower(): v for k, v in request.headers.items()}.get("signature")
    if not header:
        raise SignatureRequired()
    try:
        params = httpsig.parse(header)
    except httpsig.SignatureError as exc:
        raise SignatureRequired(str(exc)) from None
    try:
        activity = json.loads(request.body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("The body is not JSON.") from None
    if not isinstance(activity, dict):
        raise BadRequest("The body is not a JSON object (an activity).")
    key = None
    for fresh in (False, True):  # a cached key that fails may have been rotated: fetch once more
        try:
            key = remote.fetch_key(params["keyId"], allow_private=allow_private, seconds=seconds, fresh=fresh)
        except remote.FetchError as exc:
            actor = _id(activity.get("actor"))
            if (exc.status == 410 and activity.get("type") == "Delete" and actor
                    and _id(activity.get("object")) == actor == urldefrag(params["keyId"])[0]):
                raise ActorGone(actor) from None
            raise SignatureRequired(f"The signing key could not be fetched: {exc}.") from None
        try:
            httpsig.verify(key.pem, params, request.method, request.target, request.headers, request.body, now)
            break
        except httpsig.SignatureError as exc:
            if fresh:
                raise SignatureRequired(str(exc)) from None
    if _id(activity.get("actor")) != key.owner:
        raise SignatureRequired("The activity's actor is not the owner of the key that signed it.")
    return activity, key


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


def receive(paper: Paper, links: Links, inbox_of: str | None, request: Request, now: datetime, *,
            allow_private: bool, seconds: float) -> Outcome:
    """Handle one inbox POST to `inbox_of`'s inbox (a local actor, or None for the shared
    inbox) of `paper`, addressed by `links`. Flushes (the caller commits); raises
    SignatureRequired (401) or BadRequest (400), writing nothing. `seconds` bounds every outside
    call this POST makes together (the key, and for a Follow the actor when the key lives apart
    from it)."""
    started = time.monotonic()
    try:
        activity, key = authenticate(request, now, allow_private=allow_private, seconds=seconds)
    except ActorGone as gone:
        count = db.session.execute(delete(ApFollower).where(
            ApFollower.paper_id == paper.id, ApFollower.actor_uri == gone.actor)).rowcount or 0
        return Outcome("deleted", f"The actor is gone (its key answers 410); {count} follow(s) removed.")
    seconds = seconds - (time.monotonic() - started)
    kind = activity.get("type")
    if kind == "Follow":
        local = _local_of(paper, links, _id(activity.get("object")))
        if local is None or (inbox_of is not None and local != inbox_of):
            return Outcome("ignored", "A Follow of no actor of this inbox; ignored.")
        return _follow(paper, links, local, activity, key, now, allow_private=allow_private, seconds=seconds)
    if kind == "Undo" and isinstance(activity.get("object"), (dict, str)):
        inner = activity["object"]
        inner_id = _id(inner)
        query = delete(ApFollower).where(ApFollower.paper_id == paper.id, ApFollower.actor_uri == key.owner)
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
    if kind == "Delete" and _id(activity.get("object")) == key.owner:
        gone = db.session.execute(delete(ApFollower).where(
            ApFollower.paper_id == paper.id, ApFollower.actor_uri == key.owner)).rowcount or 0
        return Outcome("deleted", f"The actor is gone; {gone} follow(s) removed.")
    return Outcome("ignored", "Accepted; this inbox acts on Follow, Undo and Delete only.")


def _follow(paper: Paper, links: Links, local: str, activity: dict, key: remote.RemoteKey, now: datetime, *,
            allow_private: bool, seconds: float) -> Outcome:
    inbox, shared = key.inbox, key.shared_inbox
    if inbox is None:  # the key lives apart from its actor: the actor names the inbox
        if seconds < 0.2:
            raise SignatureRequired("The follower's actor could not be fetched in time.")
        try:
            actor = remote.get_json(key.owner, allow_private=allow_private, seconds=seconds)
        except remote.FetchError as exc:
            raise SignatureRequired(f"The follower's actor could not be fetched: {exc}.") from None
        inbox = _id(actor.get("inbox"))
        endpoints = actor.get("endpoints") if isinstance(actor.get("endpoints"), dict) else {}
        shared = _id(endpoints.get("sharedInbox"))
    if not inbox or not inbox.startswith(("https://", "http://")) or len(inbox) > 2000:
        raise BadRequest("The follower's actor names no usable inbox.")
    if shared is not None and (len(shared) > 2000 or not shared.startswith(("https://", "http://"))):
        shared = None
    row = db.session.scalar(select(ApFollower).where(
        ApFollower.paper_id == paper.id, ApFollower.local == local, ApFollower.actor_uri == key.owner))
    if row is None:
        row = ApFollower(paper_id=paper.id, local=local, actor_uri=key.owner, created_at=now)
        db.session.add(row)
    follow_id = _id(activity)
    row.inbox, row.shared_inbox = inbox, shared
    row.follow_id = follow_id if follow_id and len(follow_id) <= 2000 else None
    body = json.dumps(documents.accept(links, local, activity), separators=(",", ":"), ensure_ascii=False)
    db.session.add(ApDelivery(paper_id=paper.id, signer=local, inbox=inbox, kind="Accept", piece_id=None,
                              body=body, created_at=now, attempts=0, next_attempt_at=now))
    db.session.flush()
    return Outcome("followed", "Followed; an Accept is on its way.")
