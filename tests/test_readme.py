"""The README's examples, pasted in order after a fresh seed: every `sh` block of "The API by
example" (the content-webhooks one included: its receiver listens on port 8765 and is stopped at
the block's end) run by bash against a real server on the seeded demo paper, with the `flask` commands in them on the
same database. Nothing may answer 5xx, every value the examples compute must name something that
exists (a slug, a day, search hits, posts of the last week), the agent key must file, air and
pull, the proof must verify, and nothing may be left in the working folder."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIPPED: tuple[str, ...] = ()
# Run after the README's own lines: what the values it computed lead to.
EPILOGUE = r"""
j() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
echo "CHECK slug $(curl -s -o /dev/null -w '%{http_code}' $H/api/v1/stories/$SLUG)"
echo "CHECK day $(curl -s $H/api/v1/days/$DAY | j 'd["count"]')"
echo "CHECK search $(curl -s "$H/api/v1/search?q=city+council" | j 'd["count"]')"
echo "CHECK posts $(curl -s "$H/api/v1/posts?limit=10&since=$SINCE" | j 'len(d["posts"])')"
echo "CHECK agent-piece $(curl -s -H "$A" $H/api/v1/stories/$AID | j 'd["byline"], d["on_air"], d["rev"]')"
echo "CHECK harbour $(curl -s $H/api/v1/sections | j '[s["name"] for s in d["sections"] if s["name"] == "Harbour"]')"
echo "CHECK corrected $(curl -s $H/api/v1/stories/$CID | j '[c["kind"] for c in d["corrections"]]')"
echo "CHECK history $(curl -s $H/api/v1/stories/$CID/revisions | j '[r["rev"] for r in d["revisions"]]')"
VIDEO=$(curl -s $H/api/v1/cast | j 'd["editions"][0]["video_url"]')
echo "CHECK cast $(curl -s $H/api/v1/cast | j 'd["editions"][0]["title"]') ${VIDEO%%/media/*}"
echo "CHECK cast-video $(curl -s -o /dev/null -w '%{http_code}' $VIDEO)"
"""


def readme_script(live: str) -> str:
    """The `sh` blocks of "The API by example", in order, with the server's address for $H."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## The API by example"):text.index("## Deploying")]
    blocks, skipping = [], False
    for part in re.split(r"(^#{2,3} .*$)", section, flags=re.M):
        if part.startswith("#"):
            skipping = part.strip() in SKIPPED
            continue
        if not skipping:
            blocks += re.findall(r"^```sh\n(.*?)^```", part, flags=re.M | re.S)
    script = "\n".join(blocks)
    assert script.startswith("H=http://127.0.0.1:5000\n")
    return script.replace("H=http://127.0.0.1:5000\n", f"H={live}\n")


@pytest.mark.slow
def test_the_readme_examples_work_pasted_in_order(app, runner, live, tmp_path):
    if app.backend != "sqlite":
        pytest.skip("the README's flask commands are run against the suite's SQLite database")
    assert runner.invoke(args=["seed-demo", "--subscribers", "3"]).exit_code == 0
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    env = {**os.environ, "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
           "INSTANCE_PATH": app.instance_path, "PUBLIC_BASE_URL": live, "WEBHOOK_ALLOW_PRIVATE": "1",
           "PYTHONPATH": str(ROOT), "SMTP_URL": "", "TMPDIR": str(tmp_path)}  # scratch files of its own
    env.pop("TEST_DATABASE_URL", None)
    script = "set -euo pipefail\n" + readme_script(live) + EPILOGUE
    # `make run` runs the worker beside the server: the change feed's consumers (the
    # transparency log among them) and the outbox move as the examples write.
    worker = subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", "drain-outbox"], cwd=ROOT,
                              env={**env, "OUTBOX_POLL_SECONDS": "0.5", "LOG_CHECKPOINT_SECONDS": "1"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # `flask --app app` finds app.py through PYTHONPATH; the working folder is a scratch one, so
        # anything an example leaves behind is seen.
        done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + "\n--- stderr ---\n" + done.stderr[-1500:]
    assert not re.search(r"^HTTP/[\d.]+ 5\d\d", output, flags=re.M), output
    assert not re.search(r'"status": ?5\d\d', output), output
    checks = dict(line.removeprefix("CHECK ").split(" ", 1) for line in done.stdout.splitlines()
                  if line.startswith("CHECK "))
    assert checks["slug"] == "200"
    assert int(checks["day"]) > 0 and int(checks["search"]) > 0 and int(checks["posts"]) > 0
    assert checks["agent-piece"] == "Ada Quill False 1"  # filed as its persona, aired, pulled
    assert checks["harbour"] == "[]"  # the idempotency example tidied its section away
    assert checks["corrected"] == "['correction']" and checks["history"] == "[2, 1]"
    # Today's edition plays the demo's own video (no cdn.example.com player left black).
    assert checks["cast"] == f"The evening cast {live}" and checks["cast-video"] == "200"
    assert re.search(r"^OK: piece \d+ rev 1 .*one revision, no chain", done.stdout, flags=re.M), output[-2000:]
    assert re.search(r"^OK: .*the receipt verifies", done.stdout, flags=re.M), output[-2000:]
    assert sorted(p.name for p in work.iterdir()) == [".venv"], "an example left files behind"
