"""Instructions and SQL statements per **cold** public GET, for an A/B of two checkouts under
callgrind (instructions, not seconds: a busy machine does not move the figure).

Cold means the first request after a write: before each measured request a piece is revised
through the API (an admin key), which moves the paper's version, so the worker's kept answers
(web/replay.py), its per-version memo (services/reading/memo.py) and the response cache's key
are all new. Run with `CACHE_TYPE=NullCache`. The revised piece is the newest piece on air that
is *not* the one the path reads (a write elsewhere in the paper, what most cold reads follow);
`--same` revises the piece read instead.

Only the requests are counted: each runs inside a call of libc's `qsort` (through ctypes, on a
two-element array whose one comparison is the request), and callgrind collects only inside
glibc's merge sort (`msort_with_tmp`, which calls the comparison):

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect='msort*' \\
        --callgrind-out-file=/tmp/cold.out python bench/cold_instructions.py /api/v1/stories/3 20
    callgrind_annotate /tmp/cold.out | head   # total; divide by the requests (20)

Without valgrind it prints the statements each request ran (every path the same count, or it
says so); with `--profile N` it prints the N costliest functions of the cold requests under
cProfile (where the instructions go) instead. Run from the checkout to measure (it is put first
on the path), environment as gunicorn's (DATABASE_URL, INSTANCE_PATH, ...) against a database
`flask seed-demo` made; raise READ_RATELIMIT and RATELIMIT_DEFAULT so the requests are not
refused."""
from __future__ import annotations

import os
import sys

# The checkout measured first on the path, in place of bench/ (whose profile.py would shadow
# the standard library's, which cProfile imports).
sys.path[0] = os.getcwd()

import argparse  # noqa: E402
import cProfile  # noqa: E402
import ctypes  # noqa: E402
import ctypes.util  # noqa: E402
import logging  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("requests", type=int)
    parser.add_argument("--same", action="store_true", help="revise the piece the path reads")
    parser.add_argument("--sql", action="store_true", help="print the statements of the last request")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions")
    args = parser.parse_args()
    from sqlalchemy import event

    from extensions import db
    from models import Paper, Piece
    from services.newsroom import keys
    from wsgi import app  # the checkout measured, first on the path

    for handler in logging.getLogger("paperdesk").handlers:
        handler.stream = open(os.devnull, "w")  # noqa: SIM115 - the process's lifetime
    client = app.test_client()
    headers = {"Host": "localhost", "Accept-Encoding": "gzip"}
    tail = args.path.split("?")[0].rsplit("/", 1)[-1]
    with app.app_context():
        paper = db.session.query(Paper).filter_by(slug="demo").one()
        _, plain = keys.issue_key(paper, "admin", label="bench.cold")
        ids = [i for (i,) in db.session.query(Piece.id).filter_by(paper_id=paper.id, on_air=True)
               .order_by(Piece.on_air_at.desc()).limit(3)]
        db.session.commit()
    read = int(tail) if tail.isdigit() else None
    target = read if args.same and read else next(i for i in ids if i != read)

    statements, texts, measuring = [], [], [False]
    with app.app_context():
        engine = db.engine

    @event.listens_for(engine, "before_cursor_execute")
    def _count(_conn, _cursor, statement, *_args) -> None:
        if measuring[0]:
            statements[-1] += 1
            texts.append(" ".join(statement.split())[:200])

    def revise(n: int) -> None:
        answer = client.patch(f"/api/v1/stories/{target}", headers={**headers, "X-Desk-Key": plain},
                              json={"headline": f"Cold read {n} {time.time_ns()}"})
        assert answer.status_code == 200, (answer.status_code, answer.data[:300])

    def request() -> None:
        answer = client.get(args.path, headers=headers)
        assert answer.status_code == 200, (args.path, answer.status_code)

    for n in range(3):  # warm the process: statements compiled, templates loaded
        revise(n)
        request()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    pair = (ctypes.c_int * 2)(1, 2)

    def measured(_a, _b) -> int:
        statements.append(0)
        measuring[0] = True
        try:
            request()
        finally:
            measuring[0] = False
        return 0

    callback = compare(measured)
    profiler = cProfile.Profile() if args.profile else None
    for n in range(args.requests):
        revise(n + 3)
        if profiler:
            profiler.enable()
        libc.qsort(pair, 2, ctypes.sizeof(ctypes.c_int), callback)
        if profiler:
            profiler.disable()
    if profiler:
        stats = pstats.Stats(profiler)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)
    if args.sql:
        print("\n".join(texts[-statements[-1]:]) if statements[-1] else "(none)")
    counts = sorted(set(statements))
    print(f"{args.path}: {args.requests} cold requests, statements per request {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
