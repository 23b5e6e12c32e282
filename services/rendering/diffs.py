"""Readable diffs of a piece's public revisions, for the history page (docs/CORRECTIONS.md).

    changes(older_basis, newer_basis) -> [FieldDiff]
    timeline(revisions) -> [entry]   newest first, each with what it changed

Each field a reader sees (headline, dek, prose, cited facts) is compared word by word
(difflib.SequenceMatcher); removed words come out in `<del>`, added ones in `<ins>`, the rest
as they were, all escaped. Only fields that changed are listed.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from markupsafe import Markup, escape

from services.reading import revisions as history

FIELDS = (("headline", "Headline"), ("dek", "Standfirst"), ("prose", "Text"), ("cited_facts", "Cited facts"))
_TOKENS = re.compile(r"\s+|[^\s]+")


@dataclass
class FieldDiff:
    """One changed field: its `label` and the `html` of the words removed and added."""

    label: str
    html: Markup


def _facts_text(facts: list[dict]) -> str:
    return "\n".join(f"[{f.get('n')}] {f.get('statement')} ({f.get('source')}, {f.get('instrument')})"
                     for f in facts or [])


def _text(basis: dict, name: str) -> str:
    return _facts_text(basis.get(name)) if name == "cited_facts" else str(basis.get(name) or "")


def word_diff(old: str, new: str) -> Markup:
    """`old` -> `new` as escaped HTML: removed runs in `<del>`, added ones in `<ins>`."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(str(escape("".join(a[i1:i2]))))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return Markup("".join(out))  # noqa: S704  every piece of text above is escaped


def changes(older: dict, newer: dict) -> list[FieldDiff]:
    """The fields that differ between two revisions' bases, each as a word diff."""
    return [FieldDiff(label, word_diff(_text(older, name), _text(newer, name)))
            for name, label in FIELDS if _text(older, name) != _text(newer, name)]


def timeline(rows: list) -> list[dict]:
    """The history page's entries from a piece's public revisions (oldest first, as
    services/reading/revisions.py `texts` gives them), newest first: each one's `record`
    (rev, kind, note, at, hashes, receipt) and `changes`, what it changed from the revision
    before (none for the one the piece aired with)."""
    entries = [{**history.record(row), "changes": [] if older is None else changes(older.basis, row.basis)}
               for older, row in zip([None, *rows], rows, strict=False)]
    return entries[::-1]
