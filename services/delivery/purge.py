"""The CDN purge hook (docs/API.md "caching"; docs/DEPLOYING.md "Caching, and a CDN in front").

Public answers carry `Surrogate-Key: paper-<id>` and, on a piece's own answers,
`piece-<id>` (web/caching.py). When a piece goes on air, goes off air, or is revised while on air
(public, in the sense of services/reading/visibility.py),
and PURGE_URL is set, the keys `paper-<paper id>` and `piece-<piece id>` are POSTed to PURGE_URL
once the transaction commits:

    POST {PURGE_URL}
    Content-Type: application/json
    Surrogate-Key: paper-1 piece-42
    {PURGE_HEADER, when set, e.g. "Fastly-Key: ..."}

    {"surrogate_keys": ["paper-1", "piece-42"]}

That body is Fastly's batch purge by surrogate key; a Varnish xkey or nginx endpoint can read
either the body or the header. The POST is made by one background thread per process, never
by the request: the writer's answer does not wait for the CDN. A failed POST (network error,
5xx, 429) is retried twice, after 1 and 4 seconds, then logged and dropped; at most
MAX_PENDING purges wait, further ones are dropped with a warning (the ETag still changes, so
clients revalidating through the CDN see the new version once `max-age` runs out).

Writes are watched through SQLAlchemy session events, so every path that changes a piece (the
API, the CLI, a future worker) fires the hook without calling it; rolled-back work fires nothing.
Bulk inserts (`seed-demo`) bypass the ORM unit of work and fire nothing. The listeners read
PURGE_URL, PURGE_HEADER and PURGE_TIMEOUT from `current_app.config` (a session event has no
caller to pass them); outside an app context they do nothing.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import urllib.error
import urllib.request

from flask import Flask, current_app, has_app_context
from sqlalchemy import event, inspect
from sqlalchemy.orm import Session

from models import Piece
from services.reading import visibility

log = logging.getLogger("paperdesk.purge")

MAX_PENDING = 1000
RETRY_DELAYS = (1.0, 4.0)
# Fields of a piece that public answers show: changing one while on air changes those answers.
PUBLISHED = ("headline", "dek", "prose", "image", "slug", "section_id", "persona_id", "rev",
             "on_air_at")
_PENDING_KEY = "paperdesk.purge_keys"


def surrogate_keys(piece: Piece) -> list[str]:
    """The surrogate keys a change to `piece` makes stale: `["paper-<id>", "piece-<id>"]`."""
    return [f"paper-{piece.paper_id}", f"piece-{piece.id}"]


def _before(attr):
    history = attr.history
    values = history.deleted or history.unchanged
    return values[0] if values else None


def _changes_public_answers(piece: Piece, *, new: bool = False, deleted: bool = False) -> bool:
    # "Public" is services/reading/visibility.py's predicate: a piece scheduled for later is
    # on no public answer, so scheduling or cancelling it purges nothing; `flask drain-outbox`
    # purges once its instant has come (commands/outbox.py announce_aired).
    now = visibility.request_now()
    if new or deleted:
        return visibility.is_public(piece, now)
    attrs = inspect(piece).attrs
    is_public = visibility.is_public(piece, now)
    if attrs.on_air.history.has_changes() or attrs.on_air_at.history.has_changes():
        was = _before(attrs.on_air) and (_before(attrs.on_air_at) or now) <= now
        if bool(was) != is_public:
            return True  # went public, or left
    return is_public and any(attrs[name].history.has_changes() for name in PUBLISHED)


def _collect(session: Session, flush_context) -> None:
    """after_flush: note the keys of pieces whose public face this flush changed."""
    if not has_app_context() or not current_app.config.get("PURGE_URL"):
        return
    keys = session.info.setdefault(_PENDING_KEY, set())
    for kind, objects in (("new", session.new), ("dirty", session.dirty), ("deleted", session.deleted)):
        for obj in objects:
            if isinstance(obj, Piece) and _changes_public_answers(
                    obj, new=kind == "new", deleted=kind == "deleted"):
                keys.update(surrogate_keys(obj))


def _fire(session: Session) -> None:
    """after_commit: hand the collected keys to the sender."""
    keys = session.info.pop(_PENDING_KEY, None)
    if not keys or not has_app_context():
        return
    config = current_app.config
    if config.get("PURGE_URL"):
        sender.submit(config["PURGE_URL"], sorted(keys, key=_order), config.get("PURGE_HEADER", ""),
                      float(config.get("PURGE_TIMEOUT", 5)))


def _order(key: str) -> tuple:
    kind, _, number = key.partition("-")
    return (kind != "paper", kind, int(number) if number.isdigit() else 0)


def _forget(session: Session, *args) -> None:
    """after_rollback: nothing rolled back is purged."""
    session.info.pop(_PENDING_KEY, None)


def post_keys(url: str, keys: list[str], header: str = "", timeout: float = 5.0) -> int:
    """POST `keys` to `url` (body `{"surrogate_keys": keys}`, header `Surrogate-Key`, plus the
    `Name: value` line `header` when given). Returns the HTTP status; raises OSError
    (urllib.error.URLError) when nothing answers."""
    body = json.dumps({"surrogate_keys": keys}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Surrogate-Key": " ".join(keys),
        "User-Agent": "PaperDesk-purge/1"})
    if header.strip():
        name, _, value = header.partition(":")
        request.add_header(name.strip(), value.strip())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


class Sender:
    """One daemon thread per process posting purges in order; `submit` never blocks."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._jobs: list[tuple] = []
        self._busy = 0
        self._thread: threading.Thread | None = None
        self._pid: int | None = None

    def submit(self, url: str, keys: list[str], header: str, timeout: float) -> None:
        with self._cond:
            # A forked gunicorn worker inherits the object but not the thread: start its own.
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._pid, self._jobs, self._busy = os.getpid(), [], 0
                self._thread = threading.Thread(target=self._run, name="purge", daemon=True)
                self._thread.start()
            if len(self._jobs) >= MAX_PENDING:
                log.warning("purge queue full; dropped keys %s", " ".join(keys))
                return
            self._jobs.append((url, keys, header, timeout))
            self._cond.notify()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every submitted purge was attempted, at most `timeout` seconds; True when
        idle. For tests and for process exit."""
        with self._cond:
            if self._pid != os.getpid():
                return True
            return self._cond.wait_for(lambda: not self._jobs and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs)
                job = self._jobs.pop(0)
                self._busy += 1
            try:
                self._deliver(*job)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _deliver(self, url: str, keys: list[str], header: str, timeout: float) -> None:
        for attempt, delay in enumerate((0.0, *RETRY_DELAYS)):
            if delay:
                threading.Event().wait(delay)
            try:
                status = post_keys(url, keys, header, timeout)
            except OSError as exc:
                outcome = exc.__class__.__name__
            else:
                if status < 300:
                    log.info("purged %s", " ".join(keys), extra={"status": status})
                    return
                outcome = f"HTTP {status}"
                if status < 500 and status != 429:
                    break  # the CDN refused the request itself: retrying will not help
            log.warning("purge attempt %d of %s failed: %s", attempt + 1, " ".join(keys), outcome)
        log.error("purge of %s abandoned", " ".join(keys))


sender = Sender()


def init_app(app: Flask) -> None:
    """Watch every SQLAlchemy session of the process (once), so commits fire the hook."""
    if not event.contains(Session, "after_flush", _collect):
        event.listen(Session, "after_flush", _collect)
        event.listen(Session, "after_commit", _fire)
        event.listen(Session, "after_rollback", _forget)
        # A CLI command exits right after its commit: give its purges a moment to leave.
        atexit.register(lambda: sender.wait_idle(timeout=10))
