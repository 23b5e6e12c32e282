"""`send-alerts` (cron: plan due alert windows, email them, deliver webhooks) and
`deliver-webhooks` (retries only). Thin wrappers over services/delivery/alerts.py and
services/delivery/webhooks.py; docs/ALERTS.md has the crontab line. Unlike the other commands,
these commit per batch and per message inside the services (commands/__init__.py says why)."""
from __future__ import annotations

import sys
import time
from datetime import timedelta

import click
from flask import current_app
from flask.cli import with_appcontext

from clock import utcnow
from services.delivery import alerts, mail, webhooks
from services.rendering.links import PaperOrigins


def _deliver_webhooks(now) -> webhooks.DeliveryReport:
    config = current_app.config
    report = webhooks.deliver_due(now, allow_private=config["WEBHOOK_ALLOW_PRIVATE"],
                                  concurrency=config["WEBHOOK_CONCURRENCY"], budget=config["WEBHOOK_RUN_SECONDS"])
    if report.left:
        click.echo(f"webhooks: out of time after {config['WEBHOOK_RUN_SECONDS']:g}s; the next run goes on")
    click.echo(f"webhooks: delivered {report.delivered}, failed {report.failed}, "
               f"pending {webhooks.pending_count()}")
    return report


@click.command("send-alerts")
@click.option("--no-webhooks", is_flag=True, help="Record webhook deliveries but do not post them now.")
@click.option("--connections", type=click.IntRange(1, 32), default=8, show_default=True,
              help="SMTP connections used in parallel (each message is still recorded as sent "
                   "before its connection sends another).")
@with_appcontext
def send_alerts(no_webhooks: bool, connections: int) -> None:
    """Send every due alert (email, then webhooks); ends with `sent N, failed M, skipped K`.

    Idempotent and crash-safe: run it from cron as often as the `instant` cadence needs.
    Exits 1 when a message or a webhook delivery failed, after printing what was sent and how
    each failure was classified (docs/ALERTS.md "When a message fails").
    """
    now = utcnow()
    # Each paper's canonical origin: alerts are written outside any request.
    origins = PaperOrigins.from_config(current_app.config)
    started = time.perf_counter()
    settle = timedelta(seconds=current_app.config["ALERT_SETTLE_SECONDS"])
    plan = alerts.plan_alerts(now, origins=origins, settle=settle)
    click.echo(f"planned: {plan.recorded} new alert(s) recorded, {plan.skipped} address(es) with "
               f"nothing due ({time.perf_counter() - started:.1f}s)")
    try:
        mailer = mail.open_mailer(current_app.config)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    total = alerts.unsent_count(now)
    started = time.perf_counter()
    config = current_app.config
    policy = alerts.FailurePolicy(bounce_limit=config["ALERT_BOUNCE_LIMIT"], max_attempts=config["ALERT_MAX_ATTEMPTS"])
    more = {"origins": origins, "connections": connections, "open_mailer": lambda: mail.open_mailer(config),
            "policy": policy}
    with mailer:
        if sys.stdout.isatty() and total:
            with click.progressbar(length=total, label="sending alerts") as bar:
                report = alerts.send_recorded(now, mailer, progress=bar.update, **more)
        else:
            report = alerts.send_recorded(now, mailer, **more)
    seconds = time.perf_counter() - started
    if report.deferred:
        click.echo("another send-alerts run is sending; it sends what this run recorded too")
    if report.sent:
        click.echo(f"mailed: {report.sent} in {seconds:.1f}s ({report.sent / seconds:.0f} a second)")
    if report.failed:
        click.echo(f"failed: {report.refused} refused for good, {report.retrying} to retry later, "
                   f"{report.unreachable} not handed over (server unreachable), {report.unbuildable} "
                   f"could not be built; {report.suppressed} address(es) suppressed"
                   + ("; stopped: the SMTP server is down" if report.stopped else ""))
    for error in report.errors[:5]:
        click.echo(f"error: {error}", err=True)
    hooks = webhooks.DeliveryReport()
    if not no_webhooks:
        # Under the same lock as the mail: on SQLite, two runs would otherwise post a delivery
        # twice (PostgreSQL's row locks would keep them apart anyway). A run that finds it
        # taken leaves the outbox to the holder and the next run.
        with alerts.send_lock() as mine:
            if mine:
                hooks = _deliver_webhooks(now)
    click.echo(f"sent {report.sent}, failed {report.failed}, skipped {plan.skipped + report.skipped}")
    if report.failed or hooks.failed:
        sys.exit(1)


@click.command("deliver-webhooks")
@with_appcontext
def deliver_webhooks() -> None:
    """Post every webhook delivery that is due (first tries and retries with backoff).
    Exits 1 when an attempt failed."""
    if _deliver_webhooks(utcnow()).failed:
        sys.exit(1)


COMMANDS = [send_alerts, deliver_webhooks]
