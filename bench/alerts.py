#!/usr/bin/env python3
"""Alert senders to a local SMTP sink: messages a second with 1, 2 and 4 senders at once
(docs/PERFORMANCE.md "send-alerts throughput"; `make bench-alerts`).

For each backend (a fresh SQLite file always; PostgreSQL too when BENCH_DATABASE_URL is set,
and that database's `public` schema is DROPPED and rebuilt, so give it a throwaway database):
`flask init-db`, `flask seed-demo --subscribers N --subscriber-cadence instant` (the demo paper
and N confirmed instant readers, each with news in its first window). Then, for each count of
senders: the alert rows are reset, `flask send-alerts --plan-only` records one alert per reader,
and that many `flask worker --once` processes start at once and share the rows (each with
ALERT_CONNECTIONS SMTP connections). The wall time from their start to the last one's exit gives
messages a second. The sink checks every reader got exactly one alert (lost and doubled are
counted and fail the run).

The sink is a small SMTP server of this file (asyncio, PIPELINING, no parsing beyond the
envelope) in `--sinks` processes sharing one port (SO_REUSEPORT), so that it costs a fraction
of a sender's CPU and is not what is measured. `--relay-ms` holds each message's final answer
that long, as a relay across a network would (0: loopback as is).

    .venv/bin/python bench/alerts.py                                 # 100 000 readers, 1/2/4 senders
    .venv/bin/python bench/alerts.py --subscribers 5000 --no-record  # a quick look

Exit status: 0 when every run delivered exactly one message per reader, 1 otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "PERFORMANCE.md"
SECTION = "## send-alerts throughput"
TABLE_MARK = "<!-- bench/alerts.py appends one row per run below (several senders) -->"
ONE_SENDER_TARGET = 350  # messages a second, one sender
SCALE_TARGET = 2.5  # 4 senders against one


# --- the SMTP sink (its own processes) -------------------------------------------------------

class _Sink(asyncio.Protocol):
    """One SMTP session: answers every command at once (DATA's end after `delay` seconds) and
    counts each accepted message's recipients in `seen`."""

    def __init__(self, seen: Counter, delay: float):
        self.seen, self.delay = seen, delay
        self.buffer, self.in_data, self.recipients = b"", False, []

    def connection_made(self, transport):
        self.transport = transport
        transport.write(b"220 sink ESMTP\r\n")

    def data_received(self, chunk: bytes) -> None:
        self.buffer += chunk
        while True:
            if self.in_data:
                end = self.buffer.find(b"\r\n.\r\n")
                if end < 0:
                    return
                self.buffer, self.in_data = self.buffer[end + 5:], False
                self.seen.update(self.recipients)
                self.recipients = []
                if self.delay:
                    asyncio.get_running_loop().call_later(self.delay, self._write, b"250 OK\r\n")
                else:
                    self.transport.write(b"250 OK\r\n")
                continue
            end = self.buffer.find(b"\r\n")
            if end < 0:
                return
            line, self.buffer = self.buffer[:end], self.buffer[end + 2:]
            verb = line[:4].upper()
            if verb == b"EHLO":
                self.transport.write(b"250-sink\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250 PIPELINING\r\n")
            elif verb == b"RCPT":
                self.recipients.append(line[line.find(b"<") + 1:line.rfind(b">")].decode("utf-8", "replace"))
                self.transport.write(b"250 OK\r\n")
            elif verb == b"DATA":
                self.in_data = True
                self.transport.write(b"354 go on\r\n")
            elif verb == b"QUIT":
                self.transport.write(b"221 bye\r\n")
                self.transport.close()
                return
            else:  # HELO, MAIL, RSET, NOOP
                if verb in (b"MAIL", b"RSET"):
                    self.recipients = []
                self.transport.write(b"250 OK\r\n")

    def _write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)


def _serve_sink(port: int, delay: float, out: str, ready) -> None:
    """Serve on 127.0.0.1:`port` (shared with the other sink processes) until SIGTERM, then
    write what was accepted, per recipient, to `out` as JSON."""
    seen: Counter = Counter()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        server = await loop.create_server(lambda: _Sink(seen, delay), "127.0.0.1", port, reuse_port=True)
        ready.set()
        await stop.wait()
        server.close()

    asyncio.run(main())
    Path(out).write_text(json.dumps(seen))


class Sinks:
    """`count` sink processes on one loopback port; `stop()` returns the merged Counter."""

    def __init__(self, count: int, delay: float, workdir: Path):
        self.port = free_port()
        self.outs = [workdir / f"sink-{n}.json" for n in range(count)]
        self.procs = []
        for out in self.outs:
            out.unlink(missing_ok=True)
            ready = multiprocessing.Event()
            proc = multiprocessing.Process(target=_serve_sink, args=(self.port, delay, str(out), ready), daemon=True)
            proc.start()
            if not ready.wait(30):
                raise RuntimeError("an SMTP sink did not start")
            self.procs.append(proc)

    def stop(self) -> Counter:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.join(30)
        seen: Counter = Counter()
        for out in self.outs:
            seen.update(json.loads(out.read_text()))
        return seen


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


def _engine(url: str):
    import sqlalchemy

    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return sqlalchemy.create_engine(url)


def reset_postgres(url: str) -> None:
    """Drop and recreate the `public` schema of the bench database."""
    import sqlalchemy

    engine = _engine(url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("DROP SCHEMA IF EXISTS public CASCADE"))
        conn.execute(sqlalchemy.text("CREATE SCHEMA public"))
    engine.dispose()


def reset_alerts(url: str) -> None:
    """Forget every alert sent or recorded, so the next plan records one per reader again."""
    import sqlalchemy

    engine = _engine(url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("DELETE FROM webhook_deliveries"))
        conn.execute(sqlalchemy.text("DELETE FROM alert_deliveries"))
        conn.execute(sqlalchemy.text("UPDATE subscribers SET last_sent_at = NULL, bounces = 0, suppressed_at = NULL"))
    engine.dispose()


def run_senders(backend: str, url: str, env: dict, senders: int, args, workdir: Path, readers: list[str]) -> dict:
    """Reset, plan, and time `senders` drainers sharing the alerts; return the figures."""
    reset_alerts(url)
    started = time.perf_counter()
    planned = flask(env, "send-alerts", "--plan-only")
    plan_seconds = time.perf_counter() - started
    sinks = Sinks(args.sinks, args.relay_ms / 1000, workdir)
    try:
        run_env = {**env, "SMTP_URL": f"smtp://127.0.0.1:{sinks.port}", "ALERT_CONNECTIONS": str(args.connections)}
        load = os.getloadavg()[0]  # other work on the machine shares its CPUs with these processes
        before = _children_cpu()
        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", "drain-outbox", "--once"],
                                  cwd=ROOT, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(senders)]
        outputs = [proc.communicate() for proc in procs]
        seconds = time.perf_counter() - started
        sender_cpu = _children_cpu() - before
    finally:
        seen = sinks.stop()
    sink_cpu = _children_cpu() - before - sender_cpu
    delivered = sum(seen.values())
    lost = sum(1 for address in readers if seen.get(address, 0) == 0)
    doubled = sum(n - 1 for n in seen.values() if n > 1)
    per_sender = [int(m.group(1)) for out, _ in outputs for m in re.finditer(r"^alerts: mailed (\d+)", out, re.M)]
    failed = [proc.returncode for proc in procs if proc.returncode != 0]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            print(out[-2000:], err[-3000:], sep="\n", file=sys.stderr)
    return {"backend": backend, "subscribers": len(readers), "senders": senders, "connections": args.connections,
            "relay_ms": args.relay_ms, "sent": delivered, "seconds": seconds,
            "rate": delivered / seconds if seconds else 0.0, "lost": lost, "doubled": doubled,
            "per_sender": per_sender, "failed": failed, "load": load, "plan_seconds": plan_seconds,
            "planned": planned.stdout.strip(),
            "sender_ms": 1000 * sender_cpu / max(1, delivered), "sink_ms": 1000 * sink_cpu / max(1, delivered)}


def run_backend(backend: str, url: str, args, workdir: Path) -> list[dict]:
    """Seed once, then each count of senders in turn (`--rounds` times, interleaved)."""
    if backend == "postgresql":
        reset_postgres(url)
    env = {**os.environ, "DATABASE_URL": url, "INSTANCE_PATH": str(workdir / backend),
           "PAPER_DOMAIN": "localhost", "DEFAULT_PAPER": "demo", "FLASK_APP": "app",
           # Alert links need an origin outside development (commands/worker.py alert_origins).
           "PUBLIC_BASE_URL": "http://localhost"}
    env.pop("SMTP_URL", None)
    flask(env, "init-db")
    seeded = flask(env, "seed-demo", "--subscribers", str(args.subscribers), "--subscriber-cadence", "instant")
    print(f"[{backend}] " + " / ".join(line for line in seeded.stdout.splitlines() if "subscribers" in line))
    import sqlalchemy

    engine = _engine(url)
    with engine.connect() as conn:
        readers = list(conn.execute(sqlalchemy.text(
            "SELECT email FROM subscribers WHERE confirmed_at IS NOT NULL AND unsubscribed_at IS NULL")).scalars())
    engine.dispose()
    results = []
    for _ in range(args.rounds):
        for senders in args.senders:
            figures = run_senders(backend, url, env, senders, args, workdir, readers)
            print(f"[{backend}] {senders} sender(s): {figures['sent']:,} messages in {figures['seconds']:.1f}s, "
                  f"{figures['rate']:.0f}/s (per sender {figures['per_sender']}); lost {figures['lost']}, "
                  f"doubled {figures['doubled']}; load {figures['load']:.1f}; CPU ms a message: senders "
                  f"{figures['sender_ms']:.2f}, sink {figures['sink_ms']:.2f}; plan {figures['plan_seconds']:.1f}s",
                  flush=True)
            results.append(figures)
    return results


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


def one_sender_rate(results: list[dict], figures: dict) -> float:
    """The mean rate of one sender on the same backend in this run (0 when not measured)."""
    ones = [f["rate"] for f in results if f["backend"] == figures["backend"] and f["senders"] == 1]
    return sum(ones) / len(ones) if ones else 0.0


def row(figures: dict, results: list[dict], when: str, note: str) -> str:
    base = one_sender_rate(results, figures)
    scale = f"{figures['rate'] / base:.2f}x" if base else "—"
    return (f"| {when} | {figures['backend']} | {figures['subscribers']:,} | {figures['senders']} x "
            f"{figures['connections']} | {figures['relay_ms']:g} | {figures['seconds']:.1f} | "
            f"**{figures['rate']:.0f}** | {scale} | {figures['lost']} / {figures['doubled']} | "
            f"{figures['load']:.1f} | {figures['sender_ms']:.2f} / {figures['sink_ms']:.2f} | {note} |")


HEADER = ("| date (UTC) | backend | readers | senders x connections | relay ms | seconds | messages/s "
          "| vs 1 sender | lost / doubled | load | CPU ms/msg senders / sink | note |\n"
          "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")


def record(rows: list[str], host: str) -> None:
    """Append rows to the several-senders table of docs/PERFORMANCE.md (creating the table
    after the send-alerts section's heading when missing); the rest of the file is left alone."""
    text = DOC.read_text() if DOC.exists() else "# Performance\n"
    if TABLE_MARK not in text:
        block = f"{TABLE_MARK}\n\nMachine: {host}.\n\n{HEADER}\n"
        if SECTION in text:
            head, tail = text.split(SECTION, 1)
            first_break = tail.find("\n\n")
            text = head + SECTION + tail[:first_break] + "\n\n" + block + tail[first_break:]
        else:
            text = text.rstrip("\n") + "\n\n" + SECTION + "\n\n" + block
    head, tail = text.split(TABLE_MARK, 1)
    lines = tail.split("\n")
    i = 0
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    while i < len(lines) and lines[i].startswith("|"):
        i += 1
    lines[i:i] = rows
    DOC.write_text(head + TABLE_MARK + "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=100_000)
    parser.add_argument("--senders", type=lambda s: [int(n) for n in s.split(",")], default=[1, 2, 4],
                        help="counts of senders to measure, comma-separated (default 1,2,4)")
    parser.add_argument("--connections", type=int, default=8, help="SMTP connections per sender (ALERT_CONNECTIONS)")
    parser.add_argument("--relay-ms", type=float, default=0.0, help="hold each message's final answer this long")
    parser.add_argument("--sinks", type=int, default=2, help="sink processes sharing the port")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the sender counts, interleaved")
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "all"], default="all")
    parser.add_argument("--note", default="", help="a word for the results table")
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
        results = [figures for name, url in backends for figures in run_backend(name, url, args, workdir)]
    ok = True
    for figures in results:
        good = not figures["failed"] and figures["lost"] == 0 and figures["doubled"] == 0
        ok &= good
        base = one_sender_rate(results, figures)
        verdict = ""
        if figures["senders"] == 1:
            verdict = "meets" if figures["rate"] >= ONE_SENDER_TARGET else "BELOW"
            verdict = f" ({verdict} the {ONE_SENDER_TARGET}/s target for one sender)"
        elif figures["senders"] == 4 and base:
            ratio = figures["rate"] / base
            meets = "meets" if ratio >= SCALE_TARGET else "BELOW"
            verdict = f" ({ratio:.2f}x one sender: {meets} the {SCALE_TARGET}x target)"
        print(f"[{figures['backend']}] {figures['senders']} sender(s): {figures['rate']:.0f} messages/s{verdict}"
              f"{'' if good else ' FAILED (lost, doubled or a sender failed)'}")
    if not args.no_record and results:
        record([row(f, results, when, args.note) for f in results], host)
        print(f"appended to {DOC.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
