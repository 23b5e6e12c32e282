"""The filing desk: file, revise, put on air (now or at a scheduled instant), take off air
(docs/API.md "writes", "Scheduled airing", "Change feed").

Every filing or revision validates its inputs, writes a new `PieceRevision` with its basis,
content hash and Ed25519 receipt, refreshes the piece's current state and moves the paper's
version. Every public change (a piece aired, revised while on air, taken off air) also writes
a `PieceChange` in the same transaction, for the change feed. Functions flush; the caller
(request or CLI) commits or rolls back once, having taken `lock_paper` first: change numbers
(`seq`) and the `now` a change is dated with then follow commit order.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from sqlalchemy import delete, func, select
from sqlalchemy import inspect as sa_inspect

from extensions import db
from models import CitedFact, Paper, Persona, Piece, PieceChange, PieceRevision, Section, SigningKey
from models.clock import rfc3339
from services.errors import Invalid
from services.newsroom import figures, provenance
from services.reading.revisions import NOTICE_KINDS

MARKER = re.compile(r"\[\^(\d+)\]")
FACT_FIELDS = ("statement", "source", "instrument", "claim_key")
# A piece cites at most this many facts (a bound for readers and for the 64 KiB body limit).
MAX_FACTS = 20
# Revision kinds (docs/CORRECTIONS.md): `edit` is a change before the piece was ever public; the
# others are changes to what readers have seen, each a public notice. A correction,
# clarification or retraction must say why in its note, plain text of at most NOTE_MAX characters.
KINDS = ("edit", *NOTICE_KINDS)
NOTE_REQUIRED = ("correction", "clarification", "retraction")
NOTE_MAX = 1000


# The detail of every refused filing or revision (services.errors.Invalid, a 422 problem whose
# `errors` maps field names to lists of messages).
REFUSED = "The filing failed validation; nothing was written."


def _refuse(errors: dict[str, list[str]]) -> None:
    raise Invalid(REFUSED, errors=errors)


@dataclass
class Draft:
    """The published fields of one revision, as filed."""

    headline: str
    dek: str
    prose: str
    section: Section
    persona: Persona
    cited_facts: list[dict] = field(default_factory=list)
    image: str | None = None
    # A revision's kind and public note (`type_revision`); None for a first filing.
    kind: str | None = None
    note: str = ""


# Remembered (a pure function of its arguments): the demo seeder slugs the same sources and
# claim subjects for every piece that cites them.
@lru_cache(maxsize=8192)
def slugify(text: str, max_length: int = 80, fallback: str = "piece") -> str:
    """ASCII, lower-case, hyphenated slug of at most `max_length` characters that always holds a
    letter (so it never looks like an id): 'Rates rise 2%!' -> 'rates-rise-2', '2026' ->
    'piece-2026' (`fallback` names the prefix)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:max_length].strip("-")
    if not re.search(r"[a-z]", slug):
        slug = f"{fallback}-{slug}"[:max_length].strip("-") if slug else fallback
    return slug


def check_markers(prose: str, cited_facts: list[dict]) -> dict[str, list[str]]:
    """Errors for facts not numbered 1..k in order, and for `[^N]` markers with no fact N."""
    errors: dict[str, list[str]] = {}
    numbers = [fact.get("n", i) for i, fact in enumerate(cited_facts, start=1)]
    if numbers != list(range(1, len(cited_facts) + 1)):
        errors["cited_facts"] = ["cited facts must be numbered 1..k in order"]
    missing = sorted({int(n) for n in MARKER.findall(prose) if not 1 <= int(n) <= len(cited_facts)})
    if missing:
        errors["prose"] = [f"marker [^{n}] has no cited fact {n}" for n in missing]
    return errors


def validate(draft: Draft) -> None:
    """Raise services.errors.Invalid unless the draft may be filed: section and persona active, facts
    numbered 1..k with every field, every marker pointing at a fact, no empty headline or prose."""
    errors: dict[str, list[str]] = {}
    if not draft.headline.strip():
        errors["headline"] = ["must not be empty"]
    if not draft.prose.strip():
        errors["prose"] = ["must not be empty"]
    if not draft.section.active:
        errors["section"] = [f"section {draft.section.name!r} is not active"]
    if not draft.persona.active:
        errors["byline"] = [f"persona {draft.persona.name!r} is not active"]
    if len(draft.cited_facts) > MAX_FACTS:
        errors["cited_facts"] = [f"at most {MAX_FACTS} cited facts"]
    for i, fact in enumerate(draft.cited_facts, start=1):
        absent = [name for name in FACT_FIELDS if not str(fact.get(name) or "").strip()]
        if absent:
            errors[f"cited_facts.{i}"] = [f"missing {', '.join(absent)}"]
    for name, messages in check_markers(draft.prose, draft.cited_facts).items():
        errors.setdefault(name, []).extend(messages)
    if errors:
        _refuse(errors)


# The paper setting (config) that makes a figure no cited fact states a refusal, not a warning.
REFUSE_FIGURES = "refuse_unsupported_figures"


def check_figures(paper: Paper, draft: Draft) -> list[dict]:
    """The draft's figures that no cited fact states (services/newsroom/figures.py), each
    `{field, start, end, figure}`. Raises Invalid (422) naming each one when the paper's
    config sets REFUSE_FIGURES."""
    found = figures.unsupported({"headline": draft.headline, "dek": draft.dek, "prose": draft.prose},
                                draft.cited_facts)
    if found and (paper.config or {}).get(REFUSE_FIGURES) is True:
        errors: dict[str, list[str]] = {}
        for figure in found:
            errors.setdefault(figure["field"], []).append(
                f"{figure['figure']!r} (characters {figure['start']}-{figure['end']}) matches no cited fact")
        raise Invalid("A figure matches no cited fact; this paper refuses such filings.", errors=errors)
    return found


def build_draft(paper: Paper, fields: dict, *, base: Piece | None = None) -> Draft:
    """A Draft from request fields (`headline`, `dek`, `prose`, `section` name, `byline` persona
    name, `cited_facts`, `image`); fields absent from `fields` come from `base` (a revision),
    whose section, persona and cited facts must be loaded. Raises Invalid for a section or
    persona this paper does not have, or a missing one; validity is `validate`'s job."""
    errors: dict[str, list[str]] = {}
    section = base.section if base is not None else None
    persona = base.persona if base is not None else None
    if "section" in fields:
        section = db.session.scalar(select(Section).where(
            Section.paper_id == paper.id, Section.name == fields["section"]))
        if section is None:
            errors["section"] = [f"no section named {fields['section']!r} on this paper"]
    elif section is None:
        errors["section"] = ["a section is required"]
    if "byline" in fields:
        persona = db.session.scalar(select(Persona).where(
            Persona.paper_id == paper.id, Persona.name == fields["byline"]))
        if persona is None:
            errors["byline"] = [f"no persona named {fields['byline']!r} on this paper"]
    elif persona is None:
        errors["byline"] = ["a byline (persona name) is required"]
    if base is not None:
        current = {"headline": base.headline, "dek": base.dek, "prose": base.prose,
                   "image": base.image,
                   "cited_facts": [{k: getattr(f, k) for k in FACT_FIELDS} for f in base.cited_facts]}
    else:
        current = {"dek": "", "image": None, "cited_facts": []}
    merged = {**current, **{k: v for k, v in fields.items() if k not in ("section", "byline")}}
    if errors:
        # Report marker problems too, so one answer lists everything wrong with the body.
        for name, messages in check_markers(merged.get("prose", ""), merged["cited_facts"]).items():
            errors.setdefault(name, []).extend(messages)
        _refuse(errors)
    return Draft(headline=merged["headline"], dek=merged["dek"], prose=merged["prose"],
                 section=section, persona=persona, cited_facts=merged["cited_facts"],
                 image=merged["image"])


def has_been_public(piece: Piece, now: datetime) -> bool:
    """True once readers may have seen the piece: it aired (`on_air_at` has come), or any of
    its airings did (an `aired` change dated `now` or before), even if it was taken off air
    since and scheduled again (`on_air_at` then names the coming airing) or its new schedule
    cancelled (which clears `on_air_at`)."""
    if piece.on_air_at is not None and piece.on_air_at <= now:
        return True
    return db.session.scalar(select(PieceChange.id).where(
        PieceChange.paper_id == piece.paper_id, PieceChange.piece_id == piece.id, PieceChange.type == "aired",
        PieceChange.at <= now).limit(1)) is not None


def type_revision(piece: Piece, draft: Draft, kind: str | None, note: str | None, now: datetime) -> None:
    """Set `draft.kind` and `draft.note` for the next revision of `piece` (docs/CORRECTIONS.md).
    No kind given: `edit` for a piece never public, `update` for one that has been. Raises
    Invalid (422) for `edit` on a piece readers have seen, a public kind on one they have not,
    or a correction, clarification or retraction without a note."""
    public = has_been_public(piece, now)
    kind = kind or ("update" if public else "edit")
    note = (note or "").strip()
    errors: dict[str, list[str]] = {}
    if kind not in KINDS:
        errors["kind"] = [f"must be one of {', '.join(KINDS)}"]
    elif public and kind == "edit":
        errors["kind"] = ["this piece has been public: revise it as a correction, clarification, "
                          "update or retraction"]
    elif not public and kind != "edit":
        errors["kind"] = [f"this piece has never been public: a {kind} is for what readers have "
                          "seen; revise it as an edit"]
    if kind in NOTE_REQUIRED and not note:
        errors["note"] = [f"a {kind} needs a public note saying what changed and why"]
    if len(note) > NOTE_MAX:
        errors["note"] = [f"at most {NOTE_MAX} characters"]
    if errors:
        _refuse(errors)
    draft.kind, draft.note = kind, note


def same_content(paper: Paper, piece: Piece, draft: Draft, *, with_notice: bool = False) -> bool:
    """True when filing `draft` as the next revision of `piece` would change no published field
    (the bases differ only in `rev`, and in `kind` and `note` unless `with_notice`: a body that
    names its kind files a notice even when the text stays, a retraction for one; a basis of an
    earlier BASIS_VERSION is compared in its own version, so an unchanged piece filed before it
    is still unchanged)."""
    current = db.session.scalar(select(PieceRevision.basis).where(
        PieceRevision.piece_id == piece.id, PieceRevision.rev == piece.rev))
    if current is None:
        return False
    proposed = revision_basis(paper.slug, piece.id, piece.slug, piece.rev, draft,
                              version=current.get("basis", 1))
    ignored = () if with_notice else ("kind", "note")
    current, proposed = ({k: v for k, v in b.items() if k not in ignored} for b in (current, proposed))
    return provenance.content_hash(current) == provenance.content_hash(proposed)


def basis_for(paper: Paper, piece: Piece, rev: int, draft: Draft) -> dict:
    """Every published field of a revision: the exact input of its content hash."""
    return revision_basis(paper.slug, piece.id, piece.slug, rev, draft)


# The basis's version. 1: paper, piece, slug, rev, headline, dek, prose, section, byline, image,
# cited_facts. 2 adds `basis` (the version itself) and `byline_title` (the persona's title, which
# every public answer shows beside the byline). A basis keeps the version it was filed under:
# old revisions verify as they were signed (docs/PROOFS.md "What the basis covers").
BASIS_VERSION = 2


def revision_basis(paper_slug: str, piece_id: int, piece_slug: str, rev: int, draft: Draft, *,
                   version: int = BASIS_VERSION) -> dict:
    """`basis_for` from plain values, for callers that write rows without ORM objects (the
    bulk demo seeder): both paths hash and sign exactly the same basis. `version`: an earlier
    BASIS_VERSION's fields (to compare with a revision filed under it)."""
    basis = {
        "paper": paper_slug,
        "piece": str(piece_id),
        "slug": piece_slug,
        "rev": rev,
        "headline": draft.headline,
        "dek": draft.dek,
        "prose": draft.prose,
        "section": draft.section.name,
        "byline": draft.persona.name,
        "image": draft.image,
        "cited_facts": [
            {"n": i, **{name: str(fact[name]) for name in FACT_FIELDS}}
            for i, fact in enumerate(draft.cited_facts, start=1)
        ],
        # A revision's kind and note are signed with its text; a first filing has neither.
        **({"kind": draft.kind, "note": draft.note} if draft.kind is not None else {}),
    }
    if version >= 2:
        basis.update({"basis": version, "byline_title": draft.persona.title or ""})
    return basis


def _unique_slug(paper: Paper, headline: str) -> str:
    base = slugify(headline)
    taken = set(db.session.scalars(
        select(Piece.slug).where(Piece.paper_id == paper.id, Piece.slug.startswith(base))
    ))
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    return slug


def seal(key: SigningKey | provenance.OpenedKey, paper_slug: str, piece_id: int, rev: int, basis: dict, *,
         prev_hash: str | None, filer: str, now: datetime) -> dict:
    """The provenance columns of one revision: `content_hash` of `basis`, the `signed_string`
    binding it, the Ed25519 `receipt` over that string made with `key`, and the key's `kid`.
    Shared by filing and the bulk demo seeder so both produce identical receipts; the seeder
    passes the key opened once (`provenance.open_key`), which needs no app context."""
    digest = provenance.content_hash(basis)
    text = provenance.signed_string(paper=paper_slug, piece=str(piece_id), rev=rev,
                                    content_hash=digest, prev_hash=prev_hash, filed_at=now,
                                    filer=filer, kind=basis.get("kind"))
    receipt = key.sign(text) if isinstance(key, provenance.OpenedKey) else provenance.sign(key, text)
    return {"content_hash": digest, "signed_string": text, "receipt": receipt, "kid": key.kid}


def _drop_cited_facts(piece: Piece) -> None:
    """Delete the piece's cited facts in one statement, and forget any loaded copies: the new
    rows may reuse their ids (SQLite), which would clash in the session's identity map."""
    if "cited_facts" not in sa_inspect(piece).unloaded:
        db.session.expire(piece, ["cited_facts"])
    for obj in [o for o in db.session.identity_map.values()
                if isinstance(o, CitedFact) and o.piece_id == piece.id]:
        db.session.expunge(obj)
    db.session.execute(CitedFact.__table__.delete().where(CitedFact.piece_id == piece.id))


def _replace_cited_facts(piece: Piece, facts: list[dict], *, fresh: bool) -> None:
    """Make the piece's cited facts `facts` (dicts of FACT_FIELDS, numbered 1..k in order).
    Facts equal to the piece's loaded ones, field by field and in order, are left as they are
    (a revision of the headline or prose writes no fact row); otherwise they are deleted and
    written again. `fresh`: the piece has no facts yet (its first revision), so none to delete."""
    wanted = [{k: str(fact[k]) for k in FACT_FIELDS} for fact in facts]
    if not fresh:
        if "cited_facts" not in sa_inspect(piece).unloaded:
            have = [{k: getattr(fact, k) for k in FACT_FIELDS} for fact in piece.cited_facts]
            if have == wanted and [fact.n for fact in piece.cited_facts] == list(range(1, len(have) + 1)):
                return
        _drop_cited_facts(piece)
    for i, fact in enumerate(wanted, start=1):
        db.session.add(CitedFact(piece_id=piece.id, n=i, **fact))


def _record(paper: Paper, piece: Piece, draft: Draft, *, filer: str, now: datetime) -> PieceRevision:
    rev = (piece.rev or 0) + 1 if piece.content_hash else 1
    prev = None
    if rev > 1:
        prev = piece.content_hash
    basis = basis_for(paper, piece, rev, draft)
    sealed = seal(provenance.active_signing_key(paper), paper.slug, piece.id, rev, basis,
                  prev_hash=prev, filer=filer, now=now)
    revision = PieceRevision(piece_id=piece.id, rev=rev, basis=basis, prev_hash=prev, filer=filer,
                             filed_at=now, **sealed)
    db.session.add(revision)
    piece.rev, piece.content_hash, piece.updated_at = rev, sealed["content_hash"], now
    piece.unsupported_figures = len(check_figures(paper, draft))
    piece.headline, piece.dek, piece.prose, piece.image = (
        draft.headline, draft.dek, draft.prose, draft.image)
    piece.section_id, piece.persona_id = draft.section.id, draft.persona.id
    if draft.kind is not None:
        # A new list: the JSON column does not track in-place mutation.
        piece.notices = [*(piece.notices or []),
                         {"rev": rev, "kind": draft.kind, "note": draft.note, "at": rfc3339(now)}]
    # After every field of the piece is set: replacing the facts flushes the piece's row, in
    # one UPDATE only if nothing of it changes later.
    _replace_cited_facts(piece, draft.cited_facts, fresh=rev == 1)
    if piece.on_air and piece.on_air_at is not None:
        if piece.on_air_at <= now:
            change = _add_change(paper, piece, "revised", now)
            change.kind, change.note = draft.kind, draft.note if draft.kind is not None else None
        else:
            # Scheduled, not public yet: its pending `aired` change announces this revision
            # instead (no poller has seen it, so it may still change).
            db.session.execute(PieceChange.__table__.update().where(
                PieceChange.piece_id == piece.id, PieceChange.type == "aired", PieceChange.at > now,
            ).values(rev=rev, content_hash=sealed["content_hash"]))
    paper.bump()
    db.session.flush()
    return revision


def file_piece(paper: Paper, draft: Draft, *, filer: str, now: datetime,
               key_id: int | None = None) -> Piece:
    """File a new draft (rev 1, not on air). Raises Invalid (422), also for a figure no cited
    fact states on a paper that refuses them (`check_figures`); nothing is written then."""
    validate(draft)
    check_figures(paper, draft)
    piece = Piece(paper_id=paper.id, slug=_unique_slug(paper, draft.headline),
                  section_id=draft.section.id, persona_id=draft.persona.id,
                  headline=draft.headline, dek=draft.dek, prose=draft.prose, image=draft.image,
                  rev=0, content_hash="", on_air=False, filed_at=now, updated_at=now,
                  filed_by_key_id=key_id)
    db.session.add(piece)
    db.session.flush()
    _record(paper, piece, draft, filer=filer, now=now)
    return piece


def revise_piece(paper: Paper, piece: Piece, draft: Draft, *, filer: str, now: datetime) -> Piece:
    """File a new revision of `piece` (rev + 1, chained to the previous hash). Raises
    Invalid (422) as `file_piece`; nothing is written then."""
    validate(draft)
    check_figures(paper, draft)
    _record(paper, piece, draft, filer=filer, now=now)
    return piece


def lock_paper(paper: Paper) -> None:
    """Serialise the writes of pieces on one paper: call before reading the piece a write
    starts from. Without it two concurrent revisions both read rev N and both file rev N + 1
    (the second fails on the (piece, rev) key), two filings with one headline take one slug,
    and a revision built on a stale read drops the other's changes.

    PostgreSQL: the paper's row is locked (SELECT ... FOR UPDATE) until the transaction ends; a
    concurrent writer waits, then reads what this one committed. SQLite: the database's write
    lock is taken now (BEGIN IMMEDIATE) rather than at the first write; a writer that cannot get
    it within the busy timeout fails with "database is locked" (a 503 problem, Retry-After)."""
    connection = db.session.connection()
    if connection.dialect.name == "sqlite":
        # pysqlite opens a transaction only before its first write: open it here, as a writer.
        if not connection.connection.dbapi_connection.in_transaction:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        return
    db.session.execute(select(Paper.id).where(Paper.id == paper.id).with_for_update())


def _add_change(paper: Paper, piece: Piece, kind: str, at: datetime) -> PieceChange:
    """Record a public change of `piece` numbered after the paper's last one. Callers hold
    `lock_paper`, so no two writers take one number."""
    seq = (db.session.scalar(select(func.max(PieceChange.seq)).where(PieceChange.paper_id == paper.id)) or 0) + 1
    change = PieceChange(paper_id=paper.id, seq=seq, piece_id=piece.id, type=kind, rev=piece.rev,
                         content_hash=None if kind == "unaired" else piece.content_hash, at=at)
    # The one record of the change: content webhooks, CDN purge and every other consumer derive
    # their work from it in the worker (services/delivery/change_stream.py).
    db.session.add(change)
    return change


def _cancel_pending(paper: Paper, piece: Piece, now: datetime) -> None:
    # A scheduled airing's change is dated in the future and no poller or consumer has listed
    # it: a cancellation removes it rather than adding a tombstone for something never public.
    db.session.execute(delete(PieceChange).where(
        PieceChange.piece_id == piece.id, PieceChange.type == "aired", PieceChange.at > now))


def refresh_schedule(paper: Paper, now: datetime) -> None:
    """Store in `paper.air_schedule` the instants (epoch seconds, ascending; None when there
    are none) at which the paper's scheduled pieces air after `now`: web/caching.py keys cached
    answers on how many have passed. Call after any write that schedules or cancels."""
    db.session.flush()
    instants = db.session.scalars(select(Piece.on_air_at).where(
        Piece.paper_id == paper.id, Piece.on_air.is_(True), Piece.on_air_at > now,
    ).order_by(Piece.on_air_at)).all()
    paper.air_schedule = [int(at.timestamp()) for at in instants] or None


def is_scheduled(piece: Piece, now: datetime) -> bool:
    """True for a piece put on air at an instant still to come (`on_air_at` > `now`)."""
    return bool(piece.on_air) and piece.on_air_at is not None and piece.on_air_at > now


def put_on_air(paper: Paper, piece: Piece, now: datetime, at: datetime | None = None) -> Piece:
    """Put a piece on air at `now`, or schedule it for `at` (aware) when that is later than
    `now` (fractions of a second dropped); its day is that instant's UTC date. A scheduled
    piece is on no public surface until its instant (services/reading/visibility.py).

    Already public: unchanged. Already scheduled: scheduled again for `at`, or aired now
    without `at` (its pending change is replaced, so the feed lists it once, in order).
    Writes the `aired` change, dated the instant the piece becomes public."""
    when = now if at is None or at <= now else at.replace(microsecond=0)
    if piece.on_air and not is_scheduled(piece, now):
        return piece
    if is_scheduled(piece, now):
        _cancel_pending(paper, piece, now)
    piece.on_air, piece.on_air_at, piece.on_air_day = True, when, when.date()
    piece.updated_at = now
    _add_change(paper, piece, "aired", when)
    paper.bump()
    refresh_schedule(paper, now)
    db.session.flush()
    return piece


def take_off_air(paper: Paper, piece: Piece, now: datetime) -> Piece:
    """Take a piece off air: it leaves every public list, feed and page, and the change feed
    gets an `unaired` tombstone. A scheduled piece's schedule is cancelled instead: it goes
    back to being a draft and its pending `aired` change is removed (it was never public)."""
    if not piece.on_air:
        return piece
    if is_scheduled(piece, now):
        _cancel_pending(paper, piece, now)
        piece.on_air, piece.on_air_at, piece.on_air_day = False, None, None
    else:
        piece.on_air = False
        _add_change(paper, piece, "unaired", now)
    piece.updated_at = now
    paper.bump()
    refresh_schedule(paper, now)
    db.session.flush()
    return piece
