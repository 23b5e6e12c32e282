"""`flask log ...`: the papers' transparency logs (docs/PROOFS.md "The transparency log").

    flask log checkpoint                      append what the change feed holds, sign at once
    flask log verify --url BASE [--host HOST] [--state FILE]    monitor any Paper Desk paper

`checkpoint` works on this instance's database (the worker, `flask worker`, does the same
every LOG_CHECKPOINT_SECONDS); `verify` only speaks HTTP to the paper it is pointed at, so
anyone can run it against any paper: the monitor is commands/log_monitor.py, beside this
command, not a service (it reads no database, it is a client of one).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
from flask.cli import with_appcontext

from commands import log_monitor, worker
from extensions import db
from models import Paper, TransparencyLog
from models.clock import utcnow
from services.delivery import change_stream
from services.transparency import store

CATCH_UP_BATCH = 5000  # changes per paper per transaction when `checkpoint` catches up


@click.group("log")
def log_group() -> None:
    """The papers' public transparency logs (C2SP tlog-tiles)."""


def catch_up(now) -> int:
    """Append every public change the logs lack, up to `now`, then sign a checkpoint of each log
    that grew (and submit it to the witnesses); returns how many changes were appended. Raises
    click.ClickException when a paper's changes could not be appended. `flask log checkpoint`
    and `flask seed-demo` (a demo paper has its log at once) call it."""
    consumer = next(c for c in change_stream.CONSUMERS if c.name == store.CONSUMER)
    appended = 0
    while True:
        handled, failed = change_stream.run(consumer, now, batch=CATCH_UP_BATCH)
        appended += handled
        if failed:
            raise click.ClickException(f"the log could not append the changes of {', '.join(failed)}")
        if not handled:
            break
    worker.sign_checkpoints(now, interval=0)
    return appended


@log_group.command("checkpoint")
@with_appcontext
def checkpoint() -> None:
    """Append every public change the logs lack (the `transparency-log` consumer, run to the
    end of each paper's feed), then sign a checkpoint of each log that grew, now, and submit
    it to the LOG_WITNESSES. Prints each log's origin and size."""
    appended = catch_up(utcnow())
    rows = db.session.execute(db.select(Paper.slug, TransparencyLog.origin, TransparencyLog.signed_size)
                              .join(TransparencyLog, TransparencyLog.paper_id == Paper.id).order_by(Paper.slug)).all()
    db.session.rollback()
    click.echo(f"log: {appended} change(s) appended")
    for slug, origin, size in rows:
        click.echo(f"{slug}: {origin} size {size}")


@log_group.command("verify")
@click.option("--url", "base", required=True, help="The server, http(s)://host[:port].")
@click.option("--host", default=None, help="The paper's host, when it is not the URL's (sent as Host).")
@click.option("--state", "state_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSON file keeping the last checkpoint seen: each run proves the new tree consistent with it.")
@click.option("--grace", default=300.0, show_default=True,
              help="Seconds a public change may wait for the log before a mismatch is a failure.")
@click.option("--workers", default=8, show_default=True, help="Requests in flight at once.")
@click.option("--sample", type=click.IntRange(min=0), default=None,
              help="Recompute the hash of only this many full public answers, one GET each: every piece changed "
                   "since the last run (--state), then a random choice of the others. Default: every piece on "
                   "air, read 200 a page (/api/v1/stories?full=true).")
def verify(base: str, host: str | None, state_file: Path | None, grace: float, workers: int,
           sample: int | None) -> None:
    """Monitor a paper's transparency log over HTTP: the checkpoint's signature, every tile and
    entry, consistency with the checkpoint of the last run (`--state`), and every piece on air
    against its newest entry and its recomputed content hash. Exits 1 naming each problem."""
    started = time.monotonic()
    state = None
    if state_file is not None and state_file.exists():
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise click.ClickException(f"{state_file}: not a state file ({exc})") from None
    try:
        client = log_monitor.Client(base, host)
        report = log_monitor.verify(client, state=state, grace=grace, workers=workers, sample=sample,
                                progress=click.echo)
    except (ValueError, log_monitor.FetchError, KeyError) as exc:
        raise click.ClickException(f"cannot read the log: {exc}") from None
    if report.state is not None and state_file is not None:
        tmp = state_file.with_suffix(state_file.suffix + ".tmp")
        tmp.write_text(json.dumps(report.state, indent=1), encoding="utf-8")
        os.replace(tmp, state_file)
    for line in report.pending:
        click.echo(f"pending (newer than the checkpoint, in the change feed): {line}")
    seconds = time.monotonic() - started
    if report.cosigned_by:
        click.echo(f"cosigned by: {', '.join(report.cosigned_by)}")
    if report.ok:
        click.echo(f"OK: {report.origin} size {report.size}, {report.tiles} tiles, {report.pieces} pieces on air "
                   f"({report.recomputed} recomputed"
                   + (f", {report.revisions} revisions of corrected pieces" if report.revisions else "")
                   + f"), {client.requests} requests in {seconds:.1f}s")
        return
    for problem in report.problems:
        click.echo(f"FAIL: {problem}", err=True)
    click.echo(f"{len(report.problems)} problem(s) in {report.origin or base}", err=True)
    sys.exit(1)


COMMANDS = [log_group]
