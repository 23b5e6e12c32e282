"""The log keys' seeds at rest, sealed as every secret at rest is (services/sealing.py), under a
key of their own (person "paperdesk-tlog"), apart from the receipt seeds' key and every other
use of the secret. Pure functions.
"""
from __future__ import annotations

from services import sealing
from services.errors import DeskError

PERSON = b"paperdesk-tlog"
SEED_BYTES = 32


class LogKeyLocked(DeskError):
    """A sealed log seed that the instance secret does not open (SECRET_KEY changed): nothing is
    signed, never a new key made in its place (that would change the log's identity). Fix:
    restore the secret, or `flask rotate-secret --old-secret-file OLD`."""

    status = 500
    default_detail = ("The transparency log cannot sign: this instance's SECRET_KEY does not open its "
                      "key. Restore the previous SECRET_KEY, or run `flask rotate-secret` (docs/SECURITY.md).")


def seal(seed: bytes, secret: str) -> str:
    """The stored form of a 32-byte seed under `secret`. Raises ValueError for another length."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"a log seed is {SEED_BYTES} bytes, not {len(seed)}")
    return sealing.seal(seed, secret, PERSON)


def unseal(stored: str, secret: str, *, origin: str = "") -> bytes:
    """The 32-byte seed from its stored form. Raises LogKeyLocked when it does not open."""
    try:
        seed = sealing.unseal(stored, secret, PERSON)
    except sealing.Unopened as exc:
        raise LogKeyLocked(LogKeyLocked.default_detail.replace("its key", f"its key ({origin})")
                           if origin else None) from exc
    if len(seed) != SEED_BYTES:
        raise LogKeyLocked()
    return seed
