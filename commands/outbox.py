"""`drain-outbox`: send the mail requests left in the outbox (services/delivery/outbox.py). Like
send-alerts it commits per message, inside the service (commands/__init__.py says why)."""
from __future__ import annotations

import signal
import threading

import click
from flask import current_app
from flask.cli import with_appcontext

from clock import utcnow
from services.delivery import outbox


def drain_once(should_stop=None) -> outbox.DrainReport:
    """One pass over what is due (ended early once `should_stop()` is true); prints `outbox:
    sent N, retrying R, failed F` when it did anything (`, skipped S` for messages no longer
    needed), and the first errors."""
    report = outbox.drain(utcnow, should_stop=should_stop)
    if report.sent or report.retrying or report.failed or report.skipped:
        click.echo(f"outbox: sent {report.sent}, retrying {report.retrying}, failed {report.failed}"
                   + (f", skipped {report.skipped}" if report.skipped else "")
                   + ("; stopped: the SMTP server is unreachable" if report.stopped else ""))
    for error in report.errors[:5]:
        click.echo(f"outbox error: {error}", err=True)
    return report


@click.command("drain-outbox")
@click.option("--once", is_flag=True, help="Send what is due now, then exit.")
@with_appcontext
def drain_outbox(once: bool) -> None:
    """Send the outbox's due mail (confirm emails), each SMTP connect or read bounded by
    OUTBOX_SMTP_TIMEOUT seconds; failures back off and are given up after OUTBOX_MAX_ATTEMPTS.

    Without `--once`, polls every OUTBOX_POLL_SECONDS until SIGTERM or SIGINT, then finishes
    the message in hand and exits 0. Several drainers may run at once (on PostgreSQL they
    share the rows; on SQLite they take turns)."""
    if once:
        drain_once()
        # What is left for the next pass (backing off, or due after this one): ops' queue depth.
        click.echo(f"outbox: pending {outbox.pending_count()}")
        return
    stop = threading.Event()

    def ask_to_stop(signum, frame):
        stop.set()

    previous = {sig: signal.signal(sig, ask_to_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    poll = current_app.config["OUTBOX_POLL_SECONDS"]
    click.echo(f"drain-outbox: polling every {poll:g}s")
    try:
        while not stop.is_set():
            try:
                drain_once(stop.is_set)
            except Exception as exc:  # noqa: BLE001 - a database outage must not end the loop
                current_app.logger.exception("drain-outbox pass failed")
                click.echo(f"outbox error: {type(exc).__name__}: {exc}", err=True)
            stop.wait(poll)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("drain-outbox: stopped")


COMMANDS = [drain_outbox]
