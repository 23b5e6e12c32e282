"""Witnesses (c2sp.org/tlog-witness, c2sp.org/tlog-cosignature): LOG_WITNESSES names each by
its submission URL and its cosigner vkey; after a public paper's log signs a checkpoint, the
worker POSTs it to `<url>/add-checkpoint` with the consistency proof from the size that witness
last cosigned, checks the cosignature lines it answers with against the vkey, and keeps them
on the checkpoint (served on `/log/checkpoint`).

A witness that fails (unreachable, a 4xx or 5xx, a cosignature that does not verify) is tried
again at the next signed checkpoint no sooner than BACKOFF doubles (capped at MAX_BACKOFF);
a 409 (it knows another size) is answered at once with a proof from the size it names. The
POST happens outside any database transaction.
"""
from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select

from extensions import db
from models import LogCheckpoint, LogWitness, Paper, TransparencyLog
from services import http, retry
from services.transparency import note, store

log = logging.getLogger("paperdesk.transparency.witness")

BACKOFF = 10.0        # seconds before the first retry of a failing witness
MAX_BACKOFF = 3600.0  # at most an hour between tries
MAX_RESPONSE = 64 * 1024


@dataclass(frozen=True)
class Witness:
    """A configured witness: its submission prefix `url` and cosigner `verifier` (0x04 vkey)."""

    url: str
    verifier: note.Verifier

    @property
    def name(self) -> str:
        return self.verifier.name


def parse_config(value: str) -> list[Witness]:
    """LOG_WITNESSES: entries separated by commas (or newlines), each `URL VKEY` (submission
    prefix, then the witness's cosignature vkey, type 0x04). Raises ValueError naming the
    entry that is malformed."""
    found = []
    for item in value.replace("\n", ",").split(","):
        if not item.strip():
            continue
        parts = item.split()
        if len(parts) != 2 or not parts[0].startswith(("http://", "https://")):
            raise ValueError(f"LOG_WITNESSES: {item.strip()!r} is not 'URL VKEY'")
        try:
            verifier = note.parse_vkey(parts[1])
        except note.NoteError as exc:
            raise ValueError(f"LOG_WITNESSES: {exc}") from None
        if verifier.kind != note.COSIGNATURE:
            raise ValueError(f"LOG_WITNESSES: {parts[1]!r} is not an Ed25519 cosignature key (type 0x04)")
        found.append(Witness(url=parts[0].rstrip("/"), verifier=verifier))
    return found


@dataclass
class Outcome:
    """What one submission did: `cosigned` (the size it cosigned) or `error`."""

    witness: str
    paper_id: int
    cosigned: int | None = None
    error: str | None = None


def _post(url: str, body: bytes, timeout: float) -> tuple[int, str, str]:
    # The operator's own witnesses: private addresses and http allowed; one deadline in all.
    answer = http.request("POST", url, headers={"Content-Type": "text/plain; charset=utf-8",
                                                "User-Agent": "PaperDesk-log/1"},
                          body=body, allow_private=True, seconds=timeout, max_bytes=MAX_RESPONSE)
    return answer.status, answer.content_type, answer.body[:MAX_RESPONSE].decode("utf-8", "replace")


def request_body(old: int, proof: list[bytes], checkpoint_note: str) -> bytes:
    """An add-checkpoint body: `old N`, the proof lines, an empty line, the checkpoint."""
    lines = [f"old {old}", *(base64.b64encode(h).decode() for h in proof)]
    return ("\n".join(lines) + "\n\n" + checkpoint_note).encode("utf-8")


def _cosignatures(witness: Witness, text: str, answer: str) -> list[str]:
    """The lines of `answer` that are valid cosignatures of `text` by `witness` (others ignored,
    as the protocol says). Raises note.NoteError when none is."""
    good = []
    for line in answer.splitlines(keepends=True):
        if not line.endswith("\n"):
            line += "\n"
        try:
            _, (signature,) = note.split_note("x\n\n" + line)
            note.verify_cosignature(text, signature, witness.verifier)
        except (note.NoteError, ValueError):
            continue
        good.append(line)
    if not good:
        raise note.NoteError(f"{witness.name} answered no valid cosignature")
    return good


def submit(witness: Witness, paper_id: int, now: datetime, *, timeout: float) -> Outcome:
    """Submit the paper's newest checkpoint to `witness` if it has not cosigned it and is due;
    store the cosignatures (committed). Never raises for the witness's failures: they are in
    the outcome and the witness row (backed off)."""
    outcome = Outcome(witness=witness.name, paper_id=paper_id)
    state = db.session.get(LogWitness, (paper_id, witness.name))
    if state is None:
        state = LogWitness(paper_id=paper_id, name=witness.name, size=0, failures=0)
        db.session.add(state)
        db.session.flush()
    checkpoint = store.newest_checkpoint(paper_id)
    if checkpoint is None or checkpoint.size <= state.size or (
            state.next_attempt_at is not None and state.next_attempt_at > now):
        db.session.commit()
        return outcome
    old, target = state.size, checkpoint.size
    text, _ = note.split_note(checkpoint.note)
    db.session.commit()  # nothing held open while the witness answers
    try:
        for _ in range(2):  # a 409 names the size the witness knows: once more from there
            body = request_body(old, store.consistency(paper_id, old, target), checkpoint.note)
            db.session.rollback()
            status, kind, answer = _post(witness.url + "/add-checkpoint", body, timeout)
            if status == 409 and kind == "text/x.tlog.size" and answer.strip().isdigit() \
                    and int(answer.strip()) <= target:
                old = int(answer.strip())
                continue
            break
        if status != 200:
            raise note.NoteError(f"{witness.name} answered {status}: {answer.strip()[:200]}")
        lines = _cosignatures(witness, text, answer)
    except (http.FetchError, OSError, ValueError, note.NoteError) as exc:
        db.session.rollback()
        state = db.session.get(LogWitness, (paper_id, witness.name))
        state.failures += 1
        state.last_error = str(exc)[:1000]
        state.next_attempt_at = now + retry.backoff(state.failures, timedelta(seconds=BACKOFF),
                                                     timedelta(seconds=MAX_BACKOFF))
        db.session.commit()
        outcome.error = str(exc)
        log.warning("witness %s refused or failed paper %s size %s: %s", witness.name, paper_id, target, exc)
        return outcome
    row = db.session.get(LogCheckpoint, (paper_id, target))
    kept = {line for line in (row.cosignatures or "").splitlines(keepends=True)}
    # One line per witness per checkpoint: a newer cosignature by the same key replaces the old.
    others = [line for line in kept if not line.startswith(f"{note.DASH} {witness.name} ")]
    row.cosignatures = "".join(sorted(others) + lines)
    store.served_changed(row.paper_id)
    state = db.session.get(LogWitness, (paper_id, witness.name))
    state.size, state.failures, state.next_attempt_at, state.last_error = target, 0, None, None
    db.session.commit()
    outcome.cosigned = target
    return outcome


def submit_all(witnesses: list[Witness], now: datetime, *, timeout: float) -> list[Outcome]:
    """Submit every public paper's newest checkpoint to each witness that has not cosigned it."""
    if not witnesses:
        return []
    papers = list(db.session.scalars(select(TransparencyLog.paper_id).join(
        Paper, Paper.id == TransparencyLog.paper_id).where(Paper.is_public.is_(True))
        .order_by(TransparencyLog.paper_id)))
    db.session.rollback()
    outcomes = []
    for paper_id in papers:
        for witness in witnesses:
            outcome = submit(witness, paper_id, now, timeout=timeout)
            if outcome.cosigned is not None or outcome.error is not None:
                outcomes.append(outcome)
    return outcomes
