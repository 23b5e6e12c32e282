"""The log keys' seeds at rest, sealed the way the receipt seeds are (services/newsroom/seeds.py,
docs/SECURITY.md "Receipt signing seeds"), under a key of their own:

    "v1:" + base64(SecretBox(K).encrypt(seed)),  K = BLAKE2b-256(SECRET_KEY, person="paperdesk-tlog")

The personalisation keeps K apart from the receipt seeds' key and every other use of the
secret. (This package does not import the newsroom's: services.newsroom reaches
services.delivery, whose change stream reaches this package.) Pure functions.
"""
from __future__ import annotations

import base64
import binascii

import nacl.encoding
import nacl.hash
import nacl.secret
from nacl.exceptions import CryptoError

from services.errors import DeskError

VERSION = "v1:"
PERSON = b"paperdesk-tlog"
SEED_BYTES = 32


class LogKeyLocked(DeskError):
    """A sealed log seed that the instance secret does not open (SECRET_KEY changed): nothing is
    signed, never a new key made in its place (that would change the log's identity). Fix:
    restore the secret, or `flask rotate-secret --old-secret-file OLD`."""

    status = 500
    default_detail = ("The transparency log cannot sign: this instance's SECRET_KEY does not open its "
                      "key. Restore the previous SECRET_KEY, or run `flask rotate-secret` (docs/SECURITY.md).")


def _key(secret: str) -> bytes:
    if not secret:
        raise ValueError("an empty secret cannot seal a log key")
    return nacl.hash.blake2b(secret.encode("utf-8"), digest_size=nacl.secret.SecretBox.KEY_SIZE,
                             person=PERSON, encoder=nacl.encoding.RawEncoder)


def seal(seed: bytes, secret: str) -> str:
    """The stored form of a 32-byte seed under `secret`. Raises ValueError for another length."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"a log seed is {SEED_BYTES} bytes, not {len(seed)}")
    return VERSION + base64.b64encode(bytes(nacl.secret.SecretBox(_key(secret)).encrypt(seed))).decode("ascii")


def unseal(stored: str, secret: str, *, origin: str = "") -> bytes:
    """The 32-byte seed from its stored form. Raises LogKeyLocked when it does not open."""
    try:
        if not stored.startswith(VERSION):
            raise ValueError("not sealed")
        seed = nacl.secret.SecretBox(_key(secret)).decrypt(base64.b64decode(stored[len(VERSION):], validate=True))
    except (CryptoError, binascii.Error, ValueError) as exc:
        raise LogKeyLocked(LogKeyLocked.default_detail.replace("its key", f"its key ({origin})")
                           if origin else None) from exc
    if len(seed) != SEED_BYTES:
        raise LogKeyLocked()
    return seed
