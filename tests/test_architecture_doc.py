"""docs/ARCHITECTURE.md is checked against the app as built: every route is in its URL tables,
and its request-path section names every installed step and the replay."""
from __future__ import annotations

import re
from pathlib import Path

from commands import worker
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


def test_the_worker_section_names_every_declared_consumer_and_queue():
    section = _section("The worker")
    described = worker.describe()
    for name in described["consumers"] + described["change_consumers"]:
        assert f"`{name}`" in section, name
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert [re.match(r"\| `([^`]+)`", row).group(1) for row in rows] == [q["name"] for q in described["queues"]]
    for row, queue in zip(rows, described["queues"], strict=True):
        assert all(f"`{table}`" in row for table in queue["tables"]) and f"`{queue['budget']}`" in row, row
        assert row.split(" | ")[3] == queue["circuit"], row
    # "Every queue is a declaration ... run by one engine".
    assert all(q["engine"] for q in described["queues"])
    assert "Every queue is a declaration" in section


def test_the_retention_docs_name_every_table_the_worker_prunes():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    [row] = [line for line in readme.splitlines() if line.startswith("| `OUTBOX_RETENTION_DAYS`")]
    pruned = [t for q in worker.describe()["queues"] if q["pruned"] for t in q["tables"]]
    kept = [t for q in worker.describe()["queues"] if not q["pruned"] for t in q["tables"]]
    assert pruned and all(f"`{table}`" in row for table in pruned), row
    assert kept == ["alert_deliveries"] and "alert rows are kept" in row


def test_the_services_map_names_every_module():
    import services

    root = Path(services.__file__).resolve().parent
    names = set(re.findall(r"[a-z_]+", services.__doc__))
    modules = {path.stem if path.stem != "__init__" else path.parent.name
               for path in root.rglob("*.py") if "__pycache__" not in path.parts} - {"services"}
    assert sorted(modules - names) == []
