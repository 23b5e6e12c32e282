"""Provenance: content hashes, Ed25519 filing receipts and the papers' signing keys.

docs/API.md "proof"; docs/PROOFS.md verifies one offline. A receipt proves which paper's desk filed
which revision and that its content is unchanged since. It never proves that a claim is true.

- `content_hash` = "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of `basis`.
- the receipt is the base64 Ed25519 signature over `signed_string(...)` (UTF-8), made with the
  paper's current signing key, named by `kid`.
- the signing seeds are stored sealed under the instance secret (services/newsroom/seeds.py);
  `create_signing_key` and `sign` need an app context for `SECRET_KEY`.
"""
from __future__ import annotations

import base64
import hashlib
import secrets
from datetime import datetime

import rfc8785
from flask import current_app
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey as NaclSigningKey
from nacl.signing import VerifyKey
from sqlalchemy import select

from extensions import db
from models import Paper, Piece, PieceRevision, SigningKey
from models.clock import rfc3339
from services import sealing
from services.newsroom import seeds

ALG = "Ed25519"
RECEIPT_VERSION = "paperdesk-receipt/1"
HASH_BASIS = (
    "content_hash is 'sha256:' followed by the lowercase hex SHA-256 digest of the RFC 8785 "
    "(JSON Canonicalization Scheme) serialisation of `basis`, encoded as UTF-8."
)
ENCODING = (
    "The message is the UTF-8 bytes of signed_string exactly as given (lines joined by LF, no "
    "trailing newline). receipt is the 64-byte Ed25519 signature and public_key the 32 raw "
    "public-key bytes, both standard base64 (RFC 4648, with padding)."
)
DISCLAIMER = (
    "This receipt proves which paper's desk filed this revision, when, and that its published "
    "fields have not changed since. It never proves that any claim in the piece is true."
)


def content_hash(basis: dict) -> str:
    """The content hash of a basis dict (see module doc). Raises rfc8785 errors for floats
    outside the I-JSON range; bases hold only strings, integers, lists and dicts."""
    return "sha256:" + hashlib.sha256(rfc8785.dumps(basis)).hexdigest()


def signed_string(*, paper: str, piece: str, rev: int, content_hash: str, prev_hash: str | None,
                  filed_at: datetime, filer: str, kind: str | None = None) -> str:
    """The exact text a receipt signs: one `name=value` line each, joined by '\\n', no trailing
    newline. Binds paper, piece, revision, content hash, previous hash, filing time and filer,
    and a typed revision's `kind` (a last line, only for revisions that have one; its note is
    in the basis the content hash covers)."""
    return "\n".join([
        RECEIPT_VERSION,
        f"paper={paper}",
        f"piece={piece}",
        f"rev={rev}",
        f"content_hash={content_hash}",
        f"prev_hash={prev_hash or ''}",
        f"filed_at={rfc3339(filed_at)}",
        f"filer={filer}",
        *([f"kind={kind}"] if kind is not None else []),
    ])


def create_signing_key(paper: Paper, now: datetime) -> SigningKey:
    """Generate and add a new Ed25519 key pair for `paper` (flushed, not committed), its seed
    sealed under the app's SECRET_KEY. Needs an app context."""
    nacl_key = NaclSigningKey.generate()
    row = SigningKey(
        paper_id=paper.id,
        kid=f"{paper.slug}-{now:%Y%m%d}-{secrets.token_hex(3)}",
        public_key=base64.b64encode(bytes(nacl_key.verify_key)).decode(),
        private_seed=seeds.seal_seed(bytes(nacl_key), current_app.config["SECRET_KEY"]),
        created_at=now,
    )
    db.session.add(row)
    db.session.flush()
    return row


def active_signing_key(paper: Paper) -> SigningKey:
    """The paper's current (unretired, newest) signing key. Raises LookupError if it has none."""
    row = db.session.scalar(
        select(SigningKey)
        .where(SigningKey.paper_id == paper.id, SigningKey.retired_at.is_(None))
        .order_by(SigningKey.created_at.desc(), SigningKey.id.desc())
        .limit(1)
    )
    if row is None:
        raise LookupError(f"paper {paper.slug} has no active signing key")
    return row


def rotate_signing_key(paper: Paper, now: datetime) -> SigningKey:
    """Retire the paper's active keys and create a new one. Old receipts keep verifying: retired
    keys stay published at `/api/v1/receipt-keys` with their `retired_at`."""
    for row in db.session.scalars(
        select(SigningKey).where(SigningKey.paper_id == paper.id, SigningKey.retired_at.is_(None))
    ):
        row.retired_at = now
    # /api/v1/receipt-keys is a public, ETag-cached answer: move the paper's version.
    paper.bump()
    return create_signing_key(paper, now)


def sign(key: SigningKey, message: str) -> str:
    """Base64 Ed25519 signature of `message` (UTF-8) with `key`. Needs an app context: the seed
    opens with the app's SECRET_KEY. Raises seeds.SeedLocked (500, a clear detail) when it does
    not; never signs with another key."""
    return open_key(key).sign(message)


class OpenedKey:
    """A signing key whose seed is open: `sign(message)` gives what the module's `sign` gives
    with that key, without an app context and without opening the seed again per message (the
    bulk demo seeder signs 100,000 receipts with one key). Pickles as (kid, seed), so a process
    of the seeder's own can sign with it: the seed is the paper's secret, never to leave the
    processes that sign."""

    __slots__ = ("kid", "_seed", "_nacl")

    def __init__(self, kid: str, seed: bytes):
        self.kid, self._seed = kid, seed
        self._nacl = NaclSigningKey(seed)

    def __reduce__(self):
        return OpenedKey, (self.kid, self._seed)

    def __repr__(self) -> str:
        return f"OpenedKey({self.kid!r})"

    def sign(self, message: str) -> str:
        """Base64 Ed25519 signature of `message` (UTF-8)."""
        return base64.b64encode(self._nacl.sign(message.encode("utf-8")).signature).decode()


def open_key(key: SigningKey) -> OpenedKey:
    """`key` with its seed opened under the app's SECRET_KEY (needs an app context). Raises
    seeds.SeedLocked as `sign` does."""
    return OpenedKey(key.kid, seeds.open_seed(key.private_seed, current_app.config["SECRET_KEY"],
                                              kid=key.kid))


def locked_seeds(secret: str) -> list[str]:
    """The kids of the active signing keys (all papers) whose seed does not open under `secret`:
    empty when the instance can sign for every paper. Plain (pre-0009) seeds always open; a
    retired key signs nothing, so its seed is not asked for."""
    locked = []
    for row in db.session.scalars(select(SigningKey).where(SigningKey.retired_at.is_(None))
                                  .order_by(SigningKey.id)):
        try:
            seeds.open_seed(row.private_seed, secret, kid=row.kid)
        except seeds.SeedLocked:
            locked.append(row.kid)
    return locked


def reseal_seeds(old_secret: str, new_secret: str) -> dict[str, list[str]]:
    """Seal every signing seed under `new_secret` (the SECRET_KEY the instance now runs with).
    A seed that opens under `new_secret` already is kept as is; one sealed under `old_secret`,
    or still in the clear, is sealed afresh. Returns `{"resealed": [kid], "kept": [kid],
    "unreadable": [kid]}` (flushed, not committed); `unreadable` are retired keys whose seed
    opens under neither secret (they sign nothing; left as they are). Raises seeds.SeedLocked
    naming every active key whose seed opens under neither secret, before changing any row."""
    rows = db.session.scalars(select(SigningKey).order_by(SigningKey.id))
    done = sealing.reseal(
        rows, old_secret, new_secret, column="private_seed", name=lambda row: row.kid,
        opens=lambda stored, secret, row: seeds.open_seed(stored, secret, kid=row.kid), seals=seeds.seal_seed,
        locked=seeds.SeedLocked, spare=lambda row: row.retired_at is not None,
        refuse=lambda lost: seeds.SeedLocked(f"These receipt signing keys open under neither the old nor the "
                                             f"current SECRET_KEY: {', '.join(lost)}. Nothing was changed."))
    db.session.flush()
    return done


def verify(public_key_b64: str, message: str, signature_b64: str) -> bool:
    """True when `signature_b64` is a valid Ed25519 signature of `message` under the key."""
    try:
        VerifyKey(base64.b64decode(public_key_b64)).verify(
            message.encode("utf-8"), base64.b64decode(signature_b64)
        )
    except (BadSignatureError, ValueError, TypeError):
        return False
    return True


def proof_for(piece: Piece) -> dict:
    """The provenance record of `piece`'s current revision (docs/API.md "proof"): `id`, `rev`,
    `content_hash`, `basis`, `hash_basis`, `receipt`, `receipt_verify` {signed_string, alg, kid,
    public_key, encoding}, `generations` (every revision oldest first, each with its hash, the
    previous one's, filing time, filer, kid, receipt and signed string) and `disclaimer`.
    Two queries whatever the number of revisions. Raises LookupError if the piece has no
    revision (never the case for a filed piece)."""
    revisions = list(db.session.scalars(
        select(PieceRevision).where(PieceRevision.piece_id == piece.id).order_by(PieceRevision.rev)))
    current = next((r for r in revisions if r.rev == piece.rev), None)
    if current is None:
        raise LookupError(f"piece {piece.id} has no revision {piece.rev}")
    public = dict(db.session.execute(
        select(SigningKey.kid, SigningKey.public_key).where(SigningKey.paper_id == piece.paper_id)
    ).all())
    return {
        "id": str(piece.id),
        "rev": current.rev,
        "content_hash": current.content_hash,
        "basis": current.basis,
        "hash_basis": HASH_BASIS,
        "receipt": current.receipt,
        "receipt_verify": {
            "signed_string": current.signed_string,
            "alg": ALG,
            "kid": current.kid,
            "public_key": public.get(current.kid),
            "encoding": ENCODING,
        },
        "generations": [
            {"rev": r.rev, "content_hash": r.content_hash, "prev_hash": r.prev_hash,
             "filed_at": r.filed_at, "filer": r.filer, "kid": r.kid, "receipt": r.receipt,
             "signed_string": r.signed_string}
            for r in revisions
        ],
        "disclaimer": DISCLAIMER,
    }


def revision_proof(revision: PieceRevision, keys_url: str) -> dict:
    """One revision as a reader verifies it (`/api/v1/stories/{id}/revisions/{rev}`): `id`,
    `rev`, `kind`, `note`, `at`, `content_hash`, `prev_hash`, `basis` (its full public text),
    `hash_basis`, `receipt`, `receipt_verify` (as `proof_for`'s, with `keys_url`) and
    `disclaimer`. `check_proof(..., chain=False)` checks it."""
    public = db.session.scalar(select(SigningKey.public_key).where(SigningKey.kid == revision.kid))
    return {
        "id": str(revision.piece_id), "rev": revision.rev, "kind": revision.basis.get("kind"),
        "note": revision.basis.get("note"), "at": revision.filed_at, "content_hash": revision.content_hash,
        "prev_hash": revision.prev_hash, "basis": revision.basis, "hash_basis": HASH_BASIS,
        "receipt": revision.receipt,
        "receipt_verify": {"signed_string": revision.signed_string, "alg": ALG, "kid": revision.kid,
                           "public_key": public, "encoding": ENCODING, "keys_url": keys_url},
        "disclaimer": DISCLAIMER,
    }


def _fields(text: str) -> dict[str, str]:
    lines = text.split("\n")
    return dict(line.split("=", 1) for line in lines[1:] if "=" in line)


def check_proof(proof: dict, published_keys: list[dict], *, chain: bool = True) -> list[str]:
    """Check a proof record (as served, JSON-decoded) against a paper's published receipt keys
    (`[{kid, public_key, ...}]` as at /api/v1/receipt-keys). Returns the problems found; an
    empty list means: the basis hashes to `content_hash`, the signed string names that hash and
    the basis's paper, piece and revision, the receipt verifies under the published key `kid`,
    and every generation links to the previous one's hash and verifies too. `chain` False: a
    single revision (`revision_proof`), whose signed string must name its `prev_hash` and,
    for a typed revision, the basis's kind, instead of a chain of generations."""
    problems: list[str] = []
    basis = proof.get("basis")
    if not isinstance(basis, dict):
        return ["the proof has no `basis` object"]
    try:
        recomputed = content_hash(basis)
    except Exception as exc:  # noqa: BLE001  any basis a caller hands in: rfc8785 refuses floats out of range, odd types
        return [f"the basis cannot be canonicalised: {exc}"]
    if recomputed != proof.get("content_hash"):
        problems.append(f"content hash mismatch: the basis hashes to {recomputed}, the proof says "
                        f"{proof.get('content_hash')}")
    verify_block = proof.get("receipt_verify") or {}
    text = verify_block.get("signed_string")
    if not isinstance(text, str):
        return problems + ["the proof has no `receipt_verify.signed_string`"]
    named = _fields(text)
    expected = {"paper": basis.get("paper"), "piece": basis.get("piece"),
                "rev": str(basis.get("rev")), "content_hash": recomputed}
    for name, value in expected.items():
        if named.get(name) != value:
            problems.append(f"the signed string says {name}={named.get(name)}, the basis gives {value}")
    keys = {k.get("kid"): k.get("public_key") for k in published_keys}
    problems += _check_receipt("receipt", verify_block.get("kid"), text, proof.get("receipt"), keys)
    if verify_block.get("alg") != ALG:
        problems.append(f"alg is {verify_block.get('alg')!r}, expected {ALG!r}")
    given = verify_block.get("public_key")
    if given and keys.get(verify_block.get("kid")) and given != keys[verify_block.get("kid")]:
        problems.append("receipt_verify.public_key differs from the paper's published key")
    if not chain:
        if named.get("prev_hash") != (proof.get("prev_hash") or ""):
            problems.append("the signed string names another prev_hash than the revision's")
        if basis.get("kind") is not None and named.get("kind") != basis["kind"]:
            problems.append(f"the signed string says kind={named.get('kind')}, the basis {basis['kind']}")
        return problems
    problems += _check_chain(proof, keys)
    return problems


def _check_receipt(label: str, kid, text: str, receipt, keys: dict) -> list[str]:
    if kid not in keys:
        return [f"{label}: key id {kid!r} is not among the paper's published receipt keys"]
    if not isinstance(receipt, str) or not verify(keys[kid], text, receipt):
        return [f"{label}: the Ed25519 signature does not verify under key {kid}"]
    return []


def _check_chain(proof: dict, keys: dict) -> list[str]:
    generations = proof.get("generations")
    if not isinstance(generations, list) or not generations:
        return ["the proof has no `generations` chain"]
    problems: list[str] = []
    previous = None
    for i, gen in enumerate(generations, start=1):
        if not isinstance(gen, dict):
            return problems + [f"generation {i} is not an object"]
        if gen.get("rev") != i:
            problems.append(f"generation {i} has rev {gen.get('rev')}")
        if gen.get("prev_hash") != previous:
            problems.append(f"generation {i}: prev_hash {gen.get('prev_hash')} does not match the "
                            f"previous hash {previous}")
        text = gen.get("signed_string")
        if isinstance(text, str):
            if _fields(text).get("content_hash") != gen.get("content_hash"):
                problems.append(f"generation {i}: its signed string names another hash")
            problems += _check_receipt(f"generation {i}", gen.get("kid"), text, gen.get("receipt"), keys)
        previous = gen.get("content_hash")
    last = generations[-1] if isinstance(generations[-1], dict) else {}
    if last.get("content_hash") != proof.get("content_hash") or last.get("rev") != proof.get("rev"):
        problems.append("the last generation is not the proof's revision")
    return problems
