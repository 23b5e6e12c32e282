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

The keys are derived from the change feed, the one record of a public change, by `flask
worker` (services/delivery/change_stream.py, consumer `cdn-purge`): within one worker
pass (OUTBOX_POLL_SECONDS) of the change becoming public, a scheduled airing at its instant,
whatever wrote it (the API, the CLI); rolled-back work wrote no change and purges nothing. The
keys of one pass and paper go in one POST.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import threading

from flask import Flask, current_app

from services import http

log = logging.getLogger("paperdesk.purge")

MAX_PENDING = 1000
RETRY_DELAYS = (1.0, 4.0)


def on_changes(paper, changes: list, now) -> None:
    """change_stream consumer (after commit): hand `paper-<id>` and the changed pieces'
    `piece-<id>` keys to the sender when PURGE_URL is set. Never blocks: the sender posts them."""
    config = current_app.config
    if not config.get("PURGE_URL"):
        return
    keys = [f"paper-{paper.id}", *dict.fromkeys(f"piece-{change.piece_id}" for change in changes)]
    sender.submit(config["PURGE_URL"], keys, config.get("PURGE_HEADER", ""), float(config.get("PURGE_TIMEOUT", 5)))


def post_keys(url: str, keys: list[str], header: str = "", timeout: float = 5.0) -> int:
    """POST `keys` to `url` (body `{"surrogate_keys": keys}`, header `Surrogate-Key`, plus the
    `Name: value` line `header` when given) by the one HTTP client, within `timeout` seconds in
    all (the deployment's own CDN: private addresses and http allowed). Returns the HTTP
    status; raises http.FetchError when nothing answers."""
    headers = {"Content-Type": "application/json", "Surrogate-Key": " ".join(keys), "User-Agent": "PaperDesk-purge/1"}
    if header.strip():
        name, _, value = header.partition(":")
        headers[name.strip()] = value.strip()
    body = json.dumps({"surrogate_keys": keys}).encode()
    return http.request("POST", url, headers=headers, body=body, allow_private=True, seconds=timeout).status


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
            except http.FetchError as exc:
                outcome = str(exc)
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
    """Give a CLI process's purges a moment to leave before it exits (once per process)."""
    global _exit_wait
    if not _exit_wait:
        _exit_wait = True
        atexit.register(lambda: sender.wait_idle(timeout=10))


_exit_wait = False
