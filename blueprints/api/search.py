"""Search: full-text search over headline, dek and prose.

    GET /api/v1/search?q=    pieces on air matching every term, newest first, at most 30

`q` is validated by `schemas.search.SearchQuery` (a 400 problem with `errors.q` otherwise); the
query itself is built in `services.reading.search`.
"""
from __future__ import annotations

from flask import g

from blueprints.api.common import api_blueprint
from schemas.search import SearchOut, SearchQuery
from services.reading import search
from web import caching

bp = api_blueprint("search", __name__, "Full-text search over headline, dek and prose.")


@bp.route("/search")
@bp.arguments(SearchQuery(), location="query", as_kwargs=True)
@bp.response(200, SearchOut)
@bp.alt_response(400, description="`q` is missing, empty, over 120 characters or holds more than four terms.")
def search_stories(q: str):
    """Pieces on air matching every search term, newest first, at most 30

    Terms are matched as stemmed words in headline, dek and prose; operators are never
    interpreted. A query with no letters or digits answers an empty list.
    """
    caching.depends_on_lists()
    rows = search.search_pieces(g.paper, search.parse_query(q), now=caching.request_now())
    return {"q": q.strip(), "stories": rows, "count": len(rows)}
