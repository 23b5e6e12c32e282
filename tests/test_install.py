"""What a user installs (README "Install and run"): two pinned locks. requirements.lock is what
the app, `flask worker` and gunicorn import, and all `make run` installs (`make install-runtime`);
requirements-test.lock adds the test suite's and the tools' dependencies (`make install`, which
`make test`, `lint`, `schemathesis`, `clients`, `faults` and `bench` run). pyproject.toml's
`dependencies` and optional `test` dependencies name the direct ones at the locks' versions.

The runtime install is made by the Makefile's own recipe, from a copy of the checkout outside
the repository, into a venv of its own; the app must serve and the worker run from it, with
none of the test tools there."""
from __future__ import annotations

import json
import tomllib

import pytest

from tests.fixtures.checkout import (
    ROOT,
    RUNTIME_LOCK,
    TEST_LOCK,
    canonical,
    copy_checkout,
    installed,
    lock_pins,
    outside_env,
    pins,
    run,
    seeded_site,
)

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# Test and tool packages that must stay out of what `make run` installs (the heavy ones first).
TOOLS = ["playwright", "schemathesis", "ruff", "pytest", "hypothesis", "aiosmtpd", "time_machine", "pyld"]

SERVE = """
from wsgi import app
client = app.test_client()
page = client.get("/")
assert page.status_code == 200 and b"<html" in page.data, (page.status_code, page.data[:300])
doc = client.get("/api/v1/openapi.json")
assert doc.status_code == 200 and doc.json["openapi"].startswith("3.1"), doc.status_code
import commands.worker  # noqa: F401  (what `flask worker` runs)
print("served")
"""


def test_pyproject_names_each_lock_s_pins_and_the_locks_do_not_overlap():
    runtime, test = lock_pins(RUNTIME_LOCK), lock_pins(TEST_LOCK)
    assert runtime and test
    assert not runtime.keys() & test.keys(), "pinned in both locks: " + ", ".join(sorted(runtime.keys() & test.keys()))
    declared = pins(PYPROJECT["dependencies"])
    assert {name: runtime.get(name) for name in declared} == declared, "pyproject dependencies vs requirements.lock"
    declared_test = pins(PYPROJECT["optional-dependencies"]["test"])
    assert {name: test.get(name) for name in declared_test} == declared_test, \
        "pyproject optional test dependencies vs requirements-test.lock"
    # What `make run` must not pull in is in the test lock, not the runtime one.
    assert {"playwright", "schemathesis", "ruff", "pytest"} <= test.keys()
    assert not {"playwright", "schemathesis", "ruff", "pytest"} & runtime.keys()


@pytest.mark.slow
def test_the_runtime_install_alone_serves_the_app_and_runs_the_worker(tmp_path):
    source = copy_checkout(tmp_path / "source")
    venv_dir = tmp_path / "venv"
    made = run(["make", "install-runtime", f"VENV={venv_dir}"], cwd=source,
               env={**outside_env(venv_dir, tmp_path), "MAKEFLAGS": ""})
    # Progress, not a silent minute: pip names each package of the lock as it installs it.
    assert "Installing the runtime dependencies" in made.stdout, made.stdout[-2000:]
    shown = made.stdout.lower().replace("_", "-")
    assert [name for name in lock_pins(RUNTIME_LOCK) if name not in shown] == [], made.stdout[-2000:]
    python = venv_dir / "bin" / "python"
    # Exactly the runtime lock, consistent, and none of the test tools.
    assert installed(python) == lock_pins(RUNTIME_LOCK)
    run([str(python), "-m", "pip", "check", "--disable-pip-version-check"])
    absent = run([str(python), "-c", "import importlib.util, json, sys; "
                  "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m)]))", *TOOLS])
    assert json.loads(absent.stdout) == []

    work = tmp_path / "site"
    env = seeded_site(venv_dir, work)
    worked = run([str(venv_dir / "bin" / "flask"), "worker", "--once"], cwd=work, env=env)
    assert "Traceback" not in worked.stdout + worked.stderr
    served = run([str(python), "-c", SERVE], cwd=work, env=env)
    assert "served" in served.stdout

    # The two locks are the whole tree of pyproject's dependencies with the `test` extra: pip
    # resolves the project, held to both locks, to their union exactly (nothing missing from
    # the test lock, nothing left in it that no declared package needs).
    report = tmp_path / "resolved.json"
    run([str(python), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
         "--disable-pip-version-check", "--report", str(report), "-c", str(RUNTIME_LOCK), "-c", str(TEST_LOCK),
         f"{source}[test]"], cwd=tmp_path)
    resolved = {canonical(item["metadata"]["name"]): item["metadata"]["version"]
                for item in json.loads(report.read_text())["install"]}
    resolved.pop("paper-desk")
    assert resolved == {**lock_pins(RUNTIME_LOCK), **lock_pins(TEST_LOCK)}
