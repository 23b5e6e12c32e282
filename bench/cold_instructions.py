"""Instructions and SQL statements per **cold** public GET, for an A/B of two checkouts under
callgrind (instructions, not seconds: a busy machine does not move the figure).

Cold means the first request after a write: before each measured request a piece is revised
through the API (an admin key), which moves the paper's version, so the worker's kept answers
(web/replay.py), its per-version memo (services/reading/memo.py) and the response cache's key
are all new. Run with `CACHE_TYPE=NullCache`. The revised piece is the newest piece on air that
is *not* the one the path reads (a write elsewhere in the paper, what most cold reads follow);
`--same` revises the piece read instead; `--no-write` revises nothing between the measured
requests, which is what `make bench`'s cold rows measure (NullCache, nobody writing: the paper's
row and the per-version memos are kept, the answers are made every time).

Only the requests are counted: each runs inside a call of libc's `qsort` (through ctypes, on a
two-element array whose one comparison is the request), and callgrind collects only inside
glibc's merge sort (`msort_with_tmp`, which calls the comparison):

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect='msort*' \\
        --callgrind-out-file=/tmp/cold.out python bench/cold_instructions.py /api/v1/stories/3 20
    callgrind_annotate /tmp/cold.out | head   # total; divide by the requests (20)

Without valgrind it prints the statements each request ran (every path the same count, or it
says so), and with `--wire`, on PostgreSQL, the round trips (libpq's trace of every connection:
each Sync or simple Query waits for the server; BEGIN, ROLLBACK, SET and pings included, which
SQLAlchemy's statement events do not see); with `--profile N` it prints the N costliest
functions of the cold requests under cProfile (where the instructions go) instead. Run from
the checkout to measure (it is put first on the path), environment as gunicorn's
(DATABASE_URL, INSTANCE_PATH, ...) against a database `flask seed-demo` made; raise
READ_RATELIMIT and RATELIMIT_DEFAULT so the requests are not refused."""
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
    parser.add_argument("--no-write", action="store_true", help="no write between the measured requests")
    parser.add_argument("--sql", action="store_true", help="print the statements of the last request")
    parser.add_argument("--wire", action="store_true", help="PostgreSQL: count round trips (libpq trace)")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions")
    args = parser.parse_args()
    from sqlalchemy import event

    trace = _trace_connections() if args.wire else None
    import extensions
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

    def _count(_conn, _cursor, statement, *_args) -> None:
        if measuring[0]:
            statements[-1] += 1
            texts.append(" ".join(statement.split())[:200])

    with app.app_context():  # the app's engine, and on PostgreSQL public reads' and search's
        engines = {db.engine, *(getattr(extensions, name)() for name in ("reads_engine", "per_value_engine")
                                if hasattr(extensions, name))} - {None}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", _count)

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
    for _ in range(3 if args.no_write else 0):  # and prepared on every pooled connection
        request()
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
    pair = (ctypes.c_int * 2)(1, 2)

    def measured(_a, _b) -> int:
        statements.append(0)
        if trace:
            trace.flush()
            marks.append(os.path.getsize(trace.name))
        measuring[0] = True
        try:
            request()
        finally:
            measuring[0] = False
        if trace:
            marks.append(os.path.getsize(trace.name))
        return 0

    marks: list[int] = []
    callback = compare(measured)
    profiler = cProfile.Profile() if args.profile else None
    for n in range(args.requests):
        if not args.no_write:
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
    if trace:
        with open(trace.name, "rb") as log:
            data = log.read()
        trips = sorted({_round_trips(data[marks[i]:marks[i + 1]]) for i in range(0, len(marks), 2)})
        print(f"{args.path}: round trips per request {trips}")
    return 0


def _trace_connections():
    """libpq's trace of every PostgreSQL connection made from now on, into one temporary file
    (returned, open): one line per protocol message, `F` (sent) or `B` (received), then its
    length and type."""
    import tempfile

    from psycopg import pq
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    trace = tempfile.NamedTemporaryFile("w", prefix="cold-wire-", suffix=".log")  # noqa: SIM115

    @event.listens_for(Pool, "connect")
    def _traced(dbapi_connection, _record) -> None:
        pgconn = getattr(dbapi_connection, "pgconn", None)
        if pgconn is not None:
            pgconn.trace(trace.fileno())
            pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    return trace


def _round_trips(trace: bytes) -> int:
    """Round trips in a stretch of libpq's trace: messages sent that wait for the server's
    ReadyForQuery (an extended-protocol Sync, or a simple Query such as BEGIN)."""
    kinds = [line.split(b"\t")[2] for line in trace.splitlines() if line.startswith(b"F\t")]
    return kinds.count(b"Sync") + kinds.count(b"Query")


if __name__ == "__main__":
    sys.exit(main())
