"""`flask db ...`: flask-migrate's alembic commands (upgrade, downgrade, revision, ...), over
migrations/, configured on an app the first time a command needs them.

Nothing here imports alembic until then: a gunicorn worker builds the same app (wsgi.py) but
never migrates, and alembic with mako is about 8 MB of every worker's memory (docs/PERFORMANCE.md,
worker RSS). The commands that migrate (`flask db ...`, `flask init-db`) call `configure`."""
from __future__ import annotations

from pathlib import Path

import click
from flask import Flask
from flask.cli import ScriptInfo

from extensions import db

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def configure(app: Flask) -> None:
    """Configure flask-migrate on `app` (`app.extensions["migrate"]`, batch mode so SQLite can
    alter tables), once; what flask-migrate's `upgrade()`/`downgrade()` read in an app context."""
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate

        Migrate(render_as_batch=True).init_app(app, db, directory=str(MIGRATIONS))


class MigrationCommands(click.Command):
    """Stands for flask-migrate's `db` group in the CLI's list of commands; when it is run, the
    group is loaded, configured on the app, and parses and runs the command line itself (its
    options, `--help` and subcommands are flask-migrate's own)."""

    def make_context(self, info_name, args, parent=None, **extra) -> click.Context:
        configure(parent.ensure_object(ScriptInfo).load_app())
        from flask_migrate.cli import db as group

        return group.make_context(info_name, args, parent=parent, **extra)


COMMANDS = [MigrationCommands("db", help="Perform database migrations (alembic, over migrations/).")]
