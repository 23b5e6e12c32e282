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

from commands.worker import (
    alert_origins,
    announce_origin,
    deliver_webhooks_due,
    drain_confirms,
    report_alerts,
    send_alerts_due,
)
from models.clock import utcnow
from services.delivery import alerts, queues


@click.command("send-alerts")
@click.option("--no-webhooks", is_flag=True, help="Record webhook deliveries but do not post them now.")
@click.option("--plan-only", is_flag=True, help="Record the due alert windows and exit; drainers send them.")
@click.option("--connections", type=click.IntRange(1, 32), default=None,
              help="SMTP connections used in parallel [default: ALERT_CONNECTIONS, 8] (each message is "
                   "still recorded as sent before its connection sends another).")
@with_appcontext
def send_alerts(no_webhooks: bool, plan_only: bool, connections: int | None) -> None:
    """Plan every due alert, then send what is due (email, then webhooks); ends with `sent N,
    failed M, skipped K`.

    Idempotent and crash-safe: run it from cron for the digests and as a catch-up (instant
    alerts are planned by `worker` within a poll of airing). Refuses (exit 1, nothing
    planned or sent) without PUBLIC_BASE_URL outside development. Any number of runs and
    `worker` drainers may send at once; they share the rows. Exits 1
    when a message or a webhook delivery failed, after printing what was sent and how each
    failure was classified (docs/ALERTS.md "When a message fails").
    """
    # Each paper's canonical origin: alerts are written outside any request. Refused (exit 1,
    # nothing planned or marked sent) when no base URL would reach the server.
    announce_origin("send-alerts")
    origins = alert_origins()
    # Confirm emails first: a reader waiting for one should not wait behind the alerts.
    drain_confirms()
    now = utcnow()
    started = time.perf_counter()
    settle = timedelta(seconds=current_app.config["ALERT_SETTLE_SECONDS"])
    plan = alerts.plan_alerts(now, origins=origins, settle=settle)
    click.echo(f"planned: {plan.recorded} new alert(s) recorded, {plan.skipped} address(es) with "
               f"nothing due ({time.perf_counter() - started:.1f}s)")
    if plan_only:
        return
    total = queues.pending_count(alerts.QUEUE, due_at=now)
    started = time.perf_counter()
    if sys.stdout.isatty() and total:
        with click.progressbar(length=total, label="sending alerts") as bar:
            report = send_alerts_due(now, connections=connections, progress=bar.update)
    else:
        report = send_alerts_due(now, connections=connections)
    report_alerts(report, time.perf_counter() - started)
    hooks = queues.Report() if no_webhooks else deliver_webhooks_due(utcnow())
    click.echo(f"sent {report.delivered}, failed {report.failed}, skipped {plan.skipped + report.skipped}")
    if report.failed or hooks.failed:
        sys.exit(1)


@click.command("deliver-webhooks")
@with_appcontext
def deliver_webhooks() -> None:
    """Post every webhook delivery that is due (first tries and retries with backoff).
    Exits 1 when an attempt failed."""
    if deliver_webhooks_due(utcnow()).failed:
        sys.exit(1)


COMMANDS = [send_alerts, deliver_webhooks]
