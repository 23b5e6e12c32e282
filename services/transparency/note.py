"""C2SP signed notes (c2sp.org/signed-note), checkpoints (c2sp.org/tlog-checkpoint) and Ed25519
cosignatures (c2sp.org/tlog-cosignature). Pure functions over PyNaCl: no app, no database.

A checkpoint's text is three lines, each ending in LF: the origin, the tree size in decimal,
the base64 root hash. The signed note is that text, an empty line, then one line per signature:

    — <key name> base64(key ID (4 bytes) || signature)

The log signs with Ed25519 (signature type 0x01) under the key name = the origin; its key ID
is SHA-256(name || LF || 0x01 || public key)[:4]. A witness cosignature (type 0x04) signs
"cosignature/v1\\ntime <t>\\n" + the text, and its signature bytes are the big-endian u64
timestamp followed by the 64-byte Ed25519 signature.

The verifier key ("vkey") is `<name>+<hex key ID>+base64(type || public key)`, what Go's
golang.org/x/mod/sumdb/note.NewVerifier reads.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from dataclasses import dataclass

from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

ED25519 = 0x01
COSIGNATURE = 0x04
DASH = "\u2014"  # em dash, the first character of every signature line
MAX_SIGNATURES = 32  # c2sp signed-note: accept at least 16


class NoteError(ValueError):
    """A note, checkpoint or key that is malformed or does not verify; the message says which."""


def key_id(name: str, kind: int, public_key: bytes) -> bytes:
    """The 4-byte key ID of (`name`, signature type `kind`, 32-byte public key)."""
    return hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([kind]) + public_key).digest()[:4]


def vkey(name: str, public_key: bytes, kind: int = ED25519) -> str:
    """The verifier key text of an Ed25519 key (type 0x01) or cosigner key (0x04)."""
    return f"{name}+{key_id(name, kind, public_key).hex()}+{base64.b64encode(bytes([kind]) + public_key).decode()}"


@dataclass(frozen=True)
class Verifier:
    """A parsed vkey: `name`, 4-byte `id`, signature `kind` (0x01 or 0x04), 32-byte `public_key`."""

    name: str
    id: bytes
    kind: int
    public_key: bytes


def parse_vkey(text: str) -> Verifier:
    """Parse `<name>+<hex id>+<base64 type||key>`. Raises NoteError for anything else, for a
    type other than Ed25519 (0x01) or its cosignature (0x04), and for an ID that does not match
    the name and key."""
    parts = text.strip().split("+", 2)  # the name has no "+"; base64 may
    if len(parts) != 3 or not parts[0] or any(c.isspace() for c in parts[0]):
        raise NoteError(f"not a verifier key: {text!r}")
    name, hex_id, material = parts
    try:
        ident = bytes.fromhex(hex_id)
        raw = base64.b64decode(material, validate=True)
    except (ValueError, binascii.Error):
        raise NoteError(f"not a verifier key: {text!r}") from None
    if len(ident) != 4 or len(raw) != 33 or raw[0] not in (ED25519, COSIGNATURE):
        raise NoteError(f"not an Ed25519 verifier key: {text!r}")
    if key_id(name, raw[0], raw[1:]) != ident:
        raise NoteError(f"the key ID of {text!r} does not match its name and key")
    return Verifier(name=name, id=ident, kind=raw[0], public_key=raw[1:])


def checkpoint_text(origin: str, size: int, root: bytes) -> str:
    """The note text of a checkpoint (three LF-terminated lines, no extension lines)."""
    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


def sign_line(text: str, name: str, seed: bytes) -> str:
    """The Ed25519 (type 0x01) signature line of `text` by the key with 32-byte `seed`, LF-ended."""
    key = SigningKey(seed)
    signature = key.sign(text.encode("utf-8")).signature
    ident = key_id(name, ED25519, bytes(key.verify_key))
    return f"{DASH} {name} {base64.b64encode(ident + signature).decode()}\n"


def signed_note(text: str, lines: list[str]) -> str:
    """`text` (LF-terminated), the empty line, then the signature `lines` (each LF-terminated)."""
    return text + "\n" + "".join(lines)


def cosignature_message(text: str, timestamp: int) -> bytes:
    """What an Ed25519 cosignature/v1 signs: its header, its time line, then the checkpoint text."""
    return f"cosignature/v1\ntime {timestamp}\n{text}".encode()


def cosign_line(text: str, name: str, seed: bytes, timestamp: int) -> str:
    """A witness's cosignature/v1 line over checkpoint `text` at `timestamp` (POSIX seconds)."""
    key = SigningKey(seed)
    signature = key.sign(cosignature_message(text, timestamp)).signature
    ident = key_id(name, COSIGNATURE, bytes(key.verify_key))
    return f"{DASH} {name} {base64.b64encode(ident + struct.pack('>Q', timestamp) + signature).decode()}\n"


@dataclass(frozen=True)
class Signature:
    """One signature line: key `name`, 4-byte `id`, the signature bytes after the ID, the `line`."""

    name: str
    id: bytes
    blob: bytes
    line: str


def split_note(note: str) -> tuple[str, list[Signature]]:
    """(text, signatures) of a signed note. The text ends at the last empty line. Raises
    NoteError for a note that is not well formed (no signature, a bad line, control characters,
    too many signatures)."""
    if any(ord(c) < 0x20 and c != "\n" for c in note):
        raise NoteError("the note holds control characters")
    if not note.endswith("\n"):
        raise NoteError("the note does not end in a newline")
    cut = note.rfind("\n\n")
    if cut < 0:
        raise NoteError("the note has no signature block")
    text, block = note[:cut + 1], note[cut + 2:]
    signatures = []
    for line in block.splitlines(keepends=True):
        parts = line.rstrip("\n").split(" ")
        if len(parts) != 3 or parts[0] != DASH or not parts[1]:
            raise NoteError(f"malformed signature line: {line!r}")
        try:
            raw = base64.b64decode(parts[2], validate=True)
        except (ValueError, binascii.Error):
            raise NoteError(f"malformed signature line: {line!r}") from None
        if len(raw) < 5:
            raise NoteError(f"malformed signature line: {line!r}")
        signatures.append(Signature(name=parts[1], id=raw[:4], blob=raw[4:], line=line))
    if not signatures:
        raise NoteError("the note has no signature")
    if len(signatures) > MAX_SIGNATURES:
        raise NoteError("the note has too many signatures")
    return text, signatures


def verify_note(note: str, verifier: Verifier) -> str:
    """The text of `note` once its Ed25519 signature by `verifier` (type 0x01) checks out.
    Signatures by other keys are ignored. Raises NoteError when the key did not sign it or a
    signature by it fails."""
    text, signatures = split_note(note)
    mine = [s for s in signatures if s.name == verifier.name and s.id == verifier.id]
    if not mine:
        raise NoteError(f"the note is not signed by {verifier.name}")
    for s in mine:
        try:
            VerifyKey(verifier.public_key).verify(text.encode("utf-8"), s.blob)
        except (BadSignatureError, ValueError):
            raise NoteError(f"the signature by {verifier.name} does not verify") from None
    return text


def verify_cosignature(text: str, signature: Signature, verifier: Verifier) -> int:
    """The timestamp of a cosignature/v1 `signature` over checkpoint `text` by `verifier` (a
    0x04 key). Raises NoteError when it is another key's or does not verify."""
    if verifier.kind != COSIGNATURE or signature.name != verifier.name or signature.id != verifier.id:
        raise NoteError(f"not a cosignature by {verifier.name}")
    if len(signature.blob) != 8 + 64:
        raise NoteError(f"the cosignature by {verifier.name} is malformed")
    timestamp = struct.unpack(">Q", signature.blob[:8])[0]
    try:
        VerifyKey(verifier.public_key).verify(cosignature_message(text, timestamp), signature.blob[8:])
    except (BadSignatureError, ValueError):
        raise NoteError(f"the cosignature by {verifier.name} does not verify") from None
    return timestamp


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's `origin`, `size` and 32-byte `root`."""

    origin: str
    size: int
    root: bytes


def parse_checkpoint(text: str) -> Checkpoint:
    """The origin, size and root of checkpoint note text. Raises NoteError when malformed."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "" or not lines[0]:
        raise NoteError("a checkpoint has an origin, a size and a root hash line")
    size_text, root_text = lines[1], lines[2]
    if not size_text.isdigit() or (len(size_text) > 1 and size_text[0] == "0"):
        raise NoteError(f"bad tree size line: {size_text!r}")
    try:
        root = base64.b64decode(root_text, validate=True)
    except (ValueError, binascii.Error):
        raise NoteError(f"bad root hash line: {root_text!r}") from None
    if len(root) != 32:
        raise NoteError(f"bad root hash line: {root_text!r}")
    return Checkpoint(origin=lines[0], size=int(size_text), root=root)
