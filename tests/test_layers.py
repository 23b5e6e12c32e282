"""The layer rules, read from the source with `ast` (nothing is imported):

- services/ and demo/ never import the web layer (blueprints, schemas, web/) nor take
  `request`, `g` or `session` from flask: what a service needs of a request arrives as an argument;
- schemas/ and models/ never import blueprints;
- models/ import no services, schemas or blueprints;
- under services/, only services/http.py (the one HTTP client) opens HTTP connections: the log
  monitor, a client of any paper, lives beside its command (commands/log_monitor.py).

An import inside a function counts as much as one at the top of a module.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WEB_LAYER = {"blueprints", "schemas", "web"}
REQUEST_GLOBALS = {"request", "g", "session"}
FLASK_MODULES = {"flask", "flask.globals"}


def violations(source: str, forbidden: set[str], *, request_globals: bool = False) -> list[str]:
    """Each import in `source` of a module whose top-level package is in `forbidden`, as
    `"line N: module"`; with `request_globals`, also each `request`, `g` or `session` taken
    from flask (`from flask import g`, or `flask.request` on an imported `flask`). Raises
    SyntaxError for source that does not parse."""
    found = []
    flask_aliases = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in forbidden:
                    found.append(f"line {node.lineno}: {alias.name}")
                if alias.name == "flask":
                    flask_aliases.add(alias.asname or "flask")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # Relative imports stay inside services/ or demo/: they cannot reach the web layer.
            if node.module.split(".")[0] in forbidden:
                found.append(f"line {node.lineno}: {node.module}")
            if request_globals and node.module in FLASK_MODULES:
                found += [f"line {node.lineno}: flask.{alias.name}" for alias in node.names
                          if alias.name in REQUEST_GLOBALS]
    if request_globals and flask_aliases:
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Attribute) and node.attr in REQUEST_GLOBALS
                    and isinstance(node.value, ast.Name) and node.value.id in flask_aliases):
                found.append(f"line {node.lineno}: flask.{node.attr}")
    return found


def modules(*folders: str) -> list[Path]:
    paths = sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))
    assert paths, f"no modules found under {folders}"
    return paths


def broken(paths: list[Path], forbidden: set[str], *, request_globals: bool = False) -> dict[str, list[str]]:
    found = {}
    for path in paths:
        bad = violations(path.read_text(encoding="utf-8"), forbidden, request_globals=request_globals)
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    return found


def test_services_and_demo_never_import_the_web_layer_nor_read_the_request():
    paths = modules("services", "demo")
    assert {"links.py", "alerts.py", "front.py", "keys.py", "seed.py"} <= {p.name for p in paths}
    assert broken(paths, WEB_LAYER, request_globals=True) == {}


def test_schemas_and_models_never_import_blueprints():
    assert broken(modules("schemas", "models"), {"blueprints"}) == {}


def test_models_import_no_services_schemas_or_blueprints():
    assert broken(modules("models"), {"services", "schemas", "blueprints"}) == {}


# Modules that open HTTP connections: the standard library's and the third-party clients.
HTTP_CLIENTS = {"http", "urllib3", "httpx", "requests", "aiohttp"}


def test_services_open_http_connections_only_through_the_one_client():
    paths = modules("services")
    found = broken([p for p in paths if p.relative_to(ROOT).as_posix() != "services/http.py"], HTTP_CLIENTS)
    urllib_request = {str(p.relative_to(ROOT)): bad for p in paths
                      if (bad := [b for b in violations(p.read_text(encoding="utf-8"), {"urllib"})
                                  if b.endswith("urllib.request")])}
    assert found == {} and urllib_request == {}
    assert broken(modules("commands"), HTTP_CLIENTS).keys() == {"commands/log_monitor.py"}


def test_the_reading_services_keep_no_clock():
    # The instant a public read is judged at is an argument (services/reading/visibility.py):
    # no reading module keeps one set from above (`global`), and no bound parameter reads a
    # clock of its own at execution (`callable_`).
    found = {}
    for path in modules("services/reading"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bad = [f"line {node.lineno}: global" for node in ast.walk(tree) if isinstance(node, ast.Global)]
        bad += [f"line {node.lineno}: callable_" for node in ast.walk(tree)
                if isinstance(node, ast.keyword) and node.arg == "callable_"]
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}


@pytest.mark.parametrize("source, expected", [
    ("import web.tenancy", ["line 1: web.tenancy"]),
    ("import blueprints.api.common as c", ["line 1: blueprints.api.common"]),
    ("from schemas.story import StoryOut", ["line 1: schemas.story"]),
    ("from web.caching import paper_state", ["line 1: web.caching"]),
    ("def f():\n    from web import limits", ["line 2: web"]),
    ("from flask import current_app, g", ["line 1: flask.g"]),
    ("from flask import request as r, session", ["line 1: flask.request", "line 1: flask.session"]),
    ("from flask.globals import request", ["line 1: flask.request"]),
    ("import flask\nhost = flask.request.host", ["line 2: flask.request"]),
    ("import flask as f\nf.g.paper", ["line 2: flask.g"]),
    # Allowed: the app's config and templates, the services' own packages, relative imports.
    ("from flask import current_app, render_template", []),
    ("from services.links import Links\nfrom models import Paper", []),
    ("from . import stories\nfrom ..rendering import links", []),
    ("import flask_smorest\nimport schemas_extra", []),
])
def test_the_scanner_finds_what_it_should(source, expected):
    assert violations(source, WEB_LAYER, request_globals=True) == expected


def test_the_scanner_sees_a_violation_in_a_whole_module():
    source = '"""A service gone wrong."""\nfrom services.reading import stories\n\n\ndef url():\n' \
             '    from flask import request\n    return request.host\n'
    assert violations(source, WEB_LAYER, request_globals=True) == ["line 6: flask.request"]
    assert violations("from blueprints.pages import bp", {"blueprints"}) == ["line 1: blueprints.pages"]


# ----------------------------------------------------------------------------- the import graph

PACKAGES = ("app", "wsgi", "config", "extensions", "blueprints", "commands", "demo", "models",
            "schemas", "services", "web")


def import_graph() -> dict[str, set[str]]:
    """Every project module (dotted name) -> the project modules it imports, at any depth of
    its source (an import inside a function counts), read with `ast`."""
    paths = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[0] not in PACKAGES:
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        paths[name] = path

    def resolve(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in paths.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(resolve(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.update(resolve(f"{node.module}.{alias.name}") for alias in node.names)
        graph[name] = {target for target in targets if target and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_of(module: str) -> str:
    """The package a module belongs to for the package graph: `services.reading`, `web`, ..."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] in ("services", "blueprints") and len(parts) > 2 else parts[0]


def test_no_module_imports_itself_through_others():
    assert cycles(import_graph()) == []


def test_no_package_imports_itself_through_others():
    graph = import_graph()
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(package_of(module), set()).update(
            package_of(target) for target in targets if package_of(target) != package_of(module))
    assert cycles(packages) == []


def test_services_reach_no_web_module_even_through_others():
    graph = import_graph()
    reached, todo = set(), [m for m in graph if m.startswith(("services", "demo"))]
    while todo:
        module = todo.pop()
        for target in graph[module]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    assert sorted(m for m in reached if m.split(".")[0] in WEB_LAYER) == []


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_every_module_imports_from_the_installed_package(tmp_path):
    # Outside the repository root: only what pyproject.toml installs is importable.
    import subprocess
    import sys

    names = sorted(name for name in import_graph() if name not in ("wsgi",))
    script = f"import importlib\nfor name in {names!r}:\n    importlib.import_module(name)\nprint('ok')"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_at_most_six_python_files_at_the_root():
    assert sorted(path.name for path in ROOT.glob("*.py")) == ["app.py", "config.py", "extensions.py",
                                                               "gunicorn.conf.py", "wsgi.py"]


def test_the_newsroom_sits_below_delivery_and_the_transparency_log():
    # The newsroom writes rows (pieces, their changes, editions); everything that follows from
    # them is derived downstream by the worker's consumers, which import the newsroom, never
    # the other way (no opener or lock handed up at import).
    assert broken(modules("services/newsroom"), set()) == {}
    found = {}
    for path in modules("services/newsroom"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bad = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
               and node.module.startswith(("services.delivery", "services.transparency"))]
        bad += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
                if alias.name.startswith(("services.delivery", "services.transparency"))]
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}
