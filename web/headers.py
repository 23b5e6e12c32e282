"""Request headers read straight from the WSGI environ, for the steps every request passes;
response headers set several at a time (`put`).

werkzeug's `request.headers` answers a missing header by raising and catching an exception
(`BadRequestKeyError`) per lookup, and most requests lack most of the headers the pipeline
asks about (keys, Accept-Encoding, X-Request-ID, Transfer-Encoding): a measurable share of a
cheap request (docs/PERFORMANCE.md). The environ holds the same values under CGI names.
"""
from __future__ import annotations

from functools import lru_cache

from web.request_state import this_request

# The request headers that carry a desk key (services/newsroom/keys.py `presented_key`): a
# request with any of them is keyed, never served a public answer nor counted as a public read;
# every public answer varies on them.
KEY_HEADERS = ("Authorization", "X-Desk-Key")
# The same names as a `Vary` value (web/caching.py derives every public answer's from it).
KEY_VARY = ", ".join(KEY_HEADERS)


@lru_cache(maxsize=64)
def environ_name(header: str) -> str:
    """The environ key of a request header: `X-Desk-Key` -> `HTTP_X_DESK_KEY`
    (`Content-Type` and `Content-Length` have none of the prefix)."""
    name = header.upper().replace("-", "_")
    return name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"


def header(name: str, environ: dict | None = None) -> str | None:
    """The value of request header `name` in `environ` (default: the current request's), or None."""
    return (environ if environ is not None else this_request().environ).get(environ_name(name))


def has_any(names: tuple[str, ...], environ: dict | None = None) -> bool:
    """True when the request (or `environ`) carries any of the headers `names`."""
    environ = environ if environ is not None else this_request().environ
    return any(environ_name(name) in environ for name in names)


def put(headers, pairs, drop: tuple[str, ...] = ()) -> None:
    """Set each `(name, value)` of `pairs` on the response headers `headers` (werkzeug
    `Headers`) in order, then remove each name of `drop`: exactly what `headers[name] = value`
    for each pair and then `headers.pop(name, None)` for each of `drop` do, with one pass over
    the headers instead of one per name (each of werkzeug's compares every header's lowered
    name, and a lookup of a missing one raises and catches an exception)."""
    present = {name.lower() for name, _value in headers}
    for name, value in pairs:
        lowered = name.lower()
        if lowered in present:
            headers[name] = value  # in place of the first, the others removed
        else:
            headers.add(name, value)  # appended, as a set of a missing header does
            present.add(lowered)
    for name in drop:
        if name.lower() in present:
            headers.remove(name)
