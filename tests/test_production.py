"""Production behaviour (docs/DEPLOYING.md): the response cache, surrogate keys and the CDN purge
hook, request ids and JSON request logs, ProxyFix, /readyz without a database, gunicorn's config.

The suite's `app` runs with NullCache; tests here build a second app on the same database with
the cache they need (`make_app`), so they see exactly what production would.
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
import time_machine

from app import create_app
from services.delivery import purge
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements
from web import request_log

ROOT = Path(__file__).resolve().parent.parent
VOLATILE = {"X-Request-ID"}


def filing(headline: str) -> dict:
    return {"headline": headline, "dek": "Ships return.", "section": "World", "byline": "Rex Ledger",
            "prose": "The harbour reopened[^1].",
            "cited_facts": [{"statement": "It reopened", "source": "Port Authority",
                             "instrument": "Notice", "claim_key": "port-1"}]}


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    pieces = [desk.piece(paper, f"Story {n}", on_air_at=T0.replace(hour=9 + n)) for n in range(3)]
    desk.edition(paper, T0.date())
    return {"paper": paper, "pieces": pieces, "admin": desk.key(paper, "admin"),
            "read": desk.key(paper, "read")}


def public_paths(newsroom) -> list[str]:
    piece = newsroom["pieces"][0]
    return ["/api/v1/stories?limit=200", "/api/v1/stories", f"/api/v1/stories/{piece.id}",
            "/api/v1/front", "/front.json", "/api/v1/days/2026-11-01", "/api/v1/search?q=story",
            "/", f"/stories/{piece.slug}", "/days/2026-11-01", "/sections/world",
            f"/embed/{piece.id}", f"/oembed?url=http://localhost/stories/{piece.slug}",
            "/rss.xml", "/sitemap.xml", "/llms.txt", "/api/v1"]


# ----------------------------------------------------------------------------- response cache


def test_a_hot_public_get_is_served_from_the_cache_with_the_same_headers(make_app, newsroom):
    cached = make_app()
    client = cached.test_client()
    origin = {"Origin": "https://reader.example"}
    # Every feed too: the response cache is their one cache (blueprints/feeds.py).
    for path in [*public_paths(newsroom), "/feed.json", "/podcast.xml"]:
        miss = client.get(path, headers=origin)
        assert miss.status_code == 200, path
        with statements(cached) as seen:
            hit = client.get(path, headers=origin)
        # The worker resolved this paper a moment ago (tenancy.recent_snapshot): no statement.
        assert seen == [], (path, seen)
        assert hit.status_code == 200 and hit.data == miss.data, path
        strip = lambda r: sorted((k, v) for k, v in r.headers.items() if k not in VOLATILE)  # noqa: E731
        assert strip(hit) == strip(miss), path
        assert hit.headers["ETag"] and "stale-while-revalidate" in hit.headers["Cache-Control"]
        if path.startswith(("/api/v1", "/oembed", "/front.json")):
            assert hit.headers["Access-Control-Allow-Origin"] == "*", path


def test_the_cache_key_holds_the_host_and_the_sorted_query(make_app, newsroom, desk):
    desk.paper("other", host="news.example.org")
    client = make_app().test_client()
    a = client.get("/api/v1/stories?limit=2&x=1").get_json()
    assert client.get("/api/v1/stories?x=1&limit=2").get_json() == a
    assert len(client.get("/api/v1/stories?limit=1").get_json()["stories"]) == 1
    # The same path on another host is another answer, with that host's absolute URLs.
    alias = client.get("/api/v1", base_url="http://demo.localhost").get_json()
    assert alias["home"] == "http://demo.localhost/"
    assert client.get("/api/v1").get_json()["home"] == "http://localhost/"
    assert client.get("/api/v1", base_url="http://news.example.org").get_json()["paper"] == "other"


def test_a_write_through_the_api_makes_the_cached_list_stale_at_once(make_app, newsroom):
    client = make_app().test_client()
    before = client.get("/api/v1/stories")
    assert before.get_json()["count"] == 3
    assert client.get("/api/v1/stories").get_json() == before.get_json()  # now cached
    admin = auth(newsroom["admin"])
    filed = client.post("/api/v1/stories", json=filing("Harbour reopens"), headers=admin)
    assert filed.status_code == 201
    # A draft is not public: the list is the same, but under a new version.
    assert client.get("/api/v1/stories").get_json()["count"] == 3
    aired = client.put(f"/api/v1/stories/{filed.get_json()['id']}/air", headers=admin)
    assert aired.status_code == 200
    after = client.get("/api/v1/stories")
    assert after.get_json()["count"] == 4
    assert after.get_json()["stories"][0]["headline"] == "Harbour reopens"
    assert after.headers["ETag"] != before.headers["ETag"]
    gone = client.delete(f"/api/v1/stories/{filed.get_json()['id']}/air", headers=admin)
    assert gone.status_code == 200
    assert client.get("/api/v1/stories").get_json()["count"] == 3


def test_keyed_requests_never_read_or_write_the_cache(make_app, newsroom, desk):
    desk.piece(newsroom["paper"], "Secret draft", on_air_at=None)
    cached = make_app()
    client = cached.test_client()
    public = client.get("/api/v1/stories").get_json()
    assert "Secret draft" not in {s["headline"] for s in public["stories"]}
    for _ in range(2):
        with statements(cached) as seen:
            keyed = client.get("/api/v1/stories", headers=auth(newsroom["read"]))
        assert len(seen) > 2  # paper, key, the list itself: never a cached answer
        assert "Secret draft" in {s["headline"] for s in keyed.get_json()["stories"]}
        assert keyed.headers["Cache-Control"] == "private, no-store"
        assert "Surrogate-Key" not in keyed.headers
    # ...and the keyed answer was not stored for the public lane either.
    assert client.get("/api/v1/stories").get_json() == public
    x_desk = client.get("/api/v1/stories", headers={"X-Desk-Key": newsroom["read"]}).get_json()
    assert x_desk["count"] == 4


def test_a_revalidation_is_answered_before_the_view(make_app, newsroom):
    cached = make_app()
    client = cached.test_client()
    etag = client.get("/api/v1/stories?limit=200").headers["ETag"]
    with statements(cached) as seen:
        response = client.get("/api/v1/stories?limit=200", headers={"If-None-Match": etag})
    assert response.status_code == 304 and response.data == b""
    assert seen == []  # the worker's recent snapshot of the paper holds its version
    assert "Surrogate-Key" not in response.headers  # a 304 must not rewrite the stored keys


def test_without_snapshots_a_hit_or_a_304_costs_one_paper_lookup(make_app, newsroom):
    cached = make_app(SHARED_STATE="off")
    client = cached.test_client()
    etag = client.get("/api/v1/stories").headers["ETag"]
    for headers, status in (({}, 200), ({"If-None-Match": etag}, 304)):
        with statements(cached) as seen:
            assert client.get("/api/v1/stories", headers=headers).status_code == status
        assert len(seen) == 1 and "papers" in seen[0] and "pieces" not in seen[0], seen


def test_another_workers_write_is_seen_by_the_next_read(make_app, newsroom):
    # Two apps on one database stand for two gunicorn workers of one host: each keeps its own
    # snapshot of the paper, and the host's shared generation (web/state.py) tells the reader
    # that a write was answered, so its very next read is fresh.
    # A day on: the newsroom's pieces aired at 09:00-11:00 (at T0 they would still be scheduled).
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        reader, writer = make_app().test_client(), make_app().test_client()
        before = reader.get("/api/v1/stories")
        assert before.get_json()["count"] == 3
        assert reader.get("/api/v1/stories", headers={"If-None-Match": before.headers["ETag"]}).status_code == 304
        admin = auth(newsroom["admin"])
        filed = writer.post("/api/v1/stories", json=filing("Harbour reopens"), headers=admin)
        assert writer.put(f"/api/v1/stories/{filed.get_json()['id']}/air", headers=admin).status_code == 200
        fresh = reader.get("/api/v1/stories", headers={"If-None-Match": before.headers["ETag"]})
        assert fresh.status_code == 200 and fresh.get_json()["count"] == 4
        assert fresh.headers["ETag"] != before.headers["ETag"]


def test_a_paper_made_private_is_hidden_by_the_worker_that_made_it_at_once(make_app, newsroom):
    client = make_app().test_client()
    assert client.get("/api/v1/stories").status_code == 200
    assert client.get("/api/v1/stories").status_code == 200  # a hit on the snapshot
    changed = client.patch("/api/v1/config", json={"is_public": False},
                           headers=auth(newsroom["admin"]))
    assert changed.status_code == 200, changed.get_json()
    assert client.get("/api/v1/stories").status_code == 404


def test_each_worker_keeps_a_bounded_copy_of_hot_answers(make_app, newsroom):
    cached = make_app(RESPONSE_CACHE_LOCAL_BYTES=64 << 10)
    client = cached.test_client()
    paths = public_paths(newsroom)
    for path in paths:
        client.get(path)
    local = cached.extensions["paperdesk.replay"].kept
    assert 0 < local.size <= 64 << 10
    # Emptying the shared cache leaves the worker's own copy (the replay's) answering.
    with cached.app_context():
        from extensions import cache
        cache.clear()
    with statements(cached) as seen:
        assert client.get("/api/v1/stories").status_code == 200
    assert seen == []
    assert make_app(CACHE_TYPE="NullCache").extensions["paperdesk.replay"].bodies is False
    assert make_app(RESPONSE_CACHE_LOCAL_BYTES=0).extensions["paperdesk.replay"].kept is None


def test_errors_and_one_off_pages_are_not_stored(make_app, newsroom):
    cached = make_app()
    client = cached.test_client()
    assert client.get("/api/v1/stories/999999").status_code == 404
    with statements(cached) as seen:
        assert client.get("/api/v1/stories/999999").status_code == 404
    assert any("pieces" in statement for statement in seen)  # the view ran again


def test_a_redis_cache_keeps_answers_exact(make_app, newsroom):
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("set TEST_REDIS_URL=redis://127.0.0.1:6379/15 to test the Redis cache")
    cached = make_app(CACHE_TYPE="RedisCache", CACHE_REDIS_URL=url,
                      CACHE_KEY_PREFIX=f"paperdesk-test-{os.getpid()}:")
    client = cached.test_client()
    for path in ("/api/v1/front", f"/embed/{newsroom['pieces'][0].id}", "/rss.xml"):
        miss = client.get(path)
        with statements(cached) as seen:
            hit = client.get(path)
        assert seen == [] and hit.data == miss.data
        assert hit.headers["Content-Type"] == miss.headers["Content-Type"]
        assert hit.headers.get("Content-Security-Policy") == miss.headers.get("Content-Security-Policy")
    with cached.app_context():
        from extensions import cache
        cache.clear()


def test_an_unreachable_redis_cache_is_skipped_on_every_cached_route(make_app, newsroom):
    # Found by `make faults` (scenario redis): the feeds' own cache let a Redis outage through
    # as a 500 on /rss.xml while the response cache skipped it.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there
    down = make_app(CACHE_TYPE="RedisCache", CACHE_REDIS_URL=f"redis://127.0.0.1:{port}/0?socket_connect_timeout=0.25",
                    RESPONSE_CACHE_LOCAL_BYTES=0)
    client = down.test_client()
    for path in ("/api/v1/front", "/rss.xml", "/podcast.xml", "/front.json", "/llms.txt", "/sitemap.xml",
                 "/sitemap-news.xml", "/"):
        assert client.get(path).status_code == 200, path


# ----------------------------------------------------------------------------- surrogate keys


def test_surrogate_keys_name_the_paper_and_the_piece(client, newsroom):
    paper, piece = newsroom["paper"], newsroom["pieces"][0]
    both = f"paper-{paper.id} piece-{piece.id}"
    for path in (f"/api/v1/stories/{piece.id}", f"/stories/{piece.slug}", f"/embed/{piece.slug}",
                 f"/oembed?url=http://localhost/stories/{piece.slug}", f"/cards/{piece.slug}.png", "card"):
        if path == "card":  # the current card, where the unversioned URL redirects
            path = client.get(f"/cards/{piece.slug}.png").headers["Location"].removeprefix("http://localhost")
        response = client.get(path)
        assert response.status_code == (302 if path.endswith(f"{piece.slug}.png") else 200), path
        assert response.headers["Surrogate-Key"] == both, path
    for path in ("/api/v1/stories", "/api/v1/front", "/", "/rss.xml", "/sitemap.xml"):
        assert client.get(path).headers["Surrogate-Key"] == f"paper-{paper.id}", path
    assert "Surrogate-Key" not in client.get("/healthz").headers


def purges(receiver) -> list[dict]:
    """The bodies `receiver` (a stand-in CDN purge API) was posted, decoded."""
    return [json.loads(request["body"]) for request in receiver.requests]


def test_the_purge_hook_posts_surrogate_keys_when_a_piece_goes_on_and_off_air(make_app, newsroom,
                                                                               receiver):
    hooked = make_app(PURGE_URL=receiver.url + "/purge", PURGE_HEADER="Fastly-Key: s3cret")
    client, runner = hooked.test_client(), hooked.test_cli_runner()

    def drain():  # the worker derives purges from the change feed
        with hooked.app_context():  # the suite holds its own app's context open
            result = runner.invoke(args=["drain-outbox", "--once"])
        assert result.exit_code == 0, result.output
        assert purge.sender.wait_idle(timeout=5)

    admin, paper = auth(newsroom["admin"]), newsroom["paper"]
    filed = client.post("/api/v1/stories", json=filing("Harbour reopens"), headers=admin).get_json()
    drain()  # the pieces aired before this test
    receiver.requests.clear()
    revised = client.patch(f"/api/v1/stories/{filed['id']}", json={"dek": "Still a draft."},
                           headers=admin)
    assert revised.status_code == 200
    drain()
    assert purges(receiver) == []  # drafts are not public: nothing to purge
    keys = [f"paper-{paper.id}", f"piece-{filed['id']}"]

    assert client.put(f"/api/v1/stories/{filed['id']}/air", headers=admin).status_code == 200
    drain()
    assert purges(receiver) == [{"surrogate_keys": keys}]
    post = receiver.requests[0]
    assert post["path"] == "/purge" and post["headers"]["Surrogate-Key"] == " ".join(keys)
    assert post["headers"]["Fastly-Key"] == "s3cret"
    assert post["headers"]["Content-Type"] == "application/json"

    assert client.delete(f"/api/v1/stories/{filed['id']}/air", headers=admin).status_code == 200
    drain()
    assert purges(receiver) == [{"surrogate_keys": keys}] * 2


def test_a_rejected_write_purges_nothing(make_app, newsroom, receiver):
    client = make_app(PURGE_URL=receiver.url + "/purge").test_client()
    admin = auth(newsroom["admin"])
    assert client.put("/api/v1/stories/999999/air", headers=admin).status_code == 404
    bad = client.post("/api/v1/stories", json={**filing("x"), "section": "Nope"}, headers=admin)
    assert bad.status_code == 422
    assert purge.sender.wait_idle(timeout=5)
    assert purges(receiver) == []


# ----------------------------------------------------------------------------- request ids, logs


def test_the_request_id_is_echoed_or_made(client, newsroom):
    assert client.get("/api/v1", headers={"X-Request-ID": "trace-42.a"}).headers["X-Request-ID"] == "trace-42.a"
    made = client.get("/api/v1").headers["X-Request-ID"]
    assert len(made) == 32 and int(made, 16) >= 0
    for bad in ("has spaces", "x" * 129, "line\tbreak"):
        echoed = client.get("/api/v1", headers={"X-Request-ID": bad}).headers["X-Request-ID"]
        assert echoed != bad and len(echoed) == 32
    # On errors, 304s and the health checks too.
    assert client.get("/nowhere", headers={"X-Request-ID": "r1"}).headers["X-Request-ID"] == "r1"
    etag = client.get("/api/v1").headers["ETag"]
    revalidated = client.get("/api/v1", headers={"If-None-Match": etag, "X-Request-ID": "r2"})
    assert revalidated.status_code == 304 and revalidated.headers["X-Request-ID"] == "r2"
    assert client.get("/healthz", headers={"X-Request-ID": "r3"}).headers["X-Request-ID"] == "r3"


def test_one_json_line_per_request(client, newsroom, caplog):
    with caplog.at_level(logging.INFO, logger="paperdesk.request"):
        client.get("/api/v1/stories?limit=2", headers={"X-Request-ID": "trace-7"})
        client.get("/api/v1/stories/999999")
    lines = [json.loads(request_log.JsonFormatter().format(r))
             for r in caplog.records if r.name == "paperdesk.request"]
    assert len(lines) == 2
    first, second = lines
    assert first["level"] == "INFO" and first["request_id"] == "trace-7"
    assert (first["method"], first["path"], first["query"], first["status"], first["paper"]) == (
        "GET", "/api/v1/stories", "limit=2", 200, "demo")
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] >= 0
    assert first["time"].endswith("Z") and first["message"] == "GET /api/v1/stories 200"
    assert second["status"] == 404 and len(second["request_id"]) == 32


def test_a_json_line_is_one_line_of_valid_json():
    formatter = request_log.JsonFormatter()
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        record = logging.getLogger("paperdesk.test").makeRecord(
            "paperdesk.test", logging.ERROR, __file__, 1, "failed: %s", ("a\"b",), sys.exc_info(),
            extra={"paper": "demo"})
    line = formatter.format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == 'failed: a"b' and entry["paper"] == "demo"
    assert "ValueError: boom" in entry["exc_info"]


def test_the_request_line_written_straight_to_the_handler_is_the_formatters_line(monkeypatch):
    """`log_request` writes its line straight to the `paperdesk` handler when nothing else would
    see the record (request_log._direct): the same bytes the formatter makes of the record, and
    with anything else on the way (a filter here) the record goes through logging as before."""
    logger = logging.getLogger("paperdesk")
    saved = (list(logger.handlers), logger.propagate, logger.level, request_log.log.level)
    stream = io.StringIO()
    handler = request_log.LineHandler(stream)
    handler.setFormatter(request_log.JsonFormatter())
    made = []
    make_record = request_log.log.makeRecord
    monkeypatch.setattr(request_log.log, "makeRecord", lambda *a, **k: made.append(1) or make_record(*a, **k))
    for name, value in (("time", 1795955375.5118), ("time_ns", 1795955375511800000), ("perf_counter", 8.0)):
        monkeypatch.setattr(time, name, lambda value=value: value)
    line = dict(request_id="r-1", method="GET", path="/api/v1/stories/3", query="token=abc&x=1",
                status=200, started=7.99, paper="demo", remote_addr="203.0.113.9", served="replay")
    seen = []
    try:
        logger.handlers[:], logger.propagate = [handler], False
        logger.setLevel(logging.INFO)
        request_log.log.setLevel(logging.NOTSET)
        request_log.log_request(**line)
        direct = stream.getvalue()
        assert made == []  # no LogRecord: the handler wrote the line itself
        handler.addFilter(lambda record: seen.append(record) or True)
        request_log.log_request(**line)
    finally:
        logger.handlers[:], logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])
        request_log.log.setLevel(saved[3])
    assert made == [1] and len(seen) == 1  # the filter saw the record: logging wrote it
    assert stream.getvalue() == direct * 2
    entry = json.loads(direct)
    assert list(entry) == ["time", "level", "logger", "message", "request_id", "method", "path",
                           "query", "status", "duration_ms", "paper", "remote_addr", "served"]
    assert entry["time"] == "2026-11-29T12:29:35.511Z" and entry["duration_ms"] == 10.0
    assert entry["query"] == "token=[redacted]&x=1" and entry["message"] == "GET /api/v1/stories/3 200"


def test_a_request_line_the_stream_refuses_is_handed_to_logging(monkeypatch):
    """When the direct write of the request line fails (the stream raises), the record goes
    through logging as it did before the direct path: written by the handler's own emit, or
    reported by logging's handleError, never raised into the request."""
    logger = logging.getLogger("paperdesk")
    saved = (list(logger.handlers), logger.propagate, logger.level, request_log.log.level)

    class Refusing(io.StringIO):
        refusals = 1

        def write(self, text):
            if self.refusals:
                self.refusals -= 1
                raise OSError("stream full")
            return super().write(text)

    stream = Refusing()
    handler = request_log.LineHandler(stream)
    handler.setFormatter(request_log.JsonFormatter())
    made = []
    make_record = request_log.log.makeRecord
    monkeypatch.setattr(request_log.log, "makeRecord", lambda *a, **k: made.append(1) or make_record(*a, **k))
    try:
        logger.handlers[:], logger.propagate = [handler], False
        logger.setLevel(logging.INFO)
        request_log.log.setLevel(logging.NOTSET)
        request_log.log_request(request_id="r-2", method="GET", path="/healthz", query="", status=200,
                                started=time.perf_counter(), paper=None, remote_addr="127.0.0.1", served="app")
    finally:
        logger.handlers[:], logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])
        request_log.log.setLevel(saved[3])
    assert made == [1]  # handed to logging after the refused write
    assert json.loads(stream.getvalue())["path"] == "/healthz"  # which wrote it


# ----------------------------------------------------------------------------- proxies, health


def test_forwarded_headers_count_only_behind_a_trusted_proxy(make_app, newsroom, caplog):
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
    direct = make_app().test_client().get("/api/v1", headers=forwarded)
    assert "Strict-Transport-Security" not in direct.headers
    with caplog.at_level(logging.INFO, logger="paperdesk.request"):
        proxied = make_app(TRUSTED_PROXIES=1).test_client().get("/api/v1", headers=forwarded)
    assert proxied.headers["Strict-Transport-Security"].startswith("max-age=")
    line = [r for r in caplog.records if r.name == "paperdesk.request"][-1]
    assert line.remote_addr == "203.0.113.9"


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://nobody@127.0.0.1:1/nothing?connect_timeout=2",
    "sqlite:////nonexistent-directory/paperdesk.db",
])
def test_readyz_is_a_503_problem_when_the_database_is_unreachable(url, tmp_path):
    broken = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": url,
                         "INSTANCE_PATH": str(tmp_path), "RATELIMIT_ENABLED": False,
                         "CACHE_TYPE": "NullCache"})
    client = broken.test_client()
    assert client.get("/healthz").status_code == 200
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["status"] == 503 and response.headers["Retry-After"]


def test_readyz_answers_when_the_database_does(client):
    response = client.get("/readyz")
    assert response.status_code == 200 and response.get_json()["database"] == "ok"


@pytest.mark.slow
def test_gunicorn_config_loads():
    result = subprocess.run([sys.executable, "-m", "gunicorn", "--check-config", "-c",
                             str(ROOT / "gunicorn.conf.py")], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_a_cold_read_reuses_the_workers_recent_paper_row(make_app, newsroom):
    cold = make_app(CACHE_TYPE="NullCache")
    client = cold.test_client()
    first = client.get("/api/v1/front")
    with statements(cold) as seen:
        again = client.get("/api/v1/front")
    assert again.get_json() == first.get_json()
    # Neither the paper lookup nor the newsroom counts ran again: the paper's version stands.
    assert not any("FROM papers" in s for s in seen), seen
    assert len(seen) == 1, seen  # every rail in one statement (the sections are kept per version)
    # Pages read the paper's relationships through the merged row.
    assert client.get("/").status_code == 200 and client.get("/masthead").status_code == 200


def test_a_read_right_after_a_paper_write_shows_the_paper_as_written(make_app, newsroom):
    # The worker keeps its paper's row (web/tenancy.py) and merges it into each public read; a
    # write to the paper forgets it, and the next read reads the row again (a Core row, the
    # same lookup): the new nameplate at once, and a paper made private answers as absent.
    worker = make_app(CACHE_TYPE="NullCache")
    client = worker.test_client()
    story, admin = f"/stories/{newsroom['pieces'][0].id}", auth(newsroom["admin"])
    assert "The Demo Times" in client.get(story).get_data(as_text=True)
    with statements(worker) as seen:
        assert "The Demo Times" in client.get(story).get_data(as_text=True)
    assert not any("FROM papers" in s for s in seen), seen  # the kept row answered
    assert client.patch("/api/v1/config", json={"nameplate": "The Written Times"}, headers=admin).status_code == 200
    with statements(worker) as seen:
        page = client.get(story).get_data(as_text=True)
        index = client.get("/api/v1").get_json()
    assert "The Written Times" in page and "The Demo Times" not in page
    assert index["nameplate"] == "The Written Times"
    assert sum("FROM papers" in s for s in seen) == 1, seen  # read once, then kept again
    assert client.patch("/api/v1/config", json={"is_public": False}, headers=admin).status_code == 200
    assert client.get(story).status_code == 404
    assert client.get(f"/api/v1/stories/{newsroom['pieces'][0].id}").status_code == 404
    assert client.get(f"/api/v1/stories/{newsroom['pieces'][0].id}", headers=admin).status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("wal", [True, False])
def test_a_sqlite_database_runs_in_write_ahead_log_mode_unless_told_not_to(tmp_path, wal):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'paper.db'}",
           "INSTANCE_PATH": str(tmp_path), "SQLITE_WAL": "1" if wal else "0", "FLASK_APP": "app"}
    env.pop("TEST_DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-m", "flask", "init-db"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    import sqlite3

    with contextlib.closing(sqlite3.connect(tmp_path / "paper.db")) as conn:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == ("wal" if wal else "delete")


def test_a_cold_front_page_reads_only_its_rails_once_the_worker_knows_the_version(make_app, newsroom):
    # The sections and the newsroom's counts are kept per paper version (services/reading/memo.py):
    # with no response cache, the next front page of the same version runs one statement.
    cold = make_app(CACHE_TYPE="NullCache")
    client = cold.test_client()
    first = client.get("/")
    assert first.status_code == 200
    with statements(cold) as seen:
        again = client.get("/")
    assert again.status_code == 200 and again.data == first.data
    assert len(seen) == 1 and seen[0].startswith("SELECT pieces."), seen  # the rails' UNION ALL
