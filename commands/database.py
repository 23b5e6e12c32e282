"""`init-db` (migrations to head) and `openapi` (write the OpenAPI document to a file)."""
from __future__ import annotations

import json

import click
from flask.cli import with_appcontext
from flask_migrate import upgrade


@click.command("init-db")
@with_appcontext
def init_db() -> None:
    """Create or upgrade the database schema (alembic migrations to head)."""
    upgrade()
    click.echo("database at head")


@click.command("openapi")
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True), default="-",
              show_default=True, help="File to write; '-' for stdout.")
@click.option("--server", default="http://127.0.0.1:5000", show_default=True,
              help="URL to put in `servers` (the live endpoint sets the request's host).")
@with_appcontext
def openapi(output: str, server: str) -> None:
    """Write the OpenAPI 3.1 document (the same one `/api/v1/openapi.json` serves)."""
    from blueprints.api.paper import document_for

    text = json.dumps(document_for(server), indent=2, sort_keys=False)
    if output == "-":
        click.echo(text)
        return
    with open(output, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    click.echo(f"wrote {output}", err=True)


COMMANDS = [init_db, openapi]
