"""CLI commands (`flask --app app <command>`): thin wrappers over the services.

CONTRACT.md "CLI": init-db, seed-demo, keys create|list|revoke, openapi, and ops commands.
"""
from __future__ import annotations

import click
from flask.cli import with_appcontext
from flask_migrate import upgrade


@click.command("init-db")
@with_appcontext
def init_db() -> None:
    """Create or upgrade the database schema (alembic migrations to head)."""
    upgrade()
    click.echo("database at head")


COMMANDS = [init_db]
