"""docs/ARCHITECTURE.md is checked against the app as built: every route is in its URL tables,
and its request-path section names every installed step and the replay."""
from __future__ import annotations

import re
from pathlib import Path

from web import pipeline

DOC = (Path(__file__).resolve().parent.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = DOC.index(f"## {title}")
    end = DOC.find("\n## ", start + 3)
    return DOC[start:end if end != -1 else None]


def _doc_form(rule: str) -> str:
    """A URL rule as the doc writes it: `<string(maxlength=200):id>` -> `{id}`, API routes
    relative to `/api/v1` (`""` for its index)."""
    path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule)
    return path.removeprefix("/api/v1") if path.startswith("/api/v1") else path


def test_every_route_is_in_the_url_tables(app):
    tables = _section("Where each behaviour lives")
    written = set()
    for cell in re.findall(r"`([^`]*)`", tables):
        for token in cell.split():
            if token.startswith("/") or token == '""':
                written.add(token.strip('"') if token == '""' else token)
    missing = sorted({_doc_form(rule.rule) for rule in app.url_map.iter_rules()
                      if rule.endpoint != "static"} - written - {""})
    assert missing == [], f"routes missing from docs/ARCHITECTURE.md's URL tables: {missing}"


def test_the_request_path_section_names_every_step_and_the_replay(app):
    section = _section("A request, step by step")
    steps = pipeline.describe(app)
    for name in steps["before"] + steps["after"] + steps["teardown"]:
        if name.endswith(".cors"):
            name = "web.pipeline.cors"
        short = name.removeprefix("web.")
        assert f"`{short}`" in section, short
    assert "web/replay.py" in section and "web/steps.py" in section
