"""One writer per wire shape: `/api/v1/stories`, `/api/v1/stories/{id}`, `/api/v1/front` and
`/front.json` read Core rows (services/reading/stories.py `page`, `find_row`,
services/reading/front.py `rail_rows`), the writes hand ORM pieces to the schemas; both go
through the one writer each schema documents (schemas/story.py `story_row_wire`, `story_wire`,
schemas/front.py `front_wire`). Here: the writer's keys are the schema's fields, in order; and
each answer equals, byte for byte, the schema's dump of the ORM objects of the same request (the
two reading paths agree), on the public lane and the keyed one (drafts), on each database, for
first pages and every page of a walk; `digital_source_type` (the byline's IPTC disclosure)
included."""
from __future__ import annotations

from datetime import timedelta

import pytest
from flask import g

from extensions import db
from schemas.front import FrontOut
from schemas.story import StoryListOut, StoryOut
from services.reading import front, stories
from services.rendering.prose import DIGITAL_SOURCE_TYPE
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from web import caching
from web.links import links


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo", nameplate="Le Québec — “Gazette”", sections=("World", "Économie"),
                       personas=("Ada", "Zoë"))
    for n in range(7):
        desk.piece(paper, f"Piece {n}: café <b>&</b> “quotes”", section=("World", "Économie")[n % 2],
                   byline=("Ada", "Zoë")[n % 2], facts=n % 4, on_air_at=T0 + timedelta(minutes=n),
                   image=None if n % 3 else f"https://img.example/{n}.png")
    desk.piece(paper, "A draft", on_air_at=None, facts=3)
    return paper, desk.key(paper, "read")


def _expected(app, url: str, headers: dict, dump) -> bytes:
    """What the schema path answers for `url`: the pipeline's before-steps (tenancy sets the
    paper and the key), then `dump()` of the ORM objects, written by the app's JSON provider."""
    with app.test_request_context(url, base_url="http://localhost", headers=headers):
        app.preprocess_request()
        return (app.json.dumps(dump()) + "\n").encode("utf-8")


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("limit", [1, 3, 50, 200])
def test_story_lists_equal_the_schema_dump(app, client, newsroom, keyed, limit):
    paper, key = newsroom
    headers = auth(key) if keyed else {}
    url = f"/api/v1/stories?limit={limit}"
    answer = client.get(url, headers=headers)
    assert answer.status_code == 200

    def dump():
        rows = stories.latest(g.paper, limit, now=caching.request_now(), include_drafts=keyed)
        body = {"stories": rows, "count": len(rows), "next_cursor": answer.get_json()["next_cursor"]}
        return StoryListOut().dump(body)

    assert answer.data == _expected(app, url, headers, dump)
    assert answer.get_json()["count"] == min(limit, 8 if keyed else 7)
    # The byline's machine-readable disclosure, beside it on every row of both paths.
    for row in answer.get_json()["stories"]:
        keys = list(row)
        assert keys[keys.index("byline") + 1] == "digital_source_type"
        assert row["digital_source_type"] == DIGITAL_SOURCE_TYPE
    assert (answer.get_json()["next_cursor"] is None) == (limit >= (8 if keyed else 7))


@pytest.mark.parametrize("query", ["", "&status=on_air", "&status=draft", "&section=World", "&persona=zoe"])
@pytest.mark.parametrize("keyed", [False, True])
def test_story_pages_equal_the_schema_dump(app, client, newsroom, keyed, query):
    """Every page of a walk (limit 3) equals StoryListOut's dump of the same page's Pieces."""
    paper, key = newsroom
    headers = auth(key) if keyed else {}
    url, walked = f"/api/v1/stories?limit=3{query}", []
    if "draft" in query and not keyed:
        assert client.get(url).status_code == 401
        return
    while url:
        answer = client.get(url, headers=headers)
        assert answer.status_code == 200, answer.get_json()
        body = answer.get_json()
        walked += [row["id"] for row in body["stories"]]

        def dump(body=body):
            rows = [stories.find(g.paper, row["id"], now=caching.request_now(), include_drafts=keyed)
                    for row in body["stories"]]
            return StoryListOut().dump({"stories": rows, "count": len(rows), "next_cursor": body["next_cursor"]})

        assert answer.data == _expected(app, url, headers, dump)
        link = answer.headers.get("Link")
        assert (link is None) == (body["next_cursor"] is None)
        url = link and link[1:link.index(">")].removeprefix("http://localhost")
    assert len(walked) == len(set(walked)) and walked


@pytest.mark.parametrize("keyed", [False, True])
def test_full_stories_equal_the_schema_dump(app, client, newsroom, keyed):
    paper, key = newsroom
    headers = auth(key) if keyed else {}
    listed = client.get("/api/v1/stories?limit=200", headers=headers).get_json()["stories"]
    assert len(listed) == (8 if keyed else 7)
    for row in listed:
        for ref in (row["id"], row["slug"]):
            url = f"/api/v1/stories/{ref}"
            answer = client.get(url, headers=headers)
            assert answer.status_code == 200, url
            expected = _expected(app, url, headers,
                                 lambda ref=ref: StoryOut().dump(stories.find(g.paper, ref, now=caching.request_now(),
                                                                              include_drafts=keyed)))
            assert answer.data == expected, url
            story = answer.get_json()
            assert story["digital_source_type"] == DIGITAL_SOURCE_TYPE and "AI persona" in story["disclosure"]
    # A draft is not on the public lane; a name that is no piece is a 404 either way.
    draft = next(row for row in client.get("/api/v1/stories?limit=200", headers=auth(key)).get_json()["stories"]
                 if not row["on_air"])
    assert client.get(f"/api/v1/stories/{draft['id']}").status_code == 404
    for nothing in ("999999", "99999999999", "no-such-piece"):
        assert client.get(f"/api/v1/stories/{nothing}", headers=headers).status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/front", "/front.json"])
def test_the_front_equals_the_schema_dump(app, client, desk, newsroom, path):
    paper, _ = newsroom
    desk.edition(paper, T0.date())
    paper.config = {"podcast_image": "https://img.example/p.png", "timezone": "Europe/Paris",
                    "language": "fr", "secret": "never shown", "help_desk": "mailto:desk@example.com"}
    db.session.commit()
    answer = client.get(path)
    assert answer.status_code == 200
    expected = _expected(app, path, {}, lambda: FrontOut().dump(
        front.build_front(g.paper, g.paper_snapshot.state, now=caching.request_now(), links=links())))
    assert answer.data == expected
    assert [len(rail["stories"]) for rail in answer.get_json()["rails"]] == [4, 3]
    assert {row["digital_source_type"] for rail in answer.get_json()["rails"] for row in rail["stories"]} == {
        DIGITAL_SOURCE_TYPE}


def test_each_writer_makes_exactly_the_fields_its_schema_documents(app, client, newsroom):
    from schemas.story import StoryRowOut

    paper, key = newsroom
    story = client.get("/api/v1/stories?limit=1").get_json()["stories"][0]
    assert list(story) == list(StoryRowOut().fields)
    full = client.get(f"/api/v1/stories/{story['id']}").get_json()
    assert list(full) == list(StoryOut().fields)
    assert list(client.get("/api/v1/front").get_json()) == list(FrontOut().fields)


def test_a_write_answers_in_the_shape_a_read_does(client, desk, newsroom):
    paper, _ = newsroom
    admin = auth(desk.key(paper, "admin"))
    body = {"headline": "Harbour reopens", "dek": "Ships return.", "section": "World", "byline": "Ada",
            "prose": "The harbour reopened[^1].",
            "cited_facts": [{"statement": "It reopened", "source": "Port Authority", "instrument": "Notice",
                             "claim_key": "port-1"}]}
    filed = client.post("/api/v1/stories", json=body, headers=admin)
    assert filed.status_code == 201
    aired = client.put(f"/api/v1/stories/{filed.get_json()['id']}/air", headers=admin)
    assert aired.status_code == 200
    read = client.get(f"/api/v1/stories/{filed.get_json()['id']}", headers=admin)
    assert aired.data == read.data  # an ORM piece (the write) and a Core row (the read), one writer
