"""Receipt signing seeds, encrypted at rest under a key derived from the instance secret.

A paper's Ed25519 seed (32 bytes) is what makes its filing receipts: whoever reads it can sign
receipts the world accepts as the desk's. So `signing_keys.private_seed` never holds it in the
clear: it holds

    "v1:" + base64(SecretBox(K).encrypt(seed))      (24-byte nonce + 32 + 16-byte MAC)

with K = BLAKE2b-256(SECRET_KEY as UTF-8, person="paperdesk-seeds"): a database dump, backup or
read-only SQL injection alone yields no seed; it also takes the instance secret (the
`SECRET_KEY` setting, or the generated `instance/secret_key`). The personalisation keeps K apart
from every other use of the same secret (itsdangerous signs links with it).

A row without the "v1:" prefix is a plain base64 seed from before migration 0009; it still
opens (`open_seed`), and migration 0009 / `flask rotate-secret` seal such rows.

A sealed seed that does not open under the secret at hand raises `SeedLocked`: never a new key
made in its place (that would silently change the paper's receipt identity). Changing
SECRET_KEY therefore needs `flask rotate-secret --old-secret ...` (commands/secrets.py).

Pure functions of their arguments (no app, no database), so the migration can use them.
"""
from __future__ import annotations

import base64
import binascii

from services import sealing
from services.errors import DeskError

VERSION = sealing.VERSION
PERSON = b"paperdesk-seeds"  # BLAKE2b personalisation: at most 16 bytes
SEED_BYTES = 32


class SeedLocked(DeskError):
    """A sealed signing seed that the instance secret does not open (SECRET_KEY changed, or a
    database restored beside another instance's secret). 500: the instance is misconfigured;
    nothing is signed and nothing is written. The operator's fix: restore the secret the seeds
    were sealed with, or run `flask rotate-secret --old-secret OLD`."""

    status = 500
    default_detail = ("Filing receipts cannot be signed: this instance's SECRET_KEY does not open "
                      "the paper's receipt signing key. Restore the previous SECRET_KEY, or run "
                      "`flask rotate-secret --old-secret OLD` (docs/SECURITY.md).")


def seed_key(secret: str) -> bytes:
    """The 32-byte SecretBox key for `secret` (the app's SECRET_KEY): BLAKE2b-256 of its UTF-8
    bytes, personalised with "paperdesk-seeds" (services/sealing.py). Raises ValueError for an
    empty secret."""
    return sealing.key(secret, PERSON)


def is_sealed(stored: str) -> bool:
    """True when `stored` (a `private_seed` value) is in the sealed form, "v1:..."."""
    return sealing.is_sealed(stored)


def seal_seed(seed: bytes, secret: str) -> str:
    """The stored form of the 32-byte `seed` under `secret` (services/sealing.py). Raises
    ValueError for a seed that is not 32 bytes."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"a signing seed is {SEED_BYTES} bytes, not {len(seed)}")
    return sealing.seal(seed, secret, PERSON)


def open_seed(stored: str, secret: str, *, kid: str = "") -> bytes:
    """The 32-byte seed from its stored form: a sealed "v1:..." value opened with `secret`, or a
    plain base64 seed (rows from before migration 0009). Raises SeedLocked when a sealed value
    does not open under `secret` (or is damaged), naming `kid` when given."""
    try:
        seed = (sealing.unseal(stored, secret, PERSON) if is_sealed(stored)
                else base64.b64decode(stored, validate=True))
    except (sealing.Unopened, binascii.Error, ValueError) as exc:
        raise SeedLocked(_locked(kid)) from exc
    if len(seed) != SEED_BYTES:
        raise SeedLocked(_locked(kid))
    return seed


def _locked(kid: str) -> str:
    named = f" ({kid})" if kid else ""
    return SeedLocked.default_detail.replace("signing key.", f"signing key{named}.")
