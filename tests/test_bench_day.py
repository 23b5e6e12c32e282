"""`make bench-day` (bench/day.py): the mix it draws, how it reads the app's request log, and
the targets bench/report.py judges a run by (a stale read or a failed write is never met)."""
from __future__ import annotations

import json
from collections import Counter

from bench import day, report


def test_the_mix_follows_its_shares_and_leans_on_the_newest_pieces():
    ids = list(range(1000, 0, -1))  # newest first
    paths = day.draw_paths(ids, [("world", "World"), ("arts and letters", "Arts and letters")])
    assert paths == day.draw_paths(ids, [("world", "World"), ("arts and letters", "Arts and letters")])
    kinds = Counter("story page" if p.startswith("/stories/") else "story json" if p.startswith("/api/v1/stories/")
                    else "other" for p in paths)
    assert abs(kinds["story page"] / len(paths) - 0.35) < 0.02
    assert abs(kinds["story json"] / len(paths) - 0.15) < 0.02
    assert day.share_in_newest(paths, ids) > 0.75
    assert "/api/v1/stories?limit=15&section=Arts+and+letters" in paths
    script = day.lua_script(paths[:3])
    assert script.count('"/') == 3 and "Accept-Encoding" in script


def test_the_request_log_says_how_each_answer_was_served(tmp_path):
    log = tmp_path / "gunicorn.log"
    lines = [{"logger": "paperdesk.request", "status": 200, "served": "replay"},
             {"logger": "paperdesk.request", "status": 200, "served": "cache"},
             {"logger": "paperdesk.request", "status": 304, "served": "app"},
             {"logger": "paperdesk.request", "status": 503, "served": "app"},
             {"logger": "gunicorn.error", "message": "Booting worker"}]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    counts, end = day.served_counts(log, 0)
    assert counts == {"replay": 1, "cache": 1, "304": 1, "app": 1, "5xx": 1}
    assert day.served_counts(log, end)[0] == {}


def test_the_request_log_says_which_routes_held_the_workers(tmp_path):
    log = tmp_path / "gunicorn.log"
    before = json.dumps({"logger": "paperdesk.request", "method": "GET", "path": "/", "served": "app",
                         "status": 200, "duration_ms": 500.0}) + "\n"
    lines = [{"logger": "paperdesk.request", "method": "GET", "path": f"/stories/{n}", "served": "app",
              "status": 200, "duration_ms": float(n)} for n in range(1, 101)]
    lines += [{"logger": "paperdesk.request", "method": "GET", "path": "/sections/arts", "served": "replay",
               "status": 200, "duration_ms": 0.05},
              {"logger": "paperdesk.request", "method": "PATCH", "path": "/api/v1/stories/7", "served": "app",
               "status": 200, "duration_ms": 40.0},
              {"logger": "paperdesk.request", "method": "GET", "path": "/rss.xml"}]  # no duration: skipped
    log.write_text(before + "\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    where = day.where_time_went(log, len(before), log.stat().st_size)
    assert [(row["route"], row["served"], row["n"]) for row in where] == [
        ("GET /stories/{id}", "app", 100), ("PATCH /api/v1/stories/{id}", "app", 1),
        ("GET /sections/{section}", "replay", 1)]
    first = where[0]
    assert (first["total_ms"], first["p50_ms"], first["p99_ms"], first["max_ms"]) == (5050.0, 51.0, 100.0, 100.0)
    assert day.where_time_went(log, 0, len(before))[0]["route"] == "GET /"


def _run(stale: int) -> dict:
    mix = {"rps": 900.0, "p50_ms": 10.0, "p99_ms": 40.0, "errors": 0, "ratio": 0.7, "ratio_wsgi": 0.5,
           "served": {"replay": 90, "cache": 5, "app": 5}}
    writing = dict(mix, ratio=0.5, where=[{"route": "GET /", "served": "app", "n": 30, "total_ms": 300.0,
                                            "p50_ms": 9.5, "p99_ms": 30.0, "max_ms": 31.0}],
                   desk={"writes": 30, "airs": 15, "revisions": 15, "failed": [],
                         "checked_reads": 120, "stale": stale, "unmet_workers": 0})
    baseline = {"rps": 1300.0, "p50_ms": 5.0, "p99_ms": 20.0}
    return {"started": "2026-11-28T22:00:00+00:00", "minutes": 8.0,
            "machine": {"load average at start (1, 5, 15 min)": "0.5 0.5 0.5"},
            "settings": {"pieces": 1000, "threads": 2, "connections": 16, "duration": 60,
                         "baseline_duration": 10, "write_every": 2.0, "workers": 2, "zipf_s": 1.1,
                         "mix": [[100, "/"]]},
            "backends": {"sqlite": {"newest_share": 0.84, "mixes": {"quiet": mix, "writing": writing},
                                    "baselines": {"bare Flask view": baseline, "bare WSGI callable": baseline}}}}


def test_a_stale_read_is_a_missed_target_whatever_the_speed():
    assert all(ok for ok, _ in report.day_checks(_run(stale=0)))
    missed = [text for ok, text in report.day_checks(_run(stale=1)) if not ok]
    assert missed == ["SQLite writing mix: 1 stale of 120 reads checked after 30 answered writes, "
                      "0 failed writes (target 0 stale, 0 failed)"]
    rendered = report.render_day(_run(stale=0))
    assert rendered.startswith(report.DAY_BEGIN) and rendered.endswith(report.DAY_END)
    assert "| SQLite | writing | 900 | 50% | 50% |" in rendered and "90% / 5% / 0% / 5%" in rendered
    assert "| `GET /` | app | 30 | 300 | 9.50 | 30.0 | 31.0 |" in rendered
