"""The built wheel is the whole app: built with `pip wheel --no-deps .`, installed with its
declared dependencies (pinned by requirements.lock, the runtime lock) into a fresh venv outside
the repository, it migrates, seeds and serves pages, templates and static files from a directory
that is not the repository (pyproject.toml finds its packages; a hand-written list once left
services.transparency and services.delivery.federation out). What it pulls in is requirements.lock,
no more and no less: pyproject.toml's dependencies and the runtime lock agree."""
from __future__ import annotations

import sys
import venv

import pytest

from tests.fixtures.checkout import RUNTIME_LOCK, copy_checkout, installed, lock_pins, run, seeded_site

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


def test_the_built_wheel_installs_outside_the_repository_and_serves(tmp_path):
    # Built from a copy of the checkout's files (tracked or not, but not ignored): setuptools
    # reuses a `build/` directory it finds, which would hide a package the list leaves out.
    source = copy_checkout(tmp_path / "source")
    wheels = tmp_path / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(source)], cwd=tmp_path)
    [wheel] = wheels.glob("paper_desk-*.whl")

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # The runtime dependencies the wheel declares, at the versions the lock pins (pip's cache
    # keeps it quick); none of the test tools.
    run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--constraint", str(RUNTIME_LOCK), str(wheel)], cwd=tmp_path)
    # The closure of the wheel's declared dependencies is the runtime lock exactly: a package
    # missing from the lock would come in unpinned, one the app no longer needs would stay in it.
    assert installed(python) == lock_pins(RUNTIME_LOCK)

    work = tmp_path / "site"
    env = seeded_site(env_dir, work)
    served = run([str(python), "-c", SERVE], cwd=work, env=env)
    assert str(env_dir) in served.stdout
