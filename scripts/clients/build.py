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
6. Python: openapi-python-client -> build/clients/python (generator_document: the two
   documented adjustments below), then scripts/clients/smoke.py calls every operation through it
   against the server and checks each answer parses into its model.

What the Python generator is given differs from the served document in two ways, both for
openapi-python-client 0.29 and both leaving the wire alone:
- it reads any non-empty operation `security` as "a key is required" (openapi-python-client
  issue #1372: the anonymous requirement `{}` is not looked at), so operations whose security
  lists `{}` (the key is optional) are given without `security`: their functions take a plain
  `Client` or an `AuthenticatedClient`;
- it has no way to rename a property, so `x-python-name` (schemas/openapi.py SHADOWING_NAMES:
  `cast`, which would shadow `typing.cast` in the model modules) is applied to the generated
  models afterwards (`apply_python_names`): attribute `cast_`, JSON key still "cast".

Exit status 0 when every step passed; prints a line per step. Generated code stays in
build/clients (gitignored).
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
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


def generator_document(doc: dict) -> dict:
    """The document as openapi-python-client 0.29 is given it (module docstring): operations
    whose `security` lists the anonymous requirement `{}` lose `security`."""
    doc = copy.deepcopy(doc)
    for item in doc["paths"].values():
        for method, operation in item.items():
            if method != "parameters" and {} in operation.get("security", []):
                del operation["security"]
    return doc


def python_names(doc: dict) -> dict[str, dict[str, str]]:
    """{model module name: {property: identifier}} from the document's `x-python-name`."""
    found = {}
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        renames = {prop: sub["x-python-name"] for prop, sub in schema.get("properties", {}).items()
                   if isinstance(sub, dict) and "x-python-name" in sub}
        if renames:
            module = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
            found[module] = renames
    return found


def apply_python_names(package: Path, renames: dict[str, dict[str, str]]) -> None:
    """Rename each property's Python identifier in its generated model module: every NAME token
    equal to the property, except a call (`cast(...)`, typing's) and the import line; strings
    (JSON keys, docstrings) are left as they are, so the wire name does not change."""
    for module, names in renames.items():
        path = package / "models" / f"{module}.py"
        if not path.exists():
            raise SetupError(f"no generated model {path.name} for x-python-name")
        source = path.read_text(encoding="utf-8")
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        lines = source.splitlines(keepends=True)
        edits = []
        for i, token in enumerate(tokens):
            if token.type != tokenize.NAME or token.string not in names:
                continue
            following = next((t for t in tokens[i + 1:] if t.type not in (tokenize.NL, tokenize.COMMENT)), None)
            if following is not None and following.string == "(":
                continue
            if lines[token.start[0] - 1].lstrip().startswith(("from ", "import ")):
                continue
            edits.append((token.start, token.end, names[token.string]))
        for (row, col), (_, end), new in sorted(edits, reverse=True):
            line = lines[row - 1]
            lines[row - 1] = line[:col] + new + line[end:]
        path.write_text("".join(lines), encoding="utf-8")
        log(f"x-python-name: {path.name}: {names} ({len(edits)} identifiers)")


def python_client(document: Path, doc: dict) -> Path:
    given = OUT / "openapi-python.json"
    given.write_text(json.dumps(generator_document(doc), indent=1), encoding="utf-8")
    target = OUT / "python"
    result = sh([VENV / "bin" / "openapi-python-client", "generate", "--path", given,
                 "--output-path", target, "--overwrite", "--meta", "none",
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
    apply_python_names(package, python_names(doc))
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
                holder["dir"] = python_client(document, doc)

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
