"""The two baselines `make bench` measures beside every endpoint, served by the same gunicorn
with the same settings (gunicorn.conf.py, 2 sync workers) as the app:

- `bare_wsgi`: a WSGI callable answering `{"status": "ok"}`: what gunicorn itself costs;
- `bare_flask`: a Flask app with one view returning `{"status": "ok"}`: what any Flask app
  costs before it does anything. Every ratio in docs/PERFORMANCE.md is to this one.

Both answer every path (so the harness's readiness probe of /readyz works unchanged).
"""
from __future__ import annotations

import functools

from flask import Flask

_BODY = b'{"status": "ok"}\n'
_HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(_BODY)))]


def bare_wsgi(environ, start_response):
    """A WSGI application: 200 `{"status": "ok"}` for any request, but `/bytes/<n>`: 200 with a
    body of `n` bytes (at most MAX_BODY), the baseline of a row whose answer is that large
    (bench/http_bench.py `same_body`: what sending the bytes alone costs on this gunicorn)."""
    path = environ.get("PATH_INFO", "")
    if path.startswith("/bytes/") and path[7:].isdigit() and int(path[7:]) <= MAX_BODY:
        body = _sized(int(path[7:]))
        start_response("200 OK", [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(len(body)))])
        return [body]
    start_response("200 OK", _HEADERS)
    return [_BODY]


MAX_BODY = 16 * 1024 * 1024


@functools.lru_cache(maxsize=16)
def _sized(n: int) -> bytes:
    return b"x" * n


bare_flask = Flask(__name__)


@bare_flask.route("/", defaults={"path": ""})
@bare_flask.route("/<path:path>")
def ok(path: str):
    """200 `{"status": "ok"}` for any path."""
    return {"status": "ok"}
