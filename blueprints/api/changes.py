"""The change feed: every public change of the paper's pieces, in order, for mirrors.

    GET /api/v1/changes    `cursor` (opaque), `limit` 1-500 (default 100)

A mirror starts without a cursor, applies each change in order (`aired`/`revised`: fetch
`/stories/{id}`; `unaired`: drop it), stores `next_cursor` and polls again from it.
"""
from __future__ import annotations

from flask import g

from blueprints.api import paging
from blueprints.api.common import api_blueprint
from models.clock import rfc3339
from schemas.changes import CHANGES_CURSOR_EXAMPLE, ChangeListOut, ChangesQuery
from services.reading import changes, cursors
from web import caching

bp = api_blueprint("changes", __name__, "The change feed: every public change of the paper's pieces, "
                                        "in order, so a mirror can stay exactly in sync.")

LINK = {"Link": {"description": '`<{next page URL}>; rel="next"`, only when more changes are listable now.',
                 "schema": {"type": "string"}}}


@bp.route("/changes")
@bp.arguments(ChangesQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, ChangeListOut, "changes", bad_cursor="The cursor is malformed or belongs to another paper.",
                  limit=(1, 500), wire=True, headers=LINK, example={
    "changes": [{"seq": 41, "type": "aired", "id": "17", "rev": 1,
                 "content_hash": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                 "at": "2026-11-24T09:00:00Z"},
                {"seq": 42, "type": "revised", "id": "9", "rev": 2, "kind": "correction",
                 "content_hash": "sha256:60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",
                 "at": "2026-11-24T09:02:00Z"},
                {"seq": 43, "type": "unaired", "id": "12", "rev": 3, "content_hash": None,
                 "at": "2026-11-24T09:05:00Z"}],
    "next_cursor": CHANGES_CURSOR_EXAMPLE})
def list_changes(page: paging.Page):
    """Every public change of the paper's pieces, oldest first: aired, revised, unaired

    Only changes already public are listed; a scheduled airing appears at its instant (dated
    it). `unaired` is a tombstone: the piece's id and rev, never its content. `next_cursor` is
    never null: keep it and poll again from it; `Link: rel="next"` comes only when more changes
    are listable now. `limit` is clamped to 1-500 (default 100).
    """
    after = changes.legacy_position(g.paper, page.cursor) if page.cursor else None
    if after is None:
        after = page.after({}, cursors.parse_moment, cursors.parse_id)
    # The instant is taken before the page settles the writers in flight (changes.page says why).
    rows, last, more = changes.page(g.paper, None if after is None else tuple(after), page.size,
                                    now=caching.request_now())
    return {"changes": [{**row, "at": rfc3339(row["at"])} for row in rows]}, list(last), more
