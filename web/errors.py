"""Error answers: RFC 9457 problem+json on machine routes, an HTML page on reader pages.

docs/API.md "errors" and "status codes". Every refusal a service or view raises
(services/errors.py `DeskError`) passes through `handle_desk_error`, every HTTPException
(routing, webargs, rate limits, body limits) through `handle_http_exception`, and any
unexpected exception through `handle_unexpected`; all three answer through `answer`, so a
problem looks the same whoever raised it. Nothing leaks a stack trace. Views never translate
exceptions themselves.
"""
from __future__ import annotations

import logging

from flask import Flask, Response, current_app, g, json, render_template, request
from flask.globals import request_ctx
from sqlalchemy.exc import DataError, IntegrityError, OperationalError, SQLAlchemyError
from werkzeug.exceptions import BadRequest, Conflict, HTTPException, InternalServerError, ServiceUnavailable
from werkzeug.http import HTTP_STATUS_CODES

from services.errors import DeskError
from web import policy

log = logging.getLogger("paperdesk.errors")

PROBLEM_MIME = "application/problem+json"

DETAILS = {
    400: "The request has a malformed value.",
    401: "A valid desk key is required.",
    403: "This key may not do that here.",
    404: "There is nothing here.",
    405: "This method is not allowed on this path.",
    413: "The request body is larger than 64 KiB.",
    415: "The request body must be JSON (Content-Type: application/json).",
    422: "The request body failed validation.",
    429: "Too many requests; retry later.",
    500: "Something went wrong on our side.",
    503: "The service is briefly unavailable; retry later.",
}


def wants_problem() -> bool:
    """True when the current request's route is for programs (its policy's `problems`: the API,
    oEmbed, feeds, the log, ActivityPub, health checks), or no route matched and the path
    starts as such a route's does (web/policy.py `problem_prefixes`)."""
    endpoint = request.endpoint
    if endpoint is not None:
        return policy.of(current_app, endpoint).problems
    return is_problem_path(current_app, request.path)


def is_problem_path(app: Flask, path: str) -> bool:
    """True when `path` is, or would be, a route for programs in `app` (see `wants_problem`)."""
    return path.startswith(policy.problem_prefixes(app))


def problem(status: int, detail: str | None = None, *, title: str | None = None,
            errors: dict | None = None, headers: dict | None = None) -> Response:
    """Build a problem+json response. `errors` maps field names to lists of messages."""
    body = {
        "type": "about:blank",
        "title": title or HTTP_STATUS_CODES.get(status, "Error"),
        "status": status,
        "detail": detail or DETAILS.get(status, HTTP_STATUS_CODES.get(status, "Error")),
    }
    if errors:
        body["errors"] = errors
    response = Response(json.dumps(body), status=status, mimetype=PROBLEM_MIME)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    response.headers["Cache-Control"] = "no-store"
    return response


def _validation_status(code: int, messages: dict | None) -> int:
    # webargs reports every parse failure as 422. docs/API.md "status codes" wants 400 for
    # malformed query and path values and 422 only for JSON bodies that parse but fail validation.
    if code == 422 and messages and set(messages) <= {"query", "path", "headers", "view_args"}:
        return 400
    return code


def _flatten(messages: dict) -> dict:
    flat: dict = {}
    for location, fields in messages.items():
        if isinstance(fields, dict):
            for name, value in fields.items():
                flat[name] = value
        else:
            flat[location] = fields
    return flat


def handle_http_exception(error: HTTPException):
    """Answer any HTTPException as problem+json or an HTML page, keeping its headers (Allow,
    WWW-Authenticate, Retry-After)."""
    data = getattr(error, "data", None) or {}
    messages = data.get("messages") or data.get("errors")
    status = _validation_status(error.code or 500, messages if isinstance(messages, dict) else None)
    headers = dict(data.get("headers") or {})
    for name, value in error.get_headers():
        if name.lower() != "content-type":
            headers[name] = value
    detail = data.get("message") or (error.description if _own_description(error) else None)
    if status == 429:
        # web/limits.py's description is the limit alone ("300 per 1 minute").
        detail = (f"Too many requests: the limit is {error.description}. Retry after the number "
                  f"of seconds in Retry-After." if _own_description(error) else None)
    if status == 400 and messages:
        # webargs answers a body that is not JSON at all with 400 under the "json" location.
        body = isinstance(messages, dict) and set(messages) <= {"json", "form"}
        detail = detail or ("The request body is not valid JSON." if body
                            else "A query or path value is malformed.")
    errors = _flatten(messages) if isinstance(messages, dict) else None
    return answer(status, detail, errors=errors, headers=headers)


def handle_desk_error(error: DeskError):
    """Answer a service's or view's refusal (services/errors.py) with its status, detail,
    per-field errors and headers."""
    detail = error.detail
    if error.status == 503:
        # The database connection failed (a COMMIT whose outcome is unknown): as for any
        # database error, the page must not touch the database (see handle_unexpected).
        _rollback()
        g.pop("paper", None)
        if not wants_problem():
            # A reader's form is safe to send again (the same answer either way); the detail
            # about Idempotency-Key is for API clients.
            detail = DETAILS[503]
    return answer(error.status, detail, errors=error.errors, headers=error.headers)


def answer(status: int, detail: str | None = None, *, errors: dict | None = None,
           headers: dict | None = None) -> Response:
    """The error answer of the current request: problem+json on machine routes (`errors` per
    field, when given), the HTML error page of the same status elsewhere. Never stored."""
    headers = headers or {}
    if wants_problem() or request_ctx.url_adapter is None:
        # No URL adapter (a Host werkzeug could not bind): the page could not build its links.
        return problem(status, detail, errors=errors, headers=headers)
    title = HTTP_STATUS_CODES.get(status, "Error")
    html = render_template("error.html", status=status, title=title,
                           detail=detail or DETAILS.get(status, title))
    response = Response(html, status=status, mimetype="text/html")
    for name, value in headers.items():
        response.headers[name] = value
    # As on problem answers: an error page is never stored (a cached 429 or 503 would outlive
    # the condition, a cached 404 the piece going on air).
    response.headers["Cache-Control"] = "no-store"
    return response


def _own_description(error: HTTPException) -> bool:
    # werkzeug's stock descriptions are long and generic; keep only ones our code wrote.
    return bool(error.description) and error.description != type(error).description


def handle_unexpected(error: Exception):
    """Log an unexpected exception and answer 500 (or 503 when the database is unreachable)."""
    if isinstance(error, HTTPException):
        return handle_http_exception(error)
    if isinstance(error, SQLAlchemyError):
        _rollback()  # the error page may query (the nav) on PostgreSQL's aborted transaction
    if isinstance(error, RecursionError) and request.is_json:
        # The JSON parser recurses once per nesting level: `[[[[...` 60 000 deep (well inside
        # 64 KiB) exhausts the stack. That is bad input, on any route that reads a JSON body.
        return handle_http_exception(BadRequest(description="The JSON body is nested too deeply."))
    if isinstance(error, IntegrityError):
        # A uniqueness race the services' own checks could not see (two writers at once):
        # nothing was written (the request's transaction is rolled back); trying again works.
        log.warning("write conflict on %s %s: %s", request.method, request.path,
                    str(error.orig).splitlines()[0][:200])
        return handle_http_exception(Conflict(description=(
            "This write collided with another made at the same moment; nothing was written. "
            "Retry it.")))
    if isinstance(error, DataError):
        # A value the database cannot hold or compare (a number past a column's range, a NUL
        # in text on PostgreSQL) that no check before it caught: the input is at fault.
        log.warning("value refused by the database on %s %s: %s", request.method, request.path,
                    str(error.orig).splitlines()[0][:200])
        return handle_http_exception(BadRequest(
            description="A value in the request is not one this service can look up or store."))
    if isinstance(error, OperationalError):
        log.error("database unavailable: %s", error.__class__.__name__)
        # The page must not touch the database: a paper row from the worker's snapshot
        # (tenancy.recent_snapshot) was expired by the rollback and would reload itself.
        g.pop("paper", None)
        return handle_http_exception(_unavailable())
    log.exception("unhandled error on %s %s", request.method, request.path)
    return handle_http_exception(InternalServerError())


def _rollback() -> None:
    try:
        current_app.extensions["sqlalchemy"].session.rollback()
    except Exception:  # noqa: BLE001 - the database may be the thing that is gone
        log.warning("rollback after a database error failed", exc_info=True)


def _unavailable() -> ServiceUnavailable:
    exc = ServiceUnavailable()
    exc.data = {"headers": {"Retry-After": "5"}}
    return exc


def register(app: Flask) -> None:
    """Install the handlers on the app."""
    app.register_error_handler(DeskError, handle_desk_error)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)
