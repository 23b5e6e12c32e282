"""`init-db` (migrations to head) and `openapi` (write the OpenAPI document to a file)."""
from __future__ import annotations

import json
import sqlite3

import click
from flask import current_app
from flask.cli import with_appcontext
from flask_migrate import upgrade

import config


def migrate_to_head() -> None:
    """Bring the app's database to the newest schema (alembic upgrade to head). On SQLite, make
    the file (and its folder) first when it does not exist: the app itself opens it read-write
    only and never creates one (app._sqlite_file_must_exist). Needs an app context."""
    path = config.sqlite_file(current_app.config["SQLALCHEMY_DATABASE_URI"], current_app.instance_path)
    if path is not None and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        sqlite3.connect(path).close()
    upgrade()


@click.command("init-db")
@with_appcontext
def init_db() -> None:
    """Create or upgrade the database schema (alembic migrations to head); on SQLite, create
    the file when it does not exist (the only command that does)."""
    migrate_to_head()
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
