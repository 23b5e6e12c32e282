"""Security headers on every answer (framing forbidden except on the embeds), and the request body
limit (64 KiB, else 413; docs/SECURITY.md "Limits").

Everything: `X-Frame-Options: DENY` and a Content-Security-Policy with `frame-ancestors 'none'`,
`X-Content-Type-Options: nosniff`, `Referrer-Policy: strict-origin-when-cross-origin`, HSTS when
the request itself came over https, and no version in `Server`.

A frameable answer opts in through `allow_framing(response, kind)` in its view: "embed" (the
story card, `/embed/{id}`) or "player" (a video edition's `?embed=1` page). It gets a locked-down
policy with `frame-ancestors *` and no X-Frame-Options; nothing else may be framed (Redash's
pattern). The mark travels on the response itself, never in `g`, so it cannot leak to another
answer.
"""
from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from flask import Response, request
from werkzeug.exceptions import BadRequest, NotFound, RequestEntityTooLarge

from web.headers import header
from web.request_state import this_app, this_request
from web.steps import replays

PAGE_CSP = ("default-src 'self'; img-src 'self' https: data:; media-src 'self' https:; "
            "style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'self'; "
            "form-action 'self'; frame-ancestors 'none'")
# The card loads only its own inline CSS and one picture; no script, no form, no fetch.
EMBED_CSP = ("default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; "
             "frame-ancestors *; base-uri 'none'; form-action 'none'")
PLAYER_CSP = ("default-src 'none'; img-src 'self' https: data:; media-src 'self' https:; "
              "style-src 'unsafe-inline'; frame-ancestors *; base-uri 'none'; form-action 'none'")
FRAMEABLE = {"embed": EMBED_CSP, "player": PLAYER_CSP}
_FRAMEABLE_POLICIES = frozenset(FRAMEABLE.values())
HSTS = "max-age=31536000; includeSubDomains"
_VERSION = re.compile(r"/\S*")


# Values seen in examples and old defaults: signing with one lets anyone forge a link.
PLACEHOLDER_SECRETS = frozenset({
    "dev-only-secret-change-me", "change-me-to-64-random-characters", "change-me", "changeme",
    "secret", "secret-key", "your-secret-key", "dev", "development", "test", "password",
})
MIN_SECRET_LENGTH = 16
SECRET_FILE = "secret_key"


def secret_key(configured: str | None, instance_path: str) -> str:
    """The app's SECRET_KEY (it signs the confirm and unsubscribe links).

    `configured` (SECRET_KEY) wins when set; a known placeholder or one shorter than 16
    characters raises RuntimeError (the app refuses to start). Unset, the secret is read from
    `{instance_path}/secret_key`, made on first use from 48 random bytes with mode 0600. Two
    processes starting at once agree on one secret: each writes a whole file under its own name
    and links it into place, which only the first can do; the other reads the winner's.
    """
    if configured:
        if configured.strip().lower() in PLACEHOLDER_SECRETS or len(configured) < MIN_SECRET_LENGTH:
            raise RuntimeError("SECRET_KEY is a placeholder or too short: set it to a long random "
                               "string, or leave it unset to use a generated per-instance secret")
        return configured
    path = Path(instance_path) / SECRET_FILE
    if not path.exists():
        draft = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_urlsafe(48) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process linked its secret first: use that one
        finally:
            draft.unlink()
    value = path.read_text(encoding="ascii").strip()
    if len(value) < MIN_SECRET_LENGTH:
        raise RuntimeError(f"{path} is empty or truncated: delete it to make a new secret "
                           "(links already sent stop working), or set SECRET_KEY")
    return value


def allow_framing(response: Response, kind: str) -> Response:
    """Let any site frame `response` under the locked-down policy for `kind` ("embed" or
    "player"). Raises KeyError for another kind."""
    response.headers["Content-Security-Policy"] = FRAMEABLE[kind]
    return response


@replays(None)  # the headers are kept with the answer
def add_headers(response: Response) -> Response:
    """Pipeline step (after the view, on every answer): the headers above. A policy the view set
    is kept; unless it is one of the frameable ones, framing is still denied. A 304 gets no policy
    of its own (see below)."""
    headers = response.headers
    # One pass over the answer's headers, then set or append: werkzeug answers a lookup of a
    # missing header by raising and catching an exception, and most of these are missing.
    present = {name.lower(): value for name, value in headers.items()}
    added: list[tuple[str, str]] = []

    def put(name: str, value: str) -> None:
        if name.lower() in present:
            headers[name] = value
        else:
            added.append((name, value))

    # A 304 carries no body, and a browser merges its headers into the stored answer's: framing
    # headers on it would overwrite a frameable card's policy (the view did not run to say so).
    if response.status_code != 304:
        policy = present.get("content-security-policy")
        if policy is None:
            put("Content-Security-Policy", PAGE_CSP)
        elif policy not in _FRAMEABLE_POLICIES and "frame-ancestors" not in policy:
            # A view's own policy (the avatar SVG's) still forbids framing.
            put("Content-Security-Policy", f"{policy}; frame-ancestors 'none'")
        if policy in _FRAMEABLE_POLICIES:
            headers.pop("X-Frame-Options", None)
        else:
            put("X-Frame-Options", "DENY")
    put("X-Content-Type-Options", "nosniff")
    # A view may send a stricter policy (the subscribe token pages send no-referrer).
    if "referrer-policy" not in present:
        added.append(("Referrer-Policy", "strict-origin-when-cross-origin"))
    if this_request().is_secure:
        put("Strict-Transport-Security", HSTS)
    if added:
        headers.extend(added)
    server = present.get("server")
    if server:
        headers["Server"] = " ".join(_VERSION.sub("", server).split()) or "paperdesk"
    return response


@replays(None)  # the replay takes no request with a body
def refuse_large_bodies() -> None:
    """Pipeline step (before the paper lookup): 413 for a body larger than MAX_CONTENT_LENGTH (64 KiB) on any route,
    whether or not its view reads the body.

    A declared Content-Length is checked at once. A chunked body has none: werkzeug reads it
    through a stream capped at the limit, which stops *silently* at the cap (a form would be
    parsed from its first 64 KiB), so it is read here, into the request's cache where the view's
    parser finds it, and one byte more is asked for: the capped stream raises the 413 then. A
    chunked body of exactly the limit is refused too (nothing tells it from a longer one).
    """
    limit = this_app().config.get("MAX_CONTENT_LENGTH")
    if limit is None:
        return
    req = this_request()
    environ = req.environ
    if "CONTENT_LENGTH" not in environ and "HTTP_TRANSFER_ENCODING" not in environ:
        return  # no body declared and none chunked (most GETs): what the checks below find
    if req.content_length is not None:
        if req.content_length > limit:
            raise RequestEntityTooLarge()
        return
    if "chunked" in (header("Transfer-Encoding") or "").lower():
        if len(request.get_data(cache=True)) >= limit:
            request.stream.read(1)
            raise RequestEntityTooLarge()  # a stream that did not raise at its cap


@replays(None)  # a path it refuses never made an answer to keep
def refuse_nul_in_path() -> None:
    """Pipeline step (first refusal): a path holding a NUL (`%00`) names nothing here (and PostgreSQL cannot
    compare text holding one): 404 before any view looks it up."""
    if "\x00" in this_request().path:
        raise NotFound()



# A host name as DNS spells it (RFC 1123 labels of 1-63 letters, digits, hyphens, underscores,
# at most 253 characters), or an IPv6 literal in brackets, with an optional port.
_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*\.?|\[[0-9a-f:.]+\])(?::[0-9]{{1,5}})?", re.IGNORECASE)


def host_is_valid(raw_host: str) -> bool:
    """True when `raw_host` (a Host header) is a well-formed host name or IPv6 literal, with an
    optional port: `demo..papers.test`, `.papers.test` and a 64-character label are not."""
    return len(raw_host) <= 260 and _HOST.fullmatch(raw_host) is not None


@replays(None)  # a Host it refuses never made an answer to keep
def refuse_malformed_host() -> None:
    """Pipeline step (first of all): a Host that cannot name any host is a 400, before any
    route, paper or URL is built from it (werkzeug binds no URL adapter to one, so a page
    could not even link its stylesheet)."""
    if not host_is_valid(this_request().host):
        raise BadRequest(description="The Host header is not a valid host name.")
