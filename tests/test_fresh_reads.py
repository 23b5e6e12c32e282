"""No read lags an answered write (docs/ARCHITECTURE.md "Never stale"), as production runs it:
gunicorn with the repository's wsgi.py and gunicorn.conf.py, several sync workers, every cache
on (each worker's replay and local answers, the response cache), nothing turned off for the test.

Each surface is first read over many fresh connections, so every worker holds its own copy of
each answer; then a write is made and answered, and every following read, on whichever worker
takes it, must show the write: airing, revision, pull and a scheduled instant; on SQLite with 4
workers of one host, and across two gunicorn masters (two hosts: own instance folders, own
processes) sharing one PostgreSQL and one Redis.
"""
from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import pytest

from app import create_app
from extensions import db
from tests.fixtures.app import migrate_to_head
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import Desk
from tests.fixtures.servers import gunicorn
from tests.test_faults import _postgres_database

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("VIRTUAL_ENV") or ROOT / ".venv") / "bin"
READS = 24  # reads per surface after each write (fresh connections: any worker)
# Hosts of one deployment share the secret (it opens the receipt signing keys), as in production.
SECRET = "fresh-reads-" + "s" * 40

pytestmark = pytest.mark.slow


def _env(url: str, instance: Path, extra: dict | None = None) -> dict:
    """A gunicorn's environment: the database, its own instance folder, the shared secret."""
    return {"DATABASE_URL": url.replace("postgresql+psycopg://", "postgresql://"),
            "INSTANCE_PATH": str(instance), "RATELIMIT_ENABLED": "0", "LOG_REQUESTS": "0",
            "SECRET_KEY": SECRET, **(extra or {})}


def _get(base: str, path: str) -> tuple[int, str]:
    request = urllib.request.Request(base + path, headers={"Host": "localhost", "Connection": "close"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def _send(base: str, method: str, path: str, key: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={
        **auth(key, "X-Desk-Key"), "Content-Type": "application/json", "Host": "localhost"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        raise AssertionError(f"{method} {path}: {error.code} {error.read()[:2000]!r}") from None


class _Unfollowed(urllib.request.HTTPRedirectHandler):
    """Leave redirects to the caller: a card URL's own answer is what is judged."""

    def redirect_request(self, *args, **kwargs):
        return None


_UNFOLLOWED = urllib.request.build_opener(_Unfollowed)


def _card(base: str, path: str) -> tuple[int, str]:
    """GET a share card URL without following a redirect: (status, Location or "")."""
    request = urllib.request.Request(base + path, headers={"Host": "localhost", "Connection": "close"})
    try:
        with _UNFOLLOWED.open(request, timeout=30) as response:
            response.read()
            return response.status, ""
    except urllib.error.HTTPError as error:
        error.read()
        return error.code, error.headers.get("Location", "")


def _surfaces(piece_id: int, slug: str) -> list[str]:
    story = f"http://localhost/stories/{slug}"
    return ["/api/v1/stories", "/api/v1/front", "/front.json", "/", "/rss.xml", "/feed.json",
            "/llms.txt", "/sitemap-news.xml", "/api/v1/changes", f"/api/v1/stories/{piece_id}",
            f"/stories/{slug}", f"/embed/{piece_id}", f"/oembed?url={quote(story, safe='')}"]


def _warm(bases: list[str], paths: list[str]) -> None:
    for base in bases:
        for path in paths:
            for _ in range(8):
                _get(base, path)


def _stale(bases: list[str], paths: list[str], fresh, read=None) -> list[str]:
    """Each read (READS per surface per host) whose answer `fresh(path, status, body)` refuses;
    with `read=_card`, `fresh(path, status, location)` of an unfollowed card read."""
    read = read or _get
    misses = []
    for base in bases:
        for path in paths:
            for i in range(READS):
                status, body = read(base, path)
                if not fresh(path, status, body):
                    misses.append(f"{base}{path} read {i}: {status}")
    return misses


@pytest.fixture
def paper_db(app, tmp_path):
    """A database of its own (SQLite file, or a PostgreSQL database on the suite's server) with
    paper `demo`, two pieces on air, a draft and an admin key: (url, draft id, slug, admin key)."""
    drop = None
    if app.backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'fresh.db'}"
    else:
        base = app.config["SQLALCHEMY_DATABASE_URI"].rsplit("/", 1)[1].split("?")[0]
        url, drop = _postgres_database(app.config["SQLALCHEMY_DATABASE_URI"], f"{base}_fresh")
    owner = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": url, "RATELIMIT_ENABLED": False,
                        "INSTANCE_PATH": str(tmp_path / "owner"), "CACHE_TYPE": "NullCache",
                        "CACHE_NO_NULL_WARNING": True, "SHARED_STATE": "off",
                        "SECRET_KEY": SECRET})
    with owner.app_context():
        migrate_to_head()
        desk = Desk(owner)
        paper = desk.paper("demo")
        yesterday = datetime.now(timezone.utc) - timedelta(days=1)
        for n in range(2):
            desk.piece(paper, f"Standing story {n}", on_air_at=yesterday + timedelta(minutes=n))
        draft = desk.piece(paper, "Harbour reopens after the storm", on_air_at=None)
        admin = desk.key(paper, "admin")
        draft_id, slug = draft.id, draft.slug
        db.session.remove()
        db.engine.dispose()
    yield url, draft_id, slug, admin
    if drop:
        drop()


def _cycle(bases: list[str], writer: str, draft_id: int, slug: str, admin: str) -> dict[str, list]:
    """Air, revise, pull and schedule the draft through `writer`, reading every surface on every
    base after each answered write; returns the stale reads per write. Share cards are judged
    by status and redirect (a PNG holds no headline to look for): after the revision the first
    revision's card URL, which every worker held as immutable, must redirect to a new one and
    never answer 200; after the pull every card URL must be 404."""
    paths = _surfaces(draft_id, slug)
    latest = f"/cards/{slug}.png"
    stale = {}

    _warm(bases, paths + [latest])
    _send(writer, "PUT", f"/api/v1/stories/{draft_id}/air", admin)
    stale["aired"] = _stale(bases, paths, lambda p, s, b: s == 200 and ("Harbour reopens" in b or f'"{draft_id}"' in b))
    first_card = _card(writer, latest)[1].removeprefix("http://localhost")
    stale["aired"] += _stale(bases, [latest], lambda p, s, to: s == 302 and to.endswith(first_card), _card)
    stale["aired"] += _stale(bases, [first_card], lambda p, s, to: s == 200 and first_card.startswith("/cards/"), _card)

    _warm(bases, paths + [first_card])
    _send(writer, "PATCH", f"/api/v1/stories/{draft_id}", admin, {"headline": "Harbour reopens to shipping"})
    stale["revised"] = _stale(bases, [p for p in paths if p != "/api/v1/changes"],
                              lambda p, s, b: s == 200 and "Harbour reopens to shipping" in b)
    second_card = _card(writer, latest)[1].removeprefix("http://localhost")
    moved = second_card.startswith("/cards/") and second_card != first_card
    stale["revised"] += _stale(bases, [latest, first_card],
                               lambda p, s, to: moved and s == 302 and to.endswith(second_card), _card)

    _warm(bases, paths + [second_card])
    _send(writer, "DELETE", f"/api/v1/stories/{draft_id}/air", admin)
    stale["pulled"] = _stale(bases, [p for p in paths if p != "/api/v1/changes"],
                             lambda p, s, b: "Harbour reopens" not in b)
    stale["pulled"] += _stale(bases, [latest, first_card, second_card], lambda p, s, to: s == 404, _card)

    at = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=4)
    _send(writer, "PUT", f"/api/v1/stories/{draft_id}/air", admin, {"at": at.isoformat()})
    _warm(bases, paths[:8])
    while datetime.now(timezone.utc) < at:  # the servers' own clock: nothing to travel
        time.sleep(0.05)
    stale["scheduled"] = _stale(bases, paths[:8], lambda p, s, b: s == 200 and "Harbour reopens" in b)
    return stale


def test_no_read_lags_an_answered_write_on_four_workers(app, paper_db, tmp_path):
    if app.backend != "sqlite":
        pytest.skip("one host: the embedded default, SQLite (PostgreSQL: the two-host test)")
    url, draft_id, slug, admin = paper_db
    with gunicorn(_env(url, tmp_path / "instance"), workers=4) as (base, _):
        stale = _cycle([base], base, draft_id, slug, admin)
    assert stale == {"aired": [], "revised": [], "pulled": [], "scheduled": []}


def test_no_read_lags_an_answered_write_across_two_hosts(app, paper_db, tmp_path):
    redis_url = os.environ.get("TEST_REDIS_URL")
    if app.backend != "postgresql" or not redis_url:
        pytest.skip("two hosts share PostgreSQL and Redis (TEST_DATABASE_URL and TEST_REDIS_URL)")
    url, draft_id, slug, admin = paper_db
    shared = {"CACHE_TYPE": "RedisCache", "CACHE_REDIS_URL": redis_url,
              "CACHE_KEY_PREFIX": f"fresh{os.getpid()}:", "RATELIMIT_STORAGE_URI": redis_url}
    with gunicorn(_env(url, tmp_path / "host-a", shared)) as (a, _), \
            gunicorn(_env(url, tmp_path / "host-b", shared)) as (b, _):
        stale = _cycle([b, a], a, draft_id, slug, admin)
    assert stale == {"aired": [], "revised": [], "pulled": [], "scheduled": []}
