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
from werkzeug.http import parse_accept_header

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


def compressible(response: Response) -> bool:
    """True for a complete 200 answer of a text format that nobody has encoded yet."""
    if response.status_code != 200 or response.direct_passthrough or response.is_streamed:
        return False
    # One pass over the headers (a werkzeug lookup of a missing header raises and catches).
    content_type, encoded = "", False
    for name, value in response.headers.items():
        lowered = name.lower()
        if lowered == "content-type":
            content_type = value
        elif lowered == "content-encoding":
            encoded = True
    if encoded:
        return False
    return content_type.split(";", 1)[0].strip().lower() in COMPRESSIBLE or _route_compresses()


def _route_compresses() -> bool:
    # A route may ask for gzip whatever its content type (a log's entry bundles: octet-stream).
    return has_request_context() and policy.of(current_app, this_request().endpoint).compress


def _vary_on_encoding(response: Response) -> None:
    """Add `Accept-Encoding` to the answer's Vary (what `response.vary.add` does, without
    parsing the header into a set and writing it back)."""
    headers = response.headers
    current = headers.get("Vary")
    if not current:
        headers["Vary"] = "Accept-Encoding"
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
    if not compressible(response):
        return response
    _vary_on_encoding(response)
    if not gzip_accepted(header("Accept-Encoding")):
        return response
    body = precompressed if precompressed is not None else gzip_bytes(response.get_data())
    if body is None:
        return response
    response.set_data(body)
    response.headers["Content-Encoding"] = "gzip"
    etag, weak = response.get_etag()
    if etag is not None and not weak:
        response.set_etag(etag, weak=True)
    return response
