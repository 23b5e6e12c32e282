"""No N+1 anywhere: story lists, the front, a day, search and the feeds issue the same number of SQL
statements for a handful of rows and for many, and no more than the few each one needs. Counted by
tests/fixtures/statements.py, with the response cache off (the suite's app uses NullCache), so every
statement the views need is seen.

tests/test_front.py, test_pages.py and test_feeds.py hold narrower counts of their own surfaces.
"""
from __future__ import annotations

from datetime import timedelta

import pytest

from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements

SECTIONS = ("World", "Business", "Science")
DAY = T0.date().isoformat()

# path -> the most statements it may take (the paper lookup included).
PUBLIC = {
    "/api/v1/stories?limit=200": 2,       # paper, rows with section and persona joined
    "/api/v1/stories/{id}": 2,            # paper, the piece with section, persona and facts joined
    "/api/v1/front": 4,                   # paper, sections, rails (one UNION ALL), newsroom counts
    "/front.json": 4,
    f"/api/v1/days/{DAY}": 2,
    "/api/v1/sections": 2,
    "/api/v1/days": 2,
    "/api/v1/posts?limit=100": 2,
    "/api/v1/search?q=story": 5,          # PostgreSQL 2; SQLite picks a plan from a sample
    "/": 4,                               # paper, sections, rails, newsroom
    f"/days/{DAY}": 4,                    # paper, rows, neighbour days, nav sections
    "/sections/world": 4,
    "/masthead/ada-quill": 4,             # paper, persona, its page of pieces, nav sections
    "/search?q=story": 6,                 # the API's search, nav sections
    "/stories/{slug}": 5,                 # + related pieces, nav sections
    "/embed/{id}": 2,
    "/rss.xml": 3,
    "/feed.json": 3,                      # paper, rows with section and persona, cited facts
    "/sitemap.xml": 6,                    # paper, sections and personas, days, editions, count, pieces
    "/llms.txt": 3,
    "/podcast.xml": 2,
}


def grow(desk, paper, total: int) -> None:
    """File pieces on air (all on DAY, every section, both personas) until there are `total`."""
    have = getattr(paper, "_grown", 0)
    for n in range(have, total):
        desk.piece(paper, f"Story {n}", section=SECTIONS[n % 3],
                   byline=("Ada Quill", "Rex Ledger")[n % 2], facts=1 + n % 3,
                   on_air_at=T0 + timedelta(minutes=n))
    paper._grown = total


def count(client, path: str, headers: dict | None = None) -> tuple[int, list[str]]:
    with statements() as seen:
        response = client.get(path, headers=headers or {})
    assert response.status_code == 200, (path, response.data[:300])
    return len(seen), seen


@pytest.mark.parametrize("path", PUBLIC)
def test_public_answers_take_a_constant_number_of_statements(client, desk, path):
    paper = desk.paper("demo", sections=SECTIONS)
    desk.edition(paper, T0.date())
    counts = []
    for total in (3, 45):
        grow(desk, paper, total)
        if total == 3:
            first = desk.piece(paper, "Rates rise again", facts=3, on_air_at=T0 - timedelta(days=1))
        url = path.format(id=first.id, slug=first.slug)
        n, seen = count(client, url)
        counts.append(n)
    assert counts[0] == counts[1], (path, counts, "\n".join(s[:200] for s in seen))
    assert counts[1] <= PUBLIC[path], (path, counts[1], "\n".join(s[:200] for s in seen))


@pytest.mark.slow
def test_lists_return_many_rows_in_the_same_statements(client, desk):
    """The big answers really are big: 200 rows, six per rail, a day's 210 pieces in two pages."""
    paper = desk.paper("demo", sections=SECTIONS)
    grow(desk, paper, 210)
    n, _ = count(client, "/api/v1/stories?limit=200")
    assert n == 2
    assert client.get("/api/v1/stories?limit=200").get_json()["count"] == 200
    first = client.get(f"/api/v1/days/{DAY}").get_json()
    assert first["count"] == 200 and first["next_cursor"]
    rest = client.get(f"/api/v1/days/{DAY}", query_string={"cursor": first["next_cursor"]}).get_json()
    assert rest["count"] == 10 and rest["next_cursor"] is None
    rails = client.get("/api/v1/front").get_json()["rails"]
    assert [len(rail["stories"]) for rail in rails] == [6, 6, 6]


def test_keyed_lists_take_a_constant_number_of_statements(client, desk):
    paper = desk.paper("demo", sections=SECTIONS)
    key = desk.key(paper, "read")
    # The key's first use records `last_used_at` (one UPDATE, then none for a minute:
    # tests/test_agents.py); what is counted here is the list's own statements.
    assert client.get("/api/v1/agent", headers=auth(key)).status_code == 200
    counts = []
    for total in (3, 40):
        grow(desk, paper, total)
        desk.piece(paper, f"Draft {total}", on_air_at=None)
        n, _ = count(client, "/api/v1/stories?limit=200", auth(key))
        counts.append(n)
    assert counts[0] == counts[1] <= 3  # paper, key, the rows
