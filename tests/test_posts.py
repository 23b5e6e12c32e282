"""`/api/v1/posts`: deterministic short-form posts of pieces on air, through HTTP."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from extensions import db
from services.newsroom import filing
from tests.fixtures.newsroom import T0

LINK = "http://localhost/stories/"


def _posts(client, query: str = "") -> list[dict]:
    response = client.get("/api/v1/posts" + query)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["count"] == len(body["posts"])
    return body["posts"]


def test_posts_newest_first_with_composed_text(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again", dek="The bank moved.", on_air_at=T0)
    desk.piece(paper, "Bridge opens", dek="At last.", image="https://img.example.com/b.jpg",
               on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Draft", on_air_at=None)

    posts = _posts(client)
    assert [p["headline"] for p in posts] == ["Bridge opens", "Rates rise again"]
    rates = posts[1]
    assert rates == {
        "id": rates["id"], "headline": "Rates rise again", "dek": "The bank moved.",
        "link": LINK + "rates-rise-again",
        "image": rates["image"],
        "text": "Rates rise again\n\nThe bank moved.\n\n" + LINK + "rates-rise-again",
        "on_air_at": "2026-11-01T08:00:00Z",
    }
    assert isinstance(rates["id"], str)
    assert re.fullmatch(r"http://localhost/cards/rates-rise-again/1-[0-9a-f]{8}\.png", rates["image"])
    assert posts[0]["image"] == "https://img.example.com/b.jpg"
    # Deterministic: the same answer twice.
    assert _posts(client) == posts


def test_dek_included_only_when_everything_fits_in_280(client, desk):
    paper = desk.paper("demo")
    fits, too_long = "Dek fits exactly", "Dek is one too long"
    for i, headline in enumerate((fits, too_long)):
        link = LINK + filing.slugify(headline)
        room = 280 - len(headline) - len(link) - 4
        dek = "x" * (room + i)
        desk.piece(paper, headline, dek=dek, on_air_at=T0 + timedelta(minutes=i))
    by_headline = {p["headline"]: p for p in _posts(client)}

    exact = by_headline[fits]
    assert "dek" in exact and len(exact["text"]) == 280
    assert exact["text"] == f"{fits}\n\n{exact['dek']}\n\n{exact['link']}"

    over = by_headline[too_long]
    assert "dek" not in over
    assert over["text"] == f"{too_long}\n\n{over['link']}"


def test_empty_dek_is_never_included(client, desk):
    desk.piece(desk.paper("demo"), "No standfirst", dek="")
    post = _posts(client)[0]
    assert "dek" not in post and post["text"] == f"No standfirst\n\n{post['link']}"


def test_overlong_headline_is_cut_with_an_ellipsis(client, desk):
    paper = desk.paper("demo")
    headline = " ".join(["Parliament"] * 26)  # 285 characters (the column holds 300)
    desk.piece(paper, headline, dek="Short dek.")
    post = _posts(client)[0]
    assert post["headline"] == headline and "dek" not in post
    assert len(post["text"]) <= 280
    short, link = post["text"].split("\n\n")
    assert link == post["link"]
    assert short.endswith("…") and headline.startswith(short[:-1])
    assert short[:-1].endswith("Parliament")  # cut at a word boundary


def test_posts_text_never_exceeds_280(client, desk):
    paper = desk.paper("demo")
    for n, size in enumerate((1, 100, 200, 260, 280, 295)):
        desk.piece(paper, f"H{n} " + "w" * size, dek="d" * (300 - size),
                   on_air_at=T0 + timedelta(minutes=n))
    for post in _posts(client):
        assert len(post["text"]) <= 280
        assert post["text"].endswith(post["link"])


def test_limit_default_and_bounds(client, desk):
    paper = desk.paper("demo")
    for n in range(22):
        desk.piece(paper, f"Story {n}", facts=0, on_air_at=T0 + timedelta(minutes=n))
    assert len(_posts(client)) == 20
    assert [p["headline"] for p in _posts(client, "?limit=1")] == ["Story 21"]
    assert len(_posts(client, "?limit=100")) == 22


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=-1", "limit=abc", "limit=1.5",
                                   "limit=", "since=yesterday", "since=2026-13-01T00:00:00Z",
                                   "since=2026-11-01T25:00:00Z", "since=2026-02-30T00:00:00Z",
                                   "since=1700000000", "since=", "since=2026-11-01T12:00:00+99:00"])
def test_bad_query_values_are_400_problems(client, desk, query):
    desk.paper("demo")
    response = client.get(f"/api/v1/posts?{query}")
    assert response.status_code == 400
    assert response.mimetype == "application/problem+json"
    assert query.split("=")[0] in response.get_json()["errors"]


def test_since_keeps_pieces_strictly_after_oldest_first(client, desk):
    paper = desk.paper("demo")
    for n in range(4):
        desk.piece(paper, f"Hour {n}", facts=0, on_air_at=T0 + timedelta(hours=n))  # 08:00 .. 11:00Z

    def since(value: str) -> list[str]:
        from urllib.parse import quote

        return [p["headline"] for p in _posts(client, "?since=" + quote(value))]

    assert since("2026-11-01T09:00:00Z") == ["Hour 2", "Hour 3"]
    assert since("2026-11-01T09:00:00") == ["Hour 2", "Hour 3"]  # naive is UTC
    assert since("2026-11-01T10:00:00+01:00") == ["Hour 2", "Hour 3"]  # 09:00Z
    assert since("2026-11-01T08:59:59.5Z") == ["Hour 1", "Hour 2", "Hour 3"]
    assert since("2026-11-01 07:00:00z") == ["Hour 0", "Hour 1", "Hour 2", "Hour 3"]
    assert since("2026-11-01") == ["Hour 0", "Hour 1", "Hour 2", "Hour 3"]
    assert since("2026-11-01T11:00:00Z") == []
    assert since("0001-01-01T00:00:00+01:00") == ["Hour 0", "Hour 1", "Hour 2", "Hour 3"]
    assert since("9999-12-31T23:59:59-01:00") == []
    assert [p["headline"] for p in _posts(client, "?since=2026-11-01T08:00:00Z&limit=1")] == ["Hour 1"]  # oldest



def test_off_air_pieces_have_no_post(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Pulled")
    desk.piece(paper, "Kept", on_air_at=T0 + timedelta(minutes=1))
    filing.take_off_air(paper, piece, datetime(2026, 11, 2, tzinfo=timezone.utc))
    db.session.commit()
    assert [p["headline"] for p in _posts(client)] == ["Kept"]


def test_openapi_documents_the_posts_parameters(client, desk):
    desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    params = {p["name"]: p for p in doc["paths"]["/api/v1/posts"]["get"]["parameters"]}
    assert params["limit"]["schema"]["minimum"] == 1
    assert params["limit"]["schema"]["maximum"] == 100
    assert params["limit"]["schema"]["default"] == 20
    assert params["since"]["schema"] == {"type": "string", "format": "date-time", "example": "2026-11-01T08:00:00Z"}
