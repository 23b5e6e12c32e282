#!/usr/bin/env python3
"""`make bench-day`: a newsroom's day. A news site's read mix under wrk while a desk agent files
through the API, as production runs it, against a bare Flask view and a bare WSGI callable
served by the same gunicorn in the same run (issue 35).

For each backend (a fresh SQLite file; a fresh PostgreSQL database at BENCH_DATABASE_URL, as
bench/http_bench.py makes and drops it):

1. `flask seed-demo --pieces N` (default 100 000; `--pieces 1000` for a quick run) and the
   statistics docs/DEPLOYING.md asks for after a bulk load.
2. gunicorn with wsgi.py and gunicorn.conf.py, 2 sync workers, the rate limiter and the
   response cache on Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379/14), and the worker
   (`flask drain-outbox`) beside it; the two baselines of bench/baselines.py on gunicorns with
   the very same settings.
3. wrk (-t2 -c16, `--duration` s, default 60) with a Lua script over the mix below, twice:
   **quiet** (nobody writes) and **writing** (a desk agent airs a new piece or revises one of
   the newest every `--write-every` s through the API with an admin key; after each answered
   write a checker reads the written piece's JSON and page on every worker, telling the
   workers apart by the prefix of their `X-Request-ID`, and counts each read that does not
   show the write: 0 stale expected, docs/ARCHITECTURE.md "Never stale"). The baselines run
   for `--baseline-duration` s before and after the two mixes; the reference is their mean.
4. The app's own request log (one JSON line per request, its `served` field) gives the share
   of answers replayed ahead of Flask (web/replay.py), served from the response cache, 304s
   and made fresh, for each mix.

The mix (share of requests): home and front 20% (`/` 10, `/api/v1/front` 5, `/front.json` 5),
story pages 35%, story JSON 15%, lists and sections 15% (`/api/v1/stories?limit=15` 6,
`?limit=50` 3, a section's page 3, a section's list 3), feeds 10% (`/rss.xml` 5, `/feed.json` 3,
`/sitemap-news.xml` 2), search 5% (`/api/v1/search`: a common term 3, a rare one 2). Pieces
are drawn Zipf-like over the archive, newest first (exponent ZIPF_S: most reads fall on the
newest 200), the same draw for every run (seeded). Every request accepts gzip, as browsers do.

Results go to bench/results/day-<time>.json and, unless --no-record, to the day's section of
docs/PERFORMANCE.md (bench/report.py, between its own markers).

    .venv/bin/python -m bench.day --pieces 1000 --duration 10      # a quick run (about 3 min a backend)
    .venv/bin/python -m bench.day                                  # 100 000 pieces, 60 s mixes
"""
from __future__ import annotations

import argparse
import bisect
import contextlib
import http.client
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from bench import harness, report  # noqa: E402
from bench.http_bench import BASELINES, REFERENCE  # noqa: E402

ZIPF_S = 1.1
NEWEST = 200
DRAWS = 20_000  # paths in the script; each wrk thread walks them from its own offset
# (share %, path template): {id} a piece drawn Zipf-like, {section} a section's slug, {name} its name.
MIX = [
    (10, "/"), (5, "/api/v1/front"), (5, "/front.json"),
    (35, "/stories/{id}"),
    (15, "/api/v1/stories/{id}"),
    (6, "/api/v1/stories?limit=15"), (3, "/api/v1/stories?limit=50"),
    (3, "/sections/{section}"), (3, "/api/v1/stories?limit=15&section={name}"),
    (5, "/rss.xml"), (3, "/feed.json"), (2, "/sitemap-news.xml"),
    (3, f"/api/v1/search?q={harness.COMMON_TERM}"),
    (2, "/api/v1/search?q=" + harness.RARE_TERM.replace(" ", "+")),
]
CHECK_READS = 40  # at most this many reads of one surface to meet every worker


# --- the mix --------------------------------------------------------------------------------

def zipf_ranks(count: int, size: int, rng: random.Random, s: float = ZIPF_S) -> list[int]:
    """`count` ranks in [0, size), rank r drawn with weight 1/(r+1)**s (0 is the newest)."""
    cumulative, total = [], 0.0
    for rank in range(size):
        total += 1.0 / (rank + 1) ** s
        cumulative.append(total)
    return [min(bisect.bisect_left(cumulative, rng.random() * total), size - 1) for _ in range(count)]


def draw_paths(ids: list[int], sections: list[tuple[str, str]], draws: int = DRAWS,
               seed: int = 35) -> list[str]:
    """`draws` request paths of the mix (MIX), pieces by Zipf rank over `ids` (newest first),
    sections uniformly over `sections` ((slug, name) pairs); the same paths for the same seed."""
    rng = random.Random(seed)
    templates = rng.choices([path for _, path in MIX], weights=[share for share, _ in MIX], k=draws)
    ranks = iter(zipf_ranks(draws, len(ids), rng))
    paths = []
    for template in templates:
        slug, name = rng.choice(sections)
        paths.append(template.format(id=ids[next(ranks)] if "{id}" in template else 0,
                                     section=slug, name=name.replace(" ", "+")))
    return paths


def lua_script(paths: list[str]) -> str:
    """A wrk script walking `paths` in order, each thread from its own offset, sending the
    `Accept-Encoding` a browser sends (readers' answers travel gzipped; wrk does not inflate)."""
    table = ",\n".join(json.dumps(path) for path in paths)
    return ("local paths = {\n" + table + "\n}\n"
            "local counter = 0\n"
            "local threads = 0\n"
            "function setup(thread)\n"
            "  thread:set(\"offset\", threads * 7919)\n"
            "  threads = threads + 1\n"
            "end\n"
            "function init(args)\n"
            "  counter = offset or 0\n"
            "end\n"
            "wrk.headers[\"Accept-Encoding\"] = \"gzip, deflate, br\"\n"
            "function request()\n"
            "  counter = counter + 1\n"
            "  return wrk.format(\"GET\", paths[(counter % #paths) + 1])\n"
            "end\n")


def share_in_newest(paths: list[str], ids: list[int], newest: int = NEWEST) -> float:
    """The share of the piece reads in `paths` that fall on the newest `newest` pieces."""
    recent = {str(i) for i in ids[:newest]}
    pieces = [p.rsplit("/", 1)[1] for p in paths if p.startswith(("/stories/", "/api/v1/stories/"))]
    return sum(p in recent for p in pieces) / len(pieces) if pieces else 0.0


# --- the desk and the checker ---------------------------------------------------------------

@dataclass
class Desk:
    """What the desk agent did in one mix: writes answered, reads checked after them, stale
    reads (with what they were), write latencies (ms), workers seen."""

    writes: int = 0
    airs: int = 0
    revisions: int = 0
    failed: list[str] = field(default_factory=list)
    checked: int = 0
    stale: list[str] = field(default_factory=list)
    write_ms: list[float] = field(default_factory=list)
    unmet_workers: int = 0

    def summary(self) -> dict:
        ms = sorted(self.write_ms)
        return {"writes": self.writes, "airs": self.airs, "revisions": self.revisions,
                "failed": self.failed[:10], "checked_reads": self.checked, "stale": len(self.stale),
                "stale_examples": self.stale[:10], "unmet_workers": self.unmet_workers,
                "write_p50_ms": ms[len(ms) // 2] if ms else 0.0}


def _request(base: str, method: str, path: str, key: str | None = None,
             body: dict | None = None) -> tuple[int, dict, bytes]:
    """One request on a fresh connection (Connection: close, as a reader's would be: any
    worker may take it)."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Connection": "close"}
    if key:
        headers["X-Desk-Key"] = key
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def _worker_of(headers: dict) -> str:
    """The worker that answered: the per-process prefix of its request ids (web/request_log.py)."""
    return headers.get("x-request-id", "")[:20]


def check_everywhere(base: str, path: str, expected: str, workers: int, desk: Desk) -> None:
    """Read `path` until each of `workers` workers has answered it (at most CHECK_READS reads);
    every answer must be a 200 holding `expected`."""
    seen: set[str] = set()
    for _ in range(CHECK_READS):
        status, headers, body = _request(base, "GET", path)
        desk.checked += 1
        seen.add(_worker_of(headers))
        if status != 200 or expected.encode() not in body:
            desk.stale.append(f"{path}: {status} without {expected!r}")
        if len(seen) >= workers:
            return
    desk.unmet_workers += 1


def run_desk(base: str, key: str, ids: list[int], sections: list[tuple[str, str]], byline: str,
             every: float, stop: threading.Event, workers: int) -> Desk:
    """Every `every` s until `stop`: air a new piece or revise one of the newest (alternately),
    then check the written piece on every worker. Returns what it did."""
    desk, n = Desk(), 0
    due = time.monotonic() + 0.5
    # On a fixed cadence (write n at start + n * every), whatever the writes and checks took.
    while not stop.wait(max(0.0, due - time.monotonic())):
        due += every
        n += 1
        started = time.perf_counter()
        if n % 2:
            headline = f"Desk files bulletin {n} of the day run {os.getpid()}"
            status, _, body = _request(base, "POST", "/api/v1/stories", key, {
                "headline": headline, "dek": "Filed by the bench's desk agent.",
                "prose": f"Bulletin {n}: the desk agent filed this while readers read.",
                "section": sections[n % len(sections)][1], "byline": byline})
            if status == 201:
                piece_id = json.loads(body)["id"]
                status, _, body = _request(base, "PUT", f"/api/v1/stories/{piece_id}/air", key)
            what = "air"
        else:
            piece_id = ids[n % min(len(ids), NEWEST)]
            headline = f"Desk revises story {piece_id}, revision {n} of run {os.getpid()}"
            status, _, body = _request(base, "PATCH", f"/api/v1/stories/{piece_id}", key,
                                       {"headline": headline})
            what = "revise"
        desk.write_ms.append((time.perf_counter() - started) * 1000)
        if status != 200:
            desk.failed.append(f"{what}: {status} {body[:200]!r}")
            continue
        desk.writes += 1
        desk.airs += what == "air"
        desk.revisions += what == "revise"
        for path in (f"/api/v1/stories/{piece_id}", f"/stories/{piece_id}"):
            check_everywhere(base, path, headline, workers, desk)
    return desk


# --- one backend ----------------------------------------------------------------------------

def served_counts(log_path: Path, since: int) -> tuple[Counter, int]:
    """How the app's answers in `log_path` after byte `since` were served (the request log's
    `served`: replay, cache, 304, app; and how many were 4xx and 5xx), and the byte offset the
    log ends at."""
    counts: Counter = Counter()
    with open(log_path, "rb") as log:
        log.seek(since)
        for line in log:
            if b'"paperdesk.request"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            status = entry.get("status") or 0
            counts["304" if status == 304 else entry.get("served", "app")] += 1
            if status >= 400:  # what wrk counts as failed, told apart here
                counts[f"{status // 100}xx"] += 1
        return counts, log.tell()


def route_of(method: str, path: str) -> str:
    """The route a logged request took, for `where_time_went`: `method` and `path` (the log keeps
    the query apart) with numeric ids as `{id}` and section slugs as `{section}`:
    `GET /stories/{id}`."""
    parts = ["{id}" if part.isdigit() else part for part in path.split("/")]
    if len(parts) == 3 and parts[1] == "sections":
        parts[2] = "{section}"
    return f"{method} {'/'.join(parts)}"


def where_time_went(log_path: Path, since: int, until: int, top: int = 12) -> list[dict]:
    """The app's own time per route and way served, from the request log in `log_path` between
    byte offsets `since` and `until` (its `duration_ms`: from the request's arrival in the app to
    its answer, queueing in the listen backlog excluded): the `top` (route, served) pairs by total
    time, each `{"route", "served", "n", "total_ms", "p50_ms", "p99_ms", "max_ms"}`, biggest
    first. It tells what held the workers: a few slow answers queue every request behind them."""
    times: dict[tuple[str, str], list[float]] = {}
    with open(log_path, "rb") as log:
        log.seek(since)
        while log.tell() < until:
            line = log.readline()
            if not line:
                break
            if b'"paperdesk.request"' not in line:
                continue
            try:
                entry = json.loads(line)
                ms = float(entry["duration_ms"])
                key = (route_of(entry["method"], entry["path"]), entry.get("served", "app"))
            except (ValueError, KeyError, TypeError):
                continue
            times.setdefault(key, []).append(ms)
    rows = []
    for (route, served), ms in times.items():
        ms.sort()
        rows.append({"route": route, "served": served, "n": len(ms), "total_ms": round(sum(ms), 1),
                     "p50_ms": ms[len(ms) // 2], "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
                     "max_ms": ms[-1]})
    return sorted(rows, key=lambda row: -row["total_ms"])[:top]


def _admin_key(env: dict) -> str:
    out = harness.flask(env, "keys", "create", "--paper", "demo", "--kind", "admin",
                        "--label", "bench-day desk").stdout
    return out.strip().splitlines()[-1].strip()


def _ids_and_sections(url: str) -> tuple[list[int], list[tuple[str, str]], str]:
    """The demo paper's on-air pieces newest first, its sections (slug, name), a persona's name."""
    paper = "(SELECT id FROM papers WHERE slug = 'demo')"
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url[len("sqlite:///"):])
    else:
        import psycopg

        conn = psycopg.connect(harness._psycopg_url(url))
    with contextlib.closing(conn):
        ids = [row[0] for row in conn.execute(
            f"SELECT id FROM pieces WHERE paper_id = {paper} AND on_air "
            "ORDER BY on_air_at DESC, id DESC").fetchall()]
        sections = [tuple(row) for row in conn.execute(
            f"SELECT slug, name FROM sections WHERE paper_id = {paper} ORDER BY position").fetchall()]
        persona = conn.execute(f"SELECT name FROM personas WHERE paper_id = {paper} AND active "
                               "ORDER BY position LIMIT 1").fetchone()[0]
    return ids, sections, persona


def run_backend(backend: str, url: str, work: Path, args, redis_url: str) -> dict:
    print(f"== {backend}", flush=True)
    env, seeded = harness.fresh_seeded(backend, url, work, args.pieces, args.subscribers)
    ids, sections, byline = _ids_and_sections(url)
    paths = draw_paths(ids, sections)
    script = work / "mix.lua"
    script.write_text(lua_script(paths))
    key = _admin_key(env)
    env.update(RATELIMIT_STORAGE_URI=redis_url, CACHE_TYPE="RedisCache", CACHE_REDIS_URL=redis_url,
               CACHE_KEY_PREFIX=f"paperdesk-day-{os.getpid()}-{backend}:")
    result: dict = {"seed": asdict(seeded), "newest_share": share_in_newest(paths, ids),
                    "baselines": {}, "mixes": {}}
    load = dict(threads=args.threads, connections=args.connections)
    app_log = work / f"gunicorn-{backend}-day.log"
    with contextlib.ExitStack() as servers:
        baselines = {label: servers.enter_context(harness.gunicorn(
            env, work / f"gunicorn-{backend}-day-{label.split()[1]}.log", app=app))[0]
            for label, app in BASELINES}
        base, master = servers.enter_context(harness.gunicorn(env, app_log))
        worker_log = open(work / f"worker-{backend}.log", "wb")  # noqa: SIM115 - closed below
        servers.callback(worker_log.close)
        worker = subprocess.Popen([harness.PYTHON, "-m", "flask", "--app", "app", "drain-outbox"],
                                  cwd=harness.ROOT, env=env, stdout=worker_log, stderr=subprocess.STDOUT)
        servers.callback(_stop, worker)
        for path in dict.fromkeys(paths):  # every URL once: what a running site has made before
            harness.get(base + path)
        samples: dict[str, list[dict]] = {label: [] for label in baselines}

        def baseline_round() -> None:
            for label, baseline in baselines.items():
                samples[label].append(asdict(harness.wrk(baseline + "/", duration=args.baseline_duration, **load)))
                print(f"    {label:<22} {samples[label][-1]['rps']:8.1f} req/s", flush=True)

        baseline_round()
        offset = served_counts(app_log, 0)[1]
        for mix in ("quiet", "writing"):
            stop, done = threading.Event(), {}
            desk_thread = None
            if mix == "writing":
                def desk_run(done: dict = done, stop: threading.Event = stop) -> None:
                    done["desk"] = run_desk(base, key, ids, sections, byline, args.write_every,
                                            stop, workers=2)
                desk_thread = threading.Thread(target=desk_run, daemon=True)
                desk_thread.start()
            try:
                measured = harness.wrk(base + "/", duration=args.duration, script=script, **load)
            finally:
                stop.set()
                if desk_thread:
                    desk_thread.join(timeout=120)
            harness.settle(base, "/healthz")
            since = offset
            counts, offset = served_counts(app_log, offset)
            row = asdict(measured)
            row["served"] = dict(counts)
            row["where"] = where_time_went(app_log, since, offset)
            if "desk" in done:
                row["desk"] = done["desk"].summary()
            result["mixes"][mix] = row
            print(f"    mix {mix:<8} {row['rps']:8.1f} req/s  p50 {row['p50_ms']:6.2f} ms  p99 "
                  f"{row['p99_ms']:6.2f} ms  served {dict(counts)}"
                  + (f"  desk {row['desk']}" if "desk" in row else ""), flush=True)
        baseline_round()
        result["rss_mb"] = harness.worker_rss_mb(master)
    for label, runs in samples.items():
        result["baselines"][label] = {"rps": sum(r["rps"] for r in runs) / len(runs),
                                      "p50_ms": sorted(r["p50_ms"] for r in runs)[len(runs) // 2],
                                      "p99_ms": sorted(r["p99_ms"] for r in runs)[len(runs) // 2],
                                      "rounds": runs}
    for row in result["mixes"].values():
        row["ratio"] = row["rps"] / result["baselines"][REFERENCE]["rps"]
        row["ratio_wsgi"] = row["rps"] / result["baselines"]["bare WSGI callable"]["rps"]
    if backend == "postgresql":
        harness.drop_postgres(url, keep_empty=args.pg_existed)
    return result


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pieces", type=int, default=100_000)
    parser.add_argument("--subscribers", type=int, default=0,
                        help="confirmed subscribers seeded (the worker plans their instant alerts)")
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--duration", type=int, default=60, help="seconds of wrk per mix")
    parser.add_argument("--baseline-duration", type=int, default=10,
                        help="seconds of wrk per baseline, before and after the mixes")
    parser.add_argument("--write-every", type=float, default=2.0, help="seconds between the desk's writes")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--no-record", action="store_true", help="leave docs/PERFORMANCE.md alone")
    args = parser.parse_args()

    harness.ensure_wrk()
    pg = os.environ.get("BENCH_DATABASE_URL", harness.DEFAULT_PG)
    redis_url = os.environ.get("BENCH_REDIS_URL", harness.DEFAULT_REDIS)
    if not harness.redis_reachable(redis_url):
        raise SystemExit(f"Redis at {redis_url} is unreachable: the day runs as production does, "
                         "with Redis for limits and cache (set BENCH_REDIS_URL).")
    backends = [b for b in args.backends.split(",") if b]
    if "postgresql" in backends and not harness.postgres_reachable(pg):
        raise SystemExit(f"PostgreSQL at {pg} is unreachable: start it, set BENCH_DATABASE_URL, "
                         "or run SQLite alone with --backends sqlite.")
    args.pg_existed = "postgresql" in backends and (
        "BENCH_DATABASE_URL" in os.environ or harness.postgres_exists(pg))
    started = time.monotonic()
    results = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "machine": harness.machine(pg if "postgresql" in backends else None, redis_url),
               "settings": {"pieces": args.pieces, "subscribers": args.subscribers,
                            "duration": args.duration, "baseline_duration": args.baseline_duration,
                            "write_every": args.write_every, "threads": args.threads,
                            "connections": args.connections, "workers": 2, "zipf_s": ZIPF_S,
                            "mix": [[share, path] for share, path in MIX]},
               "backends": {}}
    harness.run_lanes(results, backends, pg, lambda backend, url, work: run_backend(
        backend, url, work, args, redis_url), name="day", started=started)
    print(report.summary(results, report.day_checks))
    if not args.no_record:
        report.record(report.render_day(results), report.DAY_BEGIN, report.DAY_END)
        print("docs/PERFORMANCE.md updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
