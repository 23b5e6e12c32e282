#!/usr/bin/env python3
"""The security figures of a CI run, for docs/SECURITY.md and the README's "Security" section.

Reads what the earlier steps of .ci/run left in build/: schemathesis's figures
(build/schemathesis/figures.json), hypothesis's statistics in the pytest log
(build/ci/pytest.log, written with --hypothesis-show-statistics), the fault suite's table
(build/faults/table.json) and the scanners' one-line results (build/ci/bandit.txt,
build/ci/pip-audit.txt). Prints them and writes
build/ci/figures.json (and the printed lines to build/ci/figures.txt). Exit status 1 when a figure
is missing (its step did not run or failed to report), else 0: the steps themselves decide pass
or fail.
"""
from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "build" / "ci"
SCHEMATHESIS = ROOT / "build" / "schemathesis" / "figures.json"
FAULTS = ROOT / "build" / "faults" / "table.json"
# "    - 60 passing, 0 failing, and 0 invalid test cases", once per phase per test.
STATS = re.compile(r"-\s+([0-9]+) passing, ([0-9]+) failing, and ([0-9]+) invalid test cases")
TEST_HEADER = re.compile(r"^(tests/\S+::\S+):\s*$")


def hypothesis_figures(log: Path) -> dict | None:
    if not log.exists():
        return None
    tests, passing, failing = set(), 0, 0
    current = None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if header := TEST_HEADER.match(line):
            current = header.group(1)
        elif (found := STATS.search(line)) and current:
            tests.add(current)
            passing += int(found.group(1))
            failing += int(found.group(2))
    if not tests:
        return None
    return {"tests": len(tests), "cases": passing + failing, "failing_cases": failing}


def fault_figures(table: Path) -> dict | None:
    """The fault suite's totals (scripts/faults.py's table.json), or None when it did not run."""
    if not table.exists():
        return None
    rows = json.loads(table.read_text(encoding="utf-8"))["scenarios"]
    recoveries = [r["recovery"] for r in rows if r["recovery"] is not None]
    return {"scenarios": len(rows), "failed": sum(not r["passed"] for r in rows),
            "requests": sum(r["requests"] for r in rows), "bare_500": sum(r["c500"] for r in rows),
            "problem_500": sum(r["c500_problem"] for r in rows), "acked": sum(r["acked"] for r in rows),
            "lost": sum(r["lost"] for r in rows), "duplicates": sum(r["duplicates"] for r in rows),
            "slowest_recovery": max(recoveries, default=None)}


def main() -> int:
    figures: dict = {"at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    missing = []
    if SCHEMATHESIS.exists():
        figures["schemathesis"] = json.loads(SCHEMATHESIS.read_text(encoding="utf-8"))
    else:
        missing.append("schemathesis")
    hypothesis = hypothesis_figures(CI / "pytest.log")
    if hypothesis:
        figures["hypothesis"] = hypothesis
    else:
        missing.append("hypothesis (run pytest with --hypothesis-show-statistics)")
    faults = fault_figures(FAULTS)
    if faults:
        figures["faults"] = faults
    else:
        missing.append("faults (make faults)")
    for tool in ("bandit", "pip-audit"):
        path = CI / f"{tool}.txt"
        if path.exists():
            figures[tool] = path.read_text(encoding="utf-8").strip()
        else:
            missing.append(tool)
    CI.mkdir(parents=True, exist_ok=True)
    (CI / "figures.json").write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")

    lines = []
    st = figures.get("schemathesis")
    if st:
        backends = sorted({lane["backend"] for lane in st["lanes"]})
        lines.append(f"schemathesis: {st['cases']} test cases generated over {len(st['lanes'])} "
                     f"lanes ({', '.join(backends)}); server errors found: {st['server_errors']}")
    if hypothesis:
        lines.append(f"hypothesis: {hypothesis['cases']} test cases over {hypothesis['tests']} "
                     f"property test runs; failing cases: {hypothesis['failing_cases']}")
    if faults:
        lines.append(f"faults: {faults['scenarios']} scenario runs ({faults['failed']} failed), "
                     f"{faults['requests']} requests; bare 500s {faults['bare_500']}, 500 problems "
                     f"{faults['problem_500']}; {faults['acked']} acknowledged writes, lost "
                     f"{faults['lost']}, duplicated {faults['duplicates']}; slowest recovery "
                     f"{faults['slowest_recovery']} s")
    lines += [figures[tool] for tool in ("bandit", "pip-audit") if tool in figures]
    lines += [f"missing figure: {name}" for name in missing]
    # .ci/run prints this file again in its closing summary.
    (CI / "figures.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
