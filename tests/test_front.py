"""`/api/v1/front`, `/api/v1/cast` and `/api/v1/masthead` through HTTP, and the constant number
of SQL statements behind the list endpoints."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import time_machine
from flask import g

from extensions import db
from models import Persona
from schemas.front import FrontConfigOut, FrontOut
from services.links import Links
from services.newsroom import filing
from services.reading import front
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements
from web import caching


def _newsroom(desk, pieces: int):
    paper = desk.paper("demo", sections=("World", "Business", "Science", "Culture"))
    names = ["World", "Business", "Science"]
    for n in range(pieces):
        desk.piece(paper, f"Story {n}", section=names[n % 3], facts=1,
                   on_air_at=datetime(2026, 11, 1 + n % 4, 9, tzinfo=timezone.utc) + timedelta(minutes=n))
    desk.edition(paper, date(2026, 11, 1))
    return paper


def _count(client, url: str) -> int:
    with statements() as seen:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(seen)


def test_list_endpoints_issue_the_same_number_of_statements_for_3_and_30_pieces(app, client, desk):
    urls = ["/api/v1/front", "/api/v1/days/2026-11-01", "/api/v1/sections", "/api/v1/days",
            "/api/v1/masthead", "/api/v1/posts?limit=100", "/api/v1/cast"]
    paper = _newsroom(desk, 3)
    small = {url: _count(client, url) for url in urls}
    for n in range(3, 30):
        desk.piece(paper, f"More {n}", section=["World", "Business", "Science"][n % 3], facts=1,
                   on_air_at=datetime(2026, 11, 1 + n % 4, 9, tzinfo=timezone.utc) + timedelta(minutes=n))
    assert len(client.get("/api/v1/days/2026-11-01").get_json()["stories"]) > 3
    large = {url: _count(client, url) for url in urls}
    assert large == small, (small, large)
    # The paper lookup, then: sections, rails, newsroom counts.
    assert small["/api/v1/front"] <= 4


def test_front_document(client, desk):
    paper = desk.paper("demo", sections=("World", "Business", "Science", "Old"),
                       config={"timezone": "UTC", "accent": "#c00", "_internal": 1,
                               "webhook_secret": "s3cret", "API_KEY": "k"})
    desk.section(paper, "Science").position = -1
    desk.section(paper, "Old").active = False
    db.session.commit()
    for n in range(8):
        desk.piece(paper, f"World {n}", on_air_at=T0 + timedelta(hours=n))
    desk.piece(paper, "Business 0", section="Business", byline="Rex Ledger")
    desk.piece(paper, "World draft", on_air_at=None)
    pulled = desk.piece(paper, "World pulled", on_air_at=T0 + timedelta(days=3))
    filing.take_off_air(paper, pulled, T0 + timedelta(days=4))
    db.session.commit()
    desk.edition(paper, date(2026, 11, 2))

    body = client.get("/api/v1/front").get_json()
    assert body["paper"] == {
        "slug": "demo", "nameplate": "The Demo Times", "motto": "All the news that fits",
        "description": "A test paper.", "home": "http://localhost/",
        "config": {"timezone": "UTC"},
    }
    assert body["newsroom"] == {
        "personas": 2, "sections": 3, "on_air": 9, "days": 1, "editions": 1,
        "latest_on_air_at": "2026-11-01T15:00:00Z", "latest_edition": "2026-11-02",
        "declared_ai": True,
    }
    rails = body["rails"]
    assert [(r["section"], r["slug"]) for r in rails] == [
        ("Science", "science"), ("World", "world"), ("Business", "business")]
    assert rails[0]["stories"] == []
    assert rails[1]["url"] == "http://localhost/sections/world"
    assert [s["headline"] for s in rails[1]["stories"]] == [f"World {n}" for n in range(7, 1, -1)]
    assert [s["headline"] for s in rails[2]["stories"]] == ["Business 0"]
    row = rails[2]["stories"][0]
    assert (row["section"], row["byline"], row["url"]) == (
        "Business", "Rex Ledger", "http://localhost/stories/business-0")
    assert all(len(r["stories"]) <= 6 for r in rails)


def test_only_declared_public_config_is_served(client, desk):
    paper = desk.paper("demo")
    piece = desk.piece(paper, "Rates rise again")
    admin = desk.key(paper, "admin")
    secrets = {"integrations": {"api_key": "k-nested-1"}, "sendgrid": "k-top-2",
               "mailer": {"smtp": {"password": "k-deep-3"}}, "timezone": {"token": "k-in-public-4"},
               "help_desk": "mailto:help@example.com", "language": "fr"}
    patched = client.patch("/api/v1/config", json={"config": secrets}, headers=auth(admin, "X-Desk-Key"))
    assert patched.status_code == 200
    for url in ("/api/v1/front", "/front.json"):
        body = client.get(url).get_json()
        assert body["paper"]["config"] == {"help_desk": "mailto:help@example.com", "language": "fr"}, url
    for url in ("/api/v1/front", "/front.json", "/", f"/stories/{piece.slug}", "/sections/world",
                "/masthead", "/rss.xml", "/api/v1", "/api/v1/stories"):
        text = client.get(url).get_data(as_text=True)
        assert not any(f"k-{word}" in text for word in ("nested-1", "top-2", "deep-3", "in-public-4")), url
    # The schema documents exactly the allow-list.
    assert set(FrontConfigOut().fields) == set(front.PUBLIC_CONFIG)


def test_front_of_an_empty_paper(client, desk):
    desk.paper("demo", sections=())
    body = client.get("/api/v1/front").get_json()
    assert body["rails"] == []
    assert body["newsroom"]["on_air"] == 0 and body["newsroom"]["latest_on_air_at"] is None
    assert body["newsroom"]["latest_edition"] is None


def test_build_front_dumped_is_the_served_document(app, client, desk):
    paper = _newsroom(desk, 5)
    served = client.get("/api/v1/front", base_url="http://demo.localhost").get_json()
    with app.test_request_context("/front.json", base_url="http://demo.localhost"):
        g.paper = paper
        document = front.build_front(paper, None, now=caching.request_now(), links=Links("http://demo.localhost"))
        # The service hands back plain data; the wire shape is the schema's.
        assert FrontOut().dump(document) == served


def test_cast_is_empty_until_an_edition(client, desk):
    paper = desk.paper("demo")
    assert client.get("/api/v1/cast").get_json() == {"editions": [], "count": 0}
    desk.edition(paper, date(2026, 11, 1))
    desk.edition(paper, date(2026, 11, 3), title="Wednesday")
    desk.edition(paper, date(2026, 11, 2))
    body = client.get("/api/v1/cast").get_json()
    assert body["count"] == 3
    assert [e["day"] for e in body["editions"]] == ["2026-11-03", "2026-11-02", "2026-11-01"]
    assert body["editions"][0] == {
        "day": "2026-11-03", "title": "Wednesday", "summary": "The day in two minutes.",
        "video_url": "https://cdn.example.com/demo/2026-11-03.mp4",
        "poster_url": "https://cdn.example.com/demo/2026-11-03.jpg",
        "embed_url": "http://localhost/cast/2026-11-03?embed=1",
        "url": "http://localhost/cast/2026-11-03",
        "duration_seconds": 120, "mime_type": "video/mp4", "length_bytes": 12_345_678,
        "published_at": "2026-11-03T18:00:00Z", "captions": None, "transcript": "",
    }


def test_cast_is_per_paper(client, desk):
    desk.paper("demo")
    other = desk.paper("other")
    desk.edition(other, date(2026, 11, 1))
    assert client.get("/api/v1/cast").get_json()["count"] == 0
    assert client.get("/api/v1/cast", base_url="http://other.localhost").get_json()["count"] == 1


def test_masthead_lists_active_personas_in_order(client, desk):
    paper = desk.paper("demo", personas=("Ada Quill", "Rex Ledger", "Old Hand", "Zed Ink"))
    desk.persona(paper, "Zed Ink").position = -1
    db.session.commit()
    desk.piece(paper, "One", byline="Ada Quill")
    desk.piece(paper, "Two", byline="Ada Quill", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Draft", byline="Rex Ledger", on_air_at=None)
    desk.piece(paper, "Three", byline="Old Hand")
    db.session.query(Persona).filter_by(paper_id=paper.id, name="Old Hand").one().active = False
    db.session.commit()

    body = client.get("/api/v1/masthead").get_json()
    assert body["count"] == 3
    assert [p["name"] for p in body["personas"]] == ["Zed Ink", "Ada Quill", "Rex Ledger"]
    ada = body["personas"][1]
    assert ada == {"name": "Ada Quill", "slug": "ada-quill", "title": "Correspondent",
                   "beat": "beat 0", "bio": "",
                   "avatar": "http://localhost/masthead/ada-quill/avatar.svg",
                   "declared_ai": True, "pieces": 2}
    assert body["personas"][2]["pieces"] == 0
    assert all(p["declared_ai"] is True for p in body["personas"])
    # The advertised avatar answers.
    assert client.get(ada["avatar"]).status_code == 200


def test_empty_masthead(client, desk):
    desk.paper("demo", personas=())
    assert client.get("/api/v1/masthead").get_json() == {"personas": [], "count": 0}


def test_private_paper_front_is_404(client, desk):
    desk.paper("demo")
    desk.paper("secret", public=False)
    for url in ("/api/v1/front", "/api/v1/cast", "/api/v1/masthead", "/api/v1/sections"):
        response = client.get(url, base_url="http://secret.localhost")
        assert response.status_code == 404 and response.mimetype == "application/problem+json"


def test_the_newsroom_counts_days_with_a_public_piece_only_as_the_clock_reaches_them(client, desk):
    # The days are counted by hopping the day index (front._days_on_air): a day counts once its
    # first airing has come, whatever else is scheduled on it; drafts and pulled pieces never.
    paper = desk.paper("demo")
    day = lambda d, h: datetime(2026, 11, d, h, tzinfo=timezone.utc)  # noqa: E731
    for aired in (day(1, 9), day(1, 17), day(2, 9), day(3, 9), day(3, 15), day(4, 9)):
        desk.piece(paper, f"Aired {aired:%d %H}", on_air_at=aired)
    desk.piece(paper, "A draft", on_air_at=None)
    pulled = desk.piece(paper, "Pulled", on_air_at=day(5, 9) - timedelta(days=10))
    filing.take_off_air(paper, pulled, day(1, 8))
    db.session.commit()

    def counts(at: datetime) -> tuple[int, int]:
        with time_machine.travel(at, tick=False):
            newsroom = client.get("/api/v1/front").get_json()["newsroom"]
        return newsroom["days"], newsroom["on_air"]

    assert counts(day(1, 8)) == (0, 0)
    assert counts(day(1, 10)) == (1, 1)
    assert counts(day(3, 12)) == (3, 4)   # the 3rd counts once, its 15:00 piece still to come
    assert counts(day(3, 16)) == (3, 5)
    assert counts(day(4, 10)) == (4, 6)
