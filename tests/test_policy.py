"""Route policy (web/policy.py): each route's facts declared once, next to it, and read by the
request path: CORS, caching, rate-limit class and tenancy follow what the route says."""
from __future__ import annotations

import pytest

from web import policy


@pytest.fixture
def paper(desk):
    return desk.paper("demo")


def test_cors_follows_each_routes_policy(client, paper):
    origin = {"Origin": "https://reader.example"}
    for path in ["/api/v1/stories", "/rss.xml", "/feed.json", "/sitemap-news.xml", "/sitemap-1.xml",
                 "/llms.txt", "/front.json", "/api/v1/no-such-route"]:
        response = client.get(path, headers=origin)
        assert response.headers.get("Access-Control-Allow-Origin") == "*", path
    for path in ["/", "/subscribe", "/masthead", "/robots.txt"]:
        assert "Access-Control-Allow-Origin" not in client.get(path, headers=origin).headers, path
    preflight = client.options("/rss.xml", headers={**origin, "Access-Control-Request-Method": "GET"})
    assert "GET" in preflight.headers["Access-Control-Allow-Methods"]
    assert "POST" not in preflight.headers["Access-Control-Allow-Methods"]


def test_every_route_has_a_policy_the_request_path_can_read(app):
    for rule in app.url_map.iter_rules():
        found = policy.of(app, rule.endpoint)
        assert found.limit in policy.LIMITS and found.cors in policy.CORS, rule.endpoint
    assert not policy.of(app, "health.healthz").paper and not policy.of(app, "static").paper
    assert not policy.of(app, "subscribe.confirm_page").cache
    assert policy.of(app, "pages.search_page").query == {"q", "page"}


def test_health_answers_for_the_process_on_any_host(client, paper):
    assert client.get("/healthz", headers={"Host": "nobody.example.org"}).status_code == 200
    assert client.get("/", headers={"Host": "nobody.example.org"}).status_code == 404


def test_a_bad_policy_is_refused_where_it_is_declared():
    with pytest.raises(TypeError):
        policy.route(cahce=False)
    with pytest.raises(ValueError):
        policy.route(limit="sometimes")


def test_errors_are_problem_json_where_the_policy_says_programs_ask(client, paper):
    """Routes for programs (policy `problems`) answer errors as problem+json, readers' routes
    with the HTML page; a path no route matched answers as the routes it starts like."""
    programs = ["/api/v1/stories/999999", "/api/v1/no-such-route", "/log/tile/9/nope", "/log/nope",
                "/oembed?url=https://elsewhere.example/x", "/sitemap-999.xml", "/ap/nope",
                "/.well-known/nope"]
    readers = ["/stories/no-such-story", "/api/nope", "/nope", "/embed/999999", "/masthead/nobody"]
    for path in programs:
        response = client.get(path)
        assert response.status_code >= 400 and response.mimetype == "application/problem+json", path
    for path in readers:
        response = client.get(path)
        assert response.status_code >= 400 and response.mimetype == "text/html", path
