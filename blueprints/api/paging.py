"""The web side of cursor paging (docs/API.md "Paging and filters"): reading a request's cursor,
writing `next_cursor` and the `Link: <...>; rel="next"` header. The cursors themselves are
services/reading/cursors.py; the keyset queries the reading services.
"""
from __future__ import annotations

from datetime import date, datetime
from urllib.parse import urlencode

from flask import current_app, g, request

from services.reading import cursors
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
