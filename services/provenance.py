"""Provenance: content hashes, Ed25519 filing receipts and the papers' signing keys.

Spec rule 4 and "Proof fields"; CONTRACT.md "proof". A receipt proves which paper's desk filed
which revision and that its content is unchanged since. It never proves that a claim is true.

- `content_hash` = "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of `basis`.
- the receipt is the base64 Ed25519 signature over `signed_string(...)` (UTF-8), made with the
  paper's current signing key, named by `kid`.
"""
from __future__ import annotations

import base64
import hashlib
import secrets
from datetime import datetime

import rfc8785
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey as NaclSigningKey
from nacl.signing import VerifyKey
from sqlalchemy import select

from extensions import db
from models import Paper, SigningKey
from clock import rfc3339

ALG = "Ed25519"
RECEIPT_VERSION = "paperdesk-receipt/1"
HASH_BASIS = (
    "content_hash is 'sha256:' followed by the lowercase hex SHA-256 digest of the RFC 8785 "
    "(JSON Canonicalization Scheme) serialisation of `basis`, encoded as UTF-8."
)


def content_hash(basis: dict) -> str:
    """The content hash of a basis dict (see module doc). Raises rfc8785 errors for floats
    outside the I-JSON range; bases hold only strings, integers, lists and dicts."""
    return "sha256:" + hashlib.sha256(rfc8785.dumps(basis)).hexdigest()


def signed_string(*, paper: str, piece: str, rev: int, content_hash: str, prev_hash: str | None,
                  filed_at: datetime, filer: str) -> str:
    """The exact text a receipt signs: one `name=value` line each, joined by '\\n', no trailing
    newline. Binds paper, piece, revision, content hash, previous hash, filing time and filer."""
    return "\n".join([
        RECEIPT_VERSION,
        f"paper={paper}",
        f"piece={piece}",
        f"rev={rev}",
        f"content_hash={content_hash}",
        f"prev_hash={prev_hash or ''}",
        f"filed_at={rfc3339(filed_at)}",
        f"filer={filer}",
    ])


def create_signing_key(paper: Paper, now: datetime) -> SigningKey:
    """Generate and add a new Ed25519 key pair for `paper` (flushed, not committed)."""
    nacl_key = NaclSigningKey.generate()
    row = SigningKey(
        paper_id=paper.id,
        kid=f"{paper.slug}-{now:%Y%m%d}-{secrets.token_hex(3)}",
        public_key=base64.b64encode(bytes(nacl_key.verify_key)).decode(),
        private_seed=base64.b64encode(bytes(nacl_key)).decode(),
        created_at=now,
    )
    db.session.add(row)
    db.session.flush()
    return row


def active_signing_key(paper: Paper) -> SigningKey:
    """The paper's current (unretired, newest) signing key. Raises LookupError if it has none."""
    row = db.session.scalar(
        select(SigningKey)
        .where(SigningKey.paper_id == paper.id, SigningKey.retired_at.is_(None))
        .order_by(SigningKey.created_at.desc(), SigningKey.id.desc())
        .limit(1)
    )
    if row is None:
        raise LookupError(f"paper {paper.slug} has no active signing key")
    return row


def rotate_signing_key(paper: Paper, now: datetime) -> SigningKey:
    """Retire the paper's active keys and create a new one. Old receipts keep verifying: retired
    keys stay published at `/api/v1/receipt-keys` with their `retired_at`."""
    for row in db.session.scalars(
        select(SigningKey).where(SigningKey.paper_id == paper.id, SigningKey.retired_at.is_(None))
    ):
        row.retired_at = now
    return create_signing_key(paper, now)


def sign(key: SigningKey, message: str) -> str:
    """Base64 Ed25519 signature of `message` (UTF-8) with `key`."""
    nacl_key = NaclSigningKey(base64.b64decode(key.private_seed))
    return base64.b64encode(nacl_key.sign(message.encode("utf-8")).signature).decode()


def verify(public_key_b64: str, message: str, signature_b64: str) -> bool:
    """True when `signature_b64` is a valid Ed25519 signature of `message` under the key."""
    try:
        VerifyKey(base64.b64decode(public_key_b64)).verify(
            message.encode("utf-8"), base64.b64decode(signature_b64)
        )
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True
