"""The change feed `GET /api/v1/changes` (docs/API.md "Change feed"): every public change in
order (aired, revised, unaired tombstones), paged by an opaque cursor bound to the paper, a
scheduled airing listed only from its instant, a cancelled one never."""
from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import time_machine

from tests.fixtures.keys import auth

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def filing(headline: str) -> dict:
    return {"headline": headline, "dek": "A standfirst.", "prose": "It happened[^1].", "section": "World",
            "byline": "Ada Quill", "cited_facts": [{"statement": "It happened", "source": "Office",
                                                    "instrument": "Bulletin", "claim_key": "k-1"}]}


def file(client, admin, headline: str) -> str:
    filed = client.post("/api/v1/stories", json=filing(headline), headers=auth(admin))
    assert filed.status_code == 201, filed.get_json()
    return filed.get_json()["id"]


def feed(client, **query) -> dict:
    response = client.get("/api/v1/changes", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def walk(client, limit: int, cursor: str | None = None) -> tuple[list[dict], str, int]:
    """Follow `Link: rel="next"` from `cursor`: (every change, the last next_cursor, pages)."""
    seen, pages = [], 0
    url = "/api/v1/changes?" + (f"cursor={cursor}&" if cursor else "") + f"limit={limit}"
    while True:
        response = client.get(url)
        assert response.status_code == 200
        pages += 1
        body = response.get_json()
        seen += body["changes"]
        link = response.headers.get("Link")
        if not link:
            return seen, body["next_cursor"], pages
        assert link.endswith('>; rel="next"') and body["next_cursor"] in link
        url = link[1:link.index(">")].removeprefix("http://localhost")


def test_aired_revised_unaired_in_order_with_tombstones(client, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        assert feed(client) == {"changes": [], "next_cursor": feed(client)["next_cursor"]}
        first, second = file(client, admin, "Harbour reopens"), file(client, admin, "Rates rise")
        draft = file(client, admin, "Still a draft")
        assert feed(client)["changes"] == []  # drafts are not public
        client.patch(f"/api/v1/stories/{draft}", json={"dek": "Changed."}, headers=auth(admin))
        aired = client.put(f"/api/v1/stories/{first}/air", headers=auth(admin)).get_json()
        clock.shift(60)
        client.put(f"/api/v1/stories/{second}/air", headers=auth(admin))
        revised = client.patch(f"/api/v1/stories/{first}", json={"dek": "New standfirst."},
                               headers=auth(admin)).get_json()
        clock.shift(60)
        client.delete(f"/api/v1/stories/{second}/air", headers=auth(admin))
        changes = feed(client)["changes"]
    assert [(c["seq"], c["type"], c["id"]) for c in changes] == [
        (1, "aired", first), (2, "aired", second), (3, "revised", first), (4, "unaired", second)]
    assert changes[0] == {"seq": 1, "type": "aired", "id": first, "rev": 1,
                          "content_hash": aired["content_hash"], "at": "2026-11-20T12:00:00Z"}
    assert changes[2]["rev"] == 2 and changes[2]["content_hash"] == revised["content_hash"]
    assert changes[2]["at"] == "2026-11-20T12:01:00Z"
    # A tombstone: the id and rev, never the content (nor its hash).
    assert changes[3] == {"seq": 4, "type": "unaired", "id": second, "rev": 1, "content_hash": None,
                          "at": "2026-11-20T12:02:00Z"}
    assert client.get(f"/api/v1/stories/{second}").status_code == 404


def test_paging_visits_every_change_once_and_the_cursor_polls_on(client, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        ids = [file(client, admin, f"Story {n}") for n in range(7)]
        for piece_id in ids:  # several changes within one second: ordered by seq
            client.put(f"/api/v1/stories/{piece_id}/air", headers=auth(admin))
        seen, cursor, pages = walk(client, limit=3)
        assert [c["seq"] for c in seen] == list(range(1, 8)) and pages == 3
        # Nothing new: the same position comes back, with no Link.
        empty = client.get(f"/api/v1/changes?cursor={cursor}")
        assert empty.get_json() == {"changes": [], "next_cursor": cursor} and "Link" not in empty.headers
        client.delete(f"/api/v1/stories/{ids[0]}/air", headers=auth(admin))  # same second
        clock.shift(1)
        client.patch(f"/api/v1/stories/{ids[1]}", json={"dek": "Again."}, headers=auth(admin))
        more, _, _ = walk(client, limit=3, cursor=cursor)
        assert [(c["seq"], c["type"]) for c in more] == [(8, "unaired"), (9, "revised")]
    assert feed(client, limit=0)["changes"][0]["seq"] == 1  # limit is clamped to 1-500
    assert len(feed(client, limit=10_000)["changes"]) == 9


def test_a_scheduled_airing_is_listed_from_its_instant_and_a_cancelled_one_never(client, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    at = NOW + timedelta(hours=1)
    with time_machine.travel(NOW, tick=False) as clock:
        scheduled, cancelled, now = (file(client, admin, h) for h in ("Later", "Never", "Now"))
        client.put(f"/api/v1/stories/{scheduled}/air", json={"at": at.isoformat()}, headers=auth(admin))
        client.put(f"/api/v1/stories/{cancelled}/air", json={"at": at.isoformat()}, headers=auth(admin))
        clock.shift(60)
        client.put(f"/api/v1/stories/{now}/air", headers=auth(admin))
        # Revised before it airs: its aired change will carry the new revision.
        revised = client.patch(f"/api/v1/stories/{scheduled}", json={"dek": "Updated."},
                               headers=auth(admin)).get_json()
        body = feed(client)
        assert [(c["type"], c["id"]) for c in body["changes"]] == [("aired", now)]
        cursor = body["next_cursor"]
        client.delete(f"/api/v1/stories/{cancelled}/air", headers=auth(admin))
        assert feed(client, cursor=cursor)["changes"] == []

        clock.move_to(at)
        later = feed(client, cursor=cursor)["changes"]
        assert [(c["type"], c["id"], c["at"]) for c in later] == [("aired", scheduled, "2026-11-20T13:00:00Z")]
        assert later[0]["rev"] == 2 and later[0]["content_hash"] == revised["content_hash"]
        assert [c["id"] for c in feed(client)["changes"]] == [now, scheduled]


def test_malformed_or_foreign_cursors_are_400(client, desk):
    demo, other = desk.paper("demo"), desk.paper("other", host="other.example")
    admin = desk.key(other, "admin")
    with time_machine.travel(NOW, tick=False):
        piece = file_on(client, admin, "other.example")
        client.put(f"/api/v1/stories/{piece}/air", headers={**auth(admin), "Host": "other.example"})
        foreign = client.get("/api/v1/changes", headers={"Host": "other.example"}).get_json()["next_cursor"]
    assert client.get(f"/api/v1/changes?cursor={foreign}", headers={"Host": "other.example"}).status_code == 200
    forged = base64.urlsafe_b64encode(f"chg1:{demo.id}:x:1".encode()).decode()
    for bad in (foreign, "not-a-cursor", "%00", "Zm9v", forged, "a" * 201, ""):
        response = client.get(f"/api/v1/changes?cursor={bad}")
        assert response.status_code == 400, bad
        assert response.mimetype == "application/problem+json"


def file_on(client, admin, host: str) -> str:
    filed = client.post("/api/v1/stories", json=filing("Elsewhere"), headers={**auth(admin), "Host": host})
    assert filed.status_code == 201, filed.get_json()
    return filed.get_json()["id"]


def test_a_cursor_of_the_feeds_first_format_still_polls_on(client, desk):
    # Mirrors stored `chg1:` cursors before the one cursor format; they keep working for a release.
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False):
        ids = [file(client, admin, f"Story {n}") for n in range(3)]
        for piece_id in ids:
            client.put(f"/api/v1/stories/{piece_id}/air", headers=auth(admin))
        first = feed(client, limit=10)["changes"]
        at = datetime.fromisoformat(first[0]["at"].replace("Z", "+00:00"))
        micros = (at - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
        legacy = base64.urlsafe_b64encode(f"chg1:{paper.id}:{micros}:{first[0]['seq']}".encode()).decode().rstrip("=")
        after = client.get(f"/api/v1/changes?cursor={legacy}")
    assert after.status_code == 200
    assert [c["seq"] for c in after.get_json()["changes"]] == [c["seq"] for c in first[1:]]
    assert not after.get_json()["next_cursor"].startswith("Y2hnMT")  # answered in the one format


def test_a_read_waits_for_the_write_in_flight_on_the_papers_lock(app, desk, make_app):
    """`/changes` waits for writes in flight (services/reading/changes.py `settle_writes`): while
    a writer holds the paper's lock, a cold read of the feed does not answer; once the writer
    is done, it does, and holds no lock of its own after it (the next writer gets the lock at
    once). On PostgreSQL the public read takes the barrier on its own autocommit connection."""
    import threading

    from sqlalchemy import text

    from extensions import db
    from services.newsroom import filing as newsroom_filing

    paper = desk.paper("demo")
    desk.piece(paper, "On air")
    worker = make_app(CACHE_TYPE="NullCache")
    answers = []

    def read():
        answers.append(worker.test_client().get("/api/v1/changes").status_code)

    with worker.app_context():
        writer = db.session()
        newsroom_filing.lock_paper(db.session.get(type(paper), paper.id))  # a write in flight
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(0.5)
        blocked = reader.is_alive()
        writer.rollback()
        reader.join(10)
    assert blocked, "the feed answered while a write held the paper's lock"
    assert answers == [200]
    with worker.app_context():  # nothing left held: a writer takes the lock at once
        if db.engine.dialect.name == "postgresql":
            db.session.execute(text("SET LOCAL lock_timeout = '2s'"))
        newsroom_filing.lock_paper(db.session.get(type(paper), paper.id))
        db.session.rollback()
