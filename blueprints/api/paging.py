"""The web side of cursor paging (docs/API.md "Paging and filters"): reading a request's cursor,
writing `next_cursor` and the `Link: <...>; rel="next"` header. The cursors themselves are
services/reading/cursors.py; the keyset queries the reading services.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import date, datetime
from urllib.parse import urlencode

from flask import current_app, g, jsonify, request

from services.errors import BadRequest
from services.reading import cursors, stories
from web import caching
from web.links import links

LINK = {"Link": {
    "description": 'The next page: `<absolute URL>; rel="next"` (RFC 8288), the same query with '
                   "`cursor` set to `next_cursor`. Absent on the last page.",
    "schema": {"type": "string"},
    "example": '<https://demo.example.com/api/v1/stories?limit=7&cursor=eyJwIjox...>; rel="next"'}}


def _wire(value):
    if isinstance(value, (datetime, date)):
        return cursors.moment(value)
    return value


def read(list_name: str, filters: dict, text: str | None, size: int) -> list | None:
    """The keyset position of the request's cursor `text` on `list_name` of the current paper
    with `filters`, as stored (datetimes as text); None without a cursor. BadRequest (400) as
    services/reading/cursors.py `decode` says."""
    if text is None:
        return None
    return cursors.decode(current_app.config["SECRET_KEY"], list_name, g.paper.id, filters, text, size)


def answer(body: dict, list_name: str, filters: dict, last: list | None, *,
           more: bool | None = None) -> tuple[dict, dict]:
    """`(body with next_cursor, headers)`: `last` is the keyset position to go on from (the
    page's last row), None on the last page of a list that ends; `more` (default: whether `last`
    is given) says whether a next page is listable now (a feed polled again from its cursor has a
    `last` on every page, and `more` only when further rows wait). The headers hold the `Link`
    to the next page when `more`: the request's query parameters that the route declares (its route policy's `query`,
    the ones its cached answer is keyed by), with `cursor` replaced. Parameters the route does not
    read never reach the link: a cached answer's `Link` must not carry what the first client
    that filled the cache happened to send."""
    more = last is not None if more is None else more
    token = None if last is None else cursors.encode(
        current_app.config["SECRET_KEY"], list_name, g.paper.id, filters, [_wire(value) for value in last])
    body["next_cursor"] = token
    if not more or token is None:
        return body, {}
    declared = caching.declared_for_endpoint()
    query = [(name, value) for name, value in request.args.items(multi=True)
             if name != "cursor" and name in declared]
    query.append(("cursor", token))
    url = links().absolute(request.path) + "?" + urlencode(query)
    return body, {"Link": f'<{url}>; rel="next"'}


def phase(*allowed: int) -> Callable[[object], int]:
    """A cursor field's parser for a keyset phase (services/reading/stories.py `position`: 1 on
    air, 0 a draft): BadRequest (400, field `cursor`) unless the value is one of `allowed`, i.e.
    the cursor's position can be on this list (a draft's position on the on-air lane cannot)."""
    def parse(value: object) -> int:
        if value not in allowed:
            raise BadRequest("The cursor cannot be used here.", errors={"cursor": ["The cursor is malformed."]})
        return value
    return parse


class Page:
    """What a `@paginated` view is handed: `size` (the request's `limit`, clamped to the list's
    bounds), `cursor` (the request's text, or None) and `after`, which reads it."""

    def __init__(self, list_name: str, cursor: str | None, size: int):
        self.list_name, self.cursor, self.size = list_name, cursor, size
        self.filters: dict = {}

    def after(self, filters: dict, *fields: Callable[[object], object]) -> list | None:
        """The keyset position the request's cursor holds on this list of the current paper with
        `filters` (bound into the cursor, and into the next one), each of its `len(fields)`
        values parsed by its field's parser (`cursors.parse_id`, `cursors.parse_moment`,
        `cursors.parse_day`, `phase(...)`); None without a cursor. BadRequest (400) for a
        malformed or foreign cursor (services/reading/cursors.py `decode`), or one whose values
        a parser refuses."""
        self.filters = filters
        raw = read(self.list_name, filters, self.cursor, len(fields))
        return None if raw is None else [parse(value) for parse, value in zip(fields, raw, strict=True)]


def paginated(bp, schema, list_name: str, *, bad_cursor: str, limit: tuple[int, int] | None = None,
              wire: bool = False, headers: dict | None = None, **response):
    """Decorator for a list view read a page at a time (in the spirit of microblog-api's
    `paginated_response`): it takes the `limit` and `cursor` query arguments (put
    `@bp.arguments(...)` above it), clamps `limit` to `limit` = (low, high) when given (else the
    query schema has bounded it), and calls the view with `page` (a `Page`) and its other
    arguments. The view reads its position with `page.after(filters, *parsers)` and returns
    `(body, last)` or `(body, last, more)`, as `answer` takes them; the decorator adds
    `next_cursor` and the `Link` header, and answers 200. `wire`: the body is already wire
    JSON (jsonify it; no schema dump). Documents the 200 (`schema`, the `Link` header, or
    `headers` for a list whose Link says something else; `response` goes to `bp.response`, e.g.
    an example) and the 400 a bad cursor gets (`bad_cursor`, its description)."""
    bounds = limit  # the view's own `limit` argument is the request's

    def decorator(view):
        @functools.wraps(view)
        def wrapper(*args, limit: int, cursor: str | None = None, **kwargs):
            size = limit if bounds is None else stories.clamp(limit, *bounds)
            page = Page(list_name, cursor, size)
            body, last, *more = view(*args, page=page, **kwargs)
            body, link = answer(body, list_name, page.filters, last, more=more[0] if more else None)
            return (jsonify(body) if wire else body), 200, link

        documented = bp.alt_response(400, description=bad_cursor)(wrapper)
        return bp.response(200, schema, headers=headers or LINK, **response)(documented)

    return decorator
