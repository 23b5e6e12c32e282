"""What `make bench` (bench/http.py, bench/scale.py) is made of: fresh databases, seeding,
gunicorn started as in production, wrk runs and their parsing, process sizes, the machine.

Nothing here imports the app: every step runs the real commands (`flask init-db`, `flask
seed-demo`, `gunicorn -c gunicorn.conf.py`, `wrk`) in their own processes.
"""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/paperdesk_bench"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
# Search terms of the demo corpus (demo/content.py): about one piece in five holds
# "council"; "castell brandt" (two names, both required) about one in two thousand.
COMMON_TERM, RARE_TERM = "council", "castell brandt"
UNLIMITED = "1000000000 per minute"
# The limiter runs on every request as in production, with limits out of reach.
UNLIMITED_ENV = {"RATELIMIT_DEFAULT": UNLIMITED, "READ_RATELIMIT": UNLIMITED}


class BenchError(RuntimeError):
    """A step of the benchmark could not run (a command failed, a server did not start)."""


# --- tools ----------------------------------------------------------------------------------

def ensure_wrk() -> str:
    """The path of `wrk`, installing Debian's package when it is missing (needs root/apt)."""
    found = shutil.which("wrk")
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        print("wrk is missing: apt-get install -y wrk", flush=True)
        install = ["apt-get", "install", "-y", "-q", "wrk"]
        if subprocess.run(install, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], capture_output=True)
            subprocess.run(install, capture_output=True)
    found = shutil.which("wrk")
    if not found:
        raise BenchError("wrk is not installed: run `sudo apt-get install -y wrk`")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_reachable(url: str) -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except Exception:  # noqa: BLE001 - any failure means "no Redis"
        return False


# --- databases ------------------------------------------------------------------------------

def _psycopg_url(url: str, database: str | None = None) -> str:
    parts = urlsplit(url.replace("postgresql+psycopg://", "postgresql://", 1))
    path = f"/{database}" if database is not None else parts.path
    return urlunsplit(parts._replace(path=path))


def postgres_reachable(url: str) -> bool:
    try:
        import psycopg

        with psycopg.connect(_psycopg_url(url, "postgres"), connect_timeout=3):
            return True
    except Exception:  # noqa: BLE001
        return False


def recreate_postgres(url: str) -> None:
    """Drop the bench database named in `url` (if any) and create it empty."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or name in ("postgres", "test"):
        raise BenchError(f"refusing to recreate database {name!r}: give the bench its own")
    with psycopg.connect(_psycopg_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def postgres_exists(url: str) -> bool:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_psycopg_url(url, "postgres")) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def drop_postgres(url: str, *, keep_empty: bool = False) -> None:
    """Drop the bench database; with `keep_empty`, leave an empty one of the same name (it was
    there before the run: another tool, such as bench/alerts.py, may expect it)."""
    if keep_empty:
        recreate_postgres(url)
        return
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_psycopg_url(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def analyze(url: str) -> None:
    """What docs/DEPLOYING.md asks for after a bulk load: planner statistics (SQLite `ANALYZE`),
    and on PostgreSQL what autovacuum would soon do (statistics and the visibility map)."""
    if url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(url[len("sqlite:///"):]) as conn:
            conn.execute("ANALYZE")
        return
    import psycopg

    with psycopg.connect(_psycopg_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def postgres_version(url: str) -> str:
    import psycopg

    with psycopg.connect(_psycopg_url(url, "postgres")) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


def query_one(database_url: str, sql: str):
    """One value from the bench database (SQLite file or PostgreSQL)."""
    if database_url.startswith("sqlite:///"):
        import sqlite3

        with sqlite3.connect(database_url[len("sqlite:///"):]) as conn:
            return conn.execute(sql).fetchone()[0]
    import psycopg

    with psycopg.connect(_psycopg_url(database_url)) as conn:
        return conn.execute(sql).fetchone()[0]


# --- the app's commands ---------------------------------------------------------------------

def remove_sqlite(database_url: str) -> None:
    """Delete a SQLite database file with its write-ahead log and shared-memory index: a new
    database made where an old `-wal` file remains would read it and fail ("disk I/O error")."""
    path = database_url[len("sqlite:///"):]
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def flask(env: dict, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([PYTHON, "-m", "flask", "--app", "app", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError(f"flask {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


@dataclass
class Seeded:
    pieces: int
    subscribers: int
    pieces_seconds: float    # as `seed-demo` reports it for the public paper's pieces
    subscribers_seconds: float
    wall_seconds: float      # the whole command, process start to exit


def seed(env: dict, pieces: int, subscribers: int) -> Seeded:
    """`flask init-db` then `flask seed-demo --pieces N --subscribers M` on `env`'s database."""
    flask(env, "init-db")
    started = time.perf_counter()
    out = flask(env, "seed-demo", "--pieces", str(pieces), "--subscribers", str(subscribers)).stdout
    wall = time.perf_counter() - started
    piece_s = re.search(r"^\S+: [\d,]+ on air over .*\(([\d.]+)s\)$", out, re.M)
    sub_s = re.search(r"confirmed subscribers .*\(([\d.]+)s\)$", out, re.M)
    return Seeded(pieces, subscribers, float(piece_s.group(1)) if piece_s else wall,
                  float(sub_s.group(1)) if sub_s else 0.0, wall)


def fresh_seeded(backend: str, database_url: str, work: Path, pieces: int,
                 subscribers: int) -> tuple[dict, Seeded]:
    """A fresh database (`backend` "postgresql" or "sqlite" at `database_url`) seeded with
    `pieces` and `subscribers` (timed), with the statistics docs/DEPLOYING.md asks for after a
    bulk load, and an instance folder under `work`: (the app's environment, Seeded)."""
    if backend == "postgresql":
        recreate_postgres(database_url)
    else:
        remove_sqlite(database_url)
    instance = work / f"instance-{backend}"
    instance.mkdir(exist_ok=True)
    env = base_env(database_url, instance)
    print(f"  seed-demo --pieces {pieces:,} --subscribers {subscribers:,}", flush=True)
    seeded = seed(env, pieces, subscribers)
    print(f"    {seeded.pieces_seconds:.1f} s pieces, {seeded.subscribers_seconds:.1f} s subscribers, "
          f"{seeded.wall_seconds:.1f} s in all", flush=True)
    analyze(database_url)
    return env, seeded


def base_env(database_url: str, instance: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CACHE_", "RATELIMIT_", "PURGE_"))}
    env.update(DATABASE_URL=database_url, INSTANCE_PATH=str(instance), FLASK_APP="app",
               OUTBOX_DIR=str(instance / "outbox"), PAPER_DOMAIN="localhost", DEFAULT_PAPER="demo",
               PYTHONDONTWRITEBYTECODE="1")
    return env


# --- gunicorn -------------------------------------------------------------------------------

@contextmanager
def gunicorn(env: dict, log_path: Path, workers: int = 2, app: str | None = None):
    """gunicorn with the production gunicorn.conf.py and `workers` workers on a free loopback
    port, serving the app (`wsgi:app`) or `app` (a `module:callable`, e.g. a baseline of
    bench/baselines.py) with the very same settings; yields (base URL, master pid) once
    /readyz answers 200."""
    port = free_port()
    env = {**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": str(workers),
           # A restart in the middle of a 10-second run would be noise, not a finding.
           "GUNICORN_MAX_REQUESTS": "0",
           **UNLIMITED_ENV}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([PYTHON, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py"),
                                 *([app] if app else [])],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise BenchError(f"gunicorn exited ({proc.returncode}); see {log_path}")
            try:
                if get(base + "/readyz")[0] == 200 and len(worker_pids(proc.pid)) == workers:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"gunicorn did not become ready; see {log_path}")
            time.sleep(0.2)
        yield base, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def get(url: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True)
    return [int(pid) for pid in out.stdout.split()]


def worker_rss_mb(master: int) -> list[float]:
    """Resident size of each worker of gunicorn `master`, in MB (from ps, KiB)."""
    sizes = []
    for pid in worker_pids(master):
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True)
        if out.stdout.strip():
            sizes.append(int(out.stdout) / 1024)
    return sizes


# --- wrk ------------------------------------------------------------------------------------

@dataclass
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    errors: int      # socket errors plus answers wrk counts as failed (status >= 400)


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * _UNITS[unit]


def settle(base: str, path: str) -> None:
    """Wait until the server has worked off what a finished wrk run left queued: a sync worker
    finishes every request it accepted, even from a client that has gone, so a slow endpoint's
    backlog would otherwise land on the next run. Requests queue in order, so one that comes
    back has waited for everything before it; the second makes sure of the other worker."""
    for _ in range(2):
        get(base + path)


def wrk(url: str, *, duration: int, threads: int, connections: int,
        headers: dict | None = None, script: Path | None = None) -> Load:
    """Run wrk at fixed concurrency with latency percentiles; parse its report. `script`: a wrk
    Lua script choosing each request (bench/day.py's mix), else every request GETs `url`."""
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "10s"]
    if script is not None:
        command += ["-s", str(script)]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    out = subprocess.run(command + [url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return Load(rps, p50, p99, requests, errors + (int(bad.group(1)) if bad else 0))


# --- a run ----------------------------------------------------------------------------------

def run_lanes(results: dict, backends: list[str], pg_url: str, run_backend, *, name: str,
              started: float) -> Path:
    """Run `run_backend(backend, database_url, work_folder)` for each of `backends` (a fresh
    SQLite file in a temporary work folder, or PostgreSQL at `pg_url`) into
    `results["backends"]`; add the minutes since `started` (time.monotonic()) and the load
    average at the end; write bench/results/<name>-<time>.json and return its path."""
    with tempfile.TemporaryDirectory(prefix=f"paperdesk-{name}-") as tmp:
        work = Path(tmp)
        for backend in backends:
            url = pg_url if backend == "postgresql" else f"sqlite:///{work / (name + '.db')}"
            results["backends"][backend] = run_backend(backend, url, work)
    results["minutes"] = round((time.monotonic() - started) / 60, 1)
    results["machine"]["load average at end (1, 5, 15 min)"] = " ".join(f"{v:.1f}" for v in os.getloadavg())
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"results: {path.relative_to(ROOT)} ({results['minutes']} min)")
    return path


# --- the machine ----------------------------------------------------------------------------

def machine(pg_url: str | None, redis_url: str | None) -> dict:
    """nproc, CPU model, memory, OS, and the versions of everything under test."""
    import sqlite3

    cpu = "unknown"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = "unknown"
    try:
        kib = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal")))
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration):
        pass
    info = {"nproc": os.cpu_count(), "cpu": cpu, "memory": memory,
            # Other work on the machine skews absolute figures (ratios less so).
            "load average at start (1, 5, 15 min)": " ".join(f"{v:.1f}" for v in os.getloadavg()),
            "os": platform.platform(terse=True), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version}
    version = subprocess.run([PYTHON, "-m", "gunicorn", "--version"], capture_output=True, text=True)
    found = re.search(r"\d+(?:\.\d+)+", version.stdout + version.stderr)
    info["gunicorn"] = found.group(0) if found else "unknown"
    wrk_version = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    info["wrk"] = (wrk_version.stdout + wrk_version.stderr).split("Copyright")[0].strip()
    if pg_url:
        info["postgresql"] = postgres_version(pg_url)
    if redis_url:
        import redis

        info["redis"] = redis.Redis.from_url(redis_url).info("server")["redis_version"]
    return info
