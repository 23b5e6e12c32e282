#!/usr/bin/env python3
"""Where one public GET spends its time, in buckets: the part of docs/PERFORMANCE.md that
explains each row below its target, written by `make bench` from the run itself.

Runs the app in this process (`create_app()` from the environment, as gunicorn builds it:
DATABASE_URL, CACHE_TYPE, RATELIMIT_STORAGE_URI...) and calls it as a WSGI application, no
sockets, under cProfile, for `--requests` requests or `--seconds`, whichever ends first; prints
one JSON object: `{"requests": n, "ms": per-request milliseconds under the profiler, "buckets":
{name: share of that time}}`. Buckets (a request's time falls in exactly one):

- `rate limit (Redis)`: counting the request (ratelimits.RateLimits.count), one round trip;
- `replay`: a kept answer sent ahead of Flask (web/replay.py), but its rate-limit count;
- `steps before the view`: the pipeline's other before-steps (tenancy, 304, response cache);
- `SQL`: statements on the database (SQLAlchemy's Connection.execute and the driver);
- `ORM objects`: building model instances from rows (sqlalchemy.orm.loading);
- `templates`: Jinja rendering;
- `view, the rest`: the view and its framework wrappers (flask-smorest, webargs, the wire
  shape, JSON) without the three above;
- `steps after the view`: security, CORS, cache headers, gzip, limit headers, request log;
- `Flask and WSGI`: everything else (request context, routing, the response object).

Profiling inflates code that makes many small calls more than code that waits, so the shares
say where to look, not exact costs; the run's own req/s are the measurements.

    DATABASE_URL=sqlite:////tmp/x.db .venv/bin/python -m bench.where /api/v1/stories/7

A path `@FILE` profiles a mix instead: the paths in FILE (one a line, bench/day.py's draw), in
order, each warmed first; with `--write-every N` the piece of a path every N requests is
revised through the API (an admin key, outside the profile), as bench/day.py's desk agent does,
so the profile holds what a write costs the reads after it.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

# (bucket, file suffix, function name): the function's cumulative time goes to the bucket.
_MEASURED = {
    "count": ("web/limits.py", "count"),
    "replay": ("web/replay.py", "_send"),
    "before": ("web/pipeline.py", "run_before"),
    "after": ("web/pipeline.py", "run_after"),
    "dispatch": ("flask/app.py", "dispatch_request"),
    "sql": ("sqlalchemy/engine/base.py", "execute"),
    "orm": ("sqlalchemy/orm/loading.py", "instances"),
    "templates": ("jinja2/environment.py", "render"),
}


def _cumulative(stats: pstats.Stats) -> tuple[dict[str, float], float]:
    """Cumulative seconds of each _MEASURED function, and how much of `count`'s ran under
    web/replay.py (the rest ran in the pipeline's before-steps)."""
    found, in_replay = dict.fromkeys(_MEASURED, 0.0), 0.0
    for (filename, _line, name), (_cc, _nc, _tt, cumulative, callers) in stats.stats.items():
        for key, (suffix, function) in _MEASURED.items():
            if name == function and filename.endswith(suffix):
                found[key] += cumulative
                if key == "count":
                    in_replay += sum(entry[3] for caller, entry in callers.items()
                                     if caller[0].endswith("web/replay.py"))
    return found, in_replay


def buckets(stats: pstats.Stats, total: float) -> dict[str, float]:
    """The module's buckets as shares of `total` (seconds), from a profile of the requests."""
    c, count_in_replay = _cumulative(stats)
    sql, orm, templates = c["sql"], c["orm"], c["templates"]
    parts = {
        "rate limit (Redis)": c["count"],
        "replay": max(0.0, c["replay"] - count_in_replay),
        "steps before the view": max(0.0, c["before"] - (c["count"] - count_in_replay)),
        "SQL": sql,
        "ORM objects": orm,
        "templates": templates,
        # The view and its wrappers without what is counted above (statements run in the view:
        # with a recent snapshot of the paper, the before-steps run none).
        "view, the rest": max(0.0, c["dispatch"] - sql - orm - templates),
        "steps after the view": c["after"],
    }
    parts["Flask and WSGI"] = max(0.0, total - sum(parts.values()))
    return {name: value / total for name, value in parts.items() if total}


def _reviser(app, client):
    """A function revising, through the API with a new admin key, the piece a mix path names
    (or the newest piece): the write bench/day.py's desk agent makes."""
    from extensions import db
    from models import Paper, Piece
    from services.newsroom import keys

    with app.app_context():
        paper = db.session.query(Paper).filter_by(slug="demo").one()
        _, plain = keys.issue_key(paper, "admin", label="bench.where")
        newest = db.session.query(Piece.id).filter_by(paper_id=paper.id, on_air=True) \
            .order_by(Piece.on_air_at.desc()).first()[0]
        db.session.commit()

    def revise(path: str, n: int) -> None:
        tail = path.split("?")[0].rsplit("/", 1)[-1]
        piece = tail if path.startswith(("/stories/", "/api/v1/stories/")) and tail.isdigit() else newest
        headline = f"Revision {n} by bench.where {time.time_ns()}"  # never the same: a write each time
        answer = client.patch(f"/api/v1/stories/{piece}", json={"headline": headline},
                              headers={"X-Desk-Key": plain})
        if answer.status_code != 200:
            raise SystemExit(f"revising {piece}: {answer.status_code} {answer.data[:300]!r}")
    return revise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--if-none-match", action="store_true", help="send the current ETag (a 304)")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--write-every", type=int, default=0,
                        help="with @FILE: revise a piece through the API every N requests")
    parser.add_argument("--top", type=int, default=0,
                        help="also print the N costliest functions, by own and by cumulative time (stderr)")
    args = parser.parse_args()
    from werkzeug.test import EnvironBuilder

    from app import create_app

    app = create_app()
    for handler in logging.getLogger("paperdesk").handlers:
        handler.stream = open(os.devnull, "w")  # noqa: SIM115 - the process's lifetime
    client = app.test_client()
    paths = Path(args.path[1:]).read_text().split() if args.path.startswith("@") else [args.path]
    environs = []
    for path in paths:
        headers = {}
        first = client.get(path)
        if args.if_none_match:
            headers["If-None-Match"] = first.headers["ETag"]
        environs.append(EnvironBuilder(path=path, base_url="http://localhost", headers=headers).get_environ())
    revise = _reviser(app, client) if args.write_every else None

    def one(environ) -> None:
        request = dict(environ, **{"wsgi.input": io.BytesIO(b"")})
        body = app(request, lambda *_: None)
        for _ in body:
            pass
        getattr(body, "close", lambda: None)()

    for environ in environs * max(1, 20 // len(environs)):  # warm: statements, templates, kept answers
        one(environ)
    profiler = cProfile.Profile()
    done, started, writing = 0, time.perf_counter(), 0.0
    profiler.enable()
    while done < args.requests and time.perf_counter() - started < args.seconds:
        one(environs[done % len(environs)])
        done += 1
        if revise and done % args.write_every == 0:
            profiler.disable()
            began = time.perf_counter()
            revise(paths[done % len(paths)], done)
            writing += time.perf_counter() - began
            profiler.enable()
    profiler.disable()
    total = time.perf_counter() - started - writing
    stats = pstats.Stats(profiler)
    shares = buckets(stats, total)
    if args.top:
        stats.stream = sys.stderr
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
    print(json.dumps({"requests": done, "ms": round(total / done * 1000, 3),
                      "buckets": {k: round(v, 4) for k, v in shares.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
