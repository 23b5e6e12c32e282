"""The request pipeline (web/pipeline.py) on the app exactly as production builds it: `wsgi.py` run
as gunicorn loads it, configured only through the environment, with its default limits.

Checks the steps' order, that the cheap refusals run before any database work, every rate
limit with its default, the exemptions, and that Retry-After appears on 429 and 503 only.
"""
from __future__ import annotations

import logging
import os
import runpy
from pathlib import Path

import pytest
from sqlalchemy import func, select

from extensions import db
from models import Subscriber
from services.delivery import subscriptions
from tests.fixtures.statements import statements
from web import pipeline

ROOT = Path(__file__).resolve().parent.parent

EXPECTED_BEFORE = [
    "web.request_log.start_request",
    "web.security.refuse_malformed_host",
    "web.security.refuse_nul_in_path",
    "web.security.refuse_large_bodies",
    "web.tenancy.refuse_malformed_key",
    "web.limits.check_limits",
    "web.caching.answer_from_recent_paper",
    "web.tenancy.load_paper",
    "web.caching.answer_not_modified",
    "web.caching.answer_from_cache",
]
EXPECTED_AFTER = [
    "web.caching.store_answer",
    "web.security.add_headers",
    "web.pipeline.cors",
    "web.caching.decorate",
    "web.compression.compress",
    "web.limits.add_limit_headers",
    "web.request_log.finish_request",
]


@pytest.fixture
def production(app, tmp_path, monkeypatch):
    """`wsgi.app`, built from the environment alone over the suite's database (as gunicorn
    would load it), with every default: limits on, memory store, caches on."""
    for name in list(os.environ):
        if name.startswith(("RATELIMIT_", "READ_RATELIMIT", "SUBSCRIBE_", "CACHE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", app.config["SQLALCHEMY_DATABASE_URI"])
    monkeypatch.setenv("INSTANCE_PATH", str(tmp_path / "instance"))
    monkeypatch.setenv("SECRET_KEY", "pipeline-test-secret")
    monkeypatch.setenv("LOG_REQUESTS", "false")
    logger = logging.getLogger("paperdesk")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    built = runpy.run_path(str(ROOT / "wsgi.py"))["app"]
    try:
        yield built
    finally:
        with built.app_context():
            db.session.remove()
            db.engine.dispose()
        # A production app logs JSON to stderr on its own handler; give pytest's back.
        logger.handlers[:], logger.propagate = saved[0], saved[1]
        logger.setLevel(saved[2])


@pytest.fixture
def paper(desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    return paper


def test_the_steps_run_in_the_documented_order(production):
    steps = pipeline.describe(production)
    assert steps["before"] == EXPECTED_BEFORE
    assert steps["after"] == EXPECTED_AFTER
    assert steps["teardown"] == ["web.tenancy.end_read"]
    # The CLI's owed generation move (web.state.install: a command that committed a change it
    # could not make visible ends with status 1; it returns at once inside a request), then
    # flask-sqlalchemy's session removal, replaced by the one that never raises.
    assert steps["teardown_appcontext"] == ["web.state._visible_at_end", "web.commit.end_session"]
    # No blueprint carries hooks of its own: the pipeline is the only list.
    for registry in (production.before_request_funcs, production.after_request_funcs,
                     production.teardown_request_funcs):
        assert set(registry) == {None}
    # The docstring lists the same steps in the same order.
    doc = pipeline.__doc__
    positions = [doc.index(name.split(".")[-1]) for name in EXPECTED_BEFORE]
    assert positions == sorted(positions)


def test_each_route_runs_only_the_steps_its_policy_asks_for(production, paper):
    """A health check answers for the process: no key check, rate count, paper lookup or
    response cache runs for it (web/steps.py runs_for); a paper's cached route runs them all."""
    steps = production.extensions["pipeline"]

    def names(endpoint):
        return [[f"{step.__module__}.{step.__name__}" for step in kind] for kind in steps.for_route(endpoint)]

    before, after, teardown = names("health.healthz")
    assert before == ["web.request_log.start_request", "web.security.refuse_malformed_host",
                      "web.security.refuse_nul_in_path", "web.security.refuse_large_bodies"]
    assert "web.caching.store_answer" not in after and "web.limits.add_limit_headers" not in after
    assert teardown == []
    assert names("stories.list_stories")[:2] == [EXPECTED_BEFORE, EXPECTED_AFTER]
    # And it shows on the wire: a keyed, rate-counted paper route is counted and checked; the
    # health check ignores even a malformed key and carries no rate-limit headers.
    client = production.test_client()
    health = client.get("/healthz", headers={"X-Desk-Key": "x"})
    assert health.status_code == 200 and "X-RateLimit-Limit" not in health.headers
    listed = client.get("/api/v1/stories", headers={"Host": "demo.localhost"})
    assert listed.status_code == 200 and "X-RateLimit-Limit" in listed.headers
    assert client.get("/api/v1/stories", headers={"Host": "demo.localhost", "X-Desk-Key": "x"}).status_code == 401


def test_installing_twice_or_beside_a_stray_hook_is_refused(production):
    with pytest.raises(RuntimeError, match="outside web/pipeline.py"):
        pipeline.install(production)


def test_cheap_refusals_answer_before_any_database_work(production, paper, still_clock):
    client = production.test_client()
    with statements(production) as counted:
        assert client.get("/api/v1/stories/%00").status_code == 404
        too_big = client.post("/api/v1/subscribers", data=b"x" * (64 * 1024 + 1),
                              headers={"Content-Type": "application/json"})
        assert too_big.status_code == 413
        for headers in ({"X-Desk-Key": "x"}, {"Authorization": "Basic dXNlcjpwdw=="},
                        {"Authorization": "Bearer desk_short"}):
            malformed = client.get("/api/v1/stories", headers=headers)
            assert malformed.status_code == 401, headers
            assert malformed.headers["WWW-Authenticate"].startswith("Bearer")
        # On a host that serves no paper as well: the key is refused before the lookup.
        unknown = client.get("/api/v1", headers={"X-Desk-Key": "x"},
                             base_url="http://nowhere.example")
        assert unknown.status_code == 401
    assert counted == []
    # A well-formed key is looked up: unknown -> 401 after one query, on a real paper.
    unknown_key = client.get("/api/v1/stories", headers={"X-Desk-Key": "desk_" + "A" * 43})
    assert unknown_key.status_code == 401


def test_reads_share_300_a_minute_per_client_across_routes(production, paper, still_clock):
    client = production.test_client()
    routes = ["/api/v1/sections", "/api/v1/stories", "/rss.xml", "/", "/api/v1",
              "/api/v1/front", "/masthead"]
    statuses = []
    for i in range(320):
        path = routes[i % len(routes)]
        response = client.get(path)
        statuses.append(response.status_code)
        if i % 10 == 0:
            health = client.get("/healthz")
            assert health.status_code == 200  # load balancers are never limited
            assert "X-RateLimit-Limit" not in health.headers
        if response.status_code == 200:
            assert "Retry-After" not in response.headers, path
            assert response.headers["X-RateLimit-Limit"] == "300"
        else:
            assert response.status_code == 429, path
            assert 1 <= int(response.headers["Retry-After"]) <= 60
            assert response.headers["X-RateLimit-Remaining"] == "0"
    assert statuses[:300] == [200] * 300
    assert set(statuses[300:]) == {429}
    # HEAD counts as a read; static files and readiness checks are exempt; another client
    # has a count of its own.
    assert client.head("/api/v1/stories").status_code == 429
    assert client.get("/readyz").status_code == 200
    static = client.get("/static/css/paper.css")
    assert static.status_code == 200 and "X-RateLimit-Limit" not in static.headers
    static.close()
    other = client.get("/api/v1/stories", environ_base={"REMOTE_ADDR": "10.0.0.9"})
    assert other.status_code == 200 and other.headers["X-RateLimit-Remaining"] == "299"


def test_a_429_costs_no_database_work(production, paper, still_clock):
    client = production.test_client()
    for _ in range(300):
        client.get("/api/v1/sections")
    with statements(production) as counted:
        assert client.get("/api/v1/stories").status_code == 429
    assert counted == []


def test_public_subscribe_limits_per_client_and_per_address(production, paper, still_clock):
    client = production.test_client()
    codes = [client.post("/api/v1/subscribers", json={"email": f"r{i}@example.com"}).status_code
             for i in range(6)]
    assert codes == [202] * 5 + [429]  # SUBSCRIBE_RATELIMIT: 5 a minute per client
    # The same address from many clients: SUBSCRIBE_ADDRESS_RATELIMIT, 3 an hour.
    codes = [client.post("/api/v1/subscribe", json={"email": "same@example.com"},
                         environ_base={"REMOTE_ADDR": f"10.1.0.{i}"}).status_code for i in range(4)]
    assert codes == [202, 202, 202, 429]
    # The landing page's form shares the per-address count, and answers in HTML.
    form = client.post("/subscribe", data={"email": "same@example.com", "sections": "World"},
                       environ_base={"REMOTE_ADDR": "10.2.0.1"})
    assert form.status_code == 429 and form.mimetype == "text/html"
    assert "Retry-After" in form.headers
    with production.app_context():
        assert db.session.scalar(select(func.count()).select_from(Subscriber)) == 6


def test_confirm_and_unsubscribe_posts_share_20_a_minute(production, paper, still_clock):
    client = production.test_client()
    assert client.post("/api/v1/subscribers", json={"email": "reader@example.com"}).status_code == 202
    with production.app_context():
        row = db.session.scalars(select(Subscriber)).one()
        token = subscriptions.make_token("unsubscribe", row)
    links = production.test_client()
    codes = [links.post("/subscribe/confirm", data={"token": "forged"},
                        environ_base={"REMOTE_ADDR": "10.3.0.1"}).status_code for _ in range(20)]
    assert codes == [400] * 20
    refused = links.post("/subscribe/unsubscribe", data={"token": token},
                         environ_base={"REMOTE_ADDR": "10.3.0.1"})
    assert refused.status_code == 429
    with production.app_context():
        assert db.session.get(Subscriber, row.id).unsubscribed_at is None


def test_keyed_writes_carry_the_default_per_route_limit(production, paper, desk, still_clock):
    admin = desk.key(paper, "admin")
    client = production.test_client()
    response = client.patch("/api/v1/config", json={}, headers={"X-Desk-Key": admin})
    assert response.status_code == 200
    assert response.headers["X-RateLimit-Limit"] == "600"
    assert "Retry-After" not in response.headers
    # A keyed batch subscribe is a keyed write, not a public subscribe.
    for i in range(6):
        batch = client.post("/api/v1/subscribers", json={"emails": [f"b{i}@example.com"]},
                            headers={"X-Desk-Key": admin})
        assert batch.status_code == 202
        assert batch.headers["X-RateLimit-Limit"] == "600"


def test_the_limit_classes_are_the_routes_own(production):
    from web import policy

    classes = {}
    for rule in production.url_map.iter_rules():
        classes.setdefault(policy.of(production, rule.endpoint).limit, set()).add(rule.endpoint)
    assert classes["subscribe"] == {"subscribers.create_subscribers", "subscribers.subscribe",
                                    "subscribe.subscribe_form"}
    assert classes["link"] == {"subscribe.confirm", "subscribe.unsubscribe", "subscribe.save_preferences",
                               "subscribers.update_preferences"}
    assert classes["none"] == {"static", "site.favicon", "health.healthz", "health.readyz"}
