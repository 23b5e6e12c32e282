"""`make clients`: the OpenAPI document as generated clients see it, checked end to end.

    .venv/bin/python scripts/clients/build.py [--skip-install]

1. Tools: `npm ci` in scripts/clients (package.json + package-lock.json, exact versions:
   @redocly/cli, @stoplight/spectral-cli, openapi-typescript, typescript), and
   openapi-python-client into its own venv, build/clients/venv (scripts/clients/requirements.txt,
   pinned), apart from .venv.
2. A real server: a fresh SQLite database in a temporary instance folder, `flask init-db`,
   `flask seed-demo`, an admin and a read key (`flask keys create`), gunicorn on a free loopback
   port (scripts/ci_schemathesis.py's helpers), rate limits off.
3. The live document, `GET /api/v1/openapi.json`, into build/clients/openapi.json.
4. Lint: `redocly lint` (recommended ruleset, redocly.yaml) and `spectral lint` (`spectral:oas`,
   .spectral.yaml); any error or warning fails.
5. TypeScript: openapi-typescript -> build/clients/typescript/paper-desk.d.ts, then
   `tsc --strict --noEmit` on scripts/clients/usage.ts, which uses those types.
6. Python: openapi-python-client on build/clients/openapi.json as served (no edit of the
   document, none of the generated code), with `--custom-template-path scripts/clients/templates`
   (below), then scripts/clients/smoke.py calls every operation through it against the server
   and checks each answer parses into its model.

The templates: openapi-python-client 0.29.1 (the newest release) binds each property to a local
of its own name in a model's `from_dict`/`to_dict` and calls `typing.cast` by its bare name there,
so a property called `cast` (the spec's field on subscriptions, preferences and the paper index)
makes every model that has one raise UnboundLocalError while parsing. The generator has no way
to rename a property (it names it from the JSON key alone) and the wire name is the spec's, so no
shape of the document avoids it; scripts/clients/templates overrides the three stock templates
that call `cast(...)` (const, list, union properties) to call it as `_typing_cast`, imported on
the line before. `check_templates` holds each override to the installed generator's own template
plus that edit, so a new pin with changed templates fails here until they are taken anew.
Operations whose key is optional need nothing: the document serves them `security: []`
(schemas/openapi.py `_optional_key`), which the generator reads as callable without a key.

Exit status 0 when every step passed; prints a line per step. Generated code stays in
build/clients (gitignored).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from ci_schemathesis import BIN, SetupError, free_port, gunicorn, run  # noqa: E402

OUT = ROOT / "build" / "clients"
VENV = OUT / "venv"
NODE_BIN = HERE / "node_modules" / ".bin"
PACKAGE = "paper_desk_client"


def log(message: str) -> None:
    print(f"[clients] {message}", flush=True)


def sh(cmd: list[str], *, cwd: Path = ROOT, env: dict | None = None, capture: bool = False,
       check: bool = True) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(c) for c in cmd))
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            text=True, capture_output=capture)
    if check and result.returncode != 0:
        if capture:
            sys.stdout.write(result.stdout[-6000:])
            sys.stdout.write(result.stderr[-6000:])
        raise SetupError(f"{Path(str(cmd[0])).name} exited {result.returncode}")
    return result


# ----------------------------------------------------------------------------- tools


def install_tools() -> None:
    """npm ci (when the lock changed since the last install, or in CI), and the generator's venv."""
    lock = (HERE / "package-lock.json").read_bytes()
    stamp = HERE / "node_modules" / ".paperdesk-lock"
    digest = hashlib.sha256(lock).hexdigest()
    if os.environ.get("CI") == "true" or not stamp.exists() or stamp.read_text() != digest:
        sh(["npm", "ci"], cwd=HERE)
        stamp.write_text(digest)
    requirements = (HERE / "requirements.txt").read_bytes()
    marker = VENV / ".installed"
    digest = hashlib.sha256(requirements).hexdigest()
    if not marker.exists() or marker.read_text() != digest:
        sh([sys.executable, "-m", "venv", "--clear", VENV])
        sh([VENV / "bin" / "pip", "install", "--quiet", "-r", HERE / "requirements.txt"])
        marker.write_text(digest)


# ----------------------------------------------------------------------------- the server


# A reader's "Manage your alerts" token, as an alert would carry it: signed by the app for the
# first confirmed demo subscriber (the token is opaque; only the app can make one).
PREFERENCES_TOKEN = """
from app import create_app
from extensions import db
from models import Subscriber
from services.delivery.subscriptions import make_token
with create_app().app_context():
    row = db.session.scalars(db.select(Subscriber).where(Subscriber.confirmed_at.is_not(None))
                             .order_by(Subscriber.id)).first()
    print(make_token("preferences", row))
"""


def preferences_token(env: dict) -> str:
    """A preferences token of a confirmed demo subscriber (PREFERENCES_TOKEN); SetupError when
    the demo has none."""
    out = run([str(BIN / "python"), "-c", PREFERENCES_TOKEN], env, capture=True).stdout
    token = out.strip().splitlines()[-1].strip() if out.strip() else ""
    if not token or token == "None":
        raise SetupError("the demo paper has no confirmed subscriber to make a preferences token for")
    return token


def create_key(env: dict, kind: str) -> str:
    out = run([str(BIN / "flask"), "keys", "create", "--paper", "demo", "--kind", kind,
               "--label", f"clients {kind}"], env, capture=True).stdout
    key = out.strip().splitlines()[-1].strip() if out.strip() else ""
    if not key.startswith("desk_"):
        raise SetupError(f"`flask keys create --kind {kind}` did not print a key on its last line")
    return key


# ----------------------------------------------------------------------------- lint


def redocly(document: Path) -> bool:
    result = sh([NODE_BIN / "redocly", "lint", "--config", HERE / "redocly.yaml", "--format", "stylish",
                 document], cwd=HERE, capture=True, check=False)
    sys.stdout.write(result.stdout[-8000:])
    sys.stdout.write(result.stderr[-8000:])
    # redocly exits non-zero on errors only; a warning fails here too.
    text = result.stdout + result.stderr
    counts = re.search(r"(\d+) errors?", text), re.search(r"(\d+) warnings?", text)
    problems = sum(int(m.group(1)) for m in counts if m)
    return result.returncode == 0 and problems == 0 and "valid" in text


def spectral(document: Path) -> bool:
    result = sh([NODE_BIN / "spectral", "lint", "--ruleset", HERE / ".spectral.yaml",
                 "--fail-severity", "warn", document], cwd=HERE, capture=True, check=False)
    sys.stdout.write(result.stdout[-8000:])
    return result.returncode == 0


# ----------------------------------------------------------------------------- TypeScript


def typescript(document: Path) -> bool:
    target = OUT / "typescript" / "paper-desk.d.ts"
    target.parent.mkdir(parents=True, exist_ok=True)
    generated = sh([NODE_BIN / "openapi-typescript", document, "--output", target], cwd=HERE,
                   capture=True, check=False)
    sys.stdout.write(generated.stdout[-2000:] + generated.stderr[-2000:])
    if generated.returncode != 0:
        return False
    checked = sh([NODE_BIN / "tsc", "--project", HERE / "tsconfig.json"], cwd=HERE, capture=True,
                 check=False)
    sys.stdout.write(checked.stdout[-6000:] + checked.stderr[-6000:])
    return checked.returncode == 0


# ----------------------------------------------------------------------------- Python


# The generator's templates this overrides (module docstring): each the stock one with its
# `cast(...)` made through a name a property is unlikely to take.
TEMPLATES = HERE / "templates"
TYPING_CAST = "from typing import cast as _typing_cast"


def check_templates() -> None:
    """Each override in TEMPLATES must be the installed generator's own template with only the
    `_typing_cast` edit: undoing it (dropping the TYPING_CAST import lines, `_typing_cast(` back
    to `cast(`) gives the stock file byte for byte. Raises SetupError naming the file otherwise
    (the pin in requirements.txt moved and its templates changed: take them anew)."""
    stock_root = Path(sh([VENV / "bin" / "python", "-c",
                          "import openapi_python_client, pathlib; "
                          "print(pathlib.Path(openapi_python_client.__file__).parent / 'templates')"],
                         capture=True).stdout.strip())
    overrides = sorted(TEMPLATES.rglob("*.jinja"))
    if not overrides:
        raise SetupError(f"no templates in {TEMPLATES}")
    for ours in overrides:
        relative = ours.relative_to(TEMPLATES)
        stock = stock_root / relative
        undone = "".join(line.replace("_typing_cast(", "cast(")
                         for line in ours.read_text(encoding="utf-8").splitlines(keepends=True)
                         if line.strip() != TYPING_CAST)
        if not stock.exists() or undone != stock.read_text(encoding="utf-8"):
            raise SetupError(f"templates/{relative} is not the installed openapi-python-client's "
                             "template plus the _typing_cast edit: take it anew from the pinned version")


def python_client(document: Path) -> Path:
    """openapi-python-client on the served document as it is (its bytes), with TEMPLATES; the
    package goes to build/clients/python-pkg/paper_desk_client. Returns the folder to put on
    sys.path. SetupError when the generator fails or warns."""
    check_templates()
    target = OUT / "python"
    result = sh([VENV / "bin" / "openapi-python-client", "generate", "--path", document,
                 "--output-path", target, "--overwrite", "--meta", "none",
                 "--custom-template-path", TEMPLATES,
                 "--config", HERE / "openapi-python-client.yaml"], capture=True, check=False)
    sys.stdout.write(result.stdout[-6000:] + result.stderr[-6000:])
    if result.returncode != 0 or "Warning" in result.stdout + result.stderr:
        raise SetupError("openapi-python-client did not generate a clean client")
    # --meta none writes the package's modules straight into `target`; make it importable.
    package = OUT / "python-pkg" / PACKAGE
    if package.exists():
        shutil.rmtree(package)
    package.parent.mkdir(parents=True, exist_ok=True)
    target.rename(package)
    sh([VENV / "bin" / "python", "-m", "compileall", "-q", package])
    return package.parent


# ----------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-install", action="store_true", help="use the tools already installed")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    steps: list[tuple[str, bool, float]] = []

    def step(name: str, fn, *a):
        t0 = time.monotonic()
        print(f"\n----- {name} -----", flush=True)
        try:
            ok = fn(*a)
            ok = True if ok is None else bool(ok)
        except SetupError as exc:
            log(f"{name}: {exc}")
            ok = False
        steps.append((name, ok, time.monotonic() - t0))
        return ok

    if not args.skip_install and not step("tools (npm ci, openapi-python-client)", install_tools):
        return report(steps)
    with tempfile.TemporaryDirectory(prefix="paperdesk-clients-") as tmp:
        instance = Path(tmp) / "instance"
        instance.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "FLASK_APP")}
        # WEBHOOK_ALLOW_PRIVATE: the smoke test registers a content webhook on loopback.
        env.update(FLASK_APP="app", INSTANCE_PATH=str(instance), RATELIMIT_ENABLED="0", WEBHOOK_ALLOW_PRIVATE="1",
                   PYTHONUNBUFFERED="1", OUTBOX_DIR=str(instance / "outbox"),
                   DATABASE_URL=f"sqlite:///{instance / 'paperdesk.db'}")
        try:
            run([str(BIN / "flask"), "init-db"], env)
            run([str(BIN / "flask"), "seed-demo", "--pieces", "60", "--subscribers", "5"], env)
            admin_key, read_key = create_key(env, "admin"), create_key(env, "read")
            token = preferences_token(env)
        except SetupError as exc:
            log(f"set-up failed: {exc}")
            steps.append(("server set-up", False, 0.0))
            return report(steps)
        log_path = OUT / "gunicorn.log"
        with gunicorn(env, free_port(), log_path, 2) as base:
            document = OUT / "openapi.json"
            with urllib.request.urlopen(base + "/api/v1/openapi.json", timeout=30) as response:
                document.write_bytes(response.read())
            doc = json.loads(document.read_text(encoding="utf-8"))
            log(f"live document: {sum(len([m for m in i if m != 'parameters']) for i in doc['paths'].values())} "
                f"operations -> {document.relative_to(ROOT)}")
            step("redocly lint (recommended)", redocly, document)
            step("spectral lint (spectral:oas)", spectral, document)
            step("openapi-typescript + tsc --strict", typescript, document)
            holder = {}

            def generate():
                holder["dir"] = python_client(document)

            if step("openapi-python-client", generate):
                step("every route through the Python client", lambda: sh(
                    [VENV / "bin" / "python", HERE / "smoke.py", base, admin_key, read_key,
                     holder["dir"], document, token], check=False).returncode == 0)
    return report(steps)


def report(steps) -> int:
    print("\n----- make clients -----")
    for name, ok, seconds in steps:
        print(f"{'ok  ' if ok else 'FAIL'}  {name:<42} {seconds:6.1f}s")
    failed = [name for name, ok, _ in steps if not ok]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
