"""`flask worker` (also `flask drain-outbox`, its old name): everything that leaves the
building, run beside the app. It runs two declared lists (`describe()` reads them back, and
docs/ARCHITECTURE.md "The worker" is tested against it):

- CONSUMERS, in order, in the main thread each pass: the change feed's consumers
  (services/delivery/change_stream.py: content webhook messages, CDN purge, ActivityPub
  activities, WebSub and IndexNow pings, transparency log entries, correction alerts, instant
  alerts planned; a scheduled airing at its instant), then the transparency logs' new
  checkpoints, signed and sent to the witnesses
  (services/transparency/store.py, witness.py). They write rows; they send nothing slow.
- QUEUES, each on its own thread, its own poll and its own time budget, so a slow or hanging
  receiver on one never delays another, each a declaration run by the queue engine
  (services/delivery/queues.py): confirm mail (services/delivery/outbox.py), alert mail
  (recorded alerts: services/delivery/alerts.py), subscriber webhooks, content webhooks,
  ActivityPub activities, pings. The engine prunes each queue's sent and given-up rows
  (OUTBOX_RETENTION_DAYS) once an hour, alert rows excepted.

Like send-alerts it commits per message, inside the services (commands/__init__.py says why).
Any number of workers and send-alerts runs may work at once: they share the rows by leases
(services/delivery/claims.py), never by a lock."""
from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import click
from flask import current_app
from flask.cli import with_appcontext

from extensions import db
from models.clock import utcnow
from services.delivery import (
    alerts,
    change_stream,
    content_webhooks,
    mail,
    origins,
    outbox,
    queues,
    webhooks,
)
from services.delivery.federation import deliveries as activitypub
from services.delivery.federation import pings
from services.links import PaperOrigins
from services.transparency import store as transparency_log
from services.transparency import witness
from web import state

PRUNE_EVERY = 3600  # seconds between prunes of each queue's old sent rows in the loop


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


def drain_confirms(should_stop=None) -> queues.Report:
    """One run of the confirm-mail queue (confirm emails and correction alerts:
    services/delivery/outbox.py) on the engine, ended early once `should_stop()` is true;
    prints `outbox: sent N, retrying R, failed F` when it did anything (`, skipped S` for
    messages no longer needed; failed counts those given up), and the first errors."""
    report = run_queue(outbox.QUEUE, utcnow(), should_stop=should_stop)
    if report.delivered or report.failed or report.skipped:
        click.echo(f"outbox: sent {report.delivered}, retrying {report.failed - report.given_up}, "
                   f"failed {report.given_up}"
                   + (f", skipped {report.skipped}" if report.skipped else "")
                   + ("; stopped: the SMTP server is unreachable" if report.stopped else ""))
    for error in report.errors[:5]:
        click.echo(f"outbox error: {error}", err=True)
    return report


def run_queue(queue: queues.Queue, now: datetime, *,
              should_stop: Callable[[], bool] | None = None) -> queues.Report:
    """One run of an engine queue (services/delivery/queues.py) with the app's settings for it;
    says when the run's budget ran out."""
    settings = queues.settings_of(queue, current_app.config)
    report = queues.run(queue, settings, now, should_stop=should_stop)
    if report.left:
        click.echo(f"{queue.name}: out of time after {settings.budget:g}s; the next run goes on")
    return report


def announce_origin(command: str) -> None:
    """Print, as `command` starts, which origin its links use and where it came from
    (services/delivery/origins.py)."""
    config, source = origins.origin_source(current_app)
    base = str(config.get("PUBLIC_BASE_URL") or "").strip()
    shown = base or f"{config['PUBLIC_URL_SCHEME']}://{config['PAPER_DOMAIN']} (development default)"
    click.echo(f"{command}: links on {shown} ({source})")


def alert_origins() -> PaperOrigins:
    """Each paper's origin for alert links (services/delivery/origins.py `for_alerts`). Raises
    click.ClickException, naming the setting, when there is none to use outside development."""
    try:
        return origins.for_alerts(current_app)
    except origins.NoOrigin as exc:
        raise click.ClickException(str(exc)) from exc


def send_alerts_due(now: datetime, *, connections: int | None = None,
                    progress: Callable[[int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> queues.Report:
    """One run of the alert-mail queue (services/delivery/alerts.py) on the engine, with the
    app's settings (SMTP_URL, ALERT_CONNECTIONS unless `connections` is given,
    ALERT_SMTP_TIMEOUT, ALERT_LEASE_SECONDS, ALERT_MAX_ATTEMPTS, ALERT_BOUNCE_LIMIT): every
    recorded alert due at `now` is sent; no SMTP connection is opened when nothing is due.
    Raises click.ClickException for an SMTP_URL that cannot be used, or when alert links have
    no origin (`alert_origins`)."""
    config = current_app.config
    try:
        mail.open_mailer(config).close()  # refuses a bad SMTP_URL up front
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    settings = queues.settings_of(alerts.QUEUE, config)
    if connections:
        settings = dataclasses.replace(settings, concurrency=connections)
    return queues.run(alerts.queue_for(now, alert_origins()), settings, now, progress=progress,
                      should_stop=should_stop)


def report_alerts(report: queues.Report, seconds: float | None = None) -> None:
    """Print what a run of the alert-mail queue did: `mailed: N in Xs (R a second)`, and when
    something failed how each failure was classified (refused for good: given up on the
    server's answer; to retry later; not handed over: the server said nothing; could not be
    built) and the first errors."""
    if report.delivered and seconds:
        click.echo(f"mailed: {report.delivered} in {seconds:.1f}s ({report.delivered / seconds:.0f} a second)")
    elif report.delivered:
        click.echo(f"alerts: mailed {report.delivered}")
    if report.failed:
        click.echo(f"failed: {report.given_up - report.unbuildable} refused for good, "
                   f"{report.failed - report.given_up - report.unanswered} to retry later, "
                   f"{report.unanswered} not handed over (server unreachable), {report.unbuildable} "
                   f"could not be built; {report.disabled} address(es) suppressed"
                   + ("; stopped: the SMTP server is down" if report.stopped else ""))
    for error in report.errors[:5]:
        click.echo(f"error: {error}", err=True)


def deliver_due(label: str, queue: queues.Queue, now: datetime, *, quiet: bool = False,
                should_stop: Callable[[], bool] | None = None) -> queues.Report:
    """One run of an engine queue (`run_queue`); prints `{label}: delivered N, failed M,
    pending P` (only when something was tried, if `quiet`), with `, disabled D` and
    `, deferred D` (an open circuit) when there were any. Returns the run's report."""
    report = run_queue(queue, now, should_stop=should_stop)
    if not quiet or report.delivered or report.failed or report.deferred:
        click.echo(f"{label}: delivered {report.delivered}, failed {report.failed}, "
                   f"pending {queues.pending_count(queue)}"
                   + (f", disabled {report.disabled}" if report.disabled else "")
                   + (f", deferred {report.deferred} (circuit open)" if report.deferred else ""))
    return report


def deliver_webhooks_due(now: datetime, *, quiet: bool = False) -> queues.Report:
    """Post the subscriber webhook deliveries that are due, with the app's WEBHOOK_* settings;
    prints `webhooks: delivered N, failed M, pending P` (only when something was tried, if
    `quiet`)."""
    return deliver_due("webhooks", webhooks.QUEUE, now, quiet=quiet)


# ----------------------------------------------------------------------------- the declared lists


@dataclass(frozen=True)
class Consumer:
    """A step of the worker's main thread, run each pass in order: `run(now)`."""

    name: str
    run: Callable[[datetime], object]


@dataclass(frozen=True)
class Lane:
    """One queue of the worker, on its own thread: `run(state, should_stop)` is one pass (`state`
    a dict the lane keeps between its passes), `prune(before)` deletes its rows sent or given up
    before `before` (the caller commits), `tables` what it sends from, `budget` the setting
    that bounds one pass, `queue` its declaration when the engine runs it."""

    name: str
    tables: tuple[str, ...]
    budget: str
    run: Callable[[dict, Callable[[], bool]], object]
    prune: Callable[[datetime], int] | None = None
    queue: queues.Queue | None = None

    @property
    def circuit(self) -> str:
        """What stops sending to a failing receiver: `per host` (HTTP: each host's own circuit),
        `relay, per run` (mail through one server: `Queue.stop_after`), or `own` (a sender of
        its own)."""
        if self.queue is None:
            return "own"
        return "relay, per run" if self.queue.stop_after else "per host"


def _engine_lane(queue: queues.Queue, label: str, run: Callable | None = None) -> Lane:
    """The lane of an engine queue; `label` starts its printed lines, `run(should_stop)` (the
    default: `deliver_due`) is one pass."""
    def one_pass(state: dict, should_stop: Callable[[], bool]) -> object:
        if run is not None:
            return run(should_stop)
        return deliver_due(label, queue, utcnow(), quiet=True, should_stop=should_stop)
    return Lane(queue.name, (queue.model.__tablename__,), f"{queue.settings_prefix}_RUN_SECONDS",
                one_pass, lambda before: queues.prune(queue, before), queue)


def _alert_pass(state: dict, should_stop: Callable[[], bool]) -> None:
    if state.get("with_alerts", True):
        report_alerts(send_alerts_due(utcnow(), should_stop=should_stop))


CONSUMERS: tuple[Consumer, ...] = (
    Consumer("changes", consume_changes),
    Consumer("log-checkpoints", sign_checkpoints),
)

QUEUES: tuple[Lane, ...] = (
    _engine_lane(outbox.QUEUE, "outbox", drain_confirms),
    # Alert rows are kept: each reader's last window is where the next one starts. A pass
    # sends until nothing is due, each batch within its claim's lease.
    Lane("alert-mail", ("alert_deliveries",), "ALERT_LEASE_SECONDS", _alert_pass, queue=alerts.QUEUE),
    _engine_lane(webhooks.QUEUE, "webhooks"),
    _engine_lane(content_webhooks.QUEUE, "content webhooks"),
    _engine_lane(activitypub.QUEUE, "activitypub"),
    _engine_lane(pings.QUEUE, "pings"),
)


def describe() -> dict:
    """The worker as declared: `{"consumers": [name, ...], "change_consumers": [name, ...],
    "queues": [{"name", "tables", "budget", "pruned", "engine", "circuit"}, ...]}` in the order
    they run (`engine`: run by services/delivery/queues.py; `circuit`: `Lane.circuit`)."""
    return {"consumers": [c.name for c in CONSUMERS],
            "change_consumers": [c.name for c in change_stream.CONSUMERS],
            "queues": [{"name": lane.name, "tables": list(lane.tables), "budget": lane.budget,
                        "pruned": lane.prune is not None, "engine": lane.queue is not None,
                        "circuit": lane.circuit} for lane in QUEUES]}


def prune_sent(now: datetime, lanes: tuple[Lane, ...] = QUEUES) -> int:
    """Delete what `lanes` sent or gave up more than OUTBOX_RETENTION_DAYS ago (none when 0)
    and commit; prints `outbox: pruned N` when it deleted anything."""
    days = current_app.config["OUTBOX_RETENTION_DAYS"]
    if days <= 0:
        return 0
    pruned = sum(lane.prune(now - timedelta(days=days)) for lane in lanes if lane.prune is not None)
    db.session.commit()
    if pruned:
        click.echo(f"outbox: pruned {pruned} sent or given-up row(s) older than {days} days")
    return pruned


def drain_once(should_stop=None, with_alerts: bool = True) -> None:
    """One pass of everything, in the declared order, in this thread: the consumers (the
    instant alerts of what aired are planned there: the change feed's `instant-alerts`), then
    each queue once (`with_alerts` false: no alert mail is sent), each printing only when it
    did something."""
    stop = should_stop or (lambda: False)
    for consumer in CONSUMERS:
        consumer.run(utcnow())
    state = {"with_alerts": with_alerts}
    for lane in QUEUES:
        if stop():
            break
        lane.run(state, stop)


def _alerts_usable(name: str) -> bool:
    """Whether alerts can be planned and sent here (`alert_origins` has an origin); when not,
    says why once, and the worker goes on with confirm mail and webhooks."""
    try:
        alert_origins()
    except click.ClickException as exc:
        click.echo(f"{name}: alerts are not planned or sent: {exc.message}", err=True)
        return False
    return True


def _lane_loop(app, lane: Lane, stop: threading.Event, poll: float, state: dict) -> None:
    """Run `lane` every `poll` seconds until `stop`, in its own app context (its own database
    session); a failed pass is logged and the next one tried."""
    pruned_at = None
    with app.app_context():
        while not stop.is_set():
            try:
                if lane.prune is not None and (pruned_at is None or time.monotonic() - pruned_at >= PRUNE_EVERY):
                    pruned_at = time.monotonic()
                    prune_sent(utcnow(), (lane,))
                lane.run(state, stop.is_set)
            except Exception as exc:  # noqa: BLE001 - a database outage must not end the loop
                app.logger.exception("worker queue %s pass failed", lane.name)
                click.echo(f"{lane.name} error: {type(exc).__name__}: {exc}", err=True)
            finally:
                db.session.remove()
            stop.wait(poll)


@click.command("worker")
@click.option("--once", is_flag=True, help="Send what is due now, then exit.")
@with_appcontext
def worker(once: bool) -> None:
    """Send what is due: the change feed's consumers and the log's checkpoints, then each
    queue: confirm emails (each SMTP connect or read bounded by OUTBOX_SMTP_TIMEOUT seconds;
    given up after OUTBOX_MAX_ATTEMPTS), recorded alerts (ALERT_CONNECTIONS connections,
    ALERT_SMTP_TIMEOUT), subscriber webhook deliveries, content webhook messages (Standard
    Webhooks, retried for 24 hours), ActivityPub activities and pings.

    Without `--once`, each queue runs on its own thread, polling every OUTBOX_POLL_SECONDS
    within its own budget, until SIGTERM or SIGINT (the instant alerts of what aired are planned
    by the change feed's `instant-alerts` consumer each pass, `--once` included: docs/ALERTS.md
    "Instant alerts"); then each finishes the messages in hand and it exits 0.
    Several workers may run at once, on any hosts with PostgreSQL (on SQLite, on the
    database's host): they share the rows, none is sent twice. `flask worker` is the
    same command under its old name."""
    name = click.get_current_context().info_name or "worker"
    announce_origin(name)
    with_alerts = _alerts_usable(name)
    if once:
        prune_sent(utcnow())
        drain_once(with_alerts=with_alerts)
        # What is left for the next pass (backing off, or due after this one): ops' queue depth.
        click.echo(f"outbox: pending {queues.pending_count(outbox.QUEUE)}, "
                   f"alerts pending {queues.pending_count(alerts.QUEUE, due_at=utcnow())}")
        return
    stop = threading.Event()

    def ask_to_stop(signum, frame):
        stop.set()

    previous = {sig: signal.signal(sig, ask_to_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    app = current_app._get_current_object()  # noqa: SLF001 - each queue thread pushes its own context
    poll = app.config["OUTBOX_POLL_SECONDS"]
    click.echo(f"{name}: polling every {poll:g}s")
    lanes = [threading.Thread(target=_lane_loop, args=(app, lane, stop, poll, {"with_alerts": with_alerts}),
                              name=f"worker-{lane.name}", daemon=True) for lane in QUEUES]
    for thread in lanes:
        thread.start()
    try:
        while not stop.is_set():
            try:
                # A paper's change committed in an earlier pass whose generation move failed
                # (Redis away) is made visible as soon as Redis answers (web/state.py).
                state.for_app(app).settle()
            except Exception as exc:  # noqa: BLE001 - a Redis outage must not end the loop
                click.echo(f"generation error: {type(exc).__name__}: {exc}", err=True)
            for consumer in CONSUMERS:
                try:
                    consumer.run(utcnow())
                except Exception as exc:  # noqa: BLE001 - a database outage must not end the loop
                    app.logger.exception("worker consumer %s failed", consumer.name)
                    click.echo(f"{consumer.name} error: {type(exc).__name__}: {exc}", err=True)
                    db.session.rollback()
            stop.wait(poll)
    finally:
        stop.set()
        for thread in lanes:
            thread.join()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    click.echo(f"{name}: stopped")


# The old name, kept so cron lines, unit files and scripts written for it go on working.
drain_outbox = click.Command("drain-outbox", params=worker.params, callback=worker.callback,
                             help="The same as `flask worker` (its old name).")

COMMANDS = [worker, drain_outbox]
