"""Production defaults for `gunicorn wsgi:app` (CONTRACT.md "the document": a request line limit
included). Every value can be overridden on the command line (`--workers 2`) or through the
environment variables named below. Behind a proxy, set FORWARDED_ALLOW_IPS to its address so
X-Forwarded-Proto is trusted (and PUBLIC_URL_SCHEME=https)."""
import multiprocessing
import os

wsgi_app = "wsgi:app"
bind = os.environ.get("GUNICORN_BIND", f"0.0.0.0:{os.environ.get('PORT', '8000')}")

# Sync workers: each request is short database work. The usual (2 x CPU) + 1 rule, capped so a
# large machine does not open more database connections than the pool settings expect.
workers = int(os.environ.get("WEB_CONCURRENCY", min(multiprocessing.cpu_count() * 2 + 1, 17)))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))   # a worker silent this long is restarted
graceful_timeout = 30
keepalive = 5
# Recycle workers now and then so slow leaks cannot grow without bound.
max_requests = 2000
max_requests_jitter = 200
# The heartbeat file lives in memory, not on a disk that may stall fchmod.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None

# Request limits: a longer request line gets 414, too many or too large headers 400/431, before
# the app runs (the OpenAPI document says so). 8190 is gunicorn's ceiling; the longest legitimate
# request line (an oEmbed `url` of 2048 characters, percent-encoded) fits in it.
limit_request_line = 8190
limit_request_fields = 64
limit_request_field_size = 8190

# Logs to stdout/stderr, for the process manager to collect.
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOGLEVEL", "info")
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s"'

forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")
# No runtime control socket: one fewer thing listening, and several instances never collide.
control_socket_disable = True
