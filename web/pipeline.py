"""The request pipeline: every step a request passes before and after its view, in order.

This is the only place that installs request hooks. No other module calls `before_request`,
`after_request` or `teardown_request`; extensions whose `init_app` would install a hook of
their own (flask-cors) hand it over here, and `install` puts it in its place in the list.

Each step runs only on the routes it serves (web/steps.py `runs_for`, a predicate of the
route's policy: the paper lookup only for routes that answer for a paper, the response cache
only for routes that cache, the rate count only for routes that count); `Steps.for_route`
chooses them once per endpoint.

Before the view, in this order (a step that answers or raises ends the list there; the
after-steps still run on whatever answer results, an error page included):

 1. request id and clock (a fresh request state)  request_log.start_request
 2. malformed Host -> 400      security.refuse_malformed_host
 3. NUL in the path -> 404      security.refuse_nul_in_path
 4. body over 64 KiB -> 413     security.refuse_large_bodies
 5. malformed key -> 401        tenancy.refuse_malformed_key
 6. rate limits -> 429          limits.check_limits
    (1-6 touch no database: the cheap refusals come before any paper is looked up)
 7. 304 / stored answer from this worker's snapshot of the paper (current while the shared
    generation stands, web/state.py), no database
                                caching.answer_from_recent_paper
 8. Host -> paper, key -> 404/401/403
                                tenancy.load_paper
 9. If-None-Match -> 304        caching.answer_not_modified
10. stored public answer        caching.answer_from_cache

After the view (or the error handler), in this order:

 1. store a fresh public 200, Surrogate-Key     caching.store_answer
 2. security headers (CSP, framing, nosniff)    security.add_headers
 3. CORS where the route's policy opens it     pipeline.cors (flask-cors's own step)
 4. ETag and Cache-Control; keyed answers private, CORS stripped
                                                caching.decorate
 5. gzip over 1 KB when accepted (weak ETag), Vary: Accept-Encoding
                                                compression.compress
 6. X-RateLimit-*, Retry-After on 429/503 only  limits.add_limit_headers
 7. X-Request-ID, the request log line          request_log.finish_request

Teardown: give back a public read's autocommit connection (tenancy.end_read). Then, as the
app context ends, remove the request's database session (commit.end_session, installed in
place of flask-sqlalchemy's own removal): a connection lost after the answer was built is logged
and discarded, never raised to the WSGI server (whose bare 500 page would replace the answer).
Neither teardown step raises.

A stored answer (step 7 or 10 before) is a response like any other: it passes every
after-step, so a hit carries the same headers a miss does (the store in step 1 skips it).

Ahead of all of this, outside Flask, web/replay.py sends again a public answer this worker has
made before (a stored 200 or a 304, marked by web/caching.py with the paper state it holds)
while that state stands. Each step above declares (web/steps.py `replays`) what it does for an
answer sent again: the replay runs those parts in this order (the request id, the rate count,
which hands a used-up limit on to step 6, the rate-limit headers, the log line) and nothing
else, so its headers are the ones the steps above made (tests/test_replay.py). What a step keeps
for a later one lives on the typed request state (web/request_state.py).
"""
from __future__ import annotations

from collections.abc import Callable

from flask import Flask

from extensions import cors as flask_cors
from extensions import db
from web import caching, commit, compression, limits, policy, request_log, security, tenancy
from web.request_state import this_request
from web.steps import declared, replays, serves

BEFORE: tuple[Callable, ...] = (
    request_log.start_request,
    security.refuse_malformed_host,
    security.refuse_nul_in_path,
    security.refuse_large_bodies,
    tenancy.refuse_malformed_key,
    limits.check_limits,
    caching.answer_from_recent_paper,
    tenancy.load_paper,
    caching.answer_not_modified,
    caching.answer_from_cache,
)

TEARDOWN: tuple[Callable, ...] = (
    tenancy.end_read,
)
TEARDOWN_APPCONTEXT: tuple[Callable, ...] = (
    commit.end_session,
)


def _cors_step(app: Flask) -> Callable:
    """flask-cors's after-request function for the routes whose policy has `cors`
    (policy.cors_resources), taken from where its `init_app`
    put it. `intercept_exceptions=False`: error answers pass through the after-steps anyway."""
    hooks = app.after_request_funcs.setdefault(None, [])
    before = list(hooks)
    flask_cors.init_app(
        app,
        resources=policy.cors_resources(app),
        allow_headers=["Content-Type", "If-None-Match"],
        expose_headers=["ETag", "Retry-After", "Location"],
        max_age=600,
        send_wildcard=True,
        vary_header=False,
        intercept_exceptions=False,
    )
    added = [hook for hook in hooks if hook not in before]
    if len(added) != 1:
        raise RuntimeError(f"flask-cors installed {len(added)} hooks; the pipeline expects one")
    hooks.remove(added[0])
    flask_cors_step = added[0]

    # What flask-cors adds to a simple (non-preflight) request's answer depends only on the
    # resource its path matches and on whether an Origin came (every resource allows any
    # origin): learnt once per route and Origin, then added without matching eight patterns.
    learnt: dict[tuple, list] = {}

    @replays(None)  # the CORS headers are kept with the answer (it never varies by Origin)
    def cors(response):
        """Pipeline step: flask-cors's headers on the routes whose policy opens them."""
        req = this_request()
        rule = req.url_rule
        if req.method == "OPTIONS" or rule is None:
            return flask_cors_step(response)
        key = (rule.rule, "HTTP_ORIGIN" in req.environ)
        added = learnt.get(key)
        if added is None:
            before = list(response.headers.items())
            response = flask_cors_step(response)
            after = list(response.headers.items())
            if after[:len(before)] == before and "access-control-allow-origin" not in {
                    name.lower() for name, _ in before}:
                learnt[key] = after[len(before):]  # only appended headers: safe to replay
            return response
        if added and "Access-Control-Allow-Origin" not in response.headers:
            response.headers.extend(added)
        return response

    return cors


def _adopt_session_removal(app: Flask) -> None:
    """Put commit.end_session where flask-sqlalchemy's `init_app` put its session removal
    (a teardown_appcontext function), so the session ends the same way, safely."""
    funcs = app.teardown_appcontext_funcs
    ours = [i for i, func in enumerate(funcs)
            if getattr(func, "__self__", None) is db and func.__name__ == "_teardown_session"]
    if len(ours) != 1:
        raise RuntimeError(f"flask-sqlalchemy installed {len(ours)} session teardowns; the "
                           f"pipeline expects one")
    funcs[ours[0]] = TEARDOWN_APPCONTEXT[0]


class Steps:
    """The installed pipeline of one app: three tuples of steps, and the three hooks that run
    them (Flask sees one function per kind, not one per step: it wraps every hook it calls
    in `ensure_sync`, which costs more than most steps). Each route runs the steps that serve
    its policy (web/steps.py `runs_for`), chosen once per endpoint (`for_route`)."""

    def __init__(self, app: Flask, before: tuple, after: tuple, teardown: tuple):
        undeclared = [f"{step.__module__}.{step.__name__}" for step in (*before, *after, *teardown)
                      if not declared(step)]
        if undeclared:
            raise RuntimeError(f"steps that do not say what they do for an answer sent again "
                               f"(web/steps.py replays): {undeclared}")
        self.app = app
        self.before, self.after, self.teardown = before, after, teardown
        # What web/replay.py runs for an answer sent again, in the pipeline's order, and the
        # answer headers made anew for each request (never kept).
        self.replay_before = tuple(step.replay for step in before if step.replay is not None)
        self.replay_after = tuple(step.replay for step in after if step.replay is not None)
        self.per_request = frozenset(name.lower() for step in after for name in step.per_request)
        self._routes: dict[str | None, tuple[tuple, tuple, tuple]] = {}

    def for_route(self, endpoint: str | None) -> tuple[tuple, tuple, tuple]:
        """The (before, after, teardown) steps that serve `endpoint`'s policy (None: a path
        no route matched, policy.DEFAULT), in the pipeline's order; learnt once per endpoint."""
        found = self._routes.get(endpoint)
        if found is None:
            route = policy.of(self.app, endpoint)
            found = self._routes[endpoint] = tuple(
                tuple(step for step in steps if serves(step, route))
                for steps in (self.before, self.after, self.teardown))
        return found

    def run_before(self):
        """Each before-step of the route in order; the first that answers ends the list (Flask's rule)."""
        for step in self.for_route(this_request().endpoint)[0]:
            answer = step()
            if answer is not None:
                return answer
        return None

    def run_after(self, response):
        """Each after-step of the route in order, each given the last one's response."""
        for step in self.for_route(this_request().endpoint)[1]:
            response = step(response)
        return response

    def run_teardown(self, error):
        """Each teardown step of the route in order, with the request's unhandled error or None."""
        for step in self.for_route(this_request().endpoint)[2]:
            step(error)


def install(app: Flask) -> None:
    """Install every step on `app`, in order, as one before, one after and one teardown hook.
    Call once, after the extensions and blueprints are registered. Raises RuntimeError if
    anything else registered a request hook."""
    stray = {name: funcs for registry in (app.before_request_funcs, app.after_request_funcs,
                                          app.teardown_request_funcs)
             for name, funcs in registry.items() if funcs}
    if stray:
        raise RuntimeError(f"request hooks registered outside web/pipeline.py: {stray}")
    after = (
        caching.store_answer,
        security.add_headers,
        _cors_step(app),
        caching.decorate,
        compression.compress,
        limits.add_limit_headers,
        request_log.finish_request,
    )
    steps = app.extensions["pipeline"] = Steps(app, tuple(BEFORE), after, tuple(TEARDOWN))
    app.before_request_funcs[None] = [steps.run_before]
    app.after_request_funcs[None] = [steps.run_after]
    app.teardown_request_funcs[None] = [steps.run_teardown]
    _adopt_session_removal(app)


def describe(app: Flask) -> dict[str, list[str]]:
    """The names of `app`'s installed steps in the order they run: `{"before": [...],
    "after": [...], "teardown": [...], "teardown_appcontext": [...]}` (the last one lists every
    app-context teardown, extensions' too, read back from Flask's own list)."""

    def name(func: Callable) -> str:
        return f"{func.__module__}.{func.__name__}"

    steps: Steps = app.extensions["pipeline"]
    return {"before": [name(f) for f in steps.before], "after": [name(f) for f in steps.after],
            "teardown": [name(f) for f in steps.teardown],
            "teardown_appcontext": [name(f) for f in reversed(app.teardown_appcontext_funcs)]}
