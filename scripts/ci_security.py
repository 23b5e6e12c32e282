#!/usr/bin/env python3
"""Run bandit or pip-audit for CI and hold the result against scripts/security-baseline.toml.

    .venv/bin/python scripts/ci_security.py bandit      # static analysis of the app and scripts
    .venv/bin/python scripts/ci_security.py pip-audit   # known vulnerabilities in both lock files

Exit status: 0 when every finding is explained in the baseline, 1 when one is not (it is
printed), 2 when the tool itself could not run. A baseline entry that matches nothing is
reported as stale. Both write their JSON report under build/ci/, and a one-line result to
build/ci/<tool>.txt for scripts/ci_figures.py.

pip-audit asks the vulnerability service about each pinned version of requirements.lock (the
runtime) and requirements-test.lock (the tests and tools); --no-deps: the locks pin the whole
tree. For a package it could not look up (its service unreachable, or PyPI's per-version JSON
missing, as on a CI machine that reaches nothing but PyPI's project pages), the step reads PyPI's
project JSON, https://pypi.org/pypi/<name>/json.
That lists the vulnerabilities of the project's *latest* release only: a pin equal to the latest
release is audited from it; an older pin is listed as "behind the latest release, not audited",
never as clean. PIP_AUDIT_STRICT=1 turns every package left unaudited into a failure.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# packaging is pinned in requirements.lock and is a dependency of pip-audit itself.
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OUT = ROOT / "build" / "ci"
BASELINE = ROOT / "scripts" / "security-baseline.toml"
# What the app runs on, and what the tests and tools add (Makefile): both are installed in CI.
LOCKS = [ROOT / "requirements.lock", ROOT / "requirements-test.lock"]
# The fallback for packages pip-audit could not look up: PyPI's project JSON (the latest
# release's info and vulnerabilities). Bounded: a few requests at a time, 10 s each.
PYPI_PROJECT = "https://pypi.org/pypi/{name}/json"
PYPI_TIMEOUT = 10
PYPI_WORKERS = 8
USER_AGENT = "paper-desk-ci/1 (scripts/ci_security.py pip-audit fallback)"
# What bandit scans: everything that ships or runs in CI, but not the tests (asserts are their
# job), the benchmarks, the venv or build output.
BANDIT_EXCLUDE = [".venv", "tests", "build", "bench", "instance", ".git", ".hypothesis"]


def baseline(kind: str) -> list[dict]:
    """The [[kind]] entries of the baseline file; exits when one has no reason."""
    entries = tomllib.loads(BASELINE.read_text(encoding="utf-8")).get(kind, [])
    for entry in entries:
        if not str(entry.get("reason", "")).strip():
            sys.exit(f"{BASELINE.name}: a [[{kind}]] entry has no reason: {entry}")
    return entries


def write_summary(tool: str, line: str) -> None:
    """Print the tool's one-line result and keep it in build/ci/<tool>.txt (ci_figures.py)."""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{tool}.txt").write_text(line + "\n", encoding="utf-8")
    print(line)


def run_bandit() -> int:
    """Run bandit over the repository; fail on a finding the baseline does not explain."""
    report = OUT / "bandit.json"
    OUT.mkdir(parents=True, exist_ok=True)
    cmd = [str(BIN / "bandit"), "-q", "-r", ".", "-f", "json", "-o", str(report),
           "-x", ",".join(f"./{name}" for name in BANDIT_EXCLUDE)]
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode not in (0, 1) or not report.exists():
        print(result.stdout, result.stderr)
        print(f"bandit could not run (exit {result.returncode})")
        return 2
    data = json.loads(report.read_text(encoding="utf-8"))
    if data.get("errors"):
        for error in data["errors"]:
            print(f"bandit error: {error}")
        return 2
    entries = baseline("bandit")
    used: set[int] = set()
    unexplained = []
    for finding in data["results"]:
        path = finding["filename"].removeprefix("./")
        match = next((i for i, e in enumerate(entries)
                      if e["test"] == finding["test_id"] and e["file"] == path
                      and e.get("code", "") in finding["code"]), None)
        if match is None:
            unexplained.append(finding)
        else:
            used.add(match)
    for finding in unexplained:
        print(f"\nUNEXPLAINED {finding['test_id']} ({finding['issue_severity']}) "
              f"{finding['filename']}:{finding['line_number']}: {finding['issue_text']}")
        print(finding["code"].rstrip())
    for i, entry in enumerate(entries):
        if i not in used:
            print(f"stale baseline entry (matches nothing now): {entry['test']} {entry['file']}")
    scanned = data["metrics"]["_totals"]["loc"]
    write_summary("bandit", f"bandit: {scanned} lines scanned, {len(data['results'])} findings, "
                            f"{len(data['results']) - len(unexplained)} explained in "
                            f"{BASELINE.name}, {len(unexplained)} unexplained")
    return 1 if unexplained else 0


def canonical(name: str) -> str:
    """A project name as PyPI compares them (PEP 503): `Flask_SQLAlchemy` -> `flask-sqlalchemy`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned_versions(lock: Path) -> dict[str, str]:
    """The `name==version` pins of a requirements file, keyed by canonical name."""
    pins = {}
    for raw in lock.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip().rstrip("\\").strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==", 1)
            pins[canonical(name.split("[", 1)[0].strip())] = version.split()[0]
    return pins


def pypi_project(name: str) -> dict:
    """PyPI's project JSON for `name` (info of the latest release, and that release's
    vulnerabilities). Raises OSError (URLError, HTTPError, timeout) or ValueError (bad JSON)."""
    request = urllib.request.Request(PYPI_PROJECT.format(name=urllib.parse.quote(name)),
                                     headers={"User-Agent": USER_AGENT,
                                              "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=PYPI_TIMEOUT) as answer:
        return json.load(answer)


def same_version(a: str, b: str) -> bool:
    """Whether two version strings name the same release (`1.0` == `1.0.0`, PEP 440)."""
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def audit_via_project_json(pins: dict[str, str]) -> dict[str, dict]:
    """Audit pinned packages pip-audit could not look up, from PyPI's project JSON.

    That document lists the vulnerabilities of the project's latest release only, so it speaks
    for our pin exactly when the pin is that release. Returns, per canonical name, a dict with
    `state` ("audited", "behind" - pinned is not the latest - or "error"), `version`, `latest`,
    `vulns` (pip-audit's shape: id, aliases, fix_versions, description) and `error`.
    """
    def look_up(name: str) -> tuple[str, dict]:
        version = pins[name]
        try:
            data = pypi_project(name)
            latest = str(data["info"]["version"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return name, {"state": "error", "version": version, "error": str(exc)}
        if not same_version(version, latest):
            return name, {"state": "behind", "version": version, "latest": latest}
        vulns = [{"id": v.get("id"), "aliases": v.get("aliases") or [],
                  "fix_versions": v.get("fixed_in") or [],
                  "description": v.get("summary") or v.get("details") or ""}
                 for v in data.get("vulnerabilities") or []
                 # A withdrawn advisory was retracted by its publisher: not a finding.
                 if not v.get("withdrawn")]
        return name, {"state": "audited", "version": version, "latest": latest, "vulns": vulns}

    with ThreadPoolExecutor(max_workers=PYPI_WORKERS) as pool:
        return dict(pool.map(look_up, sorted(pins)))


def explained_by(vuln: dict, entries: list[dict]) -> dict | None:
    """The baseline entry whose `id` is the advisory's id or one of its aliases, if any."""
    names = {vuln.get("id"), *(vuln.get("aliases") or [])}
    return next((entry for entry in entries if entry["id"] in names), None)


def run_pip_audit() -> int:
    """Audit both lock files: pip-audit first, PyPI's project JSON for what it could not
    look up. Fails on a vulnerability the baseline does not explain (and, with
    PIP_AUDIT_STRICT=1, on any package left unaudited)."""
    report = OUT / "pip-audit.json"
    OUT.mkdir(parents=True, exist_ok=True)
    entries = baseline("pip-audit")
    # No --ignore-vuln: the baseline is applied below, to pip-audit's findings and the
    # fallback's alike, so that an explained finding is still counted and shown as such.
    cmd = [str(BIN / "pip-audit"), *(arg for lock in LOCKS for arg in ("-r", lock.name)), "--no-deps", "--disable-pip",
           "--progress-spinner", "off", "-f", "json", "-o", str(report)]
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if not report.exists():
        print(result.stdout[-3000:], result.stderr[-3000:])
        print(f"pip-audit could not run (exit {result.returncode})")
        return 2
    dependencies = json.loads(report.read_text(encoding="utf-8")).get("dependencies", [])
    pins = {name: version for lock in LOCKS for name, version in pinned_versions(lock).items()}
    # pip-audit's verdict stands for every package it did look up.
    findings = [(d["name"], d["version"], v) for d in dependencies if "skip_reason" not in d
                for v in d.get("vulns", [])]
    by_pip_audit = sum("skip_reason" not in d for d in dependencies)
    skipped = {canonical(d["name"]) for d in dependencies if "skip_reason" in d}
    if skipped:
        reasons = sorted({d["skip_reason"].split(":")[0] for d in dependencies
                          if "skip_reason" in d})
        print(f"\npip-audit could not look up {len(skipped)} of {len(dependencies)} pinned "
              f"packages ({'; '.join(reasons)}); asking PyPI's project JSON instead", flush=True)
    unpinned = sorted(skipped - pins.keys())  # not `name==version` in the lock: nothing to ask
    fallback = audit_via_project_json({name: pins[name] for name in skipped & pins.keys()})
    audited = {n: r for n, r in fallback.items() if r["state"] == "audited"}
    behind = {n: r for n, r in fallback.items() if r["state"] == "behind"}
    failed = {n: r for n, r in fallback.items() if r["state"] == "error"}
    findings += [(n, r["version"], v) for n, r in audited.items() for v in r["vulns"]]

    unexplained, used = [], set()
    for name, version, vuln in findings:
        entry = explained_by(vuln, entries)
        if entry is None:
            unexplained.append((name, version, vuln))
        else:
            used.add(entry["id"])
            print(f"explained in {BASELINE.name}: {name}=={version} {vuln['id']}")
    for name, version, vuln in unexplained:
        print(f"\nVULNERABLE {name}=={version}: {vuln['id']}"
              + (f" (aliases: {', '.join(vuln['aliases'])})" if vuln.get("aliases") else "")
              + f", fixed in {', '.join(vuln.get('fix_versions') or ['no release yet'])}")
        print("  " + (vuln.get("description") or "").strip()[:400])
    for entry in entries:
        if entry["id"] not in used:
            print(f"baseline entry {entry['id']} ({entry.get('package')}) matched no finding: "
                  "stale, or its package was not audited")
    if behind:
        print(f"\nbehind the latest release, not audited ({len(behind)}): PyPI lists "
              "vulnerabilities for the latest release only; pinned -> latest:")
        print("  " + ", ".join(f"{n} {r['version']} -> {r['latest']}"
                               for n, r in sorted(behind.items())))
    if failed or unpinned:
        print(f"\ncould not be looked up at all ({len(failed) + len(unpinned)}):")
        for name, r in sorted(failed.items()):
            print(f"  {name}=={r['version']}: {r['error']}")
        for name in unpinned:
            print(f"  {name}: no `name==version` pin in {' or '.join(lock.name for lock in LOCKS)}")

    not_audited = len(behind) + len(failed) + len(unpinned)
    explained = len(findings) - len(unexplained)
    line = (f"pip-audit: {len(dependencies)} pinned packages; {by_pip_audit} audited by pip-audit"
            + (f" ({len(skipped)} not found on its vulnerability service)" if skipped else "")
            + f", {len(audited)} audited via PyPI's project JSON (pinned = latest); "
            f"{len(findings)} known vulnerabilities in the {by_pip_audit + len(audited)} audited"
            + (f" ({explained} explained in {BASELINE.name}, {len(unexplained)} unexplained)"
               if findings else "")
            + f"; {len(behind)} behind the latest release, not audited")
    if failed or unpinned:
        line += f"; {len(failed) + len(unpinned)} could not be looked up"
    if by_pip_audit + len(audited) == 0:
        line += " - WARNING: nothing was audited"
    write_summary("pip-audit", line)
    if unexplained:
        return 1
    if not_audited and os.environ.get("PIP_AUDIT_STRICT") == "1":
        print("PIP_AUDIT_STRICT=1: packages that could not be audited fail the step")
        return 1
    return 0


def main(argv: list[str]) -> int:
    tools = {"bandit": run_bandit, "pip-audit": run_pip_audit}
    if len(argv) != 1 or argv[0] not in tools:
        print(__doc__)
        return 2
    return tools[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
