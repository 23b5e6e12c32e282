"""Desk keys: issue, authenticate, revoke.

A key is `desk_` + 43 URL-safe characters (32 random bytes). Only the SHA-256 hex of the whole
key is stored, beside a 12-character display prefix used to find the row; the hash is then
compared in constant time.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from sqlalchemy import select

from extensions import db
from models import KEY_KINDS, DeskKey, Paper, Persona, utcnow
from services.errors import Forbidden, Unauthorized

KEY_PREFIX = "desk_"
DISPLAY_CHARS = 12
# What `issue_key` makes: the prefix, then 32 random bytes in base64url (43 characters).
_KEY_SHAPE = re.compile(r"desk_[A-Za-z0-9_-]{43}", re.ASCII)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def issue_key(paper: Paper, kind: str, *, label: str = "", persona: Persona | None = None,
              capabilities: list[str] | None = None) -> tuple[DeskKey, str]:
    """Create a key; returns (row, the plain key). The plain key is shown once and never stored.

    Raises ValueError for an unknown kind or an agent key without a persona.
    """
    if kind not in KEY_KINDS:
        raise ValueError(f"kind must be one of {', '.join(KEY_KINDS)}")
    if kind == "agent" and persona is None:
        raise ValueError("an agent key needs --persona")
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
    return row


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
