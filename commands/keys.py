"""`keys create|list|revoke`: desk keys from the command line (docs/API.md "keys").

`keys create` prints the new key alone on its last stdout line (only its hash is stored).
Mistakes (unknown paper or persona, bad kind or capability, ambiguous prefix) print a message
on stderr and exit 1 (click usage errors exit 2), never a traceback.
"""
from __future__ import annotations

import click
from flask.cli import with_appcontext
from sqlalchemy import func, select
from sqlalchemy.orm import joinedload

from extensions import db
from models import KEY_KINDS, DeskKey, Paper, Persona, clock
from services.newsroom import keys

AGENT_CAPABILITIES = keys.AGENT_CAPABILITIES
MIN_PREFIX = 4


def _paper(slug: str) -> Paper:
    paper = db.session.scalar(select(Paper).where(Paper.slug == slug))
    if paper is None:
        raise click.ClickException(f"no paper {slug!r}")
    return paper


def _persona(paper: Paper, name: str) -> Persona:
    """The paper's persona by name or slug, case-insensitively."""
    wanted = name.strip().lower()
    persona = db.session.scalar(select(Persona).where(
        Persona.paper_id == paper.id,
        (func.lower(Persona.name) == wanted) | (Persona.slug == wanted)))
    if persona is None:
        names = db.session.scalars(select(Persona.name).where(Persona.paper_id == paper.id)
                                   .order_by(Persona.position)).all()
        raise click.ClickException(
            f"no persona {name!r} on {paper.slug}; personas: {', '.join(names) or 'none'}")
    if not persona.active:
        raise click.ClickException(f"persona {persona.name!r} is not active")
    return persona


@click.group("keys")
def keys_group() -> None:
    """Create, list and revoke desk keys."""


@keys_group.command("create")
@click.option("--paper", "slug", required=True, help="Slug of the paper the key opens.")
@click.option("--kind", required=True, type=click.Choice(KEY_KINDS),
              help="read: drafts and counts; admin: every write; agent: files as a persona.")
@click.option("--persona", default=None, help="Agent keys: the persona (name) it files as.")
@click.option("--capability", "capabilities", multiple=True,
              help="Agent keys, repeatable: "
                   + ", ".join(f"{name} ({what})" for name, what in AGENT_CAPABILITIES.items()))
@click.option("--label", default="", help="A note to tell keys apart in `keys list`.")
@with_appcontext
def create(slug: str, kind: str, persona: str | None, capabilities: tuple[str, ...],
           label: str) -> None:
    """Issue a key; it is printed once, alone on the last line, and only its hash is kept."""
    paper = _paper(slug)
    if kind != "agent" and (persona or capabilities):
        raise click.ClickException("--persona and --capability apply to agent keys only")
    if kind == "agent" and not persona:
        raise click.ClickException("an agent key needs --persona NAME")
    unknown = sorted(set(capabilities) - set(AGENT_CAPABILITIES))
    if unknown:
        raise click.ClickException(f"unknown capability {', '.join(unknown)}; "
                                   f"choose from {', '.join(AGENT_CAPABILITIES)}")
    row, plain = keys.issue_key(paper, kind, label=label,
                                persona=_persona(paper, persona) if persona else None,
                                capabilities=list(dict.fromkeys(capabilities)))
    db.session.commit()
    details = f", persona {persona}, capabilities {', '.join(row.capabilities) or 'none'}" \
        if kind == "agent" else ""
    click.echo(f"{kind} key for {paper.slug} (prefix {row.prefix}{details}); "
               "shown once, store it now:")
    click.echo(plain)


@keys_group.command("list")
@click.option("--paper", "slug", default=None, help="Only this paper's keys.")
@with_appcontext
def list_keys(slug: str | None) -> None:
    """Show every key (never the key itself): prefix, paper, kind, label, persona,
    capabilities, created, revoked."""
    query = (select(DeskKey).options(joinedload(DeskKey.paper), joinedload(DeskKey.persona))
             .order_by(DeskKey.created_at, DeskKey.id))
    if slug is not None:
        query = query.where(DeskKey.paper_id == _paper(slug).id)
    rows = db.session.scalars(query).all()
    header = ("prefix", "paper", "kind", "label", "persona", "capabilities", "created", "revoked")
    table = [header] + [(
        row.prefix, row.paper.slug, row.kind, row.label or "-",
        row.persona.name if row.persona else "-", ",".join(row.capabilities or []) or "-",
        clock.rfc3339(row.created_at), clock.rfc3339(row.revoked_at) if row.revoked_at else "-",
    ) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
    if not rows:
        click.echo("(no keys)")


# A display prefix is base64url, so one in 64 begins with `-`: taken as given, not as an option
# (click would answer "No such option"), so every key can be revoked as `keys list` shows it.
@keys_group.command("revoke", context_settings={"ignore_unknown_options": True})
@click.argument("prefix")
@with_appcontext
def revoke(prefix: str) -> None:
    """Revoke the key whose prefix starts with PREFIX (as shown by `keys list`)."""
    # A whole key pasted by mistake is cut to its display prefix, which is what is stored.
    prefix = prefix.removeprefix(keys.KEY_PREFIX)[:keys.DISPLAY_CHARS]
    if len(prefix) < MIN_PREFIX:
        raise click.ClickException(f"give at least {MIN_PREFIX} characters of the prefix")
    try:
        row = keys.revoke(prefix)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if row is None:
        raise click.ClickException(f"no key with prefix {prefix!r}")
    db.session.commit()
    click.echo(f"revoked {row.kind} key {row.prefix} at {clock.rfc3339(row.revoked_at)}")


COMMANDS = [keys_group]
