"""The keys an actor publishes: the paper's RSA key (HTTP signatures) and its Ed25519 receipt key
as a Multikey (object proofs).

RSA: one 2048-bit key per paper, shared by the paper's actor and its personas' actors (each
publishes it as `<actor>#main-key`). It is made the first time anything needs it (an actor
document, a delivery) in a transaction of its own, so a public read can make it without writing
in the request's session, and two workers making it at once keep the first (the primary key on
`paper_id`). At rest the PKCS#8 DER is sealed like the receipt seeds (services/newsroom/seeds.py)
but under a key of its own: BLAKE2b-256(SECRET_KEY, person="paperdesk-apkeys").

Ed25519: the paper's active receipt signing key (services/newsroom/provenance.py) signs the
Articles' proofs; it is published on each actor as an `assertionMethod` Multikey whose
`publicKeyMultibase` is "z" + base58btc(0xed 0x01 + the 32 raw public-key bytes).
"""
from __future__ import annotations

import base64
from collections.abc import Callable

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from nacl.signing import SigningKey as NaclSigningKey
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import ApKey, Paper, SigningKey
from services import sealing
from services.errors import DeskError
from services.newsroom import seeds

PERSON = b"paperdesk-apkeys"  # at most 16 bytes
RSA_BITS = 2048
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
ED25519_MULTICODEC = b"\xed\x01"


class KeyLocked(DeskError):
    """A sealed ActivityPub key that the instance secret does not open (SECRET_KEY changed):
    500, nothing is signed. Restore the previous SECRET_KEY, or run `flask rotate-secret` with
    the old one (`reseal`)."""

    status = 500

    default_detail = ("ActivityPub deliveries cannot be signed: this instance's SECRET_KEY does not "
                      "open the paper's HTTP-signature key. Restore the previous SECRET_KEY.")


def receipt_signer(receipt: SigningKey, secret: str) -> Callable[[bytes], bytes]:
    """A function signing bytes with the receipt key `receipt` (Ed25519, 64-byte signature).
    Raises SeedLocked (services/newsroom/seeds.py) when `secret` does not open the seed."""
    key = NaclSigningKey(seeds.open_seed(receipt.private_seed, secret, kid=receipt.kid))
    return lambda data: key.sign(data).signature


def seal(der: bytes, secret: str) -> str:
    """The stored form of `der` under `secret` (services/sealing.py, person PERSON)."""
    return sealing.seal(der, secret, PERSON)


def unseal(stored: str, secret: str) -> bytes:
    """The DER sealed in `stored`. Raises KeyLocked when it does not open under `secret`."""
    try:
        return sealing.unseal(stored, secret, PERSON)
    except sealing.Unopened as exc:
        raise KeyLocked() from exc


def ensure_rsa_key(paper: Paper, secret: str, now) -> ApKey:
    """The paper's RSA key row, made (2048 bits, in its own committed transaction, on a
    connection apart from the session's) if it has none. Loses a race gracefully: the row
    another worker committed first is the one returned."""
    row = db.session.get(ApKey, paper.id)
    if row is not None:
        return row
    private = rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    der = private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    try:
        with db.engine.begin() as conn:
            conn.execute(ApKey.__table__.insert().values(
                paper_id=paper.id, public_pem=pem, private_key=seal(der, secret), created_at=now))
    except IntegrityError:
        pass  # another worker made it first: theirs stands
    row = db.session.get(ApKey, paper.id, populate_existing=True)
    if row is None:  # pragma: no cover - the insert either landed or lost to one that did
        raise LookupError(f"paper {paper.slug} has no ActivityPub key")
    return row


def reseal(old_secret: str, new_secret: str) -> dict[str, list[int]]:
    """Seal every paper's RSA key under `new_secret` after SECRET_KEY changed (as
    provenance.reseal_seeds does the receipt seeds): `{"resealed", "kept"}` paper ids. Raises
    KeyLocked naming the papers whose key opens under neither secret, before changing any row.
    Flushes; the caller commits."""
    rows = db.session.scalars(select(ApKey).order_by(ApKey.paper_id))
    done = sealing.reseal(
        rows, old_secret, new_secret, column="private_key", name=lambda row: row.paper_id,
        opens=lambda stored, secret, row: unseal(stored, secret), seals=seal, locked=KeyLocked,
        refuse=lambda lost: KeyLocked(f"The ActivityPub keys of papers {', '.join(map(str, lost))} open under "
                                      f"neither the old nor the current SECRET_KEY. Nothing was changed."))
    db.session.flush()
    return {"resealed": done["resealed"], "kept": done["kept"]}


def private_key(row: ApKey, secret: str) -> rsa.RSAPrivateKey:
    """The RSA private key of `row`. Raises KeyLocked when it does not open under `secret`."""
    key = serialization.load_der_private_key(unseal(row.private_key, secret), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):  # pragma: no cover - only RSA keys are made
        raise KeyLocked()
    return key


def base58btc(data: bytes) -> str:
    """Bitcoin's base58 alphabet (multibase prefix "z" not included); leading zero bytes as "1"."""
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _B58[digit] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def multikey(public_key_b64: str) -> str:
    """`publicKeyMultibase` of a raw Ed25519 public key given in standard base64 (as the
    receipt keys are stored): "z" + base58btc(0xed01 + key)."""
    return "z" + base58btc(ED25519_MULTICODEC + base64.b64decode(public_key_b64))


def receipt_key(paper: Paper) -> SigningKey | None:
    """The paper's active receipt signing key (the one its Articles' proofs are made with), or
    None when it has none."""
    return db.session.scalar(
        select(SigningKey).where(SigningKey.paper_id == paper.id, SigningKey.retired_at.is_(None))
        .order_by(SigningKey.created_at.desc(), SigningKey.id.desc()).limit(1))
