"""Production defaults for `gunicorn wsgi:app` (docs/API.md "the document": a request line limit
included; docs/DEPLOYING.md). Every value can be overridden on the command line (`--workers 2`)
or through the environment variables named below.

Behind a proxy, the app (not gunicorn) decides what to trust: set TRUSTED_PROXIES to the number
of proxies in front (werkzeug's ProxyFix in app.py) and PUBLIC_URL_SCHEME=https.
"""
import gc
import multiprocessing
import os
import sys

from gunicorn.glogging import Logger

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web import request_log  # noqa: E402  (the project root, whatever the working directory)

wsgi_app = "wsgi:app"
bind = os.environ.get("GUNICORN_BIND", f"0.0.0.0:{os.environ.get('PORT', '8000')}")

# Sync workers: each request is short database work. The usual (2 x CPU) + 1 rule, capped so a
# large machine does not open more database connections than the pool settings expect.
workers = int(os.environ.get("WEB_CONCURRENCY", min(multiprocessing.cpu_count() * 2 + 1, 17)))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))   # a worker silent this long is restarted
graceful_timeout = 30   # on SIGTERM/SIGHUP, in-flight requests get this long to finish
keepalive = 5
# Recycle workers now and then so slow leaks cannot grow without bound.
# A worker serves hundreds of requests a second and takes about a second to boot, so not too often.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "50000"))
max_requests_jitter = 5000
# The heartbeat file lives in memory, not on a disk that may stall fchmod.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None

# Request limits: a longer request line gets 414, too many or too large headers 400/431, before
# the app runs (the OpenAPI document says so). 8190 is gunicorn's ceiling; the longest legitimate
# request line (an oEmbed `url` of 2048 characters, percent-encoded) fits in it.
limit_request_line = 8190
limit_request_fields = 64
limit_request_field_size = 8190

# Logs: JSON lines on stderr. The app writes one line per request (method, path, status,
# duration, paper, request id: request_log.py), which is the access log; gunicorn's own access
# log would say the same thing again without the request id, so it is off unless asked for
# (GUNICORN_ACCESSLOG=- writes it to stdout, as JSON too).
accesslog = os.environ.get("GUNICORN_ACCESSLOG") or None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'


class JsonLogger(Logger):
    """gunicorn's logger with JSON lines (request_log.JsonFormatter) on its handlers."""

    def setup(self, cfg):
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(request_log.JsonFormatter())


logger_class = JsonLogger

# gunicorn itself trusts no X-Forwarded-* header: ProxyFix in the app does, when TRUSTED_PROXIES
# says how many proxies there are, so the one setting governs scheme and client address alike.
forwarded_allow_ips = ""
secure_scheme_headers = {}
# No runtime control socket: one fewer thing listening, and several instances never collide.
control_socket_disable = True


def post_worker_init(worker):
    """Once a worker has loaded the app: move everything alive into the collector's permanent
    generation (`gc.freeze`). The app's modules, routes, schemas and mappers are never garbage,
    and without this every full collection walks them again: about a tenth of a cheap
    request's time (docs/PERFORMANCE.md "Where the time goes")."""
    gc.freeze()
