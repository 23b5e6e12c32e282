"""The speed targets (docs/PERFORMANCE.md), checked against a bench/http_bench.py run and a
bench/day.py run, and the tables they write into docs/PERFORMANCE.md (between BEGIN and END, and
between DAY_BEGIN and DAY_END; everything else in the file is left as it is).

    .venv/bin/python -m bench.report bench/results/http-<time>.json   # write a run's tables again
    .venv/bin/python -m bench.report bench/results/day-<time>.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "PERFORMANCE.md"
BEGIN = "<!-- bench/http_bench.py: generated from here -->"
END = "<!-- bench/http_bench.py: generated up to here -->"
DAY_BEGIN = "<!-- bench/day.py: generated from here -->"
DAY_END = "<!-- bench/day.py: generated up to here -->"
ALERTS_SECTION = "## send-alerts throughput"
NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}

# Minimum share of the bare Flask view's throughput (bench/baselines.py) in the same run, by
# endpoint kind and mode; None: no target (issue 35's goals: warm 75%, 304 70%, cold story 40%,
# list of 15 30%, story page 20%). PostgreSQL, every row: at least PG_SHARE[mode] of SQLite's
# ratio for the same row in the same run (issue 26: 0.8x cold, 0.9x warm).
WARM = {"health": 0.75, "list15": 0.75, "list50": 0.75, "list200": 0.75, "story": 0.75, "page": 0.75,
        "front": 0.75, "frontpage": 0.75, "search": 0.75, "feed": 0.75, "embed": 0.75, "304": 0.70,
        "checkpoint": 0.75, "tile": 0.75}
COLD = {"health": 0.75, "list15": 0.30, "list50": 0.20, "list200": 0.08, "story": 0.40, "page": 0.20,
        "front": 0.15, "304": 0.70}
# bench/day.py (issue 35): the mix's share of the bare Flask view, by mix and backend; its p99
# at 16 connections; stale reads after an answered write (none, ever).
DAY = {("writing", "sqlite"): 0.45, ("writing", "postgresql"): 0.35,
       ("quiet", "sqlite"): 0.65, ("quiet", "postgresql"): 0.65}
DAY_P99_MS = 50.0
PG_SHARE = {"cold": 0.8, "warm": 0.9}
SEARCH_P99_MS = 50.0
GROWTH_PG_ROWS = ("story", "story page", "list", "front")  # bench/scale.py's labels
BARE = "bare Flask view"  # bench/scale.py's row of each lane's own one-at-a-time baseline
# "flat": p50 at the largest archive within 1.5 x (or 2 ms) of p50 at the smallest
FLAT, FLAT_MS = 1.5, 2.0
SEED_SECONDS = 120.0
RSS_MB = 120.0
KINDS = {"/healthz": "health", "/api/v1/stories?limit=15": "list15", "/api/v1/stories?limit=50": "list50",
         "/api/v1/stories?limit=200": "list200", "/api/v1/stories/{id}": "story",
         "/stories/{id} (page)": "page", "/api/v1/front": "front", "/ (front page)": "frontpage",
         "/api/v1/search (common)": "search", "/api/v1/search (rare)": "search", "/rss.xml": "feed",
         "/sitemap.xml": "feed", "/embed/{id}": "embed", "304 /api/v1/stories": "304",
         "/log/checkpoint": "checkpoint", "/log/tile/0/000": "tile", "/log/tile/entries/000": "tile"}


def target(label: str, mode: str) -> float | None:
    """The minimum share of a bare Flask view for row `label` in `mode` ("cold" or "warm"), or None."""
    kind = KINDS.get(label)
    return (WARM if mode == "warm" else COLD).get(kind)


def one_at_a_time_share(mine: dict, theirs: dict, label: str) -> tuple[float, str]:
    """PostgreSQL's row `label` against SQLite's, one request at a time, from two lanes' points of
    one archive size ({label: Load as a dict}): (share, what it is a share of). Each lane's
    req/s is first taken as a share of the bare Flask view measured in that lane
    (the row BARE of bench/scale.py), since the lanes run minutes apart and a machine's speed drifts between
    them as much as the target's margin; a run without those baselines compares raw req/s."""
    bare_mine, bare_theirs = mine.get(BARE), theirs.get(BARE)
    if bare_mine and bare_theirs and bare_mine["rps"] and bare_theirs["rps"] and theirs[label]["rps"]:
        return ((mine[label]["rps"] / bare_mine["rps"]) / (theirs[label]["rps"] / bare_theirs["rps"]),
                "share of its lane's bare Flask view")
    return (mine[label]["rps"] / theirs[label]["rps"] if theirs[label]["rps"] else 0.0), "req/s"


def checks(results: dict) -> list[tuple[bool, str]]:
    """(met, sentence) for every target the run can judge."""
    out = []
    sqlite = results["backends"].get("sqlite")
    for backend, data in results["backends"].items():
        name = NAMES[backend]
        for mode in ("cold", "warm"):
            for label, row in data[mode]["endpoints"].items():
                goal = target(label, mode)
                ratio = row["ratio"]
                if goal is not None:
                    out.append((ratio >= goal, f"{name} {mode} {label}: {ratio:.0%} of a bare Flask view "
                                               f"(target {goal:.0%})"))
                # Every row, with a target of its own or not (issue 26: "every cold row").
                if backend == "postgresql" and sqlite and label in sqlite[mode]["endpoints"]:
                    floor = PG_SHARE[mode] * sqlite[mode]["endpoints"][label]["ratio"]
                    out.append((ratio >= floor, f"PostgreSQL {mode} {label}: {ratio:.0%} against "
                                                f"{PG_SHARE[mode]:.0%} of SQLite's ratio, {floor:.0%}"))
        p99 = data["scale"][str(results["settings"]["pieces"])]["search (common)"]["p99_ms"]
        out.append((p99 < SEARCH_P99_MS, f"{name} search p99, common term, "
                                         f"{results['settings']['pieces']:,} pieces, cold, one "
                                         f"request at a time: {p99:.1f} ms (target < "
                                         f"{SEARCH_P99_MS:.0f} ms)"))
        sizes = sorted(data["scale"], key=int)
        for label in ("list", "front"):
            small, large = data["scale"][sizes[0]][label]["p50_ms"], data["scale"][sizes[-1]][label]["p50_ms"]
            flat = large <= max(FLAT * small, small + FLAT_MS)
            out.append((flat, f"{name} {label} p50 {int(sizes[0]):,} -> {int(sizes[-1]):,} pieces: "
                              f"{small:.1f} -> {large:.1f} ms (flat: within {FLAT}x or "
                              f"+{FLAT_MS:.0f} ms)"))
        if backend == "postgresql" and sqlite:
            # Issue 35: PostgreSQL's cold rows at >= 0.8x SQLite's, at the smallest archive
            # and the largest, one request at a time (no queueing: what one request costs).
            for size in dict.fromkeys((sizes[0], sizes[-1])):
                for label in GROWTH_PG_ROWS:
                    mine, theirs = data["scale"][size].get(label), sqlite["scale"].get(size, {}).get(label)
                    if mine and theirs:
                        share, how = one_at_a_time_share(data["scale"][size], sqlite["scale"][size], label)
                        out.append((share >= PG_SHARE["cold"],
                                    f"PostgreSQL cold {label} at {int(size):,} pieces, one request at a "
                                    f"time: {share:.2f}x SQLite's {how} (target >= {PG_SHARE['cold']}x)"))
        seconds = data["seed"]["pieces_seconds"]
        out.append((seconds < SEED_SECONDS, f"{name} seeding {data['seed']['pieces']:,} pieces: "
                                            f"{seconds:.0f} s (target < {SEED_SECONDS:.0f} s)"))
        rss = max(data["cold"]["rss_mb"] + data["warm"]["rss_mb"])
        out.append((rss < RSS_MB, f"{name} largest gunicorn worker: {rss:.0f} MB RSS "
                                  f"(target < {RSS_MB:.0f} MB)"))
    return out


def summary(results: dict, judge=None) -> str:
    """One line per target of `results` (met or MISSED) and the count met; `judge` gives the
    targets (default `checks`, a bench/http_bench.py run; `day_checks` for bench/day.py's)."""
    found = (judge or checks)(results)
    lines = [f"{'met   ' if ok else 'MISSED'} {text}" for ok, text in found]
    lines.append(f"{sum(ok for ok, _ in found)} of {len(found)} targets met")
    return "\n".join(lines)


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _rps(row: dict) -> str:
    if row["min_rps"] == row["max_rps"]:
        return f"{row['rps']:.0f}"
    return f"{row['rps']:.0f} ({row['min_rps']:.0f}-{row['max_rps']:.0f})"


def _endpoint_table(data: dict) -> list[str]:
    cold, warm = data["cold"], data["warm"]
    lines = ["| row | cold req/s (range) | cold vs bare Flask | cold p50 ms | cold p99 ms | warm req/s (range) "
             "| warm vs bare Flask | warm p50 ms | warm p99 ms | targets (cold / warm) |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    reference = {mode: data[mode]["baselines"]["bare Flask view"]["rps"] for mode in ("cold", "warm")}
    for label, c in cold["baselines"].items():
        w = warm["baselines"][label]
        lines.append(f"| **{label}** (baseline) | {_rps(c)} | {c['rps'] / reference['cold']:.0%} | "
                     f"{_ms(c['p50_ms'])} | {_ms(c['p99_ms'])} | {_rps(w)} | {w['rps'] / reference['warm']:.0%} | "
                     f"{_ms(w['p50_ms'])} | {_ms(w['p99_ms'])} | |")
    for label, c in cold["endpoints"].items():
        w = warm["endpoints"][label]
        marks = []
        for row, mode in ((c, "cold"), (w, "warm")):
            goal = target(label, mode)
            marks.append("—" if goal is None else f"{'✓' if row['ratio'] >= goal else '✗'} ≥{goal:.0%}")
        errors = c["errors"] + w["errors"]
        note = f" ({errors} failed)" if errors else ""
        lines.append(f"| `{label}`{note} | {_rps(c)} | {c['ratio']:.0%} | {_ms(c['p50_ms'])} | "
                     f"{_ms(c['p99_ms'])} | {_rps(w)} | {w['ratio']:.0%} | {_ms(w['p50_ms'])} | "
                     f"{_ms(w['p99_ms'])} | {' / '.join(marks)} |")
    large = [(label, c, warm["endpoints"][label]) for label, c in cold["endpoints"].items()
             if "same_body" in c and "same_body" in warm["endpoints"][label]]
    if large:
        lines += ["", "Rows with a large answer, beside a bare WSGI callable sending as many bytes on "
                  "the same gunicorn in the same rounds (wrk sends no `Accept-Encoding`: the identity "
                  "body). The last columns are the row's req/s as a share of that callable's: what the "
                  "app costs beyond moving the bytes.", "",
                  "| row | bytes (warm) | bare WSGI with those bytes vs bare Flask (cold / warm) "
                  "| row vs that callable (cold / warm) |", "|---|--:|--:|--:|"]
        for label, c, w in large:
            cs, ws = c["same_body"], w["same_body"]
            lines.append(f"| `{label}` | {ws['bytes']:,} | {cs['ratio']:.0%} / {ws['ratio']:.0%} | "
                         f"{c['rps'] / cs['rps']:.0%} / {w['rps'] / ws['rps']:.0%} |")
    return lines


def _where_table(results: dict) -> list[str]:
    """Where the time goes in every row below its target (bench/where.py), as shares."""
    rows = [(backend, mode, label, row["where"]) for backend, data in results["backends"].items()
            for mode in ("cold", "warm") for label, row in data[mode]["endpoints"].items() if "where" in row]
    if not rows:
        return []
    names = list(rows[0][3]["buckets"])
    lines = ["", "### Where the time goes in each row below its target", "",
             "One request of the row, in-process (the app as gunicorn builds it, the same database "
             "and settings, no sockets) under cProfile (bench/where.py): the share of its time in "
             "each part. Profiling inflates many small calls more than waiting, so read the shares "
             "as where to look; `ms` is the profiled time of one request.", "",
             "| row | ms | " + " | ".join(names) + " |", "|---|--:|" + "--:|" * len(names)]
    for backend, mode, label, where in rows:
        shares = " | ".join(f"{where['buckets'].get(name, 0):.0%}" for name in names)
        lines.append(f"| {NAMES[backend]} {mode} `{label}` | {where['ms']:.2f} | {shares} |")
    return lines


def _scale_table(results: dict) -> list[str]:
    sizes = None
    lines = []
    for backend, data in results["backends"].items():
        sizes = sorted(data["scale"], key=int)
        if not lines:
            heads = " | ".join(f"p50 @{int(s):,}" for s in sizes)
            p99s = " | ".join(f"p99 @{int(s):,}" for s in sizes)
            rps = " | ".join(f"req/s @{int(s):,}" for s in sizes)
            lines += [f"| backend | endpoint | {heads} | {p99s} | {rps} |",
                      "|---|---|" + "--:|" * (3 * len(sizes))]
        for label in data["scale"][sizes[0]]:
            cells = [data["scale"][s][label] for s in sizes]
            lines.append(f"| {NAMES[backend]} | {label} | "
                         + " | ".join(_ms(c["p50_ms"]) for c in cells) + " | "
                         + " | ".join(_ms(c["p99_ms"]) for c in cells) + " | "
                         + " | ".join(f"{c['rps']:.0f}" for c in cells) + " |")
    return lines


def render(results: dict) -> str:
    s, m = results["settings"], results["machine"]
    out = [BEGIN, "", "## HTTP: throughput and latency at 100 000 pieces, against a bare Flask view", "",
           f"Generated by `make bench` (bench/http_bench.py) on {results['started']}, in "
           f"{results['minutes']} minutes. One run on a shared machine: expect ±10-15% between runs.",
           "", "### The machine", "", "| | |", "|---|---|"]
    out += [f"| {key} | {value} |" for key, value in m.items()]
    out += ["", "### How it was run", "",
            f"- gunicorn with the production `gunicorn.conf.py`, **2 sync workers**, JSON request "
            f"logs on (to a file), the rate limiter on (limit set out of reach) with its storage in "
            f"{'Redis' if s['redis'] else 'memory'}.",
            f"- `wrk -t{s['threads']} -c{s['connections']} -d{s['duration']}s --latency` per "
            f"endpoint, on the same 2 CPUs as the server.",
            "- **baselines**, each on its own gunicorn with the very same settings "
            "(bench/baselines.py): a **bare WSGI callable** and a **bare Flask view**, both "
            "answering `{\"status\": \"ok\"}`. Every ratio is to the bare Flask view in the "
            f"same mode. Each row ran {s.get('rounds', 1)} time(s) for {s['duration']} s, the rows "
            "interleaved round by round, so drift on the machine hits every row alike; req/s is "
            "the mean (range in brackets), p50/p99 the median of the rounds.",
            "- **cold**: `CACHE_TYPE=NullCache` (no response cache). **warm**: "
            f"`CACHE_TYPE={'RedisCache' if s['redis'] else 'SimpleCache'}`, each URL fetched twice "
            "before its run.",
            "- **304**: `If-None-Match` with the list's current ETag.",
            "- Search terms: common `council` (about 1 piece in 5), rare `castell brandt` (two "
            "names, both required: about 1 in 2 000).",
            f"- Data: `flask seed-demo --pieces {s['pieces']} --subscribers {s['subscribers']}` into "
            "a fresh database, then the statistics docs/DEPLOYING.md asks for after a bulk load "
            "(SQLite `ANALYZE`, PostgreSQL `VACUUM ANALYZE`)."]
    out += [f"- Note: {note}" for note in results["notes"]]
    out += ["", "### Seeding", "", "| backend | pieces | pieces: seconds | subscribers | "
            "subscribers: seconds | whole command | target |", "|---|--:|--:|--:|--:|--:|---|"]
    for backend, data in results["backends"].items():
        d = data["seed"]
        out.append(f"| {NAMES[backend]} | {d['pieces']:,} | {d['pieces_seconds']:.1f} | "
                   f"{d['subscribers']:,} | {d['subscribers_seconds']:.1f} | {d['wall_seconds']:.1f} s | "
                   f"{'✓' if d['pieces_seconds'] < SEED_SECONDS else '✗'} < {SEED_SECONDS:.0f} s |")
    for backend, data in results["backends"].items():
        out += ["", f"### {NAMES[backend]}, {s['pieces']:,} pieces", ""] + _endpoint_table(data)
    out += ["", "### Growth with the archive (cold, one request at a time)", "",
            f"`wrk -t1 -c1 -d{s['scale_duration']}s` per point, response cache off, each size a "
            "fresh database: the percentiles are what one request costs (at -c16 above they also "
            "hold the time spent queueing behind the other 15). Each lane also measures the bare "
            "Flask view this way, before its rows and after them (the row `bare Flask view`, the "
            "mean of the two): PostgreSQL's rows are judged against SQLite's as shares of their "
            "own lane's baseline, since the lanes run minutes apart.", ""] + _scale_table(results)
    out += ["", "### Worker memory", "", "| backend | after the cold run (MB RSS, each worker) | "
            "after the warm run | target |", "|---|---|---|---|"]
    for backend, data in results["backends"].items():
        cold = ", ".join(f"{v:.0f}" for v in data["cold"]["rss_mb"])
        warm = ", ".join(f"{v:.0f}" for v in data["warm"]["rss_mb"])
        ok = max(data["cold"]["rss_mb"] + data["warm"]["rss_mb"]) < RSS_MB
        out.append(f"| {NAMES[backend]} | {cold} | {warm} | {'✓' if ok else '✗'} < {RSS_MB:.0f} MB |")
    out += _where_table(results)
    found = checks(results)
    out += ["", f"### Targets: {sum(ok for ok, _ in found)} of {len(found)} met", ""]
    out += [f"- {'✓' if ok else '✗ **missed**:'} {text}" for ok, text in found]
    out += ["", END]
    return "\n".join(out)


def record(markdown: str, begin: str = BEGIN, end: str = END) -> None:
    """Put `markdown` (begin..end) into docs/PERFORMANCE.md: in place of an earlier run's, else
    before the send-alerts section, else at the end."""
    text = DOC.read_text() if DOC.exists() else "# Performance\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + markdown + rest.split(end, 1)[1]
    elif ALERTS_SECTION in text:
        head, tail = text.split(ALERTS_SECTION, 1)
        text = head.rstrip("\n") + "\n\n" + markdown + "\n\n" + ALERTS_SECTION + tail
    else:
        text = text.rstrip("\n") + "\n\n" + markdown + "\n"
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text)


def day_checks(results: dict) -> list[tuple[bool, str]]:
    """(met, sentence) for every target of a bench/day.py run."""
    out = []
    for backend, data in results["backends"].items():
        name = NAMES[backend]
        for mix, row in data["mixes"].items():
            goal = DAY[(mix, backend)]
            out.append((row["ratio"] >= goal, f"{name} {mix} mix: {row['ratio']:.0%} of a bare Flask "
                                              f"view (target {goal:.0%})"))
            out.append((row["p99_ms"] <= DAY_P99_MS, f"{name} {mix} mix p99 at "
                                                     f"{results['settings']['connections']} connections: "
                                                     f"{row['p99_ms']:.1f} ms (target ≤ {DAY_P99_MS:.0f} ms)"))
            desk = row.get("desk")
            if desk is not None:
                out.append((desk["stale"] == 0 and desk["writes"] > 0 and not desk["failed"],
                            f"{name} {mix} mix: {desk['stale']} stale of {desk['checked_reads']} reads "
                            f"checked after {desk['writes']} answered writes, {len(desk['failed'])} "
                            "failed writes (target 0 stale, 0 failed)"))
    return out


def _served(row: dict) -> str:
    counts = row["served"]
    total = sum(counts.get(kind, 0) for kind in ("replay", "cache", "304", "app")) or 1
    return " / ".join(f"{counts.get(kind, 0) / total:.0%}" for kind in ("replay", "cache", "304", "app"))


def render_day(results: dict) -> str:
    """The day's section of docs/PERFORMANCE.md (DAY_BEGIN..DAY_END) from a bench/day.py run."""
    s, m = results["settings"], results["machine"]
    mix = ", ".join(f"`{path}` {share}%" for share, path in s["mix"])
    out = [DAY_BEGIN, "", f"## A newsroom's day: the read mix under filing, {s['pieces']:,} pieces", "",
           f"Generated by `make bench-day` (bench/day.py) on {results['started']}, in "
           f"{results['minutes']} minutes; load average {m['load average at start (1, 5, 15 min)']} "
           f"at the start, {m.get('load average at end (1, 5, 15 min)', '?')} at the end (2 CPUs: a "
           "load above 2 means the run shared the machine with other work, and absolute req/s "
           "suffer more than the ratios).", "",
           f"gunicorn with wsgi.py and gunicorn.conf.py, {s['workers']} sync workers, the rate "
           "limiter and the response cache on Redis, `flask drain-outbox` beside it; "
           f"`wrk -t{s['threads']} -c{s['connections']} -d{s['duration']}s` with a Lua script over "
           f"the mix ({mix}); pieces drawn Zipf-like over the archive newest first (exponent "
           f"{s['zipf_s']}). **writing**: an admin key airs a new piece or revises one of the "
           f"newest 200 every {s['write_every']:g} s through the API, and after each answer a "
           "checker reads the piece's JSON and page until each worker has answered it (told "
           "apart by their `X-Request-ID` prefix). The baselines (bare Flask view, bare WSGI "
           f"callable, same gunicorn settings) ran {s['baseline_duration']} s before and after "
           "the mixes; ratios are to their mean. *served* is the app's own request log: "
           "replayed ahead of Flask / from the response cache / 304 / made by the view.", "",
           "| backend | mix | req/s | vs bare Flask | vs bare WSGI | p50 ms | p99 ms "
           "| served: replay / cache / 304 / view | writes (airs, revisions) | reads checked | stale "
           "| newest 200's share of piece reads |",
           "|---|---|--:|--:|--:|--:|--:|---|---|--:|--:|--:|"]
    for backend, data in results["backends"].items():
        for label, row in data["baselines"].items():
            out.append(f"| {NAMES[backend]} | **{label}** (baseline) | {row['rps']:.0f} | | | "
                       f"{_ms(row['p50_ms'])} | {_ms(row['p99_ms'])} | | | | | |")
        for mix, row in data["mixes"].items():
            desk = row.get("desk")
            writes = f"{desk['writes']} ({desk['airs']}, {desk['revisions']})" if desk else "—"
            failed = f", {len(desk['failed'])} failed" if desk and desk["failed"] else ""
            errors = ""
            if row["errors"]:  # wrk's count (sockets, timeouts, >= 400); the app's log tells the answers
                answers = ", ".join(f"{row['served'][k]} {k}" for k in ("4xx", "5xx") if row["served"].get(k))
                errors = f" ({row['errors']} failed{': ' + answers if answers else ''})"
            out.append(f"| {NAMES[backend]} | {mix}{errors} | {row['rps']:.0f} | {row['ratio']:.0%} | "
                       f"{row['ratio_wsgi']:.0%} | {_ms(row['p50_ms'])} | {_ms(row['p99_ms'])} | "
                       f"{_served(row)} | {writes}{failed} | {desk['checked_reads'] if desk else '—'} | "
                       f"{desk['stale'] if desk else '—'} | {data['newest_share']:.0%} |")
    for backend, data in results["backends"].items():
        where = data["mixes"].get("writing", {}).get("where")
        if not where:
            continue
        out += ["", f"**Where {NAMES[backend]}'s writing mix spent the workers' time** (the app's own "
                "`duration_ms` per answer, from its request log; queueing before the app is not in it): "
                "the routes and ways served that took the most in all.", "",
                "| route | served | answers | total ms | p50 ms | p99 ms | max ms |", "|---|---|--:|--:|--:|--:|--:|"]
        out += [f"| `{row['route']}` | {row['served']} | {row['n']} | {row['total_ms']:.0f} | "
                f"{_ms(row['p50_ms'])} | {_ms(row['p99_ms'])} | {_ms(row['max_ms'])} |" for row in where]
    found = day_checks(results)
    out += ["", f"### The day's targets: {sum(ok for ok, _ in found)} of {len(found)} met", ""]
    out += [f"- {'✓' if ok else '✗ **missed**:'} {text}" for ok, text in found]
    out += ["", DAY_END]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    results = json.loads(Path(argv[0]).read_text())
    if "mixes" in next(iter(results["backends"].values()), {}):
        record(render_day(results), DAY_BEGIN, DAY_END)
        print(summary(results, day_checks))
        return 0
    record(render(results))
    print(summary(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
