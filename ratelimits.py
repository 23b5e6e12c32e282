"""Rate limits on every route (issue 7 item 3; CONTRACT.md "status codes": 429 with Retry-After).

Every limit counts per client address (`flask_limiter.util.get_remote_address`: the peer, or the
address ProxyFix takes from X-Forwarded-For when TRUSTED_PROXIES says how many proxies to trust)
in the limiter's storage: `memory://` in development, Redis in production
(RATELIMIT_STORAGE_URI=redis://...), so every gunicorn worker and every host shares one count.

| requests                                            | limit (config name, default)                 |
|-----------------------------------------------------|----------------------------------------------|
| every GET and HEAD, all routes together             | READ_RATELIMIT, "300/minute"                 |
| public subscribe: POST /api/v1/subscribers,         | SUBSCRIBE_RATELIMIT "5/minute;20/hour" per   |
| /api/v1/subscribe and the /subscribe form           | client and SUBSCRIBE_ADDRESS_RATELIMIT per   |
|                                                     | address (blueprints/api/subscribers.py)      |
| POST /subscribe/confirm, /subscribe/unsubscribe     | SUBSCRIBE_LINK_RATELIMIT, "20/minute;200/hour"|
| any other request (the keyed writes), per route     | RATELIMIT_DEFAULT (flask-limiter's own)       |
| /healthz, /readyz, static files                     | none (load balancers; flask-limiter exempts   |
|                                                     | static)                                       |

The limit strings are read from the app's config on each request (limit providers are
callables), so an app built with other values, a test's for instance, gets its own. A 429 is a
problem+json (or the HTML error page on reader pages) with `Retry-After` in seconds, and every
limited answer carries flask-limiter's `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
`X-RateLimit-Reset` (unix seconds) of the limit nearest to running out.

If the limiter's storage fails (Redis down), the limits fall back to per-process memory rather
than failing the request (RATELIMIT_IN_MEMORY_FALLBACK_ENABLED, RATELIMIT_SWALLOW_ERRORS), and
Redis calls time out after a second (RATELIMIT_STORAGE_OPTIONS): a limiter outage must never
become a site outage.
"""
from __future__ import annotations

from flask import Flask, Response, current_app

from extensions import limiter

READ_METHODS = ["GET", "HEAD"]
DEFAULT_READ_LIMIT = "300/minute"
DEFAULT_LINK_LIMIT = "20/minute;200/hour"
# Blueprints whose routes answer load balancers, not readers: never limited.
EXEMPT_BLUEPRINTS = ("health",)
# The blueprint holding the confirm and unsubscribe POSTs. Its other POST, the subscribe form,
# carries its own limits (which override blueprint limits), so LINKS reaches only those two.
LINK_BLUEPRINT = "subscribe"
# Flask-Limiter settings that must be in the config before `limiter.init_app` reads it.
LIMITER_DEFAULTS = {
    "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED": True,
    "RATELIMIT_SWALLOW_ERRORS": True,
    "RATELIMIT_STORAGE_OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
}
# Statuses on which a Retry-After means something (RFC 9110 10.2.3, RFC 6585 4).
RETRY_AFTER_STATUSES = (429, 503)


def read_limit() -> str:
    """The limit shared by all GET and HEAD requests of one client (READ_RATELIMIT)."""
    return current_app.config.get("READ_RATELIMIT", DEFAULT_READ_LIMIT)


def link_limit() -> str:
    """The limit on the confirm and unsubscribe POSTs of one client (SUBSCRIBE_LINK_RATELIMIT)."""
    return current_app.config.get("SUBSCRIBE_LINK_RATELIMIT", DEFAULT_LINK_LIMIT)


# Created once per process: flask-limiter keeps blueprint limits by blueprint name on the
# (process-wide) limiter, and equal limits are stored once however many apps register them.
READS = limiter.shared_limit(read_limit, scope="read", methods=READ_METHODS)
LINKS = limiter.shared_limit(link_limit, scope="subscribe-link", methods=["POST"])


def drop_stray_retry_after(response: Response) -> Response:
    """after_request, run after flask-limiter's: it puts `Retry-After` on every limited answer,
    a 200 too, where it means nothing (and a cache would store it). Keep it on 429 and 503."""
    if response.status_code not in RETRY_AFTER_STATUSES:
        response.headers.pop("Retry-After", None)
    return response


def register(app: Flask) -> None:
    """Attach the limits above to every blueprint of `app`. Idempotent; call it once the
    blueprints are registered (after `register_blueprints`).

    The Flask-Limiter settings in LIMITER_DEFAULTS are set here only when absent, and only take
    effect if present when `limiter.init_app` runs: config.py carries them for that reason.
    """
    for name, value in LIMITER_DEFAULTS.items():
        app.config.setdefault(name, value)
    if app.extensions.get("paperdesk.ratelimits"):
        return
    app.extensions["paperdesk.ratelimits"] = True
    for name, blueprint in app.blueprints.items():
        if name in EXEMPT_BLUEPRINTS:
            limiter.exempt(blueprint)
            continue
        READS(blueprint)
        if name == LINK_BLUEPRINT:
            LINKS(blueprint)
    # Inserted first, so it runs last: after_request hooks run in reverse order of registration.
    app.after_request_funcs.setdefault(None, []).insert(0, drop_stray_retry_after)
