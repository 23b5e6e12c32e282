"""Route policy: what a route is, declared once, next to the route; read by the request path.

A view says what it is with `@policy.route(...)`, or its blueprint says it for all its views
with `policy.blueprint(bp, ...)` (a view's own fields win); nothing else keeps a list of
endpoints or paths. The pipeline's steps (web/pipeline.py), the CORS patterns handed to
flask-cors, the rate limits (web/limits.py), tenancy (web/tenancy.py), the response cache and
the replay (web/caching.py, web/replay.py: only answers the cache step marked are replayed) and
the tests (tests/test_policy.py) all read `of(endpoint)`.

    @bp.route("/subscribe", methods=["POST"])
    @policy.route(limit="subscribe", cache=False)
    def subscribe(): ...

Fields (RoutePolicy): `paper` (the route answers for a paper: Host -> paper, desk keys; False
for health checks and static files, which answer for the process), `cache` (a public GET's
answer gets an ETag (caching.answer_etag), 304s, is stored and replayed; False for personal or one-off
answers), `query` (the query parameters the view reads: they key its stored answers and its
`Link` header; None: those of its flask-smorest query schema), `limit` (`request`: the read
limit for GET/HEAD, the route's own for other methods; `subscribe`, `link`: the public
subscribe and e-mailed-link limits for POST/PATCH; `none`: never counted), `cors` (None; `any`:
any origin, any method; `read`: any origin, GET/HEAD/OPTIONS), `desk_keys` (the route reads
desk keys from `Authorization` and `X-Desk-Key`; False where `Authorization` means something
else, such as an ActivityPub inbox's HTTP signature: the headers are then neither checked nor
looked up, and the request is public), `cache_control` (the Cache-Control of its public
answers and their 304s instead of caching.PUBLIC_CACHE_CONTROL: a transparency log's checkpoint
a few seconds, its tiles a year), `compress` (gzip its answers for clients that accept it
whatever their content type, as for a log's entry bundles), `problems` (a route for programs:
its errors are problem+json, web/errors.py; False: the reader's HTML error page), `offers`
(the media types the view chooses among by the request's `Accept`, its default first, as an
Article's id does between ActivityPub JSON and a browser's page: its answers and 304s say
`Vary: Accept`, its stored answers are keyed on the type chosen, `caching.chosen_type`, and only
the default's answer is ever judged 304, by the step that runs before the view). A path no
route matched answers like the routes for programs when it starts as one of them does
(`problem_prefixes`).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from flask import Blueprint, Flask

LIMITS = ("request", "subscribe", "link", "none")
CORS = (None, "any", "read")
_ATTRIBUTE = "route_policy"
_EXTENSION = "paperdesk.route_policies"
_PREFIXES = "paperdesk.problem_prefixes"


@dataclass(frozen=True)
class RoutePolicy:
    """One route's policy (see the module for each field)."""

    paper: bool = True
    cache: bool = True
    query: frozenset[str] | None = None
    limit: str = "request"
    cors: str | None = None
    desk_keys: bool = True
    cache_control: str | None = None
    compress: bool = False
    problems: bool = False
    offers: tuple[str, ...] = ()

    def __post_init__(self):
        if self.limit not in LIMITS:
            raise ValueError(f"limit must be one of {LIMITS}, not {self.limit!r}")
        if self.cors not in CORS:
            raise ValueError(f"cors must be one of {CORS}, not {self.cors!r}")


def for_a_paper(route: RoutePolicy) -> bool:
    """The route answers for a paper (Host -> paper, desk keys, limits by paper)."""
    return route.paper


def reads_desk_keys(route: RoutePolicy) -> bool:
    """The route answers for a paper and reads desk keys from its requests' headers."""
    return route.paper and route.desk_keys


def caches(route: RoutePolicy) -> bool:
    """The route's public answers carry an ETag (caching.answer_etag), 304, and are stored and replayed."""
    return route.paper and route.cache


def counted(route: RoutePolicy) -> bool:
    """The route's requests count against a rate limit."""
    return route.limit != "none"


DEFAULT = RoutePolicy()
# Flask's own static route has no view of ours to decorate.
STATIC = RoutePolicy(paper=False, cache=False, limit="none")


def _fields(fields: dict) -> dict:
    unknown = set(fields) - {f.name for f in dataclasses.fields(RoutePolicy)}
    if unknown:
        raise TypeError(f"unknown route policy fields: {sorted(unknown)}")
    if fields.get("query") is not None:
        fields = {**fields, "query": frozenset(fields["query"])}
    if "offers" in fields:
        fields = {**fields, "offers": tuple(fields["offers"])}
    return fields


def route(**fields):
    """Decorator: the view's own policy fields (over its blueprint's). Returns the view itself,
    so it may sit anywhere among the view's decorators. Raises TypeError for an unknown field
    and ValueError for a bad value (at import, not on a request)."""
    checked = _fields(fields)
    RoutePolicy(**checked)  # refuse bad values now

    def mark(view):
        setattr(view, _ATTRIBUTE, {**getattr(view, _ATTRIBUTE, {}), **checked})
        return view

    return mark


def blueprint(bp: Blueprint, **fields) -> Blueprint:
    """Give every view of `bp` these policy fields unless a view says otherwise; returns `bp`."""
    checked = _fields(fields)
    RoutePolicy(**checked)
    setattr(bp, _ATTRIBUTE, {**getattr(bp, _ATTRIBUTE, {}), **checked})
    return bp


def of(app: Flask, endpoint: str | None) -> RoutePolicy:
    """The policy of `endpoint` in `app` (DEFAULT for None: a path no route matched), learnt
    once per endpoint: the view's fields over its blueprint's over DEFAULT; the query
    parameters of a flask-smorest view, when it declares none, from its query schema."""
    known = app.extensions.setdefault(_EXTENSION, {})
    found = known.get(endpoint)
    if found is None:
        found = known[endpoint] = _learn(app, endpoint)
    return found


def problem_prefixes(app: Flask) -> tuple[str, ...]:
    """Where the routes whose policy says `problems` live, as path prefixes, learnt once from
    `app`'s URL map: a rule's fixed part before its first variable (`/api/v1/stories/`,
    `/sitemap-`); a rule without variables, its path (`/rss.xml`) and its folder when no route
    for readers lives there (`/api/v1/front` -> `/api/v1/`, `/log/checkpoint` -> `/log/`; not
    `/api/v1` -> `/api/`, beside the playground's `/api`). A path no route matched gets
    problem+json when it starts with one of these (`/api/v1/nope`)."""
    found = app.extensions.get(_PREFIXES)
    if found is None:
        rules = list(app.url_map.iter_rules())
        readers = [rule.rule for rule in rules if not of(app, rule.endpoint).problems]
        prefixes = set()
        for rule in rules:
            if not of(app, rule.endpoint).problems:
                continue
            fixed = rule.rule.split("<", 1)[0]
            if fixed == "/":
                continue  # a variable first (`/<key>.txt`): no prefix to tell it by
            prefixes.add(fixed)
            folder = fixed.rpartition("/")[0] if "<" not in rule.rule else ""
            if folder and not any(path == folder or path.startswith(folder + "/") for path in readers):
                prefixes.add(folder + "/")
        # The shortest prefixes suffice: `/api/v1/` covers `/api/v1/stories/`.
        found = app.extensions[_PREFIXES] = tuple(sorted(
            prefix for prefix in prefixes if not any(prefix != other and prefix.startswith(other)
                                                     for other in prefixes)))
    return found


def _learn(app: Flask, endpoint: str | None) -> RoutePolicy:
    if endpoint is None:
        return DEFAULT
    if endpoint == "static":
        return STATIC
    view = app.view_functions.get(endpoint)
    blueprint_name = endpoint.rpartition(".")[0]
    bp = app.blueprints.get(blueprint_name)
    fields = {**getattr(bp, _ATTRIBUTE, {}), **getattr(view, _ATTRIBUTE, {})}
    if fields.get("query") is None and view is not None:
        fields["query"] = _schema_params(view)
    return RoutePolicy(**fields)


def _schema_params(view) -> frozenset[str]:
    """The query parameter names of a flask-smorest view's `arguments(..., location="query")`
    schema (field names, or their `data_key`); none for other views."""
    names = set()
    for argument in getattr(view, "_apidoc", {}).get("arguments", {}).get("parameters", []):
        if argument.get("in") == "query":
            schema = argument["schema"]
            fields = (schema() if isinstance(schema, type) else schema).fields
            names.update(field.data_key or name for name, field in fields.items())
    return frozenset(names)


def cors_resources(app: Flask) -> dict[str, dict]:
    """flask-cors `resources` for every route whose policy has `cors`: one anchored regular
    expression per URL rule (its variable parts as `[^/]+`), mapped to `{"origins": "*"}` or,
    for `read`, also `methods` GET, HEAD and OPTIONS. Built from the app's URL map once, after
    every blueprint is registered."""
    resources = {}
    for rule in app.url_map.iter_rules():
        cors = of(app, rule.endpoint).cors
        if cors is None:
            continue
        pattern = "^" + "".join(re.escape(part) if not part.startswith("<") else "[^/]+"
                                for part in re.split(r"(<[^>]+>)", rule.rule)) + "$"
        resources[pattern] = _cors_options(cors)
    # A path under a blueprint that is open as a whole (the API) gets its 404 with CORS too, so
    # a page calling a wrong URL can read why.
    for bp in app.blueprints.values():
        cors, prefix = getattr(bp, _ATTRIBUTE, {}).get("cors"), bp.url_prefix
        if cors is not None and prefix:
            resources["^" + re.escape(prefix) + "(/.*)?$"] = _cors_options(cors)
    return resources


def _cors_options(cors: str) -> dict:
    if cors == "any":
        return {"origins": "*"}
    return {"origins": "*", "methods": ["GET", "HEAD", "OPTIONS"]}
