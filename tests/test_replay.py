"""Replay (web/replay.py): a worker sends a public answer it has made before again, ahead of Flask,
with the pipeline's own headers; it never outlives the paper state it was made for, never
answers a keyed request, and still counts the rate limit and logs the request line.

Apps here are built like production's (create_app, a cache on); `replayed` counts come from
the app's own statistics, so each test knows which path answered."""
from __future__ import annotations

import json
import logging
import time
from datetime import timedelta
from urllib.parse import quote

import pytest
import time_machine

from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.test_shared_state import RedisServer
from web import state

VOLATILE = {"X-Request-ID", "X-RateLimit-Remaining", "X-RateLimit-Reset"}


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    pieces = [desk.piece(paper, f"Harbour story {n}", on_air_at=T0.replace(hour=9 + n)) for n in range(3)]
    desk.edition(paper, T0.date())
    return {"paper": paper, "pieces": pieces, "admin": desk.key(paper, "admin")}


def public_paths(newsroom) -> list[str]:
    piece = newsroom["pieces"][0]
    page = quote(f"http://localhost/stories/{piece.slug}", safe="")
    return ["/api/v1/stories?limit=2", f"/api/v1/stories/{piece.id}", "/api/v1/front", "/front.json",
            "/api/v1/days/2026-11-01", "/api/v1/search?q=harbour", "/", f"/stories/{piece.slug}",
            "/sections/world", f"/embed/{piece.id}", f"/oembed?url={page}", "/rss.xml", "/feed.json",
            "/sitemap.xml", "/llms.txt", "/api/v1"]


def replayed(app) -> int:
    return app.extensions["paperdesk.replay.stats"]["replayed"]


def same_answer(first, second) -> None:
    strip = lambda r: sorted((k, v) for k, v in r.headers.items() if k not in VOLATILE)  # noqa: E731
    assert (second.status_code, strip(second), second.data) == (first.status_code, strip(first), first.data)


VARIANTS = {
    "plain": {},
    "gzip": {"Accept-Encoding": "gzip, deflate, br"},
    "origin": {"Origin": "https://reader.example"},
    "gzip refused": {"Accept-Encoding": "gzip;q=0, identity"},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_replay_is_the_pipelines_answer_byte_for_byte(make_app, newsroom, variant, still_clock):
    app = make_app(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="memory://")
    client = app.test_client()
    headers = VARIANTS[variant]
    for path in public_paths(newsroom):
        for method in ("GET", "HEAD"):
            made = client.open(path, method=method, headers=headers)
            assert made.status_code == 200, (path, method)
            before = replayed(app)
            again = client.open(path, method=method, headers=headers)
            assert replayed(app) == before + 1, (path, method, variant)
            same_answer(made, again)
            # Counted like any read: the limit's headers are there, one fewer remaining.
            assert int(again.headers["X-RateLimit-Remaining"]) == int(made.headers["X-RateLimit-Remaining"]) - 1
            assert again.headers["X-Request-ID"] != made.headers["X-Request-ID"]
    gzipped = client.get("/", headers=headers)  # over the 1 KB that is worth compressing
    assert (gzipped.headers.get("Content-Encoding") == "gzip") == (variant == "gzip")


def test_a_revalidation_is_replayed_with_the_tag_the_client_holds(make_app, newsroom):
    app = make_app()
    client = app.test_client()
    path = "/api/v1/front"  # over 1 KB: gzip, so a weak tag, when accepted
    etag = client.get(path).headers["ETag"]
    weak = client.get(path, headers={"Accept-Encoding": "gzip"}).headers["ETag"]
    assert weak == f"W/{etag}"
    for held in (etag, weak):
        made = client.get(path, headers={"If-None-Match": held})
        before = replayed(app)
        again = client.get(path, headers={"If-None-Match": held})
        assert replayed(app) == before + 1
        assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == held
        same_answer(made, again)
    # A tag of another state is no 304: the full answer, replayed as well.
    stale = client.get(path, headers={"If-None-Match": '"1.0.0.f1"'})
    assert stale.status_code == 200 and stale.headers["ETag"] == etag


def test_a_304_kept_for_an_earlier_answer_is_not_sent_for_the_next_ones_tag(make_app, newsroom):
    """A 304 kept for one 200 of a URL names that 200's tag: after a write changes the answer,
    a client holding the new tag gets a 304 with the new tag, never the one kept before."""
    app = make_app()
    client = app.test_client()
    piece = newsroom["pieces"][2]
    path = f"/api/v1/stories/{piece.id}"
    old = client.get(path).headers["ETag"]
    for _ in range(2):  # made, then replayed: a 304 kept for the old tag
        assert client.get(path, headers={"If-None-Match": old}).status_code == 304
    changed = client.patch(path, json={"headline": "Harbour reopens"}, headers=auth(newsroom["admin"]))
    assert changed.status_code == 200
    new = client.get(path).headers["ETag"]
    assert new != old
    for _ in range(2):
        again = client.get(path, headers={"If-None-Match": new})
        assert again.status_code == 304 and again.headers["ETag"] == new
    assert client.get(path, headers={"If-None-Match": old}).status_code == 200


def test_a_write_in_this_worker_is_seen_at_once(make_app, newsroom):
    app = make_app()
    client = app.test_client()
    piece = newsroom["pieces"][2]
    for _ in range(2):
        assert "Harbour story 2" in client.get(f"/api/v1/stories/{piece.id}").get_data(as_text=True)
    changed = client.patch(f"/api/v1/stories/{piece.id}", json={"headline": "Harbour reopens"},
                           headers=auth(newsroom["admin"]))
    assert changed.status_code == 200
    assert client.get(f"/api/v1/stories/{piece.id}").get_json()["headline"] == "Harbour reopens"


def test_another_workers_write_is_seen_by_the_next_replay(make_app, newsroom):
    reader, writer = make_app(), make_app()
    piece = newsroom["pieces"][2]
    path = f"/api/v1/stories/{piece.id}"
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        client = reader.test_client()
        client.get(path)
        client.get(path)
        assert replayed(reader) == 1
        writer.test_client().patch(path, json={"headline": "Harbour reopens"}, headers=auth(newsroom["admin"]))
        assert client.get(path).get_json()["headline"] == "Harbour reopens"


def test_a_scheduled_piece_airs_through_a_replayed_list(make_app, newsroom):
    app = make_app()
    client = app.test_client()
    piece_id = str(newsroom["pieces"][2].id)
    at = T0 + timedelta(days=1, hours=1)
    with time_machine.travel(T0 + timedelta(days=1), tick=False) as clock:
        pulled = client.delete(f"/api/v1/stories/{piece_id}/air", headers=auth(newsroom["admin"]))
        assert pulled.status_code == 200
        scheduled = client.put(f"/api/v1/stories/{piece_id}/air", json={"at": at.isoformat()},
                               headers=auth(newsroom["admin"]))
        assert scheduled.status_code == 200, scheduled.get_json()
        ids = lambda: [s["id"] for s in client.get("/api/v1/stories").get_json()["stories"]]  # noqa: E731
        assert piece_id not in ids() and piece_id not in ids()
        assert replayed(app) >= 1
        clock.move_to(at + timedelta(seconds=1))
        assert piece_id in ids()


def test_keyed_requests_and_a_cache_turned_off_are_never_replayed(make_app, newsroom):
    app = make_app()
    client = app.test_client()
    path = "/api/v1/stories"
    client.get(path)
    for _ in range(3):
        keyed = client.get(path, headers=auth(newsroom["admin"]))
        assert keyed.headers["Cache-Control"] == "private, no-store"
    assert replayed(app) == 0
    off = make_app(CACHE_TYPE="NullCache")
    for _ in range(3):
        off.test_client().get(path)
    assert replayed(off) == 0


def test_with_every_cache_off_only_revalidations_are_replayed(make_app, newsroom):
    """NullCache keeps no answer's body anywhere; the replay then keeps only the pipeline's
    304s (which tag is current at which state), each for the If-None-Match that asked, in the
    form that client holds, and never past a write that moves the answer."""
    app = make_app(CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True)
    client = app.test_client()
    path = "/api/v1/front"  # over 1 KB: gzip, so a weak tag when accepted
    etag = client.get(path).headers["ETag"]
    weak = client.get(path, headers={"Accept-Encoding": "gzip"}).headers["ETag"]
    assert replayed(app) == 0  # no 200 is kept
    for held, encoding in ((etag, {}), (weak, {"Accept-Encoding": "gzip"}), (f'"x", {etag}', {})):
        made = client.get(path, headers={"If-None-Match": held, **encoding})
        before = replayed(app)
        again = client.get(path, headers={"If-None-Match": held, **encoding})
        assert replayed(app) == before + 1, held
        assert again.status_code == made.status_code == 304
        same_answer(made, again)
    assert client.get(path).status_code == 200 and replayed(app) == 3  # the 200 is the view's
    # Another tag of the URL is not the kept one's: the view answers it.
    assert client.get(path, headers={"If-None-Match": '"1.0.0.f1"'}).status_code == 200
    assert replayed(app) == 3
    # A write that moves the answer ends the kept 304, on this worker and on another.
    other = make_app(CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True)
    assert other.test_client().get(path, headers={"If-None-Match": etag}).status_code == 304
    assert other.test_client().get(path, headers={"If-None-Match": etag}).status_code == 304
    assert replayed(other) == 1
    piece = newsroom["pieces"][2]
    changed = client.patch(f"/api/v1/stories/{piece.id}", json={"headline": "Harbour reopens"},
                           headers=auth(newsroom["admin"]))
    assert changed.status_code == 200
    for worker in (app, other):
        fresh = worker.test_client().get(path, headers={"If-None-Match": etag})
        assert fresh.status_code == 200 and "Harbour reopens" in fresh.get_data(as_text=True)


def test_a_used_up_limit_is_the_pipelines_429(make_app, newsroom, still_clock):
    app = make_app(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="memory://", READ_RATELIMIT="3/minute")
    client = app.test_client()
    answers = [client.get("/api/v1/front") for _ in range(5)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429, 429]
    assert [a.headers["X-RateLimit-Remaining"] for a in answers] == ["2", "1", "0", "0", "0"]
    refused = answers[3]
    assert refused.mimetype == "application/problem+json" and int(refused.headers["Retry-After"]) >= 1
    assert app.extensions["paperdesk.replay.stats"]["refused"] == 2
    assert replayed(app) == 2


def test_a_replay_logs_the_same_request_line(make_app, newsroom, caplog):
    app = make_app()
    client = app.test_client()
    caplog.set_level(logging.INFO, logger="paperdesk.request")
    for _ in range(2):
        client.get("/api/v1/stories?limit=2", headers={"X-Request-ID": "trace-1"})
    lines = [r for r in caplog.records if r.name == "paperdesk.request"]
    assert len(lines) == 2 and replayed(app) == 1
    fields = ("request_id", "method", "path", "query", "status", "paper", "remote_addr")
    made, again = ({f: getattr(r, f) for f in fields} for r in lines)
    assert made == again == {"request_id": "trace-1", "method": "GET", "path": "/api/v1/stories",
                             "query": "limit=2", "status": 200, "paper": "demo",
                             "remote_addr": "127.0.0.1"}
    assert isinstance(lines[1].duration_ms, float)
    json.dumps(lines[1].__dict__, default=str)


@pytest.mark.parametrize(("config", "second"), [({}, "replay"), ({"RESPONSE_CACHE_LOCAL_BYTES": 0}, "cache")])
def test_the_request_line_says_how_the_answer_was_made(make_app, newsroom, caplog, config, second):
    """`served` (docs/DEPLOYING.md "Logs"; counted by `make bench-day`): the view's answer,
    then the same answer replayed ahead of Flask, or (replay off) from the response cache."""
    app = make_app(**config)
    client = app.test_client()
    caplog.set_level(logging.INFO, logger="paperdesk.request")
    for _ in range(2):
        client.get("/api/v1/stories?limit=2")
    assert [r.served for r in caplog.records if r.name == "paperdesk.request"] == ["app", second]


def test_a_hosts_spelling_never_reaches_another_readers_answer(make_app, newsroom):
    app = make_app()
    client = app.test_client()
    for host in ("LOCALHOST", "localhost", "LocalHost"):
        for _ in range(2):
            story = client.get("/api/v1/stories?limit=1", headers={"Host": host}).get_json()["stories"][0]
            assert story["url"].startswith("http://localhost/stories/"), host
    assert replayed(app) >= 3


def test_the_replay_follows_a_step_whose_header_changes(make_app, newsroom, monkeypatch):
    # The replay holds no copy of what a step does: change what the security step writes, and
    # the answers it then makes, replayed, carry the new value.
    from web import security

    app = make_app(PUBLIC_URL_SCHEME="https")
    client = app.test_client()
    before = client.get("/api/v1/front", base_url="https://localhost")
    monkeypatch.setattr(security, "HSTS", "max-age=60")
    with app.app_context():
        from tests.fixtures.newsroom import Desk

        Desk(app).piece(newsroom["paper"], "A new piece moves the paper's state")
    made = client.get("/api/v1/front", base_url="https://localhost")
    again = client.get("/api/v1/front", base_url="https://localhost")
    assert replayed(app) >= 1 and again.headers["Strict-Transport-Security"] == "max-age=60"
    assert made.headers["Strict-Transport-Security"] == "max-age=60"
    assert before.headers.get("Strict-Transport-Security") != "max-age=60"


def test_every_step_says_what_it_does_for_an_answer_sent_again(make_app):
    steps = make_app().extensions["pipeline"]
    for step in (*steps.before, *steps.after, *steps.teardown):
        assert hasattr(step, "replay"), step
    assert steps.per_request == {"x-request-id", "x-ratelimit-limit", "x-ratelimit-remaining",
                                 "x-ratelimit-reset"}


def test_on_redis_the_generation_rides_the_rate_counts_round_trip(make_app, newsroom):
    import os

    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("set TEST_REDIS_URL=redis://127.0.0.1:6379/15")
    settings = dict(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI=url, READ_RATELIMIT="100000/minute")
    reader, writer = make_app(**settings), make_app(**settings)
    piece = newsroom["pieces"][2]
    path = f"/api/v1/stories/{piece.id}"
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        client = reader.test_client()
        client.get(path)
        assert client.get(path).status_code == 200 and replayed(reader) == 1
        changed = writer.test_client().patch(path, json={"headline": "Harbour reopens"},
                                             headers=auth(newsroom["admin"]))
        assert changed.status_code == 200
        fresh = client.get(path)
    assert fresh.get_json()["headline"] == "Harbour reopens"
    assert reader.extensions["paperdesk.replay.stats"]["stale"] == 1  # found out in the count's trip
    assert int(fresh.headers["X-RateLimit-Remaining"]) == 100000 - 3  # counted once, not twice

    # Replayed hits cost no round trip each: the counts come from a reserved block and the
    # generation from its lease (web/state.py, web/limits.py), and the round trips there are
    # are one script call each, never a pipeline (redis-py checks a pipeline's scripts with
    # SCRIPT EXISTS on every execute).
    import redis

    def calls(stats: dict, command: str) -> int:
        return stats.get(f"cmdstat_{command}", {}).get("calls", 0)

    server = redis.Redis.from_url(url)
    before = server.info("commandstats")
    for _ in range(40):
        assert client.get(path).status_code == 200
    after = server.info("commandstats")
    assert 0 < calls(after, "evalsha") - calls(before, "evalsha") + calls(after, "get") - calls(before, "get") < 20
    assert calls(after, "script|exists") == calls(before, "script|exists")


def test_a_lease_longer_than_the_write_is_still_never_stale(make_app, newsroom):
    """The failure case of the generation's lease: a reader that leased the generation just
    before another host's write must not serve the old answer after the write was answered.
    With a lease far longer than a write takes, only the writer's wait (SharedState.wait_visible)
    keeps it so; the writer's own next read sees its write at once."""
    import os

    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("set TEST_REDIS_URL=redis://127.0.0.1:6379/15")
    settings = dict(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI=url, READ_RATELIMIT="100000/minute",
                    SHARED_STATE_LEASE=0.4)
    reader, writer = make_app(**settings), make_app(**settings)
    piece = newsroom["pieces"][2]
    path = f"/api/v1/stories/{piece.id}"
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        client, desk = reader.test_client(), writer.test_client()
        client.get(path)
        assert client.get(path).status_code == 200 and replayed(reader) == 1  # leased now
        assert desk.get(path).status_code == 200
        changed = desk.patch(path, json={"headline": "Harbour reopens"}, headers=auth(newsroom["admin"]))
        assert changed.status_code == 200
        assert desk.get(path).get_json()["headline"] == "Harbour reopens"
        assert client.get(path).get_json()["headline"] == "Harbour reopens"


def test_urls_a_client_invents_never_grow_the_replays_memory_without_bound(make_app, newsroom, monkeypatch):
    from web import replay

    monkeypatch.setattr(replay, "MAX_URLS", 5)
    app = make_app()
    client = app.test_client()
    for n in range(12):
        assert client.get(f"/api/v1/stories?limit=2&junk={n}").status_code == 200
    assert 0 < len(app.extensions["paperdesk.replay"].vary) <= 5
    client.get("/api/v1/stories?limit=2&junk=11")
    assert replayed(app) == 1  # still replays what it remembers


def test_the_news_sitemap_is_kept_for_its_hour_and_never_past_it(make_app, newsroom):
    """The Google News sitemap lists two days back from the hour: its kept answers (the replay,
    the response cache) and its ETag hold for that hour and the paper's lists, and never past
    either. Pieces here aired at 09:00, 10:00 and 11:00 on T0; two days later the window starts
    at 10:00 until 10:59 and at 11:00 from 11:00 on, so the 10:00 piece leaves on the hour."""
    app = make_app()
    client = app.test_client()
    with time_machine.travel(T0.replace(hour=10, minute=59) + timedelta(days=2), tick=False):
        first = client.get("/sitemap-news.xml")
        assert first.status_code == 200 and first.data.count(b"<url>") == 2
        assert client.get("/sitemap-news.xml").data == first.data
        assert replayed(app) == 1  # kept: not built again within its hour
        held = client.get("/sitemap-news.xml", headers={"If-None-Match": first.headers["ETag"]})
        assert held.status_code == 304
    with time_machine.travel(T0.replace(hour=11, minute=0) + timedelta(days=2), tick=False):
        later = client.get("/sitemap-news.xml")
        assert later.status_code == 200 and later.data.count(b"<url>") == 1  # 10:00's piece left
        assert later.headers["ETag"] != first.headers["ETag"]
        assert client.get("/sitemap-news.xml", headers={"If-None-Match": first.headers["ETag"]}).status_code == 200
        before = replayed(app)
        again = client.get("/sitemap-news.xml")
        assert again.data == later.data and replayed(app) == before + 1


@pytest.fixture
def own_redis(tmp_path):
    """A Redis of the test's own, to stop and start (tests/test_shared_state.py RedisServer)."""
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()


def test_a_kept_revalidation_never_outlives_a_write_when_redis_is_down_or_restarted(make_app, newsroom, own_redis):
    """The 304s kept with every cache off, under the shared store's faults: with Redis down no
    kept answer is sent once the lease of the generation last read has run out (the generation
    cannot be read again, so the database answers; within the lease a replay is as safe as
    ever, since a write waits a lease before its answer), and a write answered after Redis came
    back empty (a new lifetime) ends the kept 304 on another worker."""
    settings = dict(CACHE_TYPE="NullCache", CACHE_NO_NULL_WARNING=True, RATELIMIT_ENABLED=True,
                    RATELIMIT_STORAGE_URI=own_redis.url, READ_RATELIMIT="100000/minute")
    reader, writer = make_app(**settings), make_app(**settings)
    piece = newsroom["pieces"][2]
    path = f"/api/v1/stories/{piece.id}"
    client = reader.test_client()
    etag = client.get(path).headers["ETag"]
    for _ in range(2):
        assert client.get(path, headers={"If-None-Match": etag}).status_code == 304
    assert replayed(reader) == 1
    own_redis.stop()
    try:
        # A condition, not a timed sleep: the lease is measured on CLOCK_BOOTTIME, which
        # time-machine does not move, and on a quick machine it outlives the stop.
        shared, deadline = state.for_app(reader), time.monotonic() + 5
        while shared.leased() is not None and time.monotonic() < deadline:
            time.sleep(0.001)
        assert shared.leased() is None
        down = client.get(path, headers={"If-None-Match": etag})
        assert down.status_code in (200, 304) and replayed(reader) == 1  # the pipeline answered
    finally:
        own_redis.start()  # empty: a new lifetime
    changed = writer.test_client().patch(path, json={"headline": "Harbour reopens"}, headers=auth(newsroom["admin"]))
    assert changed.status_code == 200
    fresh = client.get(path, headers={"If-None-Match": etag})
    assert fresh.status_code == 200 and fresh.get_json()["headline"] == "Harbour reopens"
