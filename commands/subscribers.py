"""`subscribers unsuppress`: lift an address off a paper's suppression list (docs/ALERTS.md
"When a message fails"), once its reader has fixed the mailbox. Writes commit once, at the end."""
from __future__ import annotations

import click
from email_validator import EmailNotValidError
from flask.cli import with_appcontext
from sqlalchemy import select

from extensions import db
from models import Paper, Subscriber
from services.delivery.subscriptions import normalize_email


@click.group("subscribers")
def subscribers_group() -> None:
    """Look after a paper's alert list."""


@subscribers_group.command("unsuppress")
@click.option("--paper", "slug", required=True, help="Slug of the paper.")
@click.argument("email")
@with_appcontext
def unsuppress(slug: str, email: str) -> None:
    """Take EMAIL off the suppression list of the paper: alerts are planned for it again from
    the next run, its bounce count starts again at 0, and the last refusal stays in
    `suppressed_reason` no longer (printed here once). Exits 1 for an unknown paper or address,
    or one that is not suppressed."""
    paper = db.session.scalar(select(Paper).where(Paper.slug == slug))
    if paper is None:
        raise click.ClickException(f"no paper {slug!r}")
    try:
        address = normalize_email(email)
    except EmailNotValidError as exc:
        raise click.ClickException(f"not an address: {exc}") from exc
    subscriber = db.session.scalar(select(Subscriber).where(Subscriber.paper_id == paper.id,
                                                            Subscriber.email == address))
    if subscriber is None:
        raise click.ClickException(f"{address} is not on {slug}'s list")
    if subscriber.suppressed_at is None:
        raise click.ClickException(f"{address} is not suppressed")
    reason = subscriber.suppressed_reason
    subscriber.suppressed_at, subscriber.suppressed_reason, subscriber.bounces = None, None, 0
    db.session.commit()
    click.echo(f"{address}: no longer suppressed (was: {reason or 'no reason recorded'})")


COMMANDS = [subscribers_group]
