"""gzip for answers over 1 KB when the client accepts it (docs/API.md "compression").

The pipeline's `compress` step runs after the ETag is set (http_cache.decorate). A compressed
answer carries `Content-Encoding: gzip` and a weak ETag (`W/"..."`, the same tag as the
identity answer's strong one): the two encodings are different representations, so they may
not share a strong validator, and `If-None-Match` compares weakly, so either tag revalidates to
304. Every answer of a compressible type says `Vary: Accept-Encoding`, compressed or not, so a
shared cache keeps the two apart.

The response cache stores the gzip body beside the identity body (caching.store_answer), so
a warm hit costs no compression: `compress` finds it on the request state (`gzip_body`).
"""
from __future__ import annotations

import gzip

from flask import Response, current_app, has_request_context
from werkzeug.datastructures import Accept
from werkzeug.http import parse_accept_header, unquote_etag

from web import policy, request_state
from web.headers import header
from web.request_state import this_request
from web.steps import replays

MIN_BYTES = 1024
LEVEL = 6
# Text formats only: images and video are compressed already.
COMPRESSIBLE = frozenset({
    "application/json", "application/problem+json", "application/xml", "application/rss+xml",
    "application/atom+xml", "application/javascript", "application/xhtml+xml", "image/svg+xml",
    "text/html", "text/plain", "text/xml", "text/css", "text/javascript", "text/markdown",
    "text/vtt", "application/json+oembed", "application/ld+json", "application/feed+json",
    # ActivityPub documents and WebFinger's JRD (docs/FEDERATION.md): JSON like any other.
    "application/activity+json", "application/jrd+json",
})


def compressible(response: Response, seen: dict[str, str] | None = None) -> bool:
    """True for a complete 200 answer of a text format that nobody has encoded yet. `seen`:
    the answer's headers as `_seen` gives them, when the caller has them already."""
    if response.status_code != 200 or response.direct_passthrough or response.is_streamed:
        return False
    if seen is None:
        seen = _seen(response)
    if "content-encoding" in seen:
        return False
    content_type = seen.get("content-type", "")
    return content_type.split(";", 1)[0].strip().lower() in COMPRESSIBLE or _route_compresses()


def _seen(response: Response) -> dict[str, str]:
    """The answer's headers in one pass, by lowered name: the first value of each, what
    `response.headers.get(name)` gives (each werkzeug lookup compares every header, and one of
    a missing header raises and catches an exception); of Content-Type, the last."""
    seen: dict[str, str] = {}
    for name, value in response.headers:
        lowered = name.lower()
        if lowered == "content-type":
            seen[lowered] = value  # the last one, as `compressible` has always judged it
        else:
            seen.setdefault(lowered, value)
    return seen


def _route_compresses() -> bool:
    # A route may ask for gzip whatever its content type (a log's entry bundles: octet-stream).
    return has_request_context() and policy.of(current_app, this_request().endpoint).compress


def _vary_on_encoding(response: Response, seen: dict[str, str]) -> None:
    """Add `Accept-Encoding` to the answer's Vary (what `response.vary.add` does, without
    parsing the header into a set and writing it back); `seen` as `_seen` gave it."""
    headers = response.headers
    current = seen.get("vary")
    if not current:
        if "vary" in seen:
            headers["Vary"] = "Accept-Encoding"  # an empty one, replaced
        else:
            headers.add("Vary", "Accept-Encoding")  # appended, as setting a missing header does
    elif "accept-encoding" not in {item.strip().lower() for item in current.split(",")}:
        headers["Vary"] = f"{current}, Accept-Encoding"


def gzip_bytes(data: bytes) -> bytes | None:
    """`data` gzipped (level 6, no timestamp, so equal bodies give equal bytes), or None when
    it is under MIN_BYTES (not worth a header and a decompression)."""
    if len(data) < MIN_BYTES:
        return None
    return gzip.compress(data, compresslevel=LEVEL, mtime=0)


_ACCEPTS: dict[str, bool] = {}


def gzip_accepted(accept_encoding: str | None) -> bool:
    """True when an Accept-Encoding header value gives gzip (or `*`) a quality above 0; False
    without the header. Parsed once per distinct value (clients send a handful of them)."""
    if accept_encoding is None:
        return False
    accepts = _ACCEPTS.get(accept_encoding)
    if accepts is None:
        if len(_ACCEPTS) > 256:  # clients choose the header: keep the memo small
            _ACCEPTS.clear()
        accepts = _ACCEPTS[accept_encoding] = parse_accept_header(accept_encoding, Accept).quality("gzip") > 0
    return accepts


@replays(None)  # the kept answer is the compressed one (its key holds Accept-Encoding)
def compress(response: Response) -> Response:
    """Pipeline step, after the ETag is set: gzip a compressible answer of MIN_BYTES or more
    for a client that accepts it (the cached gzip body when the answer came from the response
    cache); `Vary: Accept-Encoding` on every compressible answer."""
    state = request_state.current()
    precompressed, state.gzip_body = state.gzip_body, None
    if response.status_code != 200:
        return response  # `compressible`'s first test, before any pass over the headers
    seen = _seen(response)  # one pass over the headers for all this step reads of them
    if not compressible(response, seen):
        return response
    _vary_on_encoding(response, seen)
    if not gzip_accepted(header("Accept-Encoding")):
        return response
    body = precompressed if precompressed is not None else gzip_bytes(response.get_data())
    if body is None:
        return response
    response.set_data(body)
    # No Content-Encoding yet (`compressible`): appended, as setting a missing header does.
    response.headers.add("Content-Encoding", "gzip")
    etag, weak = unquote_etag(seen.get("etag"))  # `response.get_etag()`: the ETag is as seen
    if etag is not None and not weak:
        response.set_etag(etag, weak=True)
    return response
