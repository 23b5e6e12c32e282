"""bench/report.py's PostgreSQL-against-SQLite check, one request at a time: each lane's req/s
is a share of the bare Flask view measured in that lane, so a machine that slows down between
the lanes does not read as PostgreSQL being slower."""
from __future__ import annotations

from bench import report


def _lane(story: float, bare: float | None) -> dict:
    lane = {"story": {"rps": story, "p50_ms": 1.0, "p99_ms": 2.0}}
    if bare is not None:
        lane[report.BARE] = {"rps": bare, "p50_ms": 0.3, "p99_ms": 0.9}
    return lane


def _results(pg: dict, sqlite: dict) -> dict:
    lane = lambda scale: {"scale": {"1000": scale}, "cold": {"endpoints": {}, "rss_mb": [90]},  # noqa: E731
                          "warm": {"endpoints": {}, "rss_mb": [90]},
                          "seed": {"pieces": 1000, "pieces_seconds": 1.0}}
    for scale in (pg, sqlite):
        scale.update({label: {"rps": 100.0, "p50_ms": 1.0, "p99_ms": 2.0}
                      for label in ("list", "front", "search (common)")})
    return {"settings": {"pieces": 1000}, "backends": {"sqlite": lane(sqlite), "postgresql": lane(pg)}}


def _story_check(results: dict) -> tuple[bool, str]:
    return next((ok, text) for ok, text in report.checks(results) if "cold story at" in text)


def test_a_lane_on_a_slower_machine_is_judged_by_its_own_baseline():
    # The machine ran 30% slower in PostgreSQL's lane: every req/s, the baseline's too.
    ok, text = _story_check(_results(_lane(630, 1400), _lane(900, 2000)))
    assert ok and "1.00x SQLite's share of its lane's bare Flask view" in text


def test_a_slower_postgresql_is_still_a_miss_against_its_own_baseline():
    ok, text = _story_check(_results(_lane(500, 2000), _lane(900, 2000)))
    assert not ok and "0.56x" in text


def test_a_run_without_the_lane_baselines_compares_raw_req_s():
    ok, text = _story_check(_results(_lane(630, None), _lane(900, None)))
    assert not ok and "0.70x SQLite's req/s" in text
