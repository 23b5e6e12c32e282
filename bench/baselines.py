"""The two baselines `make bench` measures beside every endpoint, served by the same gunicorn
with the same settings (gunicorn.conf.py, 2 sync workers) as the app:

- `bare_wsgi`: a WSGI callable answering `{"status": "ok"}`: what gunicorn itself costs;
- `bare_flask`: a Flask app with one view returning `{"status": "ok"}`: what any Flask app
  costs before it does anything. Every ratio in docs/PERFORMANCE.md is to this one.

Both answer every path (so the harness's readiness probe of /readyz works unchanged).
"""
from __future__ import annotations

from flask import Flask

_BODY = b'{"status": "ok"}\n'
_HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(_BODY)))]


def bare_wsgi(environ, start_response):
    """A WSGI application: 200 `{"status": "ok"}` for any request."""
    start_response("200 OK", _HEADERS)
    return [_BODY]


bare_flask = Flask(__name__)


@bare_flask.route("/", defaults={"path": ""})
@bare_flask.route("/<path:path>")
def ok(path: str):
    """200 `{"status": "ok"}` for any path."""
    return {"status": "ok"}
