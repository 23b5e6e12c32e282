"""The log's entries: one per public change of a piece, UTF-8 RFC 8785 JSON with exactly

    {"at": "2026-11-20T12:00:00Z", "content_hash": "sha256:..." | null, "event": "aired",
     "log": "paperdesk-log/1", "paper": "demo", "piece": "12", "rev": 2, "seq": 41}

`seq` is the change feed's number, `event` its type (`aired`, `revised`, `unaired`), `piece` the
id as the API spells it, `content_hash` the API's (`null` for `unaired`), `at` when the change
became public (RFC 3339, UTC). A `revised` entry of a typed revision (docs/CORRECTIONS.md) also
has `kind` and `note`, the revision's kind and public note. Hashes only, never prose. And entry
bundles (c2sp.org/tlog-tiles): each entry as a big-endian uint16 length, then its bytes.
"""
from __future__ import annotations

import struct

import orjson
import rfc8785

from models.clock import rfc3339

FORMAT = "paperdesk-log/1"
FIELDS = ("at", "content_hash", "event", "log", "paper", "piece", "rev", "seq")
TYPED = ("kind", "note")  # the fields a typed revision's `revised` entry adds
EVENTS = ("aired", "revised", "unaired")
MAX_ENTRY = 0xFFFF
SAFE_INTEGER = 2**53 - 1  # RFC 8785 (I-JSON): integers beyond it are not exact


def entry_bytes(*, paper: str, seq: int, event: str, piece: int | str, rev: int,
                content_hash: str | None, at, kind: str | None = None, note: str | None = None) -> bytes:
    """The canonical bytes of one entry (`at` an aware datetime; `kind` and `note` those of a
    typed revision's `revised` entry). Raises ValueError for an unknown event or an entry too
    long for a bundle (never the case: a note is at most 1000 characters)."""
    if event not in EVENTS:
        raise ValueError(f"unknown event {event!r}")
    typed = {"kind": kind, "note": note or ""} if kind is not None and event == "revised" else {}
    data = rfc8785.dumps({"log": FORMAT, "paper": paper, "seq": seq, "event": event,
                          "piece": str(piece), "rev": rev,
                          "content_hash": None if event == "unaired" else content_hash,
                          "at": rfc3339(at), **typed})
    if len(data) > MAX_ENTRY:
        raise ValueError("a log entry longer than 65535 bytes")
    return data


def parse_entry(data: bytes) -> dict:
    """An entry's fields, checked: exactly FIELDS, `log` FORMAT, a known event, and the bytes
    canonical (re-encoding them gives them back). Raises ValueError otherwise.

    A monitor parses every entry of the log (100 000 and more), so the canonical test first
    re-encodes with orjson (sorted keys, compact), which for an entry's values (ASCII keys,
    strings, integers within +-2**53, null) writes RFC 8785's bytes some 100 times faster than
    rfc8785 (tests/test_transparency_log.py holds the two equal); only bytes it does not give
    back are judged by rfc8785 itself."""
    try:
        entry = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"an entry is not JSON: {exc}") from None
    if not isinstance(entry, dict) or set(entry) not in (set(FIELDS), {*FIELDS, *TYPED}):
        raise ValueError("an entry has exactly the fields " + ", ".join(FIELDS)
                         + " (and kind, note for a typed revision)")
    if entry["log"] != FORMAT or entry["event"] not in EVENTS:
        raise ValueError(f"not a {FORMAT} entry")
    # Only strings, null and exact integers: orjson writes a float as it read it (`1.0`), RFC
    # 8785 as the shortest number (`1`), so a float is for rfc8785 to judge.
    safe = all(v is None or type(v) is str or (type(v) is int and -SAFE_INTEGER <= v <= SAFE_INTEGER)
               for v in entry.values())
    if not (safe and orjson.dumps(entry, option=orjson.OPT_SORT_KEYS) == data) and rfc8785.dumps(entry) != data:
        raise ValueError("the entry is not in RFC 8785 canonical form")
    return entry


def bundle(entries: list[bytes]) -> bytes:
    """An entry bundle: each entry prefixed by its length (big-endian uint16)."""
    return b"".join(struct.pack(">H", len(e)) + e for e in entries)


def unbundle(data: bytes) -> list[bytes]:
    """The entries of a bundle. Raises ValueError for a truncated one."""
    out, i = [], 0
    while i < len(data):
        if i + 2 > len(data):
            raise ValueError("a truncated entry bundle")
        (n,) = struct.unpack(">H", data[i:i + 2])
        if i + 2 + n > len(data):
            raise ValueError("a truncated entry bundle")
        out.append(data[i + 2:i + 2 + n])
        i += 2 + n
    return out
