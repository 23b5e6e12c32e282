"""`/api/v1/sections`, `/api/v1/days` and `/api/v1/days/{day}` through HTTP."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from extensions import db
from services.newsroom import filing
from tests.fixtures.newsroom import T0

BAD_DAYS = ["2026-02-30", "2026-13-01", "2026-11-31", "2026-1-1", "20261101", "2026-11-01T00:00",
            "yesterday", "2026-11-01x", "0000-01-01", "２０２６-１１-０１", "-2026-11-01", "2026-11-1 "]


def test_sections_in_paper_order_with_on_air_counts(client, desk):
    paper = desk.paper("demo", sections=("World", "Business", "Science", "Archive"))
    desk.section(paper, "Science").position = -1
    desk.section(paper, "Archive").active = False
    db.session.commit()
    desk.piece(paper, "One", section="World")
    desk.piece(paper, "Two", section="World", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Draft", section="World", on_air_at=None)
    off = desk.piece(paper, "Pulled", section="Science")
    filing.take_off_air(paper, off, T0 + timedelta(hours=2))
    db.session.commit()

    response = client.get("/api/v1/sections")
    assert response.status_code == 200
    body = response.get_json()
    assert [s["name"] for s in body["sections"]] == ["Science", "World", "Business"]
    assert body["count"] == 3
    by_name = {s["name"]: s for s in body["sections"]}
    assert by_name["World"]["count"] == 2
    assert by_name["Science"]["count"] == 0 and by_name["Business"]["count"] == 0
    assert by_name["World"] == {"name": "World", "slug": "world", "description": "", "count": 2,
                                "url": "http://localhost/sections/world"}


def test_sections_empty_paper(client, desk):
    desk.paper("demo", sections=())
    assert client.get("/api/v1/sections").get_json() == {"sections": [], "count": 0, "next_cursor": None}


def test_sections_are_per_paper(client, desk):
    desk.paper("demo")
    other = desk.paper("other", sections=("Sport",))
    desk.piece(other, "Goal", section="Sport")
    body = client.get("/api/v1/sections", base_url="http://other.localhost").get_json()
    assert [(s["name"], s["count"]) for s in body["sections"]] == [("Sport", 1)]
    assert body["sections"][0]["url"] == "http://other.localhost/sections/sport"
    assert all(s["count"] == 0 for s in client.get("/api/v1/sections").get_json()["sections"])


def test_days_newest_first_with_counts_and_urls(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Early", on_air_at=datetime(2026, 11, 1, 0, 0, tzinfo=timezone.utc))
    desk.piece(paper, "Late", on_air_at=datetime(2026, 11, 1, 23, 59, 59, tzinfo=timezone.utc))
    desk.piece(paper, "Next", on_air_at=datetime(2026, 11, 2, 0, 0, 1, tzinfo=timezone.utc))
    desk.piece(paper, "Later", on_air_at=datetime(2026, 11, 5, 9, 0, tzinfo=timezone.utc))
    desk.piece(paper, "Draft", on_air_at=None)

    body = client.get("/api/v1/days").get_json()
    assert body["count"] == 3
    assert [(d["day"], d["count"]) for d in body["days"]] == [
        ("2026-11-05", 1), ("2026-11-02", 1), ("2026-11-01", 2)]
    assert body["days"][0]["url"] == "http://localhost/days/2026-11-05"
    assert body["days"][0]["api"] == "http://localhost/api/v1/days/2026-11-05"
    # The advertised API URL really answers with that day's stories.
    listed = client.get(body["days"][2]["api"]).get_json()
    assert [s["headline"] for s in listed["stories"]] == ["Late", "Early"]


def test_days_empty_and_off_air_pieces_leave_the_archive(client, desk):
    paper = desk.paper("demo")
    assert client.get("/api/v1/days").get_json() == {"days": [], "count": 0, "next_cursor": None}
    piece = desk.piece(paper, "Gone")
    filing.take_off_air(paper, piece, T0 + timedelta(hours=1))
    db.session.commit()
    assert client.get("/api/v1/days").get_json() == {"days": [], "count": 0, "next_cursor": None}


@pytest.mark.slow
def test_days_keep_at_most_366_newest(client, desk):
    paper = desk.paper("demo")
    first = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)
    for n in range(368):
        desk.piece(paper, f"Day {n}", facts=0, on_air_at=first + timedelta(days=n))
    body = client.get("/api/v1/days").get_json()
    assert body["count"] == len(body["days"]) == 366
    assert body["days"][0]["day"] == (first + timedelta(days=367)).date().isoformat()
    assert body["days"][-1]["day"] == (first + timedelta(days=2)).date().isoformat()


def test_day_lists_story_rows_newest_first(client, desk):
    paper = desk.paper("demo")
    day = date(2026, 11, 3)
    at = datetime(2026, 11, 3, 6, 0, tzinfo=timezone.utc)
    desk.piece(paper, "Morning", on_air_at=at)
    desk.piece(paper, "Evening", section="Science", byline="Rex Ledger", on_air_at=at + timedelta(hours=12))
    desk.piece(paper, "Day before", on_air_at=at - timedelta(hours=7))  # 23:00 on the 2nd
    desk.piece(paper, "Draft", on_air_at=None)

    response = client.get(f"/api/v1/days/{day.isoformat()}")
    assert response.status_code == 200
    body = response.get_json()
    assert body["day"] == "2026-11-03" and body["count"] == 2
    assert [s["headline"] for s in body["stories"]] == ["Evening", "Morning"]
    row = body["stories"][0]
    assert {"id", "slug", "headline", "dek", "section", "byline", "rev", "url", "on_air_at"} <= set(row)
    assert (row["section"], row["byline"], row["rev"]) == ("Science", "Rex Ledger", 1)
    assert row["url"] == "http://localhost/stories/evening"
    assert row["on_air_at"] == "2026-11-03T18:00:00Z"
    previous = client.get("/api/v1/days/2026-11-02").get_json()
    assert [s["headline"] for s in previous["stories"]] == ["Day before"]


def test_real_day_with_nothing_on_air_is_an_empty_list(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Elsewhere")
    for day in ("2026-11-02", "2024-02-29", "1999-12-31"):
        response = client.get(f"/api/v1/days/{day}")
        assert response.status_code == 200
        assert response.get_json() == {"day": day, "stories": [], "count": 0, "next_cursor": None}


@pytest.mark.parametrize("day", BAD_DAYS)
def test_malformed_or_unreal_day_is_400_problem(client, desk, day):
    desk.paper("demo")
    response = client.get(f"/api/v1/days/{day}")
    assert response.status_code == 400
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert body["status"] == 400 and "day" in body["errors"]


def test_openapi_documents_the_day_constraint(client, desk):
    desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    params = doc["paths"]["/api/v1/days/{day}"]["get"]["parameters"]
    day = next(p for p in params if p["name"] == "day" and p["in"] == "path")
    assert day["schema"]["format"] == "date"
    assert day["schema"]["pattern"] == "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
    for path in ("/api/v1/sections", "/api/v1/days"):
        assert doc["paths"][path]["get"]["summary"]


def test_archive_answers_are_cacheable(client, desk):
    desk.piece(desk.paper("demo"))
    first = client.get("/api/v1/days")
    assert first.headers["ETag"] and "max-age" in first.headers["Cache-Control"]
    again = client.get("/api/v1/days", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
