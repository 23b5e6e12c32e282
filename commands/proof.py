"""`rotate-receipt-key`, `rotate-secret` and `verify-proof`: the ops side of provenance
(docs/API.md "proof", docs/SECURITY.md "Receipt signing seeds").

    flask rotate-receipt-key --paper demo
    SECRET_KEY=new... flask rotate-secret --old-secret-file old_secret_key
    flask verify-proof proof.json --keys receipt-keys.json
    flask verify-proof https://demo.example/api/v1/stories/12/proof --key desk_...
    flask verify-proof --paper demo --piece 12

docs/PROOFS.md explains the checks and how to make them with any Ed25519 library.
"""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select

from extensions import db
from models import Paper, SigningKey
from models.clock import utcnow
from services.delivery.federation import keys as activitypub_keys
from services.newsroom import provenance, seeds
from services.reading import stories
from services.transparency import store as transparency_log
from services.transparency.sealing import LogKeyLocked


def _paper(slug: str) -> Paper:
    paper = db.session.scalar(select(Paper).where(Paper.slug == slug))
    if paper is None:
        raise click.ClickException(f"no paper with slug {slug!r}")
    return paper


def _published_keys(paper: Paper) -> list[dict]:
    return [{"kid": k.kid, "public_key": k.public_key}
            for k in db.session.scalars(select(SigningKey).where(SigningKey.paper_id == paper.id))]


@click.command("rotate-receipt-key")
@click.option("--paper", "slug", required=True, help="The paper's slug.")
@with_appcontext
def rotate_receipt_key(slug: str) -> None:
    """Retire a paper's receipt signing key and make a new one. Old receipts keep verifying:
    retired keys stay published at /api/v1/receipt-keys."""
    paper = _paper(slug)
    retired = [k.kid for k in db.session.scalars(select(SigningKey).where(
        SigningKey.paper_id == paper.id, SigningKey.retired_at.is_(None)))]
    key = provenance.rotate_signing_key(paper, utcnow())
    db.session.commit()
    for kid in retired:
        click.echo(f"retired {kid}")
    click.echo(f"new receipt key {key.kid}")


@click.command("rotate-secret")
@click.option("--old-secret", envvar="OLD_SECRET_KEY", help="The SECRET_KEY the seeds were sealed "
              "with (or set OLD_SECRET_KEY; a command-line value shows in the process list).")
@click.option("--old-secret-file", type=click.Path(exists=True, dir_okay=False),
              help="A file holding the old secret, e.g. the previous instance/secret_key.")
@with_appcontext
def rotate_secret(old_secret: str | None, old_secret_file: str | None) -> None:
    """Re-seal every receipt signing seed under the SECRET_KEY this instance now runs with, after
    SECRET_KEY changed. Seeds sealed under the old secret (or still in the clear) are sealed
    afresh; seeds that open already are kept. An active key's seed that opens under neither
    stops the command with exit 1 and nothing changed (a retired one is left, with a warning).
    The receipt keys themselves (kid, public key) never change; nor do the transparency logs'
    keys and the papers' ActivityPub (HTTP-signature) keys, resealed the same way."""
    if old_secret_file:
        old_secret = Path(old_secret_file).read_text(encoding="utf-8").strip()
    if not old_secret:
        raise click.UsageError("give the old secret: --old-secret-file PATH, OLD_SECRET_KEY or --old-secret")
    try:
        done = provenance.reseal_seeds(old_secret, current_app.config["SECRET_KEY"])
        # The transparency logs' keys are sealed the same way (services/transparency/store.py).
        logs = transparency_log.reseal(old_secret, current_app.config["SECRET_KEY"])
        actors = activitypub_keys.reseal(old_secret, current_app.config["SECRET_KEY"])
    except (seeds.SeedLocked, LogKeyLocked, activitypub_keys.KeyLocked) as exc:
        db.session.rollback()
        raise click.ClickException(str(exc)) from exc
    db.session.commit()
    for kid in done["resealed"]:
        click.echo(f"resealed {kid}")
    for kid in done["unreadable"]:
        click.echo(f"left {kid} as it is: retired, and sealed under neither secret", err=True)
    for origin in logs["resealed"]:
        click.echo(f"resealed the log key of {origin}")
    for paper_id in actors["resealed"]:
        click.echo(f"resealed the ActivityPub key of paper {paper_id}")
    resealed = len(done["resealed"]) + len(logs["resealed"]) + len(actors["resealed"])
    kept = len(done["kept"]) + len(logs["kept"]) + len(actors["kept"])
    click.echo(f"{resealed} seed(s) resealed under the current SECRET_KEY, {kept} already sealed under it.")


def _fetch(source: str, desk_key: str | None = None) -> dict:
    """JSON from an http(s) URL (sending the desk key, if any) or from a file."""
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"Accept": "application/json"})
        if desk_key:
            request.add_header("Authorization", f"Bearer {desk_key}")
        try:
            with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310 (http(s) only)
                return json.loads(response.read())
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"could not fetch {source}: {exc}") from exc
    try:
        return json.loads(Path(source).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"could not read {source}: {exc}") from exc


@click.command("verify-proof")
@click.argument("source", required=False)
@click.option("--keys", "keys_source", help="File or URL of the paper's receipt keys "
              "(/api/v1/receipt-keys). Default for a URL source: that host's receipt keys.")
@click.option("--key", "desk_key", envvar="DESK_KEY", help="Desk key for fetching a proof URL "
              "(or set DESK_KEY).")
@click.option("--paper", "slug", help="With --piece: check a piece's proof from the database.")
@click.option("--piece", "piece_id", help="Piece id or slug (with --paper).")
@with_appcontext
def verify_proof(source: str | None, keys_source: str | None, desk_key: str | None,
                 slug: str | None, piece_id: str | None) -> None:
    """Recompute a proof's content hash from its basis and check its receipt (and the whole
    revision chain) against the paper's published Ed25519 keys. Exits 0 when it holds, 1 when not.

    SOURCE is a proof JSON file or a proof URL, or a revision of a piece's public history
    (`/api/v1/stories/ID/revisions/REV`, checked on its own: no chain); or use --paper SLUG --piece ID.
    """
    if slug and piece_id:
        paper = _paper(slug)
        piece = stories.find(paper, piece_id, now=utcnow(), include_drafts=True)
        if piece is None:
            raise click.ClickException(f"no piece {piece_id!r} on {slug}")
        proof, published, where = provenance.proof_for(piece), _published_keys(paper), "the database"
        proof = json.loads(json.dumps(proof, default=str))
    elif source:
        proof = _fetch(source, desk_key)
        if keys_source is None and source.startswith(("http://", "https://")):
            parts = urlsplit(source)
            keys_source = f"{parts.scheme}://{parts.netloc}/api/v1/receipt-keys"
        if keys_source:
            published, where = _fetch(keys_source).get("keys", []), keys_source
        else:
            verify = proof.get("receipt_verify") or {}
            published = [{"kid": verify.get("kid"), "public_key": verify.get("public_key")}]
            where = "the proof itself (pass --keys to check against the paper's published keys)"
    else:
        raise click.UsageError("give a proof FILE or URL, or --paper SLUG --piece ID")
    chain = "generations" in proof  # a proof has its chain; a revision of the history stands alone
    problems = provenance.check_proof(proof, published, chain=chain)
    label = f"piece {proof.get('id')} rev {proof.get('rev')} ({proof.get('content_hash')})"
    if problems:
        click.echo(f"FAILED: {label}", err=True)
        for problem in problems:
            click.echo(f"  - {problem}", err=True)
        raise SystemExit(1)
    kid = (proof.get("receipt_verify") or {}).get("kid")
    click.echo(f"OK: {label}: the basis matches its content hash and the receipt verifies under "
               f"key {kid} from {where}; "
               + (f"{len(proof['generations'])} generation(s) chain." if chain else "one revision, no chain."))
    click.echo("This proves who filed the piece and that it is unchanged; it never proves that "
               "its claims are true.")


COMMANDS = [rotate_receipt_key, rotate_secret, verify_proof]
