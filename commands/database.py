"""`init-db` (migrations to head, then the receipt seeds checked against SECRET_KEY),
`analyze-db` (planner statistics after a bulk load) and `openapi` (write the OpenAPI document to
a file)."""
from __future__ import annotations

import json
import sqlite3

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import text

import config
from commands import migrations
from extensions import db
from services.newsroom import provenance
from services.transparency import store as transparency_log


def migrate_to_head() -> None:
    """Bring the app's database to the newest schema (alembic upgrade to head). On SQLite, make
    the file (and its folder) first when it does not exist: the app itself opens it read-write
    only and never creates one (app._sqlite_file_must_exist). Needs an app context."""
    path = config.sqlite_file(current_app.config["SQLALCHEMY_DATABASE_URI"], current_app.instance_path)
    if path is not None and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        sqlite3.connect(path).close()
    migrations.configure(current_app)
    from flask_migrate import upgrade  # alembic: only for the commands that migrate

    upgrade()


@click.command("init-db")
@with_appcontext
def init_db() -> None:
    """Create or upgrade the database schema (alembic migrations to head); on SQLite, create
    the file when it does not exist (the only command that does). Then check that every active
    receipt signing seed opens under this instance's SECRET_KEY: exit 1 with the keys named when one
    does not (SECRET_KEY changed: restore it, or `flask rotate-secret`), so a deploy with the
    wrong secret stops here instead of failing at the first filing."""
    migrate_to_head()
    click.echo("database at head")
    locked = provenance.locked_seeds(current_app.config["SECRET_KEY"])
    if locked:
        raise click.ClickException(
            f"{len(locked)} receipt signing key(s) do not open with this SECRET_KEY "
            f"({', '.join(locked)}): filing would fail. Restore the SECRET_KEY they were sealed "
            "with, or run `flask rotate-secret --old-secret-file OLD`; if the old secret is lost, "
            "`flask rotate-receipt-key --paper SLUG` retires the key (docs/DEPLOYING.md).")
    locked = transparency_log.locked_logs(current_app.config["SECRET_KEY"])
    if locked:
        raise click.ClickException(
            f"{len(locked)} transparency log key(s) do not open with this SECRET_KEY ({', '.join(locked)}): "
            "no checkpoint could be signed. Restore the SECRET_KEY they were sealed with, or run "
            "`flask rotate-secret --old-secret-file OLD`.")


def refresh_statistics() -> str:
    """Refresh the planner's statistics of every table, as a bulk load needs before the lists
    are read in index order (docs/DEPLOYING.md "Statistics"): `VACUUM (ANALYZE)` on PostgreSQL
    (outside any transaction; the vacuum also marks the pages all-visible, which the counts'
    index-only scans need), `ANALYZE` on SQLite. Returns the statement run. Ends the session's
    transaction first; needs an app context. Takes a few seconds at 100 000 pieces."""
    db.session.commit()
    if db.engine.dialect.name == "postgresql":
        statement = "VACUUM (ANALYZE)"
        with db.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text(statement))
    else:
        statement = "ANALYZE"
        with db.engine.begin() as conn:
            conn.execute(text(statement))
    return statement


@click.command("analyze-db")
@with_appcontext
def analyze_db() -> None:
    """Refresh the database's planner statistics (PostgreSQL `VACUUM (ANALYZE)`, SQLite
    `ANALYZE`): run it after a bulk load or import, so that a page of a list reads about its own
    rows instead of sorting the paper (`seed-demo` runs it itself)."""
    click.echo(f"statistics refreshed ({refresh_statistics()})")


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


COMMANDS = [init_db, analyze_db, openapi]
