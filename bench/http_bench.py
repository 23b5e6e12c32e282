#!/usr/bin/env python3
"""`make bench`: public GETs under load at 100 000 pieces, on SQLite and PostgreSQL, cold and
warm, as ratios of a bare Flask view served by the same gunicorn; how latency grows with the
archive; worker memory.

(Named http_bench.py, not http.py: a module called `http` in bench/ would shadow the standard
library's `http` package for every script run from this directory.)

For each backend (a fresh SQLite file; and a fresh PostgreSQL database at BENCH_DATABASE_URL,
default postgresql://postgres@127.0.0.1:5432/paperdesk_bench, created and dropped here; both by
default, and a PostgreSQL server that does not answer stops the run rather than leave its lane
out: `--backends sqlite` runs SQLite alone):

1. bench/scale.py: 1 000 and 10 000 pieces, cold: list, front and search latency, one
   request at a time (wrk -t1 -c1: the time a request takes, not the time it queues), and
   the bare Flask view the same way in each lane, the baseline of the PostgreSQL check.
   (A PostgreSQL database that existed before the run, or that BENCH_DATABASE_URL names, is
   left behind empty; one the run created under the default name is dropped.)
2. `flask seed-demo --pieces 100000 --subscribers 100000` (timed; it ends with `flask
   analyze-db`'s statistics refresh, as docs/DEPLOYING.md asks after a bulk load), then the
   same statistics once more (SQLite `ANALYZE`; PostgreSQL `VACUUM ANALYZE`).
3. gunicorn as in production (gunicorn.conf.py, 2 workers, rate limiter on, Redis for the
   limiter and the cache when BENCH_REDIS_URL, default redis://127.0.0.1:6379/14, answers),
   twice: cold (CACHE_TYPE=NullCache) and warm (the response cache primed). Beside it, two
   baselines on gunicorns with the very same settings (bench/baselines.py): a bare WSGI
   callable and a bare Flask view, each answering `{"status": "ok"}`. wrk at fixed
   concurrency (-t2 -c16) runs every row (the baselines, then each endpoint) for 5 s, and all
   of them again for each round (2 by default), so drift on the machine hits every row alike.
   Ratios are to the bare Flask view's mean in the same mode.
4. The same latency probes as step 1 at 100 000 pieces (cold), and worker RSS (ps) after
   each run.

Results go to bench/results/<time>.json and, unless --no-record, to the generated part of
docs/PERFORMANCE.md (between its bench markers; the rest of the file is left alone).

    .venv/bin/python -m bench.http_bench                  # the full run (about 15 minutes)
    .venv/bin/python -m bench.http_bench --quick --no-record   # a 2-minute smoke run
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

if __package__ in (None, ""):  # `python bench/http_bench.py`: import from the project root
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness, report, scale  # noqa: E402

# (label, path template, kind). Kinds decide the targets (bench/report.py).
ENDPOINTS = [
    ("/healthz", "/healthz", "health"),
    ("/api/v1/stories?limit=15", "/api/v1/stories?limit=15", "list15"),
    ("/api/v1/stories?limit=50", "/api/v1/stories?limit=50", "list50"),
    ("/api/v1/stories?limit=200", "/api/v1/stories?limit=200", "list200"),
    ("/api/v1/stories/{id}", "/api/v1/stories/{id}", "story"),
    ("/stories/{id} (page)", "/stories/{id}", "page"),
    ("/api/v1/front", "/api/v1/front", "front"),
    ("/ (front page)", "/", "frontpage"),
    ("/api/v1/search (common)", f"/api/v1/search?q={harness.COMMON_TERM}", "search"),
    ("/api/v1/search (rare)", "/api/v1/search?q=" + harness.RARE_TERM.replace(" ", "+"), "search"),
    ("/rss.xml", "/rss.xml", "feed"),
    ("/sitemap.xml", "/sitemap.xml", "feed"),
    ("/embed/{id}", "/embed/{id}", "embed"),
    ("304 /api/v1/stories", "/api/v1/stories?limit=15", "304"),
    # The transparency log (docs/PROOFS.md): the signed checkpoint, a full hash tile (256
    # hashes, 8 KiB) and a full entry bundle (256 entries), as monitors fetch them.
    ("/log/checkpoint", "/log/checkpoint", "checkpoint"),
    ("/log/tile/0/000", "/log/tile/0/000", "tile"),
    ("/log/tile/entries/000", "/log/tile/entries/000", "tile"),
]
# The baselines (bench/baselines.py), each on its own gunicorn with the app's settings.
BASELINES = [("bare WSGI callable", "bench.baselines:bare_wsgi"), ("bare Flask view", "bench.baselines:bare_flask")]
REFERENCE = "bare Flask view"
# A row whose answer is at least this large (bytes, identity) also gets a baseline of its own: the
# bare WSGI callable sending as many bytes, in the same rounds (`same_body` on the row). Against a
# 17-byte baseline, such a row measures the socket copies as much as the app.
LARGE_BODY = 32 * 1024
SAME_BODY = "bare WSGI, the bytes of "


def run_mode(base: str, master: int, baselines: dict, piece_id: int, mode: str, args) -> dict:
    """Every row (the baselines, then each endpoint) for `args.duration` seconds, and all of
    them again for each of `args.rounds` rounds, so drift on the machine hits every row alike;
    then worker RSS. A row's figures are the mean req/s over the rounds and the median
    percentiles; `baselines` maps each baseline's label to its server's base URL."""
    load = dict(threads=args.threads, connections=args.connections, duration=args.duration)
    urls = {label: url + "/" for label, url in baselines.items()}
    urls.update({label: base + path.format(id=piece_id) for label, path, _ in ENDPOINTS})
    kinds = {label: kind for label, _, kind in ENDPOINTS}
    etag = None
    sizes: dict[str, int] = {}
    for label, _path, _kind in ENDPOINTS:
        status, headers, body = harness.get(urls[label])
        if status != 200:
            raise harness.BenchError(f"{urls[label]} answered {status}")
        etag = headers.get("ETag") if label.startswith("304") else etag
        if len(body) >= LARGE_BODY:  # as wrk gets it: no Accept-Encoding, the identity body
            sizes[label] = len(body)
        if mode == "warm":
            harness.get(urls[label])  # the first GET stored it; this one is served from the cache
    wsgi = baselines["bare WSGI callable"]
    same_body = {label: f"{SAME_BODY}`{label}`" for label in sizes}
    urls.update({same_body[label]: f"{wsgi}/bytes/{size}" for label, size in sizes.items()})
    runs: dict[str, list[dict]] = {label: [] for label in urls}
    for round_no in range(args.rounds):
        for label, url in urls.items():
            headers = {"If-None-Match": etag} if kinds.get(label) == "304" else None
            runs[label].append(asdict(harness.wrk(url, headers=headers, **load)))
            harness.settle(url, "")
            last = runs[label][-1]
            print(f"    {mode:<4} r{round_no + 1} {label:<28} {last['rps']:8.1f} req/s  p50 {last['p50_ms']:7.2f} ms"
                  f"  p99 {last['p99_ms']:7.2f} ms", flush=True)
    rows = {label: _combine(samples) for label, samples in runs.items()}
    reference = rows[REFERENCE]["rps"]
    for row in rows.values():
        row["ratio"] = row["rps"] / reference if reference else 0.0
    for label, size in sizes.items():
        sent = rows.pop(same_body[label])
        rows[label]["same_body"] = {"bytes": size, "rps": sent["rps"], "ratio": sent["ratio"]}
    return {"baselines": {label: rows.pop(label) for label in baselines},
            "endpoints": rows, "rss_mb": harness.worker_rss_mb(master)}


def _explain_misses(measured: dict, env: dict, piece_id: int, mode: str) -> None:
    """For every row below its target, where one request of it spends its time
    (bench/where.py, in-process under cProfile, with the server's environment): stored on the
    row as `where`."""
    paths = {label: (path.format(id=piece_id), kind) for label, path, kind in ENDPOINTS}
    for label, row in measured["endpoints"].items():
        target = report.target(label, mode)
        if target is None or row["ratio"] >= target:
            continue
        path, kind = paths[label]
        command = [harness.PYTHON, "-m", "bench.where", path, *(["--if-none-match"] if kind == "304" else [])]
        done = subprocess.run(command, cwd=harness.ROOT, env={**env, **harness.UNLIMITED_ENV},
                              capture_output=True, text=True)
        if done.returncode == 0:
            row["where"] = json.loads(done.stdout.strip().splitlines()[-1])
        else:
            print(f"    where {label}: failed\n{done.stderr[-2000:]}", flush=True)


def _combine(samples: list[dict]) -> dict:
    """One row from its rounds: mean req/s (and its range), median p50 and p99, errors summed."""
    middle = len(samples) // 2
    return {"rps": sum(s["rps"] for s in samples) / len(samples),
            "min_rps": min(s["rps"] for s in samples), "max_rps": max(s["rps"] for s in samples),
            "p50_ms": sorted(s["p50_ms"] for s in samples)[middle],
            "p99_ms": sorted(s["p99_ms"] for s in samples)[middle],
            "errors": sum(s["errors"] for s in samples), "rounds": samples}


def run_backend(backend: str, url: str, work: Path, args, redis_url: str | None) -> dict:
    print(f"== {backend}", flush=True)
    limiter = redis_url or "memory://"
    result: dict = {"scale": {}}
    for size in args.sizes:
        print(f"  scale: {size:,} pieces", flush=True)
        loads = scale.measure(backend, url, size, work, limiter_uri=limiter,
                              duration=args.scale_duration)
        result["scale"][str(size)] = {label: asdict(load) for label, load in loads.items()}
    env, seeded = harness.fresh_seeded(backend, url, work, args.pieces, args.subscribers)
    result["seed"] = asdict(seeded)
    piece_id = harness.query_one(url, "SELECT max(id) FROM pieces WHERE paper_id = "
                                      "(SELECT id FROM papers WHERE slug = 'demo') AND on_air")
    env["RATELIMIT_STORAGE_URI"] = limiter
    for mode in ("cold", "warm"):
        mode_env = dict(env)
        if mode == "cold":
            mode_env["CACHE_TYPE"] = "NullCache"
        elif redis_url:
            mode_env.update(CACHE_TYPE="RedisCache", CACHE_REDIS_URL=redis_url,
                            CACHE_KEY_PREFIX=f"paperdesk-bench-{os.getpid()}-{backend}:")
        else:
            mode_env["CACHE_TYPE"] = "SimpleCache"
        print(f"  {mode} ({mode_env['CACHE_TYPE']})", flush=True)
        with contextlib.ExitStack() as servers:
            baselines = {label: servers.enter_context(harness.gunicorn(
                env, work / f"gunicorn-{backend}-{mode}-{label.split()[1]}.log", app=app))[0]
                for label, app in BASELINES}
            base, master = servers.enter_context(harness.gunicorn(mode_env, work / f"gunicorn-{backend}-{mode}.log"))
            result[mode] = run_mode(base, master, baselines, piece_id, mode, args)
            _explain_misses(result[mode], mode_env, piece_id, mode)
            if mode == "cold":  # the largest point of the growth table, one request at a time
                loads = scale.measure_server(base, duration=args.scale_duration, bare=baselines[REFERENCE])
                result["scale"][str(args.pieces)] = {k: asdict(v) for k, v in loads.items()}
        result[mode]["cache"] = mode_env["CACHE_TYPE"]
    if backend == "postgresql":
        harness.drop_postgres(url, keep_empty=args.pg_existed)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pieces", type=int, default=100_000)
    parser.add_argument("--subscribers", type=int, default=None, help="default: --pieces")
    parser.add_argument("--sizes", default="1000,10000", help="smaller archives for the growth table")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--duration", type=int, default=5, help="seconds of wrk per row and round")
    parser.add_argument("--rounds", type=int, default=2, help="times every row is measured, interleaved")
    parser.add_argument("--scale-duration", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="10 000 pieces, 3 s runs: a smoke test")
    parser.add_argument("--no-record", action="store_true", help="leave docs/PERFORMANCE.md alone")
    args = parser.parse_args()
    if args.quick:
        args.pieces, args.duration, args.scale_duration, args.sizes = 10_000, 3, 2, "1000"
        args.rounds = 1
    args.subscribers = args.pieces if args.subscribers is None else args.subscribers
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    harness.ensure_wrk()
    pg = os.environ.get("BENCH_DATABASE_URL", harness.DEFAULT_PG)
    redis_url = os.environ.get("BENCH_REDIS_URL", harness.DEFAULT_REDIS)
    redis_url = redis_url if harness.redis_reachable(redis_url) else None
    backends = [b for b in args.backends.split(",") if b]
    notes = []
    if "postgresql" in backends and not harness.postgres_reachable(pg):
        # Both lanes are the point of the run (PostgreSQL is the production database): a lane
        # silently missing would leave the tables without their comparison.
        raise SystemExit(f"PostgreSQL at {pg} is unreachable: start it, set BENCH_DATABASE_URL, "
                         "or run SQLite alone with HTTP_BENCH_ARGS='--backends sqlite'.")
    # A database that was there before the run, or that BENCH_DATABASE_URL names (bench/alerts.py
    # runs next on it, in `make bench`), is left there, empty; one made here is dropped.
    args.pg_existed = "postgresql" in backends and (
        "BENCH_DATABASE_URL" in os.environ or harness.postgres_exists(pg))
    if redis_url is None:
        notes.append("Redis was unreachable: limiter in memory, warm cache SimpleCache.")
    started = time.monotonic()
    results = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "machine": harness.machine(pg if "postgresql" in backends else None, redis_url),
               "settings": {"pieces": args.pieces, "subscribers": args.subscribers,
                            "sizes": args.sizes, "duration": args.duration,
                            "rounds": args.rounds,
                            "scale_duration": args.scale_duration, "threads": args.threads,
                            "connections": args.connections, "workers": 2,
                            "redis": redis_url is not None},
               "notes": notes, "backends": {}}
    harness.run_lanes(results, backends, pg, lambda backend, url, work: run_backend(
        backend, url, work, args, redis_url), name="http", started=started)
    markdown = report.render(results)
    print(report.summary(results))
    if not args.no_record:
        report.record(markdown)
        print("docs/PERFORMANCE.md updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
