"""Every setting, read from the environment in one place, each with a safe default.

docs/API.md "config" names the variables; README "Configuration" documents them.
"""
from __future__ import annotations

import functools
import os
import select
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def _optional(name: str, kind):
    """The setting `name` as `kind` (int, float or `bool` read like `_flag`), or None when unset:
    a queue's own setting, which falls back to the WEBHOOK_* one (services/delivery/queues.py)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    return _flag(name, False) if kind is bool else kind(raw)


def _queue_settings(prefix: str) -> dict:
    """`<prefix>_CONCURRENCY`, `_RUN_SECONDS`, `_TIMEOUT_SECONDS`, `_ALLOW_PRIVATE`,
    `_MAX_ATTEMPTS`: None when unset."""
    return {f"{prefix}_CONCURRENCY": _optional(f"{prefix}_CONCURRENCY", int),
            f"{prefix}_RUN_SECONDS": _optional(f"{prefix}_RUN_SECONDS", float),
            f"{prefix}_TIMEOUT_SECONDS": _optional(f"{prefix}_TIMEOUT_SECONDS", float),
            f"{prefix}_ALLOW_PRIVATE": _optional(f"{prefix}_ALLOW_PRIVATE", bool),
            f"{prefix}_MAX_ATTEMPTS": _optional(f"{prefix}_MAX_ATTEMPTS", int)}


def _database_url(instance: Path) -> str:
    url = os.environ.get("DATABASE_URL") or f"sqlite:///{instance / 'paperdesk.db'}"
    # Heroku-style URLs name the driver "postgres"; SQLAlchemy wants an explicit driver.
    if url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url[len("postgres://"):]
    elif url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def sqlite_file(database_url: str, instance_path: str | Path) -> Path | None:
    """The file a SQLite `database_url` names (absolute; a relative path is under the instance
    folder, as flask-sqlalchemy reads it), or None for another database or an in-memory one.
    Understands both `sqlite:///path` and `sqlite:///file:path?...&uri=true`."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url)
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    name = url.database
    if url.query.get("uri"):
        if not name.startswith("file:") or url.query.get("mode") == "memory":
            return None
        name = name[len("file:"):]
    path = Path(name)
    return path if path.is_absolute() else Path(instance_path) / path


def engine_options(database_url: str) -> dict:
    """SQLAlchemy engine options for the database `database_url` names (a SQLAlchemy URL):
    `postgres_engine_options()` for PostgreSQL, none (flask-sqlalchemy's defaults) otherwise.
    create_app derives them from the app's final database URL, so an app built on another
    database than DATABASE_URL's (the test suite's) runs with that database's production
    options."""
    return postgres_engine_options() if database_url.startswith("postgresql") else {}


def postgres_engine_options() -> dict:
    """SQLAlchemy engine options for PostgreSQL (psycopg 3), from the environment
    (docs/DEPLOYING.md "The database"):

    - a pool per gunicorn worker (sync workers serve one request at a time, so a small pool is
      plenty; a worker has two such pools, the app's and public reads' (extensions.reads_engine),
      so workers x 2 x (size + overflow) must stay under the server's max_connections),
      connections recycled after `DB_POOL_RECYCLE` seconds (1800);
    - no ping per checkout (`DB_POOL_PRE_PING`, off): a `SELECT 1` round trip before every
      request's first statement cost as much as the statement itself. `LivePool` instead drops,
      at checkout and without a round trip, a connection whose server side is gone (a restart,
      `pg_terminate_backend`, an idle timeout): its socket has something to read or is closed;
    - server-side prepared statements (`DB_PREPARE_THRESHOLD`, 1: from a statement's second
      execution on a connection; empty: never, for pgbouncer in transaction mode before 1.21):
      every hot read is one statement text built once, so each connection parses it once;
    - `DB_STATEMENT_TIMEOUT_MS`: a runaway query is cancelled by the server before gunicorn
      kills the worker;
    - `DB_PLAN_CACHE_MODE` (`force_generic_plan`): each prepared statement is planned once per
      connection. Left to choose (`auto`), PostgreSQL re-planned every execution of a list of
      30 or more pieces (0.2 ms, as long as running it), because its generic estimate for "this
      paper, aired by now" looked dearer than the plan for the actual values, which is the same
      index scan. Search, whose best plan does depend on how common its terms are, reads on
      its own connection planned per execution (extensions.per_value_engine);
    - cursors whose `description` builds its columns only when read (`lazy_description_cursor`):
      SQLAlchemy looks at it on every statement, but reads it only for a statement it has not
      run before."""
    connect_args: dict = {"cursor_factory": lazy_description_cursor()}
    threshold = os.environ.get("DB_PREPARE_THRESHOLD", "1").strip()
    connect_args["prepare_threshold"] = int(threshold) if threshold else None
    settings = {}
    plan_cache_mode = os.environ.get("DB_PLAN_CACHE_MODE", "force_generic_plan").strip()
    if plan_cache_mode:  # empty: the server's own setting (a pooler that refuses `options`)
        settings["plan_cache_mode"] = plan_cache_mode
    statement_timeout = os.environ.get("DB_STATEMENT_TIMEOUT_MS", "")
    if statement_timeout:
        settings["statement_timeout"] = str(int(statement_timeout))
    if settings:
        connect_args["options"] = server_options(settings)
    return {
        "poolclass": live_pool(),
        "pool_pre_ping": _flag("DB_POOL_PRE_PING", False),
        "pool_size": int(os.environ.get("DB_POOL_SIZE", "5")),
        "max_overflow": int(os.environ.get("DB_MAX_OVERFLOW", "5")),
        "pool_timeout": int(os.environ.get("DB_POOL_TIMEOUT", "10")),
        "pool_recycle": int(os.environ.get("DB_POOL_RECYCLE", "1800")),
        "connect_args": connect_args,
    }


@functools.cache
def lazy_description_cursor() -> type:
    """psycopg's Cursor, but its `description` (a sequence of `psycopg.Column`, or None when
    the result has no rows, as psycopg's) builds its Columns when first indexed or iterated.

    Why: SQLAlchemy asks every statement's cursor for its description, and for a statement it
    has run before (every hot read: the compiled form and its result metadata are cached) only
    to see that it is not None. psycopg's own builds a Column per column each time (name
    decoded, type looked up: about eight Python calls a column, 160 for a story's twenty
    columns, half of psycopg's Python calls per statement). The columns are read from the
    result the description was taken of, so the cursor's next statement does not change them.
    tests/test_postgres_plans.py holds it equal to psycopg's own."""
    from collections.abc import Sequence

    import psycopg
    from psycopg import Column, pq

    with_rows = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.SINGLE_TUPLE, pq.ExecStatus.TUPLES_CHUNK)

    class Source:
        """What psycopg's Column reads of its cursor: the result (this one), the connection's
        encoding and the type adapters."""

        __slots__ = ("_cursor", "pgresult")

        def __init__(self, cursor, pgresult) -> None:
            self._cursor, self.pgresult = cursor, pgresult

        @property
        def _encoding(self) -> str:
            return self._cursor._encoding

        @property
        def adapters(self):
            return self._cursor.adapters

    class Description(Sequence):
        """A result's columns, built on first use: indexes, slices, iterates and prints as the
        list psycopg builds."""

        __slots__ = ("_source", "_size", "_columns")

        def __init__(self, source: Source, size: int) -> None:
            self._source, self._size, self._columns = source, size, None

        def _built(self) -> list:
            if self._columns is None:
                self._columns = [Column(self._source, i) for i in range(self._size)]
            return self._columns

        def __len__(self) -> int:
            return self._size

        def __getitem__(self, index):
            return self._built()[index]

        def __iter__(self):
            return iter(self._built())

        def __repr__(self) -> str:
            return repr(self._built())

    class LazyDescriptionCursor(psycopg.Cursor):
        @property
        def description(self):
            result = self.pgresult
            # As psycopg's: columns when there are any, or when the statement said rows ("SELECT;").
            if result and (result.nfields or result.status in with_rows):
                return Description(Source(self, result), result.nfields)
            return None

    return LazyDescriptionCursor


def server_options(settings: dict[str, str]) -> str:
    """libpq's `options` startup parameter setting each server setting of `settings`
    (`{"plan_cache_mode": "auto"}` -> `-c plan_cache_mode=auto`). Values are ours, never a
    client's; a setting given twice takes its last value."""
    return " ".join(f"-c {name}={value}" for name, value in settings.items())


def connection_alive(dbapi_connection) -> bool:
    """Whether a pooled, idle psycopg connection can still be used, judged without a round
    trip: psycopg has not seen it close, and its socket has nothing to read. An idle
    connection is sent nothing by a live server; a server that ends the session (restart,
    `pg_terminate_backend`, `idle_session_timeout`) sends its FATAL message and closes, which
    makes the socket readable. True for other drivers (nothing to look at). A connection lost
    without a word (a cable cut) still passes: its first statement fails, the request is
    answered 503 (web/errors.py) and SQLAlchemy recycles the pool's older connections."""
    pgconn = getattr(dbapi_connection, "pgconn", None)
    if pgconn is None:
        return True
    from psycopg import pq

    if dbapi_connection.closed or pgconn.status != pq.ConnStatus.OK:
        return False
    # poll, not select: select refuses descriptors above 1023.
    poller = select.poll()
    try:
        poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
    except (OSError, ValueError):  # the socket is gone already
        return False


@functools.cache
def live_pool() -> type:
    """SQLAlchemy's QueuePool, but a checkout of a connection `connection_alive` refuses raises
    DisconnectionError, on which the pool discards it and checks out another (a new connection
    when none is left): a restarted or killed server costs no request an error, and a live one
    costs no ping."""
    from sqlalchemy import event, exc
    from sqlalchemy.pool import QueuePool

    class LivePool(QueuePool):
        """QueuePool that drops dead connections at checkout (config.connection_alive)."""

    @event.listens_for(LivePool, "checkout")
    def _refuse_dead(dbapi_connection, connection_record, connection_proxy) -> None:
        if not connection_alive(dbapi_connection):
            raise exc.DisconnectionError("the server closed this pooled connection")

    return LivePool


def load() -> dict:
    """Return the configuration mapping for `create_app`.

    Read at call time, never at import time, so tests and CLI runs can set the environment first.
    """
    instance = Path(os.environ.get("INSTANCE_PATH") or ROOT / "instance")
    database_url = _database_url(instance)
    return {
        "INSTANCE_PATH": str(instance),
        # Empty: a secret generated once into the instance folder (security.secret_key); a
        # known placeholder refuses to start.
        "SECRET_KEY": os.environ.get("SECRET_KEY", ""),
        "SQLALCHEMY_DATABASE_URI": database_url,
        "SQLALCHEMY_ENGINE_OPTIONS": engine_options(database_url),
        # SQLite only: write-ahead logging on every connection (app._sqlite_write_ahead_log).
        "SQLITE_WAL": _flag("SQLITE_WAL", True),
        "PAPER_DOMAIN": os.environ.get("PAPER_DOMAIN", "localhost").lower(),
        "DEFAULT_PAPER": os.environ.get("DEFAULT_PAPER", "demo"),
        # Hosts that count as "the bare host" besides PAPER_DOMAIN itself: what a developer types.
        "BARE_HOSTS": [
            h.strip().lower()
            for h in os.environ.get("BARE_HOSTS", "127.0.0.1,[::1],localhost").split(",")
            if h.strip()
        ],
        "PUBLIC_URL_SCHEME": os.environ.get("PUBLIC_URL_SCHEME", "http"),
        "SMTP_URL": os.environ.get("SMTP_URL", ""),
        "OUTBOX_DIR": os.environ.get("OUTBOX_DIR", str(instance / "outbox")),
        # send-alerts (docs/ALERTS.md "When a message fails"): permanent refusals in a row that
        # suppress an address, and temporary refusals after which an alert is given up.
        "ALERT_BOUNCE_LIMIT": int(os.environ.get("ALERT_BOUNCE_LIMIT", "3")),
        # The confirm outbox (flask worker): seconds per SMTP connect or read, tries
        # before a message is given up, seconds between polls of the loop.
        "OUTBOX_SMTP_TIMEOUT": float(os.environ.get("OUTBOX_SMTP_TIMEOUT", "10")),
        "OUTBOX_MAX_ATTEMPTS": int(os.environ.get("OUTBOX_MAX_ATTEMPTS", "8")),
        "OUTBOX_POLL_SECONDS": float(os.environ.get("OUTBOX_POLL_SECONDS", "1")),
        # Wall time one pass of the worker's confirm-mail queue spends sending (the rest waits).
        "OUTBOX_RUN_SECONDS": float(os.environ.get("OUTBOX_RUN_SECONDS", "60")),
        # SMTP connections the confirm-mail queue sends over at once, each kept for a pass.
        "OUTBOX_CONCURRENCY": int(os.environ.get("OUTBOX_CONCURRENCY", "1")),
        # Days a sent (or given-up) confirm email or webhook delivery is kept (0: for ever).
        "OUTBOX_RETENTION_DAYS": int(os.environ.get("OUTBOX_RETENTION_DAYS", "30")),
        "ALERT_MAX_ATTEMPTS": int(os.environ.get("ALERT_MAX_ATTEMPTS", "8")),
        # How far behind the run's clock alert windows end: longer than any air transaction
        # (services/delivery/alerts.py SETTLE; docs/ALERTS.md "Windows").
        "ALERT_SETTLE_SECONDS": int(os.environ.get("ALERT_SETTLE_SECONDS", "60")),
        # Alert senders (send-alerts, drain-outbox): SMTP connections each uses at once, seconds
        # per SMTP connect or read, and how long a sender's claim on a batch of rows holds
        # (services/delivery/alerts.py LEASE; docs/ALERTS.md "Several senders").
        "ALERT_CONNECTIONS": int(os.environ.get("ALERT_CONNECTIONS", "8")),
        "ALERT_SMTP_TIMEOUT": float(os.environ.get("ALERT_SMTP_TIMEOUT", "20")),
        "ALERT_LEASE_SECONDS": float(os.environ.get("ALERT_LEASE_SECONDS", "300")),
        # Rate limits (web/limits.py, run by web/pipeline.py before the paper lookup).
        "RATELIMIT_ENABLED": _flag("RATELIMIT_ENABLED", True),
        "RATELIMIT_STORAGE_URI": os.environ.get("RATELIMIT_STORAGE_URI", "memory://"),
        "RATELIMIT_KEY_PREFIX": os.environ.get("RATELIMIT_KEY_PREFIX", "paperdesk"),
        # A limiter store outage (Redis down) must not become a site outage: count in memory
        # meanwhile, and give up on Redis within a second.
        "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED": True,
        "RATELIMIT_STORAGE_OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
        "RATELIMIT_DEFAULT": os.environ.get("RATELIMIT_DEFAULT", "600 per minute"),
        "WEBHOOK_ALLOW_PRIVATE": _flag("WEBHOOK_ALLOW_PRIVATE", False),
        # Webhook POSTs in flight at once per run, and the wall time (seconds) a run spends
        # starting them; what is left is due for the next run (services/delivery/webhooks.py).
        "WEBHOOK_CONCURRENCY": int(os.environ.get("WEBHOOK_CONCURRENCY", "4")),
        "WEBHOOK_RUN_SECONDS": float(os.environ.get("WEBHOOK_RUN_SECONDS", "120")),
        # The whole of one POST (resolve, connect, send, answer), in seconds (services/http.py).
        "WEBHOOK_TIMEOUT_SECONDS": float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", "5")),
        # ActivityPub (docs/FEDERATION.md): off turns every /ap/ and .well-known route into a 404
        # and the outbox consumer into a no-op; the seconds an inbox POST may spend fetching
        # the sender's key (the one outside call on a request path), and the attempts an
        # activity gets before it is given up (backoff as for webhooks: 1 min doubling, 6 h cap).
        "ACTIVITYPUB_ENABLED": _flag("ACTIVITYPUB_ENABLED", True),
        "ACTIVITYPUB_KEY_FETCH_SECONDS": float(os.environ.get("ACTIVITYPUB_KEY_FETCH_SECONDS", "3")),
        # The most remote actors of one origin (scheme, host, port) that may follow one paper:
        # past it a Follow is refused (403), so one server cannot fill the follower table.
        "ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN": int(os.environ.get("ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN", "1000")),
        # The most inbox POSTs that may wait on a sender's server at once among all the web
        # workers of this instance folder (lock files there): keep it below the workers
        # (WEB_CONCURRENCY), so the others serve the desk however slow strangers' servers are.
        "ACTIVITYPUB_FETCH_SLOTS": int(os.environ.get("ACTIVITYPUB_FETCH_SLOTS", "2")),
        # Each outgoing queue's own CONCURRENCY, RUN_SECONDS, ALLOW_PRIVATE and MAX_ATTEMPTS
        # (services/delivery/queues.py): unset, the WEBHOOK_* values (and the queue's own
        # attempts: 10 for activities, 6 for pings) apply.
        **_queue_settings("ACTIVITYPUB"),
        **_queue_settings("PING"),
        # Reach beyond the fediverse (docs/FEDERATION.md "WebSub and IndexNow"), both off when
        # empty: a WebSub hub (`https://pubsubhubbub.appspot.com/`) named in the feeds and pinged
        # when they change, and an IndexNow endpoint (`https://api.indexnow.org/indexnow`) sent
        # the URLs of aired, revised and pulled pieces.
        "WEBSUB_HUB": os.environ.get("WEBSUB_HUB", "").strip(),
        "INDEXNOW_ENDPOINT": os.environ.get("INDEXNOW_ENDPOINT", "").strip(),
        # Public subscribe (docs/API.md "rate limits"): per client IP, and per address.
        "SUBSCRIBE_RATELIMIT": os.environ.get("SUBSCRIBE_RATELIMIT", "5/minute;20/hour"),
        "SUBSCRIBE_ADDRESS_RATELIMIT": os.environ.get("SUBSCRIBE_ADDRESS_RATELIMIT", "3/hour;10/day"),
        # Every GET and HEAD of one client, and the confirm/unsubscribe POSTs (web/limits.py).
        "READ_RATELIMIT": os.environ.get("READ_RATELIMIT", "300/minute"),
        "SUBSCRIBE_LINK_RATELIMIT": os.environ.get("SUBSCRIBE_LINK_RATELIMIT", "20/minute;200/hour"),
        # Port for links in alert emails built outside a request (`send-alerts`); empty: none.
        "PUBLIC_PORT": os.environ.get("PUBLIC_PORT", ""),
        # The origin of links built outside a request (`http://127.0.0.1:5000`): the default
        # paper's, with its scheme and port for the others (rendering/links.py PaperOrigins).
        # Empty: PUBLIC_URL_SCHEME, PAPER_DOMAIN and PUBLIC_PORT. Checked at startup.
        "PUBLIC_BASE_URL": os.environ.get("PUBLIC_BASE_URL", ""),
        # `"Name <address>"` or an address: the From of every message. Empty: the nameplate and
        # alerts@<paper host> (subscriptions.sender). Checked at startup.
        "MAIL_FROM": os.environ.get("MAIL_FROM", ""),
        # flask-caching: SimpleCache (per process) in development, RedisCache + CACHE_REDIS_URL in
        # production (shared by workers), NullCache to turn every cache off. It holds whole public
        # answers (web/caching.py) and built feeds, keyed by the paper's version.
        "CACHE_TYPE": os.environ.get("CACHE_TYPE", "SimpleCache"),
        "CACHE_REDIS_URL": os.environ.get("CACHE_REDIS_URL", ""),
        "CACHE_DEFAULT_TIMEOUT": int(os.environ.get("CACHE_DEFAULT_TIMEOUT", "300")),
        "CACHE_KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "paperdesk:"),
        "CACHE_NO_NULL_WARNING": True,  # NullCache is a deliberate choice (benchmarks, tests)
        "CACHE_THRESHOLD": int(os.environ.get("CACHE_THRESHOLD", "2000")),  # SimpleCache entries
        # The final answers each worker keeps and sends again ahead of Flask (web/replay.py),
        # bounded in bytes of bodies (0: off; always off with NullCache). Each is kept under the
        # state of what it shows, so it is never stale.
        "RESPONSE_CACHE_LOCAL_BYTES": int(os.environ.get("RESPONSE_CACHE_LOCAL_BYTES",
                                                         str(16 << 20))),
        # Where the workers share the papers' generation (so no read lags an answered write) and,
        # with RATELIMIT_STORAGE_URI memory://, the rate-limit counts (web/state.py): "auto" (the
        # Redis of RATELIMIT_STORAGE_URI or CACHE_REDIS_URL, else a file the host's workers map),
        # "host", a redis:// URL, or "off" (every public read asks the database for its paper).
        "SHARED_STATE": os.environ.get("SHARED_STATE", "auto"),
        "SHARED_STATE_TIMEOUT": float(os.environ.get("SHARED_STATE_TIMEOUT", "0.25")),  # seconds
        # seconds a worker trusts a generation read from Redis; writes wait as long (web/state.py:
        # 10 ms keeps a busy worker at about 100 round trips a second, and a write's wait short)
        "SHARED_STATE_LEASE": float(os.environ.get("SHARED_STATE_LEASE", "0.010")),
        # How long a keyed write's answer is kept for a retry with the same Idempotency-Key
        # (seconds; web/idempotency.py). Older records are ignored and purged by later writes.
        "IDEMPOTENCY_TTL_SECONDS": int(os.environ.get("IDEMPOTENCY_TTL_SECONDS", str(24 * 3600))),
        # Answers larger than this are served fresh each time rather than stored (bytes).
        "RESPONSE_CACHE_MAX_BYTES": int(os.environ.get("RESPONSE_CACHE_MAX_BYTES", str(2 << 20))),
        # CDN purge hook (services/delivery/purge.py): empty = off. PURGE_HEADER is one "Name: value" line
        # sent with each purge (e.g. "Fastly-Key: ...").
        "PURGE_URL": os.environ.get("PURGE_URL", ""),
        "PURGE_HEADER": os.environ.get("PURGE_HEADER", ""),
        "PURGE_TIMEOUT": float(os.environ.get("PURGE_TIMEOUT", "5")),
        # The transparency logs (docs/PROOFS.md): the worker signs a new checkpoint at most
        # every LOG_CHECKPOINT_SECONDS; LOG_WITNESSES lists witnesses ("URL VKEY", comma
        # separated) it submits each one to, waiting LOG_WITNESS_TIMEOUT seconds for each.
        "LOG_CHECKPOINT_SECONDS": float(os.environ.get("LOG_CHECKPOINT_SECONDS", "10")),
        "LOG_WITNESSES": os.environ.get("LOG_WITNESSES", ""),
        "LOG_WITNESS_TIMEOUT": float(os.environ.get("LOG_WITNESS_TIMEOUT", "10")),
        # Number of proxies in front whose X-Forwarded-For/-Proto are trusted (werkzeug
        # ProxyFix); 0 = none, the only safe value when clients reach the app directly.
        "TRUSTED_PROXIES": int(os.environ.get("TRUSTED_PROXIES", "0")),
        "LOG_LEVEL": os.environ.get("LOG_LEVEL", "INFO").upper(),
        "LOG_FORMAT": os.environ.get("LOG_FORMAT", "json").lower(),  # json | text
        "LOG_REQUESTS": _flag("LOG_REQUESTS", True),  # one line per request at INFO
        "MAX_CONTENT_LENGTH": 64 * 1024,
        # flask-smorest (apispec) builds the document; our own view serves it (servers per host).
        "API_TITLE": "Paper Desk",
        "API_VERSION": "1",
        "OPENAPI_VERSION": "3.1.0",
        "JSON_SORT_KEYS": False,
    }
