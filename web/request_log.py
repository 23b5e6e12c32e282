"""JSON logs with a request id (docs/DEPLOYING.md "Logs").

Every request gets an id: the client's (or the proxy's) `X-Request-ID` when it is a sane token,
else a fresh one. It is echoed on the answer and stamped on every log record written while the
request runs. When the answer is done, one INFO line on the `paperdesk.request` logger says what
happened: method, path, status, duration in ms, paper slug, request id. That line is the access
log; gunicorn's own access log is off by default (gunicorn.conf.py) so a request is logged once.

`configure(app)` installs the JSON formatter on the `paperdesk` loggers (LOG_FORMAT=text keeps
plain lines for a developer's terminal). gunicorn.conf.py puts `JsonFormatter` on gunicorn's own
logger too, so a production process writes nothing but JSON lines.
"""
from __future__ import annotations

import itertools
import logging
import os
import re
import secrets
import sys
import time
from urllib.parse import unquote_plus

import orjson
from flask import Flask, Response, has_request_context
from werkzeug.wsgi import get_path_info

from web import request_state
from web.headers import header
from web.steps import Replayed, replays

REQUEST_ID_HEADER = "X-Request-ID"
# Accept what proxies and tracers send (uuids, hex, base64url, dotted ids), nothing that could
# break a log line or a header.
_SANE_ID = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}", re.ASCII)
# LogRecord attributes that are not "extra" fields.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
log = logging.getLogger("paperdesk.request")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time` (RFC 3339 UTC, ms), `level`, `logger`, `message`, the
    current `request_id` when there is one, any `extra={...}` fields, and `exc_info` text."""

    def format(self, record: logging.LogRecord) -> str:
        request_id = _NO_ID
        if has_request_context() and request_state.started():
            request_id = request_state.current().request_id  # any record written while a request runs
        fields = {name: value for name, value in vars(record).items()
                  if name not in _STANDARD and not name.startswith("_")}
        return json_line(record.created, record.levelname, record.name, record.getMessage(),
                         request_id, fields,
                         self.formatException(record.exc_info) if record.exc_info else None)


_NO_ID = object()  # json_line: no request is running


def json_line(created: float, level: str, logger: str, message: str, request_id, fields: dict,
              exc_info: str | None = None) -> str:
    """The JSON line (no newline) of a record made at `created` (epoch seconds) by `logger` at
    `level` (its name) saying `message`: `time`, `level`, `logger`, `message`, then `request_id`
    unless it is `_NO_ID`, then `fields` in their order (a field named `request_id` keeps that
    place), then `exc_info` text unless it is None. Values orjson cannot write are written as
    their `str`."""
    entry = {"time": _rfc3339_ms(created), "level": level, "logger": logger, "message": message}
    if request_id is not _NO_ID:
        entry["request_id"] = request_id
    entry.update(fields)
    if exc_info is not None:
        entry["exc_info"] = exc_info
    # orjson: the access line is written for every request (docs/PERFORMANCE.md).
    return orjson.dumps(entry, default=str, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")


class LineHandler(logging.StreamHandler):
    """The `paperdesk` loggers' handler (`configure`): a StreamHandler whose one write of a
    formatted line (`write_line`) also serves the request line, which `log_request` hands it
    already formatted when nothing else would see the record (see `_direct`)."""

    def emit(self, record: logging.LogRecord) -> None:
        """StreamHandler's emit (format, write with the terminator, flush), the lock held by
        `Handler.handle` as for any handler."""
        try:
            self._write(self.format(record))
        except RecursionError:  # as StreamHandler.emit
            raise
        except Exception:  # noqa: BLE001 - logging's own rule: a failed emit is reported, not raised
            self.handleError(record)

    def write_line(self, line: str) -> None:
        """Write one formatted `line` (no terminator) as `emit` writes a record's, under the
        handler's lock. Raises what the stream raises (the caller hands the record to logging,
        whose `handleError` reports it)."""
        with self.lock:
            self._write(line)

    def _write(self, line: str) -> None:
        self.stream.write(line + self.terminator)  # one write, as StreamHandler.emit
        self.flush()


_last_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def _rfc3339_ms(created: float) -> str:
    """`2026-11-24T12:00:00.123Z` for epoch seconds `created` (the second's text is reused
    while it lasts: most lines of a busy process fall in the same second as the last one)."""
    global _last_second
    whole = int(created)
    second, text = _last_second  # one tuple, replaced whole: threads never see half of it
    if second != whole:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _last_second = (whole, text)
    return f"{text}.{int((created - whole) * 1000):03d}Z"


class _Ids:
    """Fresh request ids: 20 random hex digits per process, then a 12-digit counter (32 hex in
    all). Unique per process without a random draw per request (`uuid4` was a visible share of
    a cached answer's cost); a forked worker draws its own prefix."""

    def __init__(self):
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.prefix, self.counter = secrets.token_hex(10), itertools.count()

    def next(self) -> str:
        return f"{self.prefix}{next(self.counter):012x}"


_ids = _Ids()


def request_id_from(header: str | None) -> str:
    """The incoming id when it is 1-128 safe characters, else a new one (32 hex, unique per
    process: see `_Ids`)."""
    if header and _SANE_ID.fullmatch(header):
        return header
    return _ids.next()


def _replay_start(replayed: Replayed) -> None:
    replayed.request_id = request_id_from(replayed.environ.get("HTTP_X_REQUEST_ID"))
    replayed.started = time.perf_counter()


def _replay_finish(replayed: Replayed, headers: list) -> None:
    headers.append((REQUEST_ID_HEADER, replayed.request_id))
    environ = replayed.environ
    log_request(request_id=replayed.request_id, method=environ["REQUEST_METHOD"],
                path="/" + get_path_info(environ).lstrip("/"),  # request.path's spelling
                query=environ.get("QUERY_STRING", ""), status=replayed.status,
                started=replayed.started, paper=replayed.slug, remote_addr=environ.get("REMOTE_ADDR"),
                served="replay")


@replays(_replay_start)
def start_request() -> None:
    """Pipeline step, first before the view: the request id and the clock."""
    state = request_state.begin()
    state.request_id = request_id_from(header(REQUEST_ID_HEADER))
    state.started = time.perf_counter()


@replays(_replay_finish, per_request=(REQUEST_ID_HEADER,))
def finish_request(response: Response) -> Response:
    """Pipeline step, last after the view: echo the id, log the request line."""
    # The objects behind the proxies, once (request_state.this_request).
    req = request_state.this_request()
    if not request_state.started():  # a request that failed before any before_request hook ran
        start_request()
    state = request_state.current()
    response.headers[REQUEST_ID_HEADER] = state.request_id
    paper = request_state.this_g().get("paper_snapshot")  # set for every request answered for a paper
    log_request(request_id=state.request_id, method=req.method, path=req.path,
                query=req.query_string.decode("latin-1"), status=response.status_code,
                started=state.started, paper=paper.slug if paper is not None else None,
                remote_addr=req.remote_addr, served="cache" if state.cache_hit else "app")
    return response


# Query parameters whose values are credentials or personal data: a reader's confirm or
# preferences `token` holds a working credential and, inside it, the reader's address.
SECRET_PARAMS = frozenset({"token", "key", "secret", "password", "signature", "sig", "email",
                           "access_token", "api_key", "code"})
REDACTED = "[redacted]"


def redact_query(query: str) -> str:
    """`query` (a raw query string) with the value of every parameter named in SECRET_PARAMS
    (case-insensitive, percent-encoded names decoded) replaced by `[redacted]`; other bytes as
    sent. Secrets never reach a log line."""
    if not query or "=" not in query:
        return query
    parts = []
    for part in query.split("&"):
        name, sep, _ = part.partition("=")
        if sep and unquote_plus(name).strip().lower() in SECRET_PARAMS:
            part = f"{name}={REDACTED}"
        parts.append(part)
    return "&".join(parts)


def log_request(*, request_id: str, method: str, path: str, query: str, status: int,
                started: float, paper: str | None, remote_addr: str | None,
                served: str = "app") -> None:
    """The request line (INFO on `paperdesk.request`, when enabled): `started` is the
    `time.perf_counter()` reading the request began at; `served` how the answer was made:
    `replay` (sent again ahead of Flask, web/replay.py), `cache` (the response cache) or `app`
    (the pipeline and the view; a 304 is one too, told by its status); the rest are its fields
    as logged, the query with its secrets redacted (`redact_query`)."""
    if not log.isEnabledFor(logging.INFO):
        return
    fields = {"request_id": request_id, "method": method, "path": path,
              "query": redact_query(query), "status": status,
              "duration_ms": round((time.perf_counter() - started) * 1000, 2),
              "paper": paper, "remote_addr": remote_addr, "served": served}
    args = (method, path, status)
    handler = _direct()
    if handler is not None:
        # The line the handler's JsonFormatter would make of the record below, written by the
        # handler itself: a LogRecord, the handler chain and the formatter's pass over the
        # record's thirty attributes were most of the line's cost, and under load, with other
        # processes on the CPUs, about a tenth of a cheap request's (docs/PERFORMANCE.md).
        try:
            handler.write_line(json_line(time.time(), "INFO", log.name, _LINE % args,
                                         _NO_ID, fields))
        except Exception:  # noqa: BLE001 - logging's way below writes it again or reports it (handleError)
            handler = None
        else:
            return
    # makeRecord + handle is log.info without its walk up the stack for the caller's file
    # and line (no format here prints them), a fifth of the line's cost.
    log.handle(log.makeRecord(log.name, logging.INFO, "", 0, _LINE, args, None, extra=fields))


_LINE = "%s %s %s"  # the request line's message: method, path, status


def _direct() -> LineHandler | None:
    """The handler that alone would write a `paperdesk.request` record, when writing the line
    straight to it changes nothing: the record would pass no filter, reach no other handler and
    be formatted by a plain JsonFormatter (`configure`'s own setup: not under a test runner's
    capture, not LOG_FORMAT=text, nothing added since). Else None: logging handles the record."""
    parent = log.parent
    if log.handlers or log.filters or log.disabled or not log.propagate or parent is None:
        return None
    if parent.propagate or parent.filters or parent.disabled or len(parent.handlers) != 1:
        return None
    handler = parent.handlers[0]
    if (type(handler) is not LineHandler or handler.filters or handler.level > logging.INFO
            or type(handler.formatter) is not JsonFormatter):
        return None
    return handler


def configure(app: Flask) -> None:
    """Give the `paperdesk` loggers one stderr handler (JSON unless LOG_FORMAT=text) at
    LOG_LEVEL, once per process. The request-id steps are installed by web/pipeline.py (first
    before the view, last after it)."""
    logger = logging.getLogger("paperdesk")
    logger.setLevel(app.config["LOG_LEVEL"])
    # No format here prints a record's thread or process (a JSON line has neither), and
    # looking them up is a third of what a record costs (the logging HOWTO's "Optimization").
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    ours = [h for h in logger.handlers if getattr(h, "_paperdesk", False)]
    if app.testing:
        # Under a test runner records go to the root logger, where pytest's caplog collects them.
        logger.propagate = True
    else:
        if not ours:
            ours = [LineHandler(sys.stderr)]
            ours[0]._paperdesk = True
            logger.addHandler(ours[0])
        # Our handler writes the line; the root logger (gunicorn's) must not write it again.
        logger.propagate = False
    for handler in ours:
        handler.setFormatter(JsonFormatter() if app.config["LOG_FORMAT"] != "text" else
                             logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    log.setLevel(logging.NOTSET if app.config["LOG_REQUESTS"] else logging.WARNING)

