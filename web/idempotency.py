"""`Idempotency-Key` on keyed writes (draft-ietf-httpapi-idempotency-key-header; docs/API.md
"Idempotency-Key").

A keyed write (POST, PUT, PATCH or DELETE on a `@transactional` view, sent with a desk key) may
carry `Idempotency-Key: "<key>"`: a structured-field string (RFC 8941), or, leniently, the bare
key; 1-255 printable ASCII characters. Anything else is a 400. Requests without a desk key
(the public subscribe, the reader forms) ignore the header: their answers are the same whatever
is sent twice.

web/commit.py calls this module at its commit point, inside the request's one transaction:

1. `claim()` before the transaction: the parsed key and what identifies the request (paper,
   desk key id, method, path, SHA-256 of the raw body), or None.
2. `running(claim)` around the whole write: a second request with the same key while this
   worker still runs the first is a 409.
3. `replay(claim)` at the start of the transaction: on PostgreSQL, a transaction-scoped advisory
   lock on the key (held by another worker: 409); then the stored answer, if one younger than
   IDEMPOTENCY_TTL_SECONDS exists: the same request gets it again (status, body and the view's
   headers, plus `Idempotent-Replayed: true`), a different request (method, path or body) a 422.
4. `record(claim, response)` once the view answered 2xx/3xx, before the commit: the answer is
   inserted in the same transaction as the write, so a write that committed is always replayable
   and one that did not leaves no record. 4xx and 5xx answers write nothing and store nothing:
   the key may be sent again, with the same or a corrected body.

Records older than the TTL are ignored, and purged a hundred at a time by the keyed writes of
their paper (`record`); no scheduler is needed.
"""
from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from flask import Response, current_app, g, request
from sqlalchemy import delete, select, text

from extensions import db
from models import IdempotencyKey
from models.clock import utcnow
from services.errors import BadRequest, Conflict, Invalid
from web.headers import header

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY = 255
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Headers of the view's answer not worth keeping: recomputed on replay, or per answer.
NOT_STORED = frozenset({"content-length", "date", "set-cookie", "x-request-id"})
PURGE_BATCH = 100

MALFORMED = (f"The {HEADER} header must be one structured-field string (\"...\") or bare token "
             f"of 1 to {MAX_KEY} printable ASCII characters.")
IN_FLIGHT = (f"A request with this {HEADER} is still being processed; retry once it has "
             f"finished to get its answer.")
REUSED = (f"This {HEADER} was first used for a different request (method, path or body); "
          f"nothing was written. Send a new key for a new request.")
# A structured-field string holds these (RFC 8941 3.3.3), `"` and `\` only escaped.
_SF_CHARS = frozenset(chr(c) for c in range(0x20, 0x7F))
_TOKEN_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F))
_RUNNING = "paperdesk.idempotency_running"


@dataclass(frozen=True)
class Claim:
    """What identifies one keyed write sent with a key: `paper_id`, `owner` (the desk key's
    id), `key` (parsed), `method`, `path` and `fingerprint` (hex SHA-256 of the raw body)."""

    paper_id: int
    owner: int
    key: str
    method: str
    path: str
    fingerprint: str

    @property
    def scope(self) -> tuple[int, int, str]:
        """(paper_id, owner, key): the record's unique identity."""
        return (self.paper_id, self.owner, self.key)


def parse_key(values: list[str]) -> str:
    """The key carried by the `Idempotency-Key` header's `values` (one header expected).

    Accepts an RFC 8941 string (`"abc"`, with `\\"` and `\\\\` escapes) or a bare token of
    printable ASCII without spaces (`abc`). Raises services.errors.BadRequest for more than one
    header, an empty or over-long key, characters outside printable ASCII, or a string that is
    not closed or carries anything after its closing quote.
    """
    if len(values) != 1:
        raise BadRequest(MALFORMED)
    raw = values[0].strip(" \t")
    if raw.startswith('"'):
        key = _sf_string(raw)
    elif raw and set(raw) <= _TOKEN_CHARS:
        key = raw
    else:
        raise BadRequest(MALFORMED)
    if not 1 <= len(key) <= MAX_KEY:
        raise BadRequest(MALFORMED)
    return key


def _sf_string(raw: str) -> str:
    chars: list[str] = []
    i = 1
    while i < len(raw):
        char = raw[i]
        if char == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in '"\\':
                raise BadRequest(MALFORMED)
            chars.append(raw[i + 1])
            i += 2
            continue
        if char == '"':
            if i != len(raw) - 1:  # parameters or anything else after the string
                raise BadRequest(MALFORMED)
            return "".join(chars)
        if char not in _SF_CHARS:
            raise BadRequest(MALFORMED)
        chars.append(char)
        i += 1
    raise BadRequest(MALFORMED)  # never closed


def claim() -> Claim | None:
    """The current request's claim: None unless it is a write sent with a desk key (`g.key`)
    and an `Idempotency-Key` header. Reads the raw body (cached for the view's parser).
    Raises BadRequest for a malformed header (parse_key) on any write that carries one, keyed
    or not: the header is validated at the door even where it has nothing to replay (the
    public subscribe answers the same however often it is sent)."""
    if request.method not in WRITE_METHODS or header(HEADER) is None:
        return None
    key = parse_key(request.headers.getlist(HEADER))
    if g.get("key") is None:
        return None
    body = request.get_data(cache=True)
    return Claim(paper_id=g.paper.id, owner=g.key.id, key=key, method=request.method,
                 path=request.path, fingerprint=hashlib.sha256(body).hexdigest())


@contextlib.contextmanager
def running(claim: Claim | None) -> Iterator[None]:
    """Hold `claim`'s key as in flight in this worker for the block. Raises
    services.errors.Conflict (409) when a request of this worker holds it already (another
    worker's is seen by `replay`, on PostgreSQL). No claim: does nothing."""
    if claim is None:
        yield
        return
    lock, held = current_app.extensions.setdefault(_RUNNING, (threading.Lock(), set()))
    with lock:
        if claim.scope in held:
            raise Conflict(IN_FLIGHT)
        held.add(claim.scope)
    try:
        yield
    finally:
        with lock:
            held.discard(claim.scope)


def in_flight(app) -> set[tuple[int, int, str]]:
    """The (paper_id, desk key id, key) scopes `app`'s requests hold now (a copy), for
    operators' debugging and the tests that wait for a request to be under way."""
    lock, held = app.extensions.get(_RUNNING, (threading.Lock(), set()))
    with lock:
        return set(held)


def _lock_number(claim: Claim) -> int:
    digest = hashlib.sha256(repr(claim.scope).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _ttl() -> timedelta:
    return timedelta(seconds=current_app.config["IDEMPOTENCY_TTL_SECONDS"])


def replay(claim: Claim) -> Response | None:
    """Inside the request's transaction: the stored answer to `claim`'s key, with
    `Idempotent-Replayed: true`, when the same request was answered within the TTL; None when
    the key is new (or its record expired: that record is deleted, in this transaction).

    Raises Conflict (409) when another worker runs a request with this key now (PostgreSQL: a
    transaction-scoped advisory lock, released by that request's commit or rollback; SQLite
    writers are serialised by BEGIN IMMEDIATE, so a second worker waits and then replays), and
    Invalid (422) when the key was first used for another method, path or body."""
    if db.session.connection().dialect.name == "postgresql":
        locked = db.session.execute(text("SELECT pg_try_advisory_xact_lock(:n)"),
                                    {"n": _lock_number(claim)}).scalar()
        if not locked:
            raise Conflict(IN_FLIGHT)
    row = db.session.scalars(select(IdempotencyKey).where(
        IdempotencyKey.paper_id == claim.paper_id, IdempotencyKey.key_owner == claim.owner,
        IdempotencyKey.key == claim.key)).one_or_none()
    if row is None:
        return None
    if row.created_at <= utcnow() - _ttl():
        # Expired: as if never sent. Deleted now, not by the unit of work, which would insert
        # the new record before deleting this one and break the unique constraint.
        db.session.execute(delete(IdempotencyKey).where(IdempotencyKey.id == row.id))
        return None
    if (row.method, row.path, row.fingerprint) != (claim.method, claim.path, claim.fingerprint):
        raise Invalid(REUSED, errors={HEADER: [REUSED]})
    response = Response(row.body, status=row.status, headers=[tuple(pair) for pair in row.headers])
    response.headers[REPLAYED_HEADER] = "true"
    return response


def record(claim: Claim, response: Response) -> None:
    """Inside the request's transaction, before its commit: store `response` (the view's
    finished answer) as the answer to `claim`'s key, and purge up to PURGE_BATCH of the
    paper's expired records. Flushes nothing itself: the commit point's flush does."""
    now = utcnow()
    _purge(claim.paper_id, now - _ttl())
    headers = [[name, value] for name, value in response.headers.items()
               if name.lower() not in NOT_STORED]
    db.session.add(IdempotencyKey(
        paper_id=claim.paper_id, key_owner=claim.owner, key=claim.key, method=claim.method,
        path=claim.path, fingerprint=claim.fingerprint, status=response.status_code,
        headers=headers, body=response.get_data(), created_at=now))


def _purge(paper_id: int, cutoff) -> None:
    expired = (select(IdempotencyKey.id)
               .where(IdempotencyKey.paper_id == paper_id, IdempotencyKey.created_at <= cutoff)
               .limit(PURGE_BATCH))
    if db.session.connection().dialect.name == "postgresql":
        # Rows another writer is purging now are skipped rather than waited for.
        expired = expired.with_for_update(skip_locked=True)
    db.session.execute(delete(IdempotencyKey).where(IdempotencyKey.id.in_(expired.scalar_subquery())),
                       execution_options={"synchronize_session": False})
