"""What an outside review found on the request path, each through HTTP as a client meets it:
`Link` headers built from the declared query parameters only; a malformed Host answered 400, not
a server error; one rate-limit count for a host's workers; public answers that no browser or
proxy keeps for more than a minute; no secret in a request log line."""
from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
import time_machine

from tests.fixtures.newsroom import T0

DAY = T0 + timedelta(days=1)


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    for n in range(6):
        desk.piece(paper, f"Story {n}", on_air_at=T0 + timedelta(hours=n))
    return paper


def test_a_cached_link_never_carries_another_clients_parameters(make_app, newsroom):
    app = make_app()  # every cache on, as production runs
    with time_machine.travel(DAY, tick=False):
        first = app.test_client().get("/api/v1/stories?limit=2&junk=" + "!" * 2900)
        assert first.status_code == 200
        assert "junk" not in first.headers["Link"]
        plain = app.test_client().get("/api/v1/stories?limit=2")
        assert plain.headers["Link"] == first.headers["Link"].replace("?limit=2", "?limit=2")
        assert "junk" not in plain.headers["Link"] and len(plain.headers["Link"]) < 400
        target = plain.headers["Link"][1:plain.headers["Link"].index(">")]
        assert app.test_client().get(target.replace("http://localhost", "")).status_code == 200


@pytest.mark.parametrize("host", ["demo..papers.test", ".papers.test", "a" * 64 + ".papers.test",
                                  "-demo.papers.test", "demo.papers.test:port"])
@pytest.mark.parametrize("path", ["/", "/stories/x", "/api/v1/stories", "/subscribe", "/rss.xml"])
def test_a_malformed_host_is_a_400_on_every_kind_of_route(client, newsroom, host, path):
    response = client.get(path, headers={"Host": host})
    assert response.status_code == 400
    if response.mimetype == "application/problem+json":
        assert "Host" in response.get_json()["detail"]
    else:  # a reader's page, when one can be drawn (werkzeug bound the host)
        assert path in ("/", "/stories/x", "/subscribe") and response.mimetype == "text/html"
        assert "Host header" in response.get_data(as_text=True)


def test_well_formed_hosts_are_served_or_unknown(client, newsroom):
    assert client.get("/api/v1/stories", headers={"Host": "localhost:5000"}).status_code == 200
    assert client.get("/api/v1/stories", headers={"Host": "LOCALHOST"}).status_code == 200
    assert client.get("/", headers={"Host": "nobody.example.org"}).status_code == 404


def test_a_hosts_workers_share_one_rate_limit_count(make_app, newsroom, still_clock):
    # Two apps on one instance folder stand for two gunicorn workers of one host, memory://.
    settings = dict(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="memory://", READ_RATELIMIT="6/minute")
    first, second = make_app(**settings).test_client(), make_app(**settings).test_client()
    statuses = [(first if n % 2 else second).get("/api/v1/sections").status_code for n in range(8)]
    assert statuses == [200] * 6 + [429, 429]


def test_public_answers_reach_caches_again_within_a_minute(client, newsroom):
    with time_machine.travel(DAY, tick=False):
        story = client.get("/api/v1/stories").get_json()["stories"][0]
        for path in ["/api/v1/stories", f"/api/v1/stories/{story['id']}", "/", "/rss.xml",
                     f"/embed/{story['id']}"]:  # share cards: immutable URLs (tests/test_share_cards.py)
            response = client.get(path)
            assert response.status_code == 200, path
            directives = dict(re.findall(r"([a-z-]+)=(\d+)", response.headers["Cache-Control"]))
            lifetime = int(directives.get("max-age", 0)) + int(directives.get("stale-while-revalidate", 0))
            assert 0 < lifetime <= 60, (path, response.headers["Cache-Control"])
            assert response.headers["ETag"], path


def test_a_request_log_line_holds_no_token(client, newsroom, caplog):
    secret = "tok.SECRETVALUE-reader@example.org"
    with caplog.at_level(logging.INFO, logger="paperdesk.request"):
        client.get(f"/subscribe/confirm?token={secret}&x=1")
        client.get(f"/subscribe/preferences?Token={secret}")
    lines = [(r.getMessage(), getattr(r, "query", "")) for r in caplog.records if r.name == "paperdesk.request"]
    assert len(lines) == 2
    assert all("SECRETVALUE" not in message + query for message, query in lines)
    assert lines[0][1] == "token=[redacted]&x=1"


def test_stylesheets_and_scripts_go_gzipped_to_clients_that_accept_it(client, newsroom):
    import gzip
    import re as regex

    page = client.get("/").get_data(as_text=True)
    for url in regex.findall(r'(/static/[^"]+\.(?:css|js))', page)[:3]:
        plain = client.get(url, buffered=True)
        packed = client.get(url, headers={"Accept-Encoding": "gzip, br"})
        assert plain.status_code == packed.status_code == 200, url
        assert "Content-Encoding" not in plain.headers and "Accept-Encoding" in plain.headers["Vary"]
        assert packed.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed.headers["Vary"]
        assert gzip.decompress(packed.data) == plain.data and len(packed.data) < len(plain.data)
        assert "immutable" in packed.headers["Cache-Control"]
        again = client.get(url, headers={"Accept-Encoding": "gzip", "If-None-Match": packed.headers["ETag"]})
        assert again.status_code == 304
