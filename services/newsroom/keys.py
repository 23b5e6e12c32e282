"""Desk keys: issue, authenticate, revoke.

A key is `desk_` + 43 URL-safe characters (32 random bytes). Only the SHA-256 hex of the whole
key is stored, beside a 12-character display prefix used to find the row; the hash is then
compared in constant time.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm.attributes import set_committed_value

from extensions import db
from models import KEY_KINDS, DeskKey, Paper, Persona, utcnow
from services.errors import Forbidden, Unauthorized

log = logging.getLogger(__name__)

# What an agent key may be allowed to do, beyond the cockpit check, its config as read, and its
# own persona's drafts and proofs that every agent key reaches. The one list: `flask keys
# create --capability`, the permission checks (blueprints/api/permissions.py) and `/agent`.
AGENT_CAPABILITIES = {
    "file": "file drafts as its persona (POST /stories)",
    "revise": "revise its own persona's drafts (PATCH /stories/{id})",
    "air": "put its own persona's pieces on air, schedule them, and take them off air "
           "(PUT and DELETE /stories/{id}/air)",
}
# `last_used_at` is written at most this often per key: a key used on every request costs
# one UPDATE a minute, not one a request.
TOUCH_EVERY = timedelta(minutes=1)

KEY_PREFIX = "desk_"
DISPLAY_CHARS = 12
# What `issue_key` makes: the prefix, then 32 random bytes in base64url (43 characters).
_KEY_SHAPE = re.compile(r"desk_[A-Za-z0-9_-]{43}", re.ASCII)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def issue_key(paper: Paper, kind: str, *, label: str = "", persona: Persona | None = None,
              capabilities: list[str] | None = None) -> tuple[DeskKey, str]:
    """Create a key; returns (row, the plain key). The plain key is shown once and never stored.

    Raises ValueError for an unknown kind, an agent key without a persona, or a capability
    not in AGENT_CAPABILITIES.
    """
    if kind not in KEY_KINDS:
        raise ValueError(f"kind must be one of {', '.join(KEY_KINDS)}")
    if kind == "agent" and persona is None:
        raise ValueError("an agent key needs --persona")
    unknown = sorted(set(capabilities or []) - set(AGENT_CAPABILITIES))
    if unknown:
        raise ValueError(f"unknown capability {', '.join(unknown)}; choose from {', '.join(AGENT_CAPABILITIES)}")
    plain = KEY_PREFIX + secrets.token_urlsafe(32)
    row = DeskKey(paper_id=paper.id, kind=kind, prefix=plain[len(KEY_PREFIX):][:DISPLAY_CHARS],
                  key_hash=_hash(plain), label=label, persona_id=persona.id if persona else None,
                  capabilities=list(capabilities or []), created_at=utcnow())
    db.session.add(row)
    db.session.flush()
    return row, plain


def presented_key(authorization: str | None, x_desk_key: str | None) -> str | None:
    """The key a request sent, from its `Authorization` and `X-Desk-Key` header values (None:
    header absent). `Authorization: Bearer <key>` wins over `X-Desk-Key`; '' when
    Authorization names another scheme; None when neither header was sent."""
    if authorization is not None:
        scheme, _, token = authorization.strip().partition(" ")
        return token.strip() if scheme.lower() == "bearer" else ""
    return None if x_desk_key is None else x_desk_key.strip()


def well_formed(plain: str) -> bool:
    """True when `plain` has the shape `issue_key` makes: `desk_` and 43 base64url characters
    (32 random bytes). Anything else can be refused without looking it up."""
    return _KEY_SHAPE.fullmatch(plain) is not None


def authenticate(paper: Paper, *, authorization: str | None, x_desk_key: str | None) -> DeskKey | None:
    """The valid key for `paper` that a request sent in its `Authorization` / `X-Desk-Key`
    header values (None: header absent; see `presented_key`), or None when it sent none.

    Raises services.errors.Unauthorized (401, with WWW-Authenticate) for a malformed, unknown
    or revoked key, and Forbidden (403) for a valid key of another paper (docs/API.md "status
    codes"). One query.
    """
    plain = presented_key(authorization, x_desk_key)
    if plain is None:
        return None
    if not well_formed(plain):
        raise Unauthorized("The desk key is malformed.")
    display = plain[len(KEY_PREFIX):][:DISPLAY_CHARS]
    row = db.session.scalar(select(DeskKey).where(DeskKey.prefix == display))
    if row is None or not hmac.compare_digest(row.key_hash, _hash(plain)):
        raise Unauthorized("The desk key is not known.")
    if row.revoked_at is not None:
        raise Unauthorized("The desk key has been revoked.")
    if row.paper_id != paper.id:
        raise Forbidden("This desk key belongs to another paper.")
    touch(row, utcnow())
    return row


def touch(row: DeskKey, now: datetime) -> bool:
    """Record that `row` was used at `now` (aware UTC) in `last_used_at`, at most once per
    TOUCH_EVERY per key: nothing at all (not even a query) while the loaded value is fresher,
    and a conditional UPDATE otherwise, so of several workers one writes it. Written on a
    connection of its own and committed at once, whatever the request then does (a read
    never commits; a refused write rolls back). Best effort: a database that refuses the write
    is logged and the request goes on. Returns True when this call wrote it."""
    if row.last_used_at is not None and now - row.last_used_at < TOUCH_EVERY:
        return False
    try:
        with db.engine.begin() as conn:
            # Never wait for a lock on the request's way in: a writer holding the database
            # (SQLite) or the key's row (PostgreSQL) means this use goes unrecorded, and the
            # next one records it.
            if conn.dialect.name == "sqlite":
                waited = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
                conn.exec_driver_sql("PRAGMA busy_timeout = 0")
            else:
                waited = None
                conn.exec_driver_sql("SET LOCAL lock_timeout = '50ms'")
            try:
                written = conn.execute(update(DeskKey).where(
                    DeskKey.id == row.id,
                    or_(DeskKey.last_used_at.is_(None), DeskKey.last_used_at <= now - TOUCH_EVERY))
                    .values(last_used_at=now)).rowcount == 1
            finally:
                if waited is not None:
                    conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(waited)}")
    except SQLAlchemyError:
        # Expected while a writer holds the lock: the next use records it.
        log.info("a desk key's last use was not recorded (database busy)", exc_info=True)
        return False
    # What the row shows from now on in this session (GET /config lists keys' last use), without
    # marking it changed: the session must not write it again.
    set_committed_value(row, "last_used_at", now)
    return written


def revoke(prefix: str) -> DeskKey | None:
    """Revoke the key whose display prefix starts with `prefix` (unique match); None if no match.

    Raises ValueError when the prefix matches more than one key.
    """
    prefix = prefix.removeprefix(KEY_PREFIX)
    # autoescape: `_` is a key character and a LIKE wildcard; it must match itself only.
    rows = db.session.scalars(
        select(DeskKey).where(DeskKey.prefix.startswith(prefix, autoescape=True))).all()
    if len(rows) > 1:
        raise ValueError("prefix matches more than one key; give more characters")
    if not rows:
        return None
    if rows[0].revoked_at is None:
        rows[0].revoked_at = utcnow()
    return rows[0]
