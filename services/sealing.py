"""Secrets at rest, sealed under the instance secret: the one way the receipt signing seeds
(services/newsroom/seeds.py), the transparency logs' seeds (services/transparency/sealing.py)
and the papers' ActivityPub keys (services/delivery/federation/keys.py) are kept, and the one
reseal that moves them all to a new SECRET_KEY (`flask rotate-secret`).

    "v1:" + base64(SecretBox(K).encrypt(data)),  K = BLAKE2b-256(SECRET_KEY, person=<kind>)

Each kind has its own personalisation, so no two share a key (nor with itsdangerous' signing
under the same secret). Pure functions of their arguments (no app, no database): migrations
use them.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable

import nacl.encoding
import nacl.hash
import nacl.secret
from nacl.exceptions import CryptoError

VERSION = "v1:"


class Unopened(Exception):
    """A sealed value that does not open under the secret at hand (or is damaged, or not sealed)."""


def key(secret: str, person: bytes) -> bytes:
    """The 32-byte SecretBox key for `secret` (the app's SECRET_KEY) and the kind `person` (at
    most 16 bytes): BLAKE2b-256 of the secret's UTF-8 bytes. Raises ValueError for an empty
    secret."""
    if not secret:
        raise ValueError("an empty secret cannot seal anything")
    return nacl.hash.blake2b(secret.encode("utf-8"), digest_size=nacl.secret.SecretBox.KEY_SIZE,
                             person=person, encoder=nacl.encoding.RawEncoder)


def is_sealed(stored: str) -> bool:
    """True when `stored` is in the sealed form, "v1:..."."""
    return stored.startswith(VERSION)


def seal(data: bytes, secret: str, person: bytes) -> str:
    """The stored form of `data` under `secret` for the kind `person` (random nonce)."""
    return VERSION + base64.b64encode(bytes(nacl.secret.SecretBox(key(secret, person)).encrypt(data))).decode("ascii")


def unseal(stored: str, secret: str, person: bytes) -> bytes:
    """The data sealed in `stored`. Raises Unopened when it is not sealed, is damaged, or does
    not open under `secret` (an empty one included)."""
    try:
        if not is_sealed(stored):
            raise ValueError("not sealed")
        box = nacl.secret.SecretBox(key(secret, person))
        return box.decrypt(base64.b64decode(stored[len(VERSION):], validate=True))
    except (CryptoError, binascii.Error, ValueError) as exc:
        raise Unopened(str(exc)) from exc


def reseal(rows: Iterable, old_secret: str, new_secret: str, *, column: str, name: Callable[[object], str],
           opens: Callable[[str, str, object], bytes], seals: Callable[[bytes, str], str], locked: type[Exception],
           refuse: Callable[[list[str]], Exception], spare: Callable[[object], bool] = lambda row: False
           ) -> dict[str, list[str]]:
    """Seal the `column` of every row under `new_secret`: a value that opens under it already
    (`opens(stored, secret, row)`, raising `locked` when it does not) is kept as is; one that
    opens under `old_secret` (or a legacy clear value `opens` reads) is sealed afresh with
    `seals(data, new_secret)`. Returns `{"resealed", "kept", "unreadable"}` lists of
    `name(row)`; `unreadable` are rows `spare(row)` lets stay as they are when they open under
    neither. Raises `refuse(names)` for the other rows that open under neither, before
    changing any row. Sets attributes only; the caller flushes and commits."""
    plan, kept, lost, unreadable = [], [], [], []
    for row in rows:
        stored = getattr(row, column)
        if is_sealed(stored):
            try:
                opens(stored, new_secret, row)
                kept.append(name(row))
                continue
            except locked:
                pass
        try:
            plan.append((row, opens(stored, old_secret, row)))
        except locked:
            (unreadable if spare(row) else lost).append(name(row))
    if lost:
        raise refuse(lost)
    for row, data in plan:
        setattr(row, column, seals(data, new_secret))
    return {"resealed": [name(row) for row, _ in plan], "kept": kept, "unreadable": unreadable}
