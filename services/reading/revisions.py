"""A piece's public history (docs/CORRECTIONS.md): its revisions since it first aired, newest
first, each with its kind, note, hashes and receipt, and each one's full public text (its hash
basis, which hashes to the logged `content_hash`).

Which revisions are public: from the revision the piece first aired with (its first `aired`
change dated at or before now) on; the revisions of a draft before that stay private, and a
piece never public has no history (None: the same 404 as an unknown piece). A piece taken off
air keeps its history's hashes public, not its text (`Gone`).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from extensions import db
from models import Paper, Piece, PieceChange, PieceRevision
from services.errors import Gone
from services.reading import stories, visibility

# Kinds readers are told about: every typed revision but the private `edit`.
NOTICE_KINDS = ("correction", "clarification", "update", "retraction")


@dataclass
class History:
    """A piece with a public history: `piece`, the first public rev `since`, and `public`
    (whether the piece is on air now: its revisions' texts are served only then)."""

    piece: Piece
    since: int
    public: bool


def history_of(paper: Paper, id_or_slug: str, *, now: datetime) -> History | None:
    """The public history of a piece by id or slug at `now`, or None when it has none (no such
    piece, or one never public by then). Two queries."""
    piece = stories.find(paper, id_or_slug, now=now, include_drafts=True)
    if piece is None:
        return None
    since = db.session.scalar(select(func.min(PieceChange.rev)).where(
        PieceChange.piece_id == piece.id, PieceChange.type == "aired",
        PieceChange.at <= now))
    if since is None:
        return None
    return History(piece, since, visibility.is_public(piece, now))


def notices_of(piece: Piece) -> list[dict]:
    """The piece's public notices (`{rev, kind, note, at}`, oldest first): every typed
    revision but the private `edit`s. No query: they are kept on the piece."""
    return [n for n in piece.notices or [] if n["kind"] in NOTICE_KINDS]


def retraction_of(piece: Piece) -> dict | None:
    """The notice of the piece's newest revision when that is a retraction, else None."""
    notices = notices_of(piece)
    return notices[-1] if notices and notices[-1]["kind"] == "retraction" and notices[-1]["rev"] == piece.rev \
        else None


def _kind(basis: dict) -> tuple[str | None, str | None]:
    return basis.get("kind"), basis.get("note")


def page(history: History, limit: int, before: int | None = None) -> tuple[list[PieceRevision], bool]:
    """Up to `limit` public revisions, newest first, older than rev `before` when given; and
    whether more follow."""
    query = (select(PieceRevision).where(PieceRevision.piece_id == history.piece.id,
                                         PieceRevision.rev >= history.since)
             .order_by(PieceRevision.rev.desc()).limit(limit + 1))
    if before is not None:
        query = query.where(PieceRevision.rev < before)
    rows = list(db.session.scalars(query))
    return rows[:limit], len(rows) > limit


def revision(history: History, rev: int) -> PieceRevision | None:
    """Public revision `rev`; None when it is not public (before first airing) or absent.
    Raises Gone (410) for a piece taken off air: its text is withdrawn with it."""
    if rev < history.since:
        return None
    row = db.session.scalar(select(PieceRevision).where(PieceRevision.piece_id == history.piece.id,
                                                        PieceRevision.rev == rev))
    if row is not None and not history.public:
        raise Gone("This piece was taken off air: its revisions' hashes stay public in its history, "
                   "their text does not (docs/PROOFS.md).")
    return row


def record(row: PieceRevision) -> dict:
    """One history entry: `rev`, `kind`, `note` (null for a first filing), `at` (filed),
    `content_hash`, `prev_hash`, `receipt`, `kid`, `signed_string`."""
    kind, note = _kind(row.basis)
    return {"rev": row.rev, "kind": kind, "note": note, "at": row.filed_at, "content_hash": row.content_hash,
            "prev_hash": row.prev_hash, "receipt": row.receipt, "kid": row.kid, "signed_string": row.signed_string}



def texts(history: History) -> list[PieceRevision]:
    """Every public revision, oldest first, texts and all (the history page). One query.
    Raises Gone for a piece taken off air: its history's text is withdrawn with it."""
    if not history.public:
        raise Gone("This piece was taken off air: its history's text is withdrawn with it.")
    return list(db.session.scalars(
        select(PieceRevision).where(PieceRevision.piece_id == history.piece.id,
                                    PieceRevision.rev >= history.since).order_by(PieceRevision.rev)))
