#!/usr/bin/env python3
"""Run bandit or pip-audit for CI and hold the result against scripts/security-baseline.toml.

    .venv/bin/python scripts/ci_security.py bandit      # static analysis of the app and scripts
    .venv/bin/python scripts/ci_security.py pip-audit   # known vulnerabilities in requirements.lock

Exit status: 0 when every finding is explained in the baseline, 1 when one is not (it is
printed), 2 when the tool itself could not run. A baseline entry that matches nothing is
reported as stale. Both write their JSON report under build/ci/, and a one-line result to
build/ci/<tool>.txt for scripts/ci_figures.py.

pip-audit asks the vulnerability service about each pinned version of requirements.lock
(--no-deps: the lock pins the whole tree). A package the service has no record of is listed as
skipped, not as clean; PIP_AUDIT_STRICT=1 turns skipped packages into a failure.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OUT = ROOT / "build" / "ci"
BASELINE = ROOT / "scripts" / "security-baseline.toml"
# What bandit scans: everything that ships or runs in CI, but not the tests (asserts are their
# job), the benchmarks, the venv or build output.
BANDIT_EXCLUDE = [".venv", "tests", "build", "bench", "instance", ".git", ".hypothesis"]


def baseline(kind: str) -> list[dict]:
    entries = tomllib.loads(BASELINE.read_text(encoding="utf-8")).get(kind, [])
    for entry in entries:
        if not str(entry.get("reason", "")).strip():
            sys.exit(f"{BASELINE.name}: a [[{kind}]] entry has no reason: {entry}")
    return entries


def write_summary(tool: str, line: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{tool}.txt").write_text(line + "\n", encoding="utf-8")
    print(line)


def run_bandit() -> int:
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


def run_pip_audit() -> int:
    report = OUT / "pip-audit.json"
    OUT.mkdir(parents=True, exist_ok=True)
    entries = baseline("pip-audit")
    cmd = [str(BIN / "pip-audit"), "-r", "requirements.lock", "--no-deps", "--disable-pip",
           "--progress-spinner", "off", "-f", "json", "-o", str(report)]
    for entry in entries:
        cmd += ["--ignore-vuln", entry["id"]]
    print("$ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if not report.exists():
        print(result.stdout[-3000:], result.stderr[-3000:])
        print(f"pip-audit could not run (exit {result.returncode})")
        return 2
    data = json.loads(report.read_text(encoding="utf-8"))
    dependencies = data.get("dependencies", [])
    skipped = [d for d in dependencies if "skip_reason" in d]
    vulnerable = [d for d in dependencies if d.get("vulns")]
    ignored_ids = {entry["id"] for entry in entries}
    for dep in vulnerable:
        for vuln in dep["vulns"]:
            print(f"\nVULNERABLE {dep['name']}=={dep['version']}: {vuln['id']} "
                  f"(fixed in {', '.join(vuln.get('fix_versions') or ['no release yet'])})")
            print("  " + (vuln.get("description") or "").strip()[:400])
    seen_ids = {fix.get("id") for fix in data.get("fixes", [])} | {
        v["id"] for d in dependencies for v in d.get("vulns", [])}
    for entry in entries:
        if entry["id"] not in seen_ids:
            print(f"baseline entry {entry['id']} ({entry.get('package')}): ignored if present")
    if skipped:
        reasons = sorted({d["skip_reason"].split(":")[0] for d in skipped})
        print(f"\n{len(skipped)} of {len(dependencies)} pinned packages could not be looked up: "
              + "; ".join(reasons))
        print("  " + ", ".join(d["skip_reason"].rsplit(": ", 1)[-1] for d in skipped))
    audited = len(dependencies) - len(skipped)
    line = (f"pip-audit: {len(dependencies)} pinned packages, {audited} audited, "
            f"{sum(len(d['vulns']) for d in vulnerable)} known vulnerabilities "
            f"({len(ignored_ids)} ignored in {BASELINE.name}), {len(skipped)} not found on the "
            f"vulnerability service")
    if skipped and audited == 0:
        line += " - WARNING: nothing was audited"
    write_summary("pip-audit", line)
    if vulnerable:
        return 1
    if skipped and os.environ.get("PIP_AUDIT_STRICT") == "1":
        print("PIP_AUDIT_STRICT=1: packages that could not be looked up fail the step")
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
