"""The one error vocabulary of the services (and of the views that refuse something themselves).

A service that must refuse raises a `DeskError` subclass; nothing catches it on the way out of
a request. web/errors.py answers it once, for every route: as an RFC 9457 problem+json on machine
routes (`status`, `title` from the status, `detail`, and `errors` per field when given), or as
the HTML error page of the same status on reader pages. A CLI command catches `DeskError` and
prints `str(error)`.

    DeskError            500 base: `status`, `detail`, `errors`, `headers`
    +-- BadRequest       400 a value that cannot be looked up or used as sent
    +-- Unauthorized     401 no key, or a malformed, unknown or revoked one (WWW-Authenticate)
    +-- Forbidden        403 a valid key that may not do this here
    +-- NotFound         404 no such piece, section, persona or edition on this paper
    +-- Conflict         409 a name, slug or day that another row already holds
    +-- Invalid          422 a body that parsed but fails a rule; `errors` names the fields
    +-- Unavailable      503 the database is away, or a write's outcome is unknown (Retry-After)

Raising one never writes anything: the request's commit point (web/commit.py) rolls back.
"""
from __future__ import annotations

# The challenge a 401 carries (docs/API.md "status codes").
BEARER_CHALLENGE = 'Bearer realm="desk"'


class DeskError(Exception):
    """A refusal the client can act on.

    `status` is the HTTP status (int); `detail` one human sentence; `errors` maps field names
    to lists of messages (only on 422); `headers` are extra response headers (`WWW-Authenticate`
    on a 401). `str(error)` is the detail, followed by the per-field messages when there are any.
    """

    status: int = 500
    default_detail: str = "Something went wrong on our side."

    def __init__(self, detail: str | None = None, *, errors: dict[str, list[str]] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        self.detail = detail or self.default_detail
        self.errors = errors or None
        self.headers = dict(headers or {})
        super().__init__(self.detail)

    def __str__(self) -> str:
        if not self.errors:
            return self.detail
        fields = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in self.errors.items())
        return f"{self.detail} ({fields})"


class BadRequest(DeskError):
    """400: a query, path or body value that is malformed for its use (not a failed rule)."""

    status = 400
    default_detail = "The request has a malformed value."


class Unauthorized(DeskError):
    """401: a key is needed and none was sent, or the one sent is malformed, unknown or
    revoked. Always carries `WWW-Authenticate: Bearer realm="desk"`."""

    status = 401
    default_detail = "A valid desk key is required."

    def __init__(self, detail: str | None = None, **kwargs) -> None:
        super().__init__(detail, **kwargs)
        self.headers.setdefault("WWW-Authenticate", BEARER_CHALLENGE)


class Forbidden(DeskError):
    """403: a valid key of this paper below the level needed, a key of another paper, or an
    agent key stepping outside its persona."""

    status = 403
    default_detail = "This key may not do that here."


class NotFound(DeskError):
    """404: no such piece, section, persona or edition on this paper."""

    status = 404
    default_detail = "There is nothing here."


class Gone(DeskError):
    """410: the thing was public and is withdrawn (a pulled piece's old text); its record stays."""

    status = 410
    default_detail = "This was public and has been withdrawn."


class Conflict(DeskError):
    """409: the write clashes with an existing row (a name, slug or day already taken)."""

    status = 409
    default_detail = "This write clashes with what is already there."


class Invalid(DeskError):
    """422: a well-formed body that breaks a rule the schema cannot check (an unknown section,
    a `[^N]` marker without fact N). `errors` maps each field to its messages."""

    status = 422
    default_detail = "The request body failed validation."


class Unavailable(DeskError):
    """503: the service cannot answer now; always carries `Retry-After` (seconds). Raised by the
    commit point when the connection is lost during a COMMIT (transaction.OUTCOME_UNKNOWN)."""

    status = 503
    default_detail = "The service is briefly unavailable; retry later."
    retry_after = "5"

    def __init__(self, detail: str | None = None, **kwargs) -> None:
        super().__init__(detail, **kwargs)
        self.headers.setdefault("Retry-After", self.retry_after)
