"""The response cache keys an answer on the query parameters its route declares, so query
strings a route does not read cannot fill the cache from outside; and every view that reads a
query parameter declares it (else two different answers could share one key)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from extensions import cache
from web import policy

ROOT = Path(__file__).resolve().parent.parent
# Read only by views that are never stored (policy `cache=False`: the e-mailed confirm and unsubscribe
# links), so they need no declaration.
NEVER_STORED = {"token"}


@pytest.fixture
def cached(make_app, desk):
    paper = desk.paper("demo")
    for n in range(3):
        desk.piece(paper, f"Piece {n}")
    return make_app(CACHE_TYPE="SimpleCache", RESPONSE_CACHE_LOCAL_BYTES=0)


def stored(app) -> int:
    with app.app_context():
        return sum(1 for key in list(cache.cache._cache) if "resp:" in key)


def test_unknown_parameters_do_not_make_new_entries(cached):
    client = cached.test_client()
    for n in range(50):
        assert client.get(f"/rss.xml?junk={n}").status_code == 200
        assert client.get(f"/api/v1/sections?x{n}=1").status_code == 200
    assert stored(cached) == 2


def test_declared_parameters_still_tell_answers_apart(cached):
    client = cached.test_client()
    one = client.get("/api/v1/stories?limit=1").get_json()
    two = client.get("/api/v1/stories?limit=2&junk=1").get_json()
    assert (one["count"], two["count"]) == (1, 2)
    # The same declared query with other junk is the stored answer.
    assert client.get("/api/v1/stories?junk=2&limit=1").get_json() == one
    assert stored(cached) == 2
    # `full` keys its own answer: the stored plain rows are not the full stories.
    full = client.get("/api/v1/stories?limit=1&full=true").get_json()
    assert full["stories"][0]["id"] == one["stories"][0]["id"] and "prose" in full["stories"][0]
    assert "prose" not in client.get("/api/v1/stories?limit=1").get_json()["stories"][0]
    # A plain view's declared parameter (the frameable player) keys its own answer.
    assert policy.of(cached, "pages.edition").query == {"embed"}
    assert policy.of(cached, "stories.list_stories").query == {
        "limit", "cursor", "section", "persona", "status", "full"}
    assert policy.of(cached, "embed.oembed").query >= {"url", "format", "maxwidth", "maxheight"}


def _args_read(tree: ast.AST) -> set[str]:
    """Names read as `request.args.get("name")` or `request.args["name"]` in a module."""
    found = set()
    for node in ast.walk(tree):
        target = node.func.value if isinstance(node, ast.Call) and isinstance(
            node.func, ast.Attribute) and node.func.attr == "get" else (
            node.value if isinstance(node, ast.Subscript) else None)
        if (isinstance(target, ast.Attribute) and target.attr == "args"
                and isinstance(target.value, ast.Name) and target.value.id == "request"):
            first = node.args[0] if isinstance(node, ast.Call) else node.slice
            if isinstance(first, ast.Constant):
                found.add(first.value)
    return found


def test_every_query_parameter_a_view_reads_is_declared(app):
    declared = set()
    for endpoint in app.view_functions:
        declared |= policy.of(app, endpoint).query or set()
    for path in sorted((ROOT / "blueprints").rglob("*.py")):
        read = _args_read(ast.parse(path.read_text()))
        assert read - declared - NEVER_STORED == set(), path
    # The scanner sees both spellings.
    assert _args_read(ast.parse("request.args.get('a'); request.args['b']")) == {"a", "b"}
