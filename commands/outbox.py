"""`drain-outbox`: the sender that runs beside the app. Each pass first hands the change feed's
new public changes to its consumers (services/delivery/change_stream.py: content webhook
messages, CDN purge, transparency log entries; a scheduled airing at its instant), signs the
transparency logs' new checkpoints and submits them to the witnesses
(services/transparency/store.py, witness.py), then sends
what is due in the tables of things that leave the building: confirm mail
(services/delivery/outbox.py), recorded alerts (services/delivery/alerts.py), subscriber webhook
deliveries (services/delivery/webhooks.py) and site owners' content webhooks
(services/delivery/content_webhooks.py).
Like send-alerts it commits per message, inside the services (commands/__init__.py says why).
Any number of drainers and send-alerts runs may work at once: they share the rows by leases
(services/delivery/claims.py), never by a lock."""
from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from extensions import db
from models.clock import utcnow
from services.delivery import alerts, change_stream, content_webhooks, mail, outbox, post_queue, subscriptions, webhooks
from services.delivery.federation import deliveries as activitypub
from services.delivery.federation import pings
from services.links import PaperOrigins
from services.newsroom import filing
from services.transparency import store as transparency_log
from services.transparency import witness
from web import state

PRUNE_EVERY = 3600  # seconds between prunes of old sent rows in the drain loop


def consume_changes(now: datetime) -> change_stream.Report:
    """Hand the change feed's new public changes to each consumer (content webhook messages,
    CDN purge: services/delivery/change_stream.py); prints `changes: N handled by <consumer>`
    for each that handled any, and the failures."""
    report = change_stream.run_all(now)
    for name, handled in report.handled.items():
        if handled:
            click.echo(f"changes: {handled} handled by {name}")
    for failure in report.failed:
        click.echo(f"changes: consumer failed: {failure} (retried next pass)", err=True)
    return report


def sign_checkpoints(now: datetime, *, interval: float | None = None) -> list[tuple[int, int]]:
    """Sign the transparency logs' new checkpoints (at most every LOG_CHECKPOINT_SECONDS per
    paper, or `interval`), then submit each public paper's newest one to the LOG_WITNESSES;
    prints `log: paper P signed size N`, `log: witness W cosigned paper P size N` and the
    failures. Returns the (paper id, size) pairs signed."""
    config = current_app.config
    signed, failed = transparency_log.sign_due(
        now, config["LOG_CHECKPOINT_SECONDS"] if interval is None else interval)
    for paper_id, size in signed:
        click.echo(f"log: paper {paper_id} signed size {size}")
    for failure in failed:
        click.echo(f"log: no checkpoint for paper {failure}", err=True)
    try:
        witnesses = witness.parse_config(config["LOG_WITNESSES"])
    except ValueError as exc:
        click.echo(f"log: {exc}", err=True)
        return signed
    for outcome in witness.submit_all(witnesses, now, timeout=config["LOG_WITNESS_TIMEOUT"]):
        if outcome.error:
            click.echo(f"log: witness {outcome.witness} failed paper {outcome.paper_id}: {outcome.error}", err=True)
        else:
            click.echo(f"log: witness {outcome.witness} cosigned paper {outcome.paper_id} size {outcome.cosigned}")
    return signed


def drain_confirms(should_stop=None) -> outbox.DrainReport:
    """One pass over the confirm mail that is due (ended early once `should_stop()` is true);
    prints `outbox: sent N, retrying R, failed F` when it did anything (`, skipped S` for
    messages no longer needed), and the first errors."""
    report = outbox.drain(utcnow, build=subscriptions.confirm_message, should_stop=should_stop)
    if report.sent or report.retrying or report.failed or report.skipped:
        click.echo(f"outbox: sent {report.sent}, retrying {report.retrying}, failed {report.failed}"
                   + (f", skipped {report.skipped}" if report.skipped else "")
                   + ("; stopped: the SMTP server is unreachable" if report.stopped else ""))
    for error in report.errors[:5]:
        click.echo(f"outbox error: {error}", err=True)
    return report


# Where `make run` writes the PUBLIC_BASE_URL it serves under (`flask run-info`), in the
# instance folder, so a later `flask send-alerts` in another shell builds the same links: the
# URL, then `port N`, the loopback port that server listens on. It is used only while something
# listens there (and `make run` removes it when it stops), so no later command sends links to a
# port nothing serves any more.
RECORDED_BASE_URL = "public_base_url"
LISTENING_TIMEOUT = 0.5  # seconds: the connect to the recorded port (loopback)


def record_base_url(instance_path: str, base: str, port: int) -> None:
    """Record `base` (served by `make run` on loopback `port`) for later commands (above)."""
    path = Path(instance_path) / RECORDED_BASE_URL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{base}\nport {port}\n", encoding="utf-8")


def forget_base_url(instance_path: str) -> None:
    """Remove the recorded base URL (`make run` stopping)."""
    (Path(instance_path) / RECORDED_BASE_URL).unlink(missing_ok=True)


def recorded_base_url(instance_path: str) -> tuple[str | None, str]:
    """(the base URL `make run` recorded, or None when there is none to use; why, in words).
    A record whose port nothing on 127.0.0.1 accepts a connection on (within
    LISTENING_TIMEOUT) is from a server that stopped: not used. One without a port (written
    before ports were recorded) cannot be checked: not used either."""
    path = Path(instance_path) / RECORDED_BASE_URL
    if not path.is_file():
        return None, "none recorded"
    lines = path.read_text(encoding="utf-8").split()
    base = lines[0] if lines else ""
    port = lines[2] if len(lines) >= 3 and lines[1] == "port" and lines[2].isascii() and lines[2].isdigit() else None
    if not base or port is None or not 0 < int(port) < 65536:
        return None, f"{path} names no port to check; run `make run` again"
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=LISTENING_TIMEOUT).close()
    except OSError:
        return None, f"the server that recorded {base} (port {port}) is not running; ignored"
    return base, f"recorded by `make run`, listening on port {port}"


def origin_source() -> tuple[dict, str]:
    """(the app's config with the PUBLIC_BASE_URL links outside a request use, where it came
    from in words): PUBLIC_BASE_URL, else the live `make run`'s recorded one (above)."""
    config = dict(current_app.config)
    if str(config.get("PUBLIC_BASE_URL") or "").strip():
        return config, "PUBLIC_BASE_URL"
    recorded, why = recorded_base_url(current_app.instance_path)
    if recorded:
        config["PUBLIC_BASE_URL"] = recorded
        return config, why
    return config, f"no PUBLIC_BASE_URL; recorded origin: {why}"


def announce_origin(command: str) -> None:
    """Print, as `command` starts, which origin its links use and where it came from."""
    config, source = origin_source()
    base = str(config.get("PUBLIC_BASE_URL") or "").strip()
    shown = base or f"{config['PUBLIC_URL_SCHEME']}://{config['PAPER_DOMAIN']} (development default)"
    click.echo(f"{command}: links on {shown} ({source})")


def alert_origins() -> PaperOrigins:
    """Each paper's origin for links built outside a request (alerts): PUBLIC_BASE_URL, else
    the one a running `make run` recorded in the instance folder (`recorded_base_url`), else,
    only in development (`FLASK_DEBUG`, or tests), PAPER_DOMAIN with PUBLIC_URL_SCHEME and
    PUBLIC_PORT. Raises click.ClickException, naming the setting, when there is no base URL
    outside development (its links would be `http://localhost/...`, which reach nothing) or
    the recorded one is not usable."""
    config, _source = origin_source()
    if not str(config.get("PUBLIC_BASE_URL") or "").strip() and not (current_app.debug or current_app.testing):
        raise click.ClickException(
            "PUBLIC_BASE_URL is not set: alert links would lead to "
            f"{config['PUBLIC_URL_SCHEME']}://{config['PAPER_DOMAIN']}/..., not to this server. Set it to the "
            "origin readers reach the paper on (e.g. PUBLIC_BASE_URL=https://papers.example.com), or run "
            "`make alerts` beside `make run`. Nothing was planned or marked sent.")
    try:
        return PaperOrigins.from_config(config)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc


def plan_instant_alerts(seen: dict | None = None) -> alerts.PlanReport:
    """Plan the instant alerts due now (services/delivery/alerts.py `plan_instant`), with
    `seen` carried between passes; prints `planned: N instant alert(s)` when it recorded any.
    Raises click.ClickException when alert links have no origin (`alert_origins`)."""
    report = alerts.plan_instant(utcnow, origins=alert_origins(), lock_paper=filing.lock_paper, seen=seen)
    if report.recorded:
        click.echo(f"planned: {report.recorded} instant alert(s)")
    return report


def send_alerts_due(now: datetime, *, connections: int | None = None,
                    progress: Callable[[int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> alerts.SendReport:
    """Send the recorded alerts that are due, with the app's settings (SMTP_URL,
    ALERT_CONNECTIONS unless `connections` is given, ALERT_SMTP_TIMEOUT, ALERT_LEASE_SECONDS,
    the failure policy); no SMTP connection is opened when nothing is due. Raises
    click.ClickException for an SMTP_URL that cannot be used."""
    config = current_app.config
    timeout = config["ALERT_SMTP_TIMEOUT"]
    try:
        mail.open_mailer(config, timeout=timeout).close()  # refuses a bad SMTP_URL up front
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    policy = alerts.FailurePolicy(bounce_limit=config["ALERT_BOUNCE_LIMIT"], max_attempts=config["ALERT_MAX_ATTEMPTS"])
    return alerts.send_recorded(
        now, None, progress, origins=alert_origins(),
        connections=connections or config["ALERT_CONNECTIONS"],
        open_mailer=lambda: mail.open_mailer(config, timeout=timeout), policy=policy, clock=utcnow,
        lease=timedelta(seconds=config["ALERT_LEASE_SECONDS"]), smtp_timeout=timeout, should_stop=should_stop)


def report_alerts(report: alerts.SendReport, seconds: float | None = None) -> None:
    """Print what a send phase did: `mailed: N in Xs (R a second)`, and when something failed
    how each failure was classified and the first errors."""
    if report.sent and seconds:
        click.echo(f"mailed: {report.sent} in {seconds:.1f}s ({report.sent / seconds:.0f} a second)")
    elif report.sent:
        click.echo(f"alerts: mailed {report.sent}")
    if report.failed:
        click.echo(f"failed: {report.refused} refused for good, {report.retrying} to retry later, "
                   f"{report.unreachable} not handed over (server unreachable), {report.unbuildable} "
                   f"could not be built; {report.suppressed} address(es) suppressed"
                   + ("; stopped: the SMTP server is down" if report.stopped else ""))
    for error in report.errors[:5]:
        click.echo(f"error: {error}", err=True)


def _deliver_hooks_due(label: str, service, now: datetime, *, quiet: bool):
    """Post the deliveries of `service` (services.delivery.webhooks or .content_webhooks: both have
    `deliver_due(now, allow_private=, concurrency=, budget=)` and `pending_count()`) that are due,
    with the app's WEBHOOK_* settings; prints `{label}: delivered N, failed M, pending P` (only
    when something was tried, if `quiet`) and `, disabled D` when the report counts endpoints
    disabled. Returns the service's report."""
    config = current_app.config
    report = service.deliver_due(now, allow_private=config["WEBHOOK_ALLOW_PRIVATE"],
                                 concurrency=config["WEBHOOK_CONCURRENCY"], budget=config["WEBHOOK_RUN_SECONDS"])
    if report.left:
        click.echo(f"{label}: out of time after {config['WEBHOOK_RUN_SECONDS']:g}s; the next run goes on")
    if not quiet or report.delivered or report.failed:
        # Subscriber webhooks never disable an endpoint, so their report has no such count.
        disabled = getattr(report, "disabled", 0)
        click.echo(f"{label}: delivered {report.delivered}, failed {report.failed}, "
                   f"pending {service.pending_count()}"
                   + (f", disabled {disabled}" if disabled else ""))
    return report


def deliver_webhooks_due(now: datetime, *, quiet: bool = False) -> post_queue.Report:
    """Post the webhook deliveries that are due, with the app's settings; prints `webhooks:
    delivered N, failed M, pending P` (only when something was tried, if `quiet`)."""
    return _deliver_hooks_due("webhooks", webhooks, now, quiet=quiet)


def deliver_content_webhooks_due(now: datetime, *, quiet: bool = False) -> post_queue.Report:
    """Post the content webhook messages that are due (WEBHOOK_ALLOW_PRIVATE,
    WEBHOOK_CONCURRENCY, WEBHOOK_RUN_SECONDS as for subscriber webhooks); prints `content
    webhooks: delivered N, failed M, pending P` (only when something was tried, if `quiet`)
    and `, disabled D` when endpoints were disabled."""
    return _deliver_hooks_due("content webhooks", content_webhooks, now, quiet=quiet)


def deliver_activities_due(now: datetime, *, quiet: bool = False) -> post_queue.Report:
    """Post the ActivityPub activities that are due, signed (services/delivery/federation/deliveries.py;
    WEBHOOK_ALLOW_PRIVATE, WEBHOOK_CONCURRENCY, WEBHOOK_RUN_SECONDS as for webhooks); prints
    `activitypub: delivered N, failed M, pending P` (only when something was tried, if `quiet`)."""
    return _deliver_hooks_due("activitypub", activitypub, now, quiet=quiet)


def deliver_pings_due(now: datetime, *, quiet: bool = False) -> post_queue.Report:
    """Post the WebSub and IndexNow pings that are due (services/delivery/federation/pings.py); prints
    `pings: delivered N, failed M, pending P` (only when something was tried, if `quiet`)."""
    return _deliver_hooks_due("pings", pings, now, quiet=quiet)


def prune_sent(now: datetime) -> int:
    """Delete what was sent or given up more than OUTBOX_RETENTION_DAYS ago (none when 0) and
    commit; prints `outbox: pruned N` when it deleted anything."""
    days = current_app.config["OUTBOX_RETENTION_DAYS"]
    if days <= 0:
        return 0
    pruned = (outbox.prune(now - timedelta(days=days)) + content_webhooks.prune(now - timedelta(days=days))
              + activitypub.prune(now - timedelta(days=days)) + pings.prune(now - timedelta(days=days)))
    db.session.commit()
    if pruned:
        click.echo(f"outbox: pruned {pruned} sent or given-up row(s) older than {days} days")
    return pruned


def drain_once(should_stop=None, seen: dict | None = None, with_alerts: bool = True,
               plan_instant: bool = True) -> None:
    """One pass of the drainer: the change feed's consumers, the transparency logs'
    checkpoints, confirm mail, then instant alerts planned (when `plan_instant`; `seen`: see
    `alerts.plan_instant`) and due alerts sent (unless `with_alerts` is False), then subscriber
    webhooks, then content webhooks, then ActivityPub activities, then WebSub and IndexNow
    pings, each printing only when it did something."""
    consume_changes(utcnow())
    sign_checkpoints(utcnow())
    drain_confirms(should_stop)
    if with_alerts and plan_instant and (should_stop is None or not should_stop()):
        plan_instant_alerts(seen)
    if with_alerts and (should_stop is None or not should_stop()):
        report_alerts(send_alerts_due(utcnow(), should_stop=should_stop))
    if should_stop is None or not should_stop():
        deliver_webhooks_due(utcnow(), quiet=True)
    if should_stop is None or not should_stop():
        deliver_content_webhooks_due(utcnow(), quiet=True)
    if should_stop is None or not should_stop():
        deliver_activities_due(utcnow(), quiet=True)
    if should_stop is None or not should_stop():
        deliver_pings_due(utcnow(), quiet=True)


def _alerts_usable() -> bool:
    """Whether alerts can be planned and sent here (`alert_origins` has an origin); when not,
    says why once, and the drainer goes on with confirm mail and webhooks."""
    try:
        alert_origins()
    except click.ClickException as exc:
        click.echo(f"drain-outbox: alerts are not planned or sent: {exc.message}", err=True)
        return False
    return True


@click.command("drain-outbox")
@click.option("--once", is_flag=True, help="Send what is due now, then exit.")
@click.option("--plan-instant", is_flag=True,
              help="With --once: plan the instant alerts of what aired first, as every pass of the loop does.")
@with_appcontext
def drain_outbox(once: bool, plan_instant: bool) -> None:
    """Send what is due: confirm emails (each SMTP connect or read bounded by
    OUTBOX_SMTP_TIMEOUT seconds; given up after OUTBOX_MAX_ATTEMPTS), recorded alerts
    (ALERT_CONNECTIONS connections, ALERT_SMTP_TIMEOUT), subscriber webhook deliveries and
    content webhook messages (Standard Webhooks, retried for 24 hours).

    Without `--once`, polls every OUTBOX_POLL_SECONDS until SIGTERM or SIGINT, each pass first
    planning the instant alerts of what aired since the last (docs/ALERTS.md "Instant alerts";
    `--once` does that only with `--plan-instant`: a one-off send of what is due, as benchmarks
    and catch-up runs use it, plans nothing new), then finishes
    the messages in hand and exits 0. Several drainers may run at once, on any hosts with
    PostgreSQL (on SQLite, on the database's host): they share the rows, none is sent twice."""
    announce_origin("drain-outbox")
    with_alerts = _alerts_usable()
    if once:
        prune_sent(utcnow())
        drain_once(with_alerts=with_alerts, plan_instant=plan_instant)
        # What is left for the next pass (backing off, or due after this one): ops' queue depth.
        click.echo(f"outbox: pending {outbox.pending_count()}, alerts pending {alerts.unsent_count(utcnow())}")
        return
    stop = threading.Event()

    def ask_to_stop(signum, frame):
        stop.set()

    previous = {sig: signal.signal(sig, ask_to_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    poll = current_app.config["OUTBOX_POLL_SECONDS"]
    click.echo(f"drain-outbox: polling every {poll:g}s")
    pruned_at = None
    seen: dict = {}  # papers' instant-alert marks between passes (alerts.plan_instant)
    try:
        while not stop.is_set():
            try:
                if pruned_at is None or time.monotonic() - pruned_at >= PRUNE_EVERY:
                    pruned_at = time.monotonic()
                    prune_sent(utcnow())
                # A paper's change committed in an earlier pass whose generation move failed
                # (Redis away) is made visible as soon as Redis answers (web/state.py).
                state.for_app(current_app._get_current_object()).settle()
                drain_once(stop.is_set, seen, with_alerts)
            except Exception as exc:  # noqa: BLE001 - a database outage must not end the loop
                current_app.logger.exception("drain-outbox pass failed")
                click.echo(f"outbox error: {type(exc).__name__}: {exc}", err=True)
            stop.wait(poll)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo("drain-outbox: stopped")


COMMANDS = [drain_outbox]
