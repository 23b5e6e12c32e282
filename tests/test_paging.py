"""Cursor paging and filters (docs/API.md "Paging and filters"): walks over `/stories`, `/posts`,
`/days`, `/days/{day}` and `/sections` by `next_cursor` and the `Link` header, with pieces airing during the
walk; refused cursors; the `/stories` filters `section`, `persona` and `status`; `/posts?since`
oldest first for bots. Through HTTP, on each database."""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine

from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0

LATER = T0 + timedelta(days=2)


def _next(response) -> str | None:
    """The path and query of the `Link: <...>; rel="next"` URL; checks it agrees with `next_cursor`."""
    body, link = response.get_json(), response.headers.get("Link")
    if body["next_cursor"] is None:
        assert link is None
        return None
    assert link.startswith("<http://") and link.endswith('>; rel="next"')
    url = urlsplit(link[1:link.index(">")])
    assert parse_qs(url.query)["cursor"] == [body["next_cursor"]]
    return f"{url.path}?{url.query}"


def walk(client, url: str, key: str = "stories", headers=None, between=None) -> tuple[list, int]:
    """Every row of a walk following the Link headers from `url`, and the number of pages;
    `between(page_number)` runs after each page."""
    rows, pages = [], 0
    while url:
        response = client.get(url, headers=headers or {})
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        assert body["count"] == len(body[key])
        rows += body[key]
        pages += 1
        url = _next(response)
        if between:
            between(pages)
    return rows, pages


def _refused(response, field: str = "cursor") -> None:
    assert response.status_code == 400, response.get_json()
    assert response.mimetype == "application/problem+json"
    assert field in response.get_json()["errors"]


@pytest.fixture
def crowd(desk):
    """120 pieces on air over two sections and personas, two at each minute (ties on on_air_at),
    and three drafts."""
    paper = desk.paper("demo", sections=("World", "Business"), personas=("Ada Quill", "Rex Ledger"))
    for n in range(120):
        desk.piece(paper, f"Piece {n}", section=("World", "Business")[n % 2],
                   byline=("Ada Quill", "Rex Ledger")[n % 3 == 0],
                   facts=0, on_air_at=T0 + timedelta(minutes=n // 2))
    drafts = [desk.piece(paper, f"Draft {n}", byline=("Ada Quill", "Rex Ledger")[n % 2], facts=0,
                         on_air_at=None) for n in range(3)]
    return paper, drafts


def _newest_first(rows: list[dict]) -> bool:
    keys = [(row["on_air_at"], int(row["id"])) for row in rows]
    return keys == sorted(keys, reverse=True)


def test_a_walk_visits_every_piece_once_newest_first(client, crowd):
    whole = client.get("/api/v1/stories?limit=200").get_json()["stories"]
    assert len(whole) == 120 and _newest_first(whole)
    rows, pages = walk(client, "/api/v1/stories?limit=7")
    assert [row["id"] for row in rows] == [row["id"] for row in whole]
    assert pages == 18  # 17 full pages and one of 1
    # The limit may change between pages; the cursor carries only the position.
    first = client.get("/api/v1/stories?limit=5").get_json()
    rest, _ = walk(client, f"/api/v1/stories?limit=200&cursor={first['next_cursor']}")
    assert [row["id"] for row in first["stories"] + rest] == [row["id"] for row in whole]


def test_pieces_aired_during_a_walk_do_not_break_it(client, desk, crowd):
    paper, drafts = crowd
    admin = auth(desk.key(paper, "admin"))
    before = [row["id"] for row in client.get("/api/v1/stories?limit=200").get_json()["stories"]]

    def air_one(page: int) -> None:
        if page <= len(drafts):
            with time_machine.travel(LATER + timedelta(minutes=page), tick=False):
                aired = client.put(f"/api/v1/stories/{drafts[page - 1].id}/air", headers=admin)
            assert aired.status_code == 200 and aired.get_json()["on_air"] is True

    rows, _ = walk(client, "/api/v1/stories?limit=7", between=air_one)
    # Every piece on air when the walk began, once, in order; the ones aired meanwhile are
    # newer than the walk's position and wait for the next walk.
    assert [row["id"] for row in rows] == before
    again = [row["id"] for row in client.get("/api/v1/stories?limit=3").get_json()["stories"]]
    assert again == [str(d.id) for d in reversed(drafts)]


def test_refused_cursors_are_400_problems(client, desk, crowd):
    other = desk.paper("other")
    desk.piece(other, "Elsewhere", on_air_at=T0)
    desk.piece(other, "Elsewhere too", on_air_at=T0 + timedelta(minutes=1))
    cursor = client.get("/api/v1/stories?limit=7").get_json()["next_cursor"]
    assert client.get(f"/api/v1/stories?limit=7&cursor={cursor}").status_code == 200
    tampered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    payload, _, signature = cursor.partition(".")
    for bad in (tampered, "not-a-cursor", "", "x" * 1001, payload, f"{payload}.{signature[::-1]}", "...."):
        _refused(client.get(f"/api/v1/stories?cursor={bad}"))
    # Another paper's cursor (valid there) is refused here, and the reverse.
    foreign = client.get("/api/v1/stories?limit=1", base_url="http://other.localhost").get_json()["next_cursor"]
    assert client.get(f"/api/v1/stories?cursor={foreign}", base_url="http://other.localhost").status_code == 200
    _refused(client.get(f"/api/v1/stories?cursor={foreign}"))
    _refused(client.get(f"/api/v1/stories?cursor={cursor}", base_url="http://other.localhost"))
    # Another list's cursor, and this list's with other filters.
    posts = client.get("/api/v1/posts?limit=1").get_json()["next_cursor"]
    days = client.get("/api/v1/days?limit=1").get_json()["next_cursor"]
    _refused(client.get(f"/api/v1/stories?cursor={posts}"))
    _refused(client.get(f"/api/v1/stories?cursor={days}"))
    _refused(client.get(f"/api/v1/posts?cursor={cursor}"))
    _refused(client.get(f"/api/v1/days/2026-11-01?cursor={cursor}"))
    _refused(client.get(f"/api/v1/posts?since=2026-11-01T08:00:00Z&cursor={posts}"))
    _refused(client.get(f"/api/v1/stories?section=World&cursor={cursor}"))
    world = client.get("/api/v1/stories?section=World&limit=1").get_json()["next_cursor"]
    _refused(client.get(f"/api/v1/stories?section=Business&cursor={world}"))
    assert client.get(f"/api/v1/stories?section=World&cursor={world}").status_code == 200


def test_section_and_persona_filters(client, crowd):
    world, pages = walk(client, "/api/v1/stories?section=World&limit=7")
    assert len(world) == 60 and pages == 9 and {row["section"] for row in world} == {"World"}
    assert _newest_first(world)
    by_slug = client.get("/api/v1/stories?section=world&limit=200").get_json()["stories"]
    assert [row["id"] for row in by_slug] == [row["id"] for row in world]
    rex = client.get("/api/v1/stories?persona=rex-ledger&limit=200").get_json()["stories"]
    assert len(rex) == 40 and {row["byline"] for row in rex} == {"Rex Ledger"}
    assert client.get("/api/v1/stories?persona=Rex%20Ledger&limit=200").get_json()["stories"] == rex
    both = client.get("/api/v1/stories?persona=rex-ledger&section=Business&limit=200").get_json()["stories"]
    assert len(both) == 20 and {(r["byline"], r["section"]) for r in both} == {("Rex Ledger", "Business")}
    # A name the paper does not have is a 400 naming the field (a typo is not "no news").
    _refused(client.get("/api/v1/stories?section=Sport"), "section")
    _refused(client.get("/api/v1/stories?persona=nobody"), "persona")
    _refused(client.get("/api/v1/stories?section="), "section")
    _refused(client.get("/api/v1/stories?status=pending"), "status")


def test_status_draft_lists_drafts_behind_any_number_on_air(client, desk, crowd):
    paper, drafts = crowd
    read = auth(desk.key(paper, "read"))
    agent = auth(desk.key(paper, "agent", persona=desk.persona(paper, "Ada Quill"), capabilities=["file"]))
    for status in ("draft", "all"):
        refused = client.get(f"/api/v1/stories?status={status}")
        assert refused.status_code == 401 and refused.mimetype == "application/problem+json"
        assert "WWW-Authenticate" in refused.headers
    listed = client.get("/api/v1/stories?status=draft", headers=read).get_json()
    # Newest filed first, none on air.
    assert [row["id"] for row in listed["stories"]] == [str(d.id) for d in reversed(drafts)]
    assert {row["on_air"] for row in listed["stories"]} == {False}
    rows, pages = walk(client, "/api/v1/stories?status=draft&limit=2", headers=read)
    assert [row["id"] for row in rows] == [str(d.id) for d in reversed(drafts)] and pages == 2
    # An agent sees only its own persona's drafts (Ada Quill files drafts 0 and 2).
    own = client.get("/api/v1/stories?status=draft", headers=agent).get_json()["stories"]
    assert [row["headline"] for row in own] == ["Draft 2", "Draft 0"]
    # status=all: every piece on air, then the drafts; a walk crosses from one to the other.
    every, _ = walk(client, "/api/v1/stories?status=all&limit=7", headers=read)
    assert [row["on_air"] for row in every] == [True] * 120 + [False] * 3
    assert [row["id"] for row in every[120:]] == [str(d.id) for d in reversed(drafts)]
    # A key's list without `status` is `all`, as before; `status=on_air` hides the drafts.
    assert client.get("/api/v1/stories?limit=200", headers=read).get_json()["stories"] == every
    on_air = client.get("/api/v1/stories?status=on_air&limit=200", headers=read).get_json()["stories"]
    assert len(on_air) == 120 and all(row["on_air"] for row in on_air)
    agent_all, _ = walk(client, "/api/v1/stories?status=all&limit=50", headers=agent)
    assert [row["headline"] for row in agent_all[120:]] == ["Draft 2", "Draft 0"]


def test_posts_since_lists_the_oldest_first_and_a_bot_misses_nothing(client, desk, crowd):
    paper, _ = crowd
    admin = auth(desk.key(paper, "admin"))
    newest = client.get("/api/v1/posts?limit=3").get_json()["posts"]
    assert [p["on_air_at"] for p in newest] == sorted((p["on_air_at"] for p in newest), reverse=True)
    since = client.get("/api/v1/posts?since=2026-11-01T08:50:00Z&limit=100").get_json()["posts"]
    keys = [(p["on_air_at"], int(p["id"])) for p in since]
    assert keys == sorted(keys) and len(since) == 18 and min(keys)[0] == "2026-11-01T08:51:00Z"
    walked, _ = walk(client, "/api/v1/posts?since=2026-11-01T08:50:00Z&limit=7", key="posts")
    assert walked == since

    # Two bots poll every "hour"; between polls more than `limit` (7) pieces air. One follows
    # next_cursor, the other only advances `since` to its last post's `on_air_at`.
    followed, advanced = [], []
    cursor_since = advance_since = "2026-11-01T08:55:00Z"
    expected = [p["id"] for p in client.get("/api/v1/posts?since=2026-11-01T08:55:00Z&limit=100").get_json()["posts"]]
    for hour in range(3):
        posts, _ = walk(client, f"/api/v1/posts?since={cursor_since}&limit=7", key="posts")
        followed += [p["id"] for p in posts]
        cursor_since = posts[-1]["on_air_at"] if posts else cursor_since
        while True:
            page = client.get(f"/api/v1/posts?since={advance_since}&limit=7").get_json()["posts"]
            if not page:
                break
            advanced += [p["id"] for p in page]
            advance_since = page[-1]["on_air_at"]
        for n in range(10):
            with time_machine.travel(LATER + timedelta(hours=hour, minutes=n), tick=False):
                filed = client.post("/api/v1/stories", headers=admin, json={
                    "headline": f"Hour {hour} piece {n}", "prose": "Text.", "section": "World",
                    "byline": "Ada Quill"})
                assert filed.status_code == 201, filed.get_json()
                assert client.put(f"/api/v1/stories/{filed.get_json()['id']}/air", headers=admin).status_code == 200
            expected.append(filed.get_json()["id"])
    posts, _ = walk(client, f"/api/v1/posts?since={cursor_since}&limit=7", key="posts")
    followed += [p["id"] for p in posts]
    while page := client.get(f"/api/v1/posts?since={advance_since}&limit=7").get_json()["posts"]:
        advanced += [p["id"] for p in page]
        advance_since = page[-1]["on_air_at"]
    assert followed == expected and advanced == expected and len(expected) == 8 + 30


def test_days_and_a_day_page_by_cursor(client, desk):
    paper = desk.paper("demo")
    for day in range(5):
        for n in range(4):
            desk.piece(paper, f"Day {day} piece {n}", facts=0, on_air_at=T0 + timedelta(days=day, minutes=n))
    days, pages = walk(client, "/api/v1/days?limit=2", key="days")
    assert [d["day"] for d in days] == [f"2026-11-0{5 - n}" for n in range(5)] and pages == 3
    assert client.get("/api/v1/days").get_json()["next_cursor"] is None
    rows, pages = walk(client, "/api/v1/days/2026-11-03?limit=3")
    assert [row["headline"] for row in rows] == [f"Day 2 piece {n}" for n in (3, 2, 1, 0)] and pages == 2
    cursor = client.get("/api/v1/days/2026-11-03?limit=3").get_json()["next_cursor"]
    _refused(client.get(f"/api/v1/days/2026-11-04?cursor={cursor}"))  # another day's walk


def test_sections_page_in_the_papers_order(client, desk):
    names = [f"Desk {n:02}" for n in range(12)]
    desk.paper("demo", sections=names)
    rows, pages = walk(client, "/api/v1/sections?limit=5", key="sections")
    assert [row["name"] for row in rows] == names and pages == 3
    assert client.get("/api/v1/sections").get_json()["next_cursor"] is None
    days = client.get("/api/v1/days?limit=1").get_json()["next_cursor"]
    assert days is None  # no day on air: one empty page
    _refused(client.get("/api/v1/sections?cursor=" + client.get("/api/v1/sections?limit=1").get_json()["next_cursor"]
                        .replace(".", "..", 1)))


def test_the_openapi_document_declares_paging(client, desk):
    desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    paged = {"/api/v1/stories": {"limit", "cursor", "section", "persona", "status", "full"},
             "/api/v1/posts": {"limit", "since", "cursor"}, "/api/v1/days": {"limit", "cursor"},
             "/api/v1/days/{day}": {"limit", "cursor"}, "/api/v1/sections": {"limit", "cursor"},
             "/api/v1/stories/{id}/revisions": {"limit", "cursor"},
             "/api/v1/webhooks/{id}/deliveries": {"limit", "cursor"}}
    for path, names in paged.items():
        operation = doc["paths"][path]["get"]
        params = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
        assert set(params) == names, path
        for name, param in params.items():
            assert param.get("description") or param["schema"].get("description"), (path, name)
            assert "example" in param["schema"] or "example" in param, (path, name)
        answer = operation["responses"]["200"]
        assert "rel=\"next\"" in answer["headers"]["Link"]["description"], path
        assert "example" in answer["headers"]["Link"], path
        assert "400" in operation["responses"], path
    assert "401" in doc["paths"]["/api/v1/stories"]["get"]["responses"]
    for schema in ("StoryListOut", "PostListOut", "DayListOut", "DayStoriesOut", "SectionListOut"):
        found = doc["components"]["schemas"][schema]["properties"]["next_cursor"]
        assert "example" in found and "description" in found, schema


def test_a_since_page_never_splits_one_instant(client, desk):
    paper = desk.paper("demo")
    for n in range(2):
        desk.piece(paper, f"Before {n}", facts=0, on_air_at=T0 + timedelta(minutes=n))
    for n in range(10):  # ten pieces aired at the very same microsecond
        desk.piece(paper, f"Same {n}", facts=0, on_air_at=T0 + timedelta(minutes=5))
    desk.piece(paper, "After", facts=0, on_air_at=T0 + timedelta(minutes=9))
    first = client.get("/api/v1/posts?since=2026-11-01T07:00:00Z&limit=3").get_json()
    # Stops before the instant rather than inside it...
    assert [p["headline"] for p in first["posts"]] == ["Before 0", "Before 1"]
    # ...and a page of that instant alone holds all of it.
    second = client.get(f"/api/v1/posts?since={first['posts'][-1]['on_air_at']}&limit=3").get_json()
    assert [p["headline"] for p in second["posts"]] == [f"Same {n}" for n in range(10)]
    assert second["next_cursor"] is not None
    third = client.get(f"/api/v1/posts?since={second['posts'][-1]['on_air_at']}&limit=3").get_json()
    assert [p["headline"] for p in third["posts"]] == ["After"] and third["next_cursor"] is None
    walked, _ = walk(client, "/api/v1/posts?since=2026-11-01T07:00:00Z&limit=3", key="posts")
    assert [p["headline"] for p in walked] == ["Before 0", "Before 1", *(f"Same {n}" for n in range(10)), "After"]
