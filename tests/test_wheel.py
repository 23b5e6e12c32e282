"""The built wheel is the whole app: built with `pip wheel --no-deps .`, installed with its
declared dependencies (pinned by requirements.lock) into a fresh venv outside the repository,
it migrates, seeds and serves pages, templates and static files from a directory that is not
the repository (pyproject.toml finds its packages; a hand-written list once left
services.transparency and services.delivery.federation out)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow

SERVE = """
import sys
from pathlib import Path
import app as app_module
from wsgi import app
root = Path(app_module.__file__).resolve().parent
assert Path(sys.prefix) in root.parents, root  # the wheel's copy, not the repository's
client = app.test_client()
page = client.get("/")
assert page.status_code == 200 and b"<html" in page.data, (page.status_code, page.data[:300])
css = client.get("/static/css/paper.css")
assert css.status_code == 200 and len(css.data) > 100, css.status_code
missing = client.get("/no-such-page")
assert missing.status_code == 404 and b"<html" in missing.data, missing.data[:300]
import services.transparency.store, services.delivery.federation.deliveries  # noqa: E401
print("served from", root)
"""


def run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, f"{args}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def test_the_built_wheel_installs_outside_the_repository_and_serves(tmp_path):
    # Built from a copy of the checkout's files (tracked or not, but not ignored): setuptools
    # reuses a `build/` directory it finds, which would hide a package the list leaves out.
    source = tmp_path / "source"
    listed = run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file() and not name.startswith(("tests/", "bench/", "docs/")):
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(source)], cwd=tmp_path)
    [wheel] = wheels.glob("paper_desk-*.whl")

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # The runtime dependencies the wheel declares, at the versions the lock pins (pip's cache
    # keeps it quick); none of the test tools.
    run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--constraint", str(ROOT / "requirements.lock"), str(wheel)], cwd=tmp_path)

    work = tmp_path / "site"
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("FLASK_", "PYTHON", "VIRTUAL_ENV", "DATABASE_URL", "REDIS_URL", "TEST_"))}
    env.update({"INSTANCE_PATH": str(work / "instance"), "FLASK_APP": "wsgi", "SECRET_KEY": "x" * 40,
                "DATABASE_URL": f"sqlite:///{work / 'paper.db'}", "PATH": f"{env_dir / 'bin'}:{env['PATH']}"})
    flask = str(env_dir / "bin" / "flask")
    run([flask, "init-db"], cwd=work, env=env)
    run([flask, "seed-demo", "--pieces", "3", "--subscribers", "0"], cwd=work, env=env)
    served = run([str(python), "-c", SERVE], cwd=work, env=env)
    assert str(env_dir) in served.stdout
