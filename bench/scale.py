#!/usr/bin/env python3
"""How list, front, story and search latency change with the archive (`make bench`).

For each size (1 000 and 10 000 pieces by default; bench/http.py adds its 100 000-piece run), a
fresh database is seeded, gunicorn starts as in production with 2 workers and the response cache
off (CACHE_TYPE=NullCache: every request does its real work), and wrk drives `/api/v1/stories`,
`/api/v1/front`, the newest piece's JSON and page, and `/api/v1/search` (a common and a rare
term) one request at a time
(-t1 -c1), so the percentiles are what a request costs, not how long it queued.

    .venv/bin/python -m bench.scale --sizes 1000,10000 --backends sqlite

Prints one line per (backend, size, endpoint). bench/http.py calls `measure` and writes the table.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

if __package__ in (None, ""):  # `python bench/scale.py`: import from the project root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness  # noqa: E402
from bench.report import BARE  # noqa: E402

PATHS = {
    "list": "/api/v1/stories",
    "front": "/api/v1/front",
    # The newest piece on air ({id}): the story's JSON and its page, cold.
    "story": "/api/v1/stories/{id}",
    "story page": "/stories/{id}",
    "search (common)": f"/api/v1/search?q={harness.COMMON_TERM}",
    "search (rare)": "/api/v1/search?q=" + harness.RARE_TERM.replace(" ", "+"),
}




def measure_server(base: str, *, duration: int, threads: int = 1, connections: int = 1,
                   bare: str | None = None) -> dict:
    """wrk on each of PATHS against a running server: {label: Load}. One connection by
    default, so a percentile is the time a request takes, without queueing behind others.

    With `bare` (the base URL of a bare Flask view on gunicorn), that view is measured the same
    way before the paths and again after them, and the mean of the two is the row BARE: the
    baseline of this lane, so that lanes run minutes apart compare as shares of their own
    baseline, not as absolute req/s on a machine whose speed drifts between them."""
    results = {}
    before = harness.wrk(bare + "/", duration=duration, threads=threads,
                         connections=connections) if bare else None
    newest = json.loads(harness.get(base + "/api/v1/stories?limit=1")[2])["stories"][0]["id"]
    for label, template in PATHS.items():
        path = template.format(id=newest)
        status = harness.get(base + path)[0]
        if status != 200:
            raise harness.BenchError(f"{path} answered {status}")
        results[label] = harness.wrk(base + path, duration=duration, threads=threads,
                                     connections=connections)
        harness.settle(base, "/healthz")
    if bare:
        after = harness.wrk(bare + "/", duration=duration, threads=threads, connections=connections)
        results[BARE] = replace(after, rps=(before.rps + after.rps) / 2)
    return results


def measure(backend: str, database_url: str, pieces: int, workdir: Path, *, limiter_uri: str,
            duration: int, threads: int = 1, connections: int = 1) -> dict:
    """Seed a fresh `backend` database with `pieces`, serve it cold, return {label: Load}."""
    instance = workdir / f"instance-{backend}-{pieces}"
    instance.mkdir(parents=True, exist_ok=True)
    if backend == "postgresql":
        harness.recreate_postgres(database_url)
    else:
        harness.remove_sqlite(database_url)
    env = harness.base_env(database_url, instance)
    harness.seed(env, pieces, 0)
    harness.analyze(database_url)
    env.update(CACHE_TYPE="NullCache", RATELIMIT_STORAGE_URI=limiter_uri)
    log = workdir / f"gunicorn-{backend}-{pieces}.log"
    bare_log = workdir / f"gunicorn-{backend}-{pieces}-bare.log"
    with harness.gunicorn(env, log) as (base, _master), \
            harness.gunicorn(env, bare_log, app="bench.baselines:bare_flask") as (bare, _bare_master):
        return measure_server(base, duration=duration, threads=threads, connections=connections,
                              bare=bare)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--connections", type=int, default=1)
    args = parser.parse_args()
    harness.ensure_wrk()
    pg = os.environ.get("BENCH_DATABASE_URL", harness.DEFAULT_PG)
    redis_url = os.environ.get("BENCH_REDIS_URL", harness.DEFAULT_REDIS)
    limiter = redis_url if harness.redis_reachable(redis_url) else "memory://"
    with tempfile.TemporaryDirectory(prefix="paperdesk-scale-") as tmp:
        work = Path(tmp)
        for backend in args.backends.split(","):
            url = pg if backend == "postgresql" else f"sqlite:///{work / 'scale.db'}"
            if backend == "postgresql" and not harness.postgres_reachable(pg):
                print(f"postgresql: {pg} unreachable, skipped")
                continue
            existed = backend == "postgresql" and harness.postgres_exists(pg)
            for size in (int(s) for s in args.sizes.split(",")):
                for label, load in measure(backend, url, size, work, limiter_uri=limiter,
                                           duration=args.duration, threads=args.threads,
                                           connections=args.connections).items():
                    print(f"{backend:<10} {size:>7} {label:<16} {load.rps:8.1f} req/s  "
                          f"p50 {load.p50_ms:7.2f} ms  p99 {load.p99_ms:7.2f} ms")
            if backend == "postgresql":
                harness.drop_postgres(pg, keep_empty=existed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
