#!/usr/bin/env python3
"""Where a served request's time goes: each path under wrk on gunicorn as `make bench` runs it,
measured as the worker CPU each request costs, beside the bare Flask view's.

`make bench` reports req/s as a share of the bare Flask view; on a machine shared with other
work that share moves by 10-20 points between runs of the same code. What the share follows is
the CPU a request costs the worker (utime + stime from /proc, over every request of the run):
that moves by a few per cent, so it shows a cut the req/s share hides in its noise. In-process
counts (bench/cold_instructions.py, callgrind) miss part of it: a worker that shares two CPUs with
wrk, Redis and the other worker runs the same instructions 1.5-2x slower than a hot loop does,
and what a request touches once (a log record's thirty attributes, a second handler chain)
costs more there than its instruction count says (docs/PERFORMANCE.md "Where a cold request's
time goes under wrk").

For each round: the bare Flask view (bench/baselines.py), then each path, wrk -t2 -c16 for
`--seconds`, the server's workers' CPU read before and after. Cold by default
(CACHE_TYPE=NullCache, as http_bench's cold rows); `--warm` primes a SimpleCache.
`--py-spy DIR` records one worker of the app under each path's last run (py-spy's raw format,
one file a path; needs root and `pip install py-spy`). `--backend postgresql` serves a fresh
database at BENCH_DATABASE_URL (default: the bench's own, dropped after) and reports the
database server's CPU per request too (every `postgres` process of this machine: run it alone).

    .venv/bin/python -m bench.live /healthz '/api/v1/stories/{id}' --rounds 3
    .venv/bin/python -m bench.live '/api/v1/stories?limit=15' --py-spy /tmp/spy
    .venv/bin/python -m bench.live '/api/v1/stories/{id}' --backend postgresql
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # `python bench/live.py`: import from the project root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness  # noqa: E402

_TICKS = os.sysconf("SC_CLK_TCK")


def server_pids(name: str = "postgres") -> list[int]:
    """The processes of this machine whose command is `name` (a database server's)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == name:
                    found.append(int(entry.name))
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU seconds the processes `pids` have used so far (/proc/PID/stat);
    a process gone meanwhile counts nothing."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / _TICKS


def measured(url: str, pids: list[int], seconds: int, spy: Path | None = None,
             server: bool = False) -> tuple[float, float, float]:
    """wrk -t2 -c16 on `url` for `seconds`: (req/s, worker CPU microseconds per request, the
    database server's), the CPU of the server's workers `pids` and, with `server`, of every
    `postgres` process (else 0); with `spy`, py-spy records `pids[0]` meanwhile."""
    database = server_pids() if server else []
    database_before = cpu_seconds(database)
    recorder = None
    if spy is not None:
        recorder = subprocess.Popen([_py_spy(), "record", "--pid", str(pids[0]), "--rate", "500",
                                     "--format", "raw", "-o", str(spy), "-d", str(max(1, seconds - 1))],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    before = cpu_seconds(pids)
    load = harness.wrk(url, duration=seconds, threads=2, connections=16)
    used = cpu_seconds(pids) - before
    database_used = cpu_seconds(database) - database_before
    if recorder is not None:
        recorder.wait()
    return load.rps, 1e6 * used / max(1, load.requests), 1e6 * database_used / max(1, load.requests)


def _py_spy() -> str | None:
    """py-spy on PATH or beside this Python (the venv's bin), else None."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="paths, {id} for the newest piece on air")
    parser.add_argument("--pieces", type=int, default=10_000, help="pieces `flask seed-demo` makes")
    parser.add_argument("--seconds", type=int, default=5, help="seconds of wrk per path and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="SimpleCache instead of NullCache")
    parser.add_argument("--py-spy", type=Path, default=None, help="folder for one raw profile per path")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    harness.ensure_wrk()
    if args.py_spy is not None:
        if _py_spy() is None:
            raise SystemExit("py-spy is not installed: .venv/bin/pip install py-spy")
        args.py_spy.mkdir(parents=True, exist_ok=True)
    redis_url = os.environ.get("BENCH_REDIS_URL", harness.DEFAULT_REDIS)
    limiter = redis_url if harness.redis_reachable(redis_url) else "memory://"
    with tempfile.TemporaryDirectory(prefix="paperdesk-live-") as tmp, contextlib.ExitStack() as servers:
        work = Path(tmp)
        postgres = args.backend == "postgresql"
        if postgres:
            url = os.environ.get("BENCH_DATABASE_URL", harness.DEFAULT_PG)
            if not harness.postgres_reachable(url):
                raise SystemExit(f"PostgreSQL at {url} is unreachable (set BENCH_DATABASE_URL)")
            servers.callback(harness.drop_postgres, url, keep_empty="BENCH_DATABASE_URL" in os.environ)
        else:
            url = f"sqlite:///{work / 'live.db'}"
        env, _ = harness.fresh_seeded(args.backend, url, work, args.pieces, args.pieces)
        piece = harness.query_one(url, "SELECT max(id) FROM pieces WHERE paper_id = "
                                       "(SELECT id FROM papers WHERE slug = 'demo') AND on_air")
        env["RATELIMIT_STORAGE_URI"] = limiter
        app_env = {**env, "CACHE_TYPE": "SimpleCache" if args.warm else "NullCache"}
        bare, bare_master = servers.enter_context(harness.gunicorn(env, work / "bare.log",
                                                                   app="bench.baselines:bare_flask"))
        base, master = servers.enter_context(harness.gunicorn(app_env, work / "app.log"))
        bare_pids, pids = harness.worker_pids(bare_master), harness.worker_pids(master)
        paths = [path.format(id=piece) for path in args.paths]
        rows: dict[str, list[tuple[float, float, float, float]]] = {path: [] for path in paths}
        for round_no in range(args.rounds):
            for index, path in enumerate(paths):
                bare_rps, bare_cpu, _ = measured(bare + "/", bare_pids, args.seconds)
                harness.get(base + path)  # (a warm run's first answer is stored here)
                last = round_no == args.rounds - 1
                spy = args.py_spy / f"{re.sub(r'[^A-Za-z0-9]+', '_', path).strip('_') or index}.raw" \
                    if args.py_spy is not None and last else None
                rps, cpu, database = measured(base + path, pids, args.seconds, spy, server=postgres)
                harness.settle(base + path, "")
                rows[path].append((rps, cpu, bare_rps, bare_cpu, database))
                print(f"r{round_no + 1} {path:34s} {rps:7.0f} req/s ({100 * rps / bare_rps:5.1f}% of bare)"
                      f"  worker CPU {cpu:6.0f} us/request (bare {bare_cpu:4.0f})"
                      + (f"  PostgreSQL CPU {database:5.0f} us/request" if postgres else ""), flush=True)
    print(f"\n{'path':34s} {'req/s share':>11s} {'CPU us/request':>15s} {'CPU share':>9s}"
          + (f" {'PostgreSQL us/request':>22s}" if postgres else ""))
    for path, samples in rows.items():
        share = statistics.mean(rps / bare_rps for rps, _, bare_rps, _, _ in samples)
        cpu = statistics.median(c for _, c, _, _, _ in samples)
        cpu_share = statistics.mean(bare_cpu / c for _, c, _, bare_cpu, _ in samples)
        database = statistics.median(d for *_, d in samples)
        print(f"{path:34s} {100 * share:10.1f}% {cpu:15.0f} {100 * cpu_share:8.1f}%"
              + (f" {database:22.0f}" if postgres else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
