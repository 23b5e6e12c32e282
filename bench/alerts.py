#!/usr/bin/env python3
"""`flask send-alerts` throughput over a local SMTP sink (docs/PERFORMANCE.md "send-alerts
throughput"; `make bench-alerts`).

For each backend (a fresh SQLite file always; PostgreSQL too when BENCH_DATABASE_URL is set,
and that database's `public` schema is DROPPED and rebuilt, so give it a throwaway database):
`flask init-db`, `flask seed-demo --subscribers N --subscriber-cadence instant` (the demo paper
and N confirmed instant readers), then one `flask send-alerts` with SMTP_URL pointing at an
aiosmtpd sink that accepts and discards, in its own process so it never shares the sender's
GIL. The wall time of that run, the messages the sink accepted and messages a second are
printed and, unless --no-record, appended to the results table in docs/PERFORMANCE.md.

    .venv/bin/python bench/alerts.py                       # 10 000 readers, SQLite (+ PostgreSQL)
    .venv/bin/python bench/alerts.py --subscribers 2000 --no-record

Exit status: 0 when every run sent one message per reader, 1 otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import platform
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "PERFORMANCE.md"
SECTION = "## send-alerts throughput"
TABLE_MARK = "<!-- bench/alerts.py appends one row per run below -->"
TARGET = 300  # messages a second (100 000 readers in under 6 minutes)


# --- the SMTP sink (its own process) ---------------------------------------------------------

def _sink(port: int, accepted, ready) -> None:
    """Serve SMTP on 127.0.0.1:`port` until terminated; count accepted messages, keep none."""
    from aiosmtpd.controller import Controller

    class Discard:
        async def handle_DATA(self, server, session, envelope):
            with accepted.get_lock():
                accepted.value += 1
            return "250 OK"

    controller = Controller(Discard(), hostname="127.0.0.1", port=port)
    controller.start()
    ready.set()
    try:
        asyncio.run(asyncio.Event().wait())
    finally:
        controller.stop()


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished (waited-for) children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- one backend ----------------------------------------------------------------------------

def flask(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flask", "--app", "app", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=check)


def reset_postgres(url: str) -> None:
    """Drop and recreate the `public` schema of the bench database."""
    import sqlalchemy

    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(sqlalchemy.text("CREATE SCHEMA public"))
    engine.dispose()


def run_backend(backend: str, url: str, subscribers: int, workdir: Path) -> dict:
    """Seed, run send-alerts once against a fresh sink, return the figures."""
    if backend == "postgresql":
        reset_postgres(url)
    env = {**os.environ, "DATABASE_URL": url, "INSTANCE_PATH": str(workdir / backend),
           "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo", "FLASK_APP": "app"}
    flask(env, "init-db")
    seeded = flask(env, "seed-demo", "--subscribers", str(subscribers), "--subscriber-cadence", "instant")
    print(f"[{backend}] " + " / ".join(line for line in seeded.stdout.splitlines() if "subscribers" in line))

    port = free_port()
    accepted = multiprocessing.Value("l", 0)
    ready = multiprocessing.Event()
    sink = multiprocessing.Process(target=_sink, args=(port, accepted, ready), daemon=True)
    sink.start()
    try:
        if not ready.wait(30):
            raise RuntimeError("the SMTP sink did not start")
        env["SMTP_URL"] = f"smtp://127.0.0.1:{port}"
        load = os.getloadavg()[0]  # other work on the machine shares its CPUs with the three processes
        before = _children_cpu()
        started = time.perf_counter()
        result = flask(env, "send-alerts", check=False)
        seconds = time.perf_counter() - started
        sender_cpu = _children_cpu() - before
    finally:
        sink.terminate()
        sink.join(10)
    sink_cpu = _children_cpu() - before - sender_cpu
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    timings = " ".join(line for line in result.stdout.splitlines() if line.startswith(("planned", "timing")))
    figures = {"backend": backend, "subscribers": subscribers, "sent": accepted.value,
               "seconds": seconds, "rate": accepted.value / seconds if seconds else 0.0,
               "exit": result.returncode, "summary": summary, "timings": timings, "load": load,
               # CPU milliseconds a message, whatever else the machine is doing.
               "sender_ms": 1000 * sender_cpu / max(1, accepted.value),
               "sink_ms": 1000 * sink_cpu / max(1, accepted.value)}
    if result.returncode != 0:
        print(result.stdout[-2000:], result.stderr[-4000:], sep="\n", file=sys.stderr)
    return figures


# --- the machine and the doc -----------------------------------------------------------------

def machine() -> str:
    try:
        meminfo = Path("/proc/meminfo").read_text()
        kib = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, AttributeError):
        memory = "unknown memory"
    cpu = ""
    try:
        cpu = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text()).group(1).strip()
    except (OSError, AttributeError):
        pass
    return (f"{os.cpu_count()} CPUs{f' ({cpu})' if cpu else ''}, {memory}, "
            f"Python {platform.python_version()}, {platform.system()} {platform.release()}")


def row(figures: dict, when: str, host: str, note: str) -> str:
    return (f"| {when} | {figures['backend']} | {figures['subscribers']:,} | {figures['sent']:,} | "
            f"{figures['seconds']:.1f} | **{figures['rate']:.0f}** | {figures['load']:.1f} | "
            f"{figures['sender_ms']:.2f} / {figures['sink_ms']:.2f} | {host} | {note} |")


def record(rows: list[str]) -> None:
    """Append rows to the results table of the send-alerts section of docs/PERFORMANCE.md
    (creating the file or the section when missing); other sections are left as they are."""
    text = DOC.read_text() if DOC.exists() else "# Performance\n"
    if TABLE_MARK not in text:
        text = text.rstrip("\n") + "\n\n" + SECTION + "\n\n" + TABLE_MARK + "\n\n" + HEADER + "\n"
    head, tail = text.split(TABLE_MARK, 1)
    lines = tail.split("\n")
    # The table starts after the marker (blank lines allowed); rows go after its last line.
    i = 0
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    while i < len(lines) and lines[i].startswith("|"):
        i += 1
    lines[i:i] = rows
    DOC.write_text(head + TABLE_MARK + "\n".join(lines))


HEADER = ("| date (UTC) | backend | readers | messages | seconds | messages/s | load | CPU ms/msg sender / sink "
          "| machine | note |\n|---|---|---:|---:|---:|---:|---:|---:|---|---|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=10_000)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "all"], default="all")
    parser.add_argument("--note", default="", help="a word for the results table (e.g. 'before')")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the doc alone")
    args = parser.parse_args(argv)

    backends = []
    with tempfile.TemporaryDirectory(prefix="bench-alerts-") as tmp:
        workdir = Path(tmp)
        if args.backend in ("sqlite", "all"):
            backends.append(("sqlite", f"sqlite:///{workdir / 'bench.db'}"))
        pg = os.environ.get("BENCH_DATABASE_URL")
        if args.backend in ("postgresql", "all") and pg:
            backends.append(("postgresql", pg))
        elif args.backend == "postgresql":
            print("set BENCH_DATABASE_URL=postgresql://... (its public schema is dropped)", file=sys.stderr)
            return 2
        host = machine()
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
        print(f"machine: {host}")
        results = [run_backend(name, url, args.subscribers, workdir) for name, url in backends]
    ok = True
    for figures in results:
        good = figures["exit"] == 0 and figures["sent"] == figures["subscribers"]
        ok &= good
        verdict = "meets" if figures["rate"] >= TARGET else "BELOW"
        print(f"[{figures['backend']}] {figures['sent']:,} messages to {figures['subscribers']:,} readers in "
              f"{figures['seconds']:.1f}s: {figures['rate']:.0f} messages/s ({verdict} the {TARGET}/s target; "
              f"load {figures['load']:.1f} at the start; CPU a message: sender {figures['sender_ms']:.2f} ms, "
              f"sink {figures['sink_ms']:.2f} ms); "
              f"{figures['timings']} {figures['summary']!r}{'' if good else ' FAILED'}")
    if not args.no_record and results:
        record([row(f, when, host, args.note) for f in results])
        print(f"appended to {DOC.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
