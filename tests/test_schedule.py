"""Scheduled airing (docs/API.md "Scheduled airing"): `PUT /api/v1/stories/{id}/air` with a
future `at` keeps the piece off every public surface until that instant and puts it on all of
them after, with no job run in between, cached answers and ETags included; `DELETE .../air`
cancels; keyed reads show `air_at`; `flask drain-outbox` purges the CDN once after it airs."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from urllib.parse import quote

import pytest
import time_machine

from services.delivery import purge
from tests.fixtures.keys import auth

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)
AT = NOW + timedelta(hours=1)
HEADLINE = "Zanzibar harbour reopens after the storm"
SLUG = "zanzibar-harbour-reopens-after-the-storm"
FILING = {"headline": HEADLINE, "dek": "Ships are back.", "prose": "The harbour reopened[^1].",
          "section": "World", "byline": "Ada Quill",
          "cited_facts": [{"statement": "It reopened", "source": "Port Authority", "instrument": "Notice",
                           "claim_key": "port-1"}]}


def surfaces(piece_id: str) -> list[str]:
    """Every kind of public URL a piece on air shows up on (the marker is its slug or headline)."""
    day = AT.date().isoformat()
    page = quote(f"http://localhost/stories/{SLUG}", safe="")
    return ["/api/v1/stories", f"/api/v1/stories/{piece_id}", f"/api/v1/stories/{SLUG}", "/api/v1/front",
            "/api/v1/sections", "/api/v1/days", f"/api/v1/days/{day}", "/api/v1/search?q=zanzibar",
            "/api/v1/posts", "/api/v1/changes", "/", "/sections/world", "/days", f"/days/{day}",
            f"/stories/{SLUG}", "/front.json", "/rss.xml", "/llms.txt", "/sitemap.xml", "/sitemap-1.xml",
            "/sitemap-news.xml", f"/embed/{piece_id}", f"/oembed?url={page}", f"/cards/{SLUG}.png"]


def shows(response, piece_id: str) -> bool:
    """Does this public answer show the piece? Its own answers by status; lists by content;
    counts (sections, days, the front's newsroom) by the number of pieces they count."""
    path = response.request.path
    if response.status_code == 404:
        return False
    if path.endswith(".png") and response.status_code == 302:  # to the current card
        return True
    assert response.status_code == 200, (path, response.status_code)
    if path == "/api/v1/sections":
        return {s["name"]: s["count"] for s in response.get_json()["sections"]}["World"] == 2
    if path == "/api/v1/days":
        return any(d["day"] == AT.date().isoformat() for d in response.get_json()["days"])
    if path == "/api/v1/changes":
        return any(c["id"] == piece_id for c in response.get_json()["changes"])
    if path == "/days":  # the archive page lists days, not pieces
        return "/days/2026-11-20" in response.get_data(as_text=True)
    if path == "/sitemap.xml":  # the index: a page's lastmod is its newest piece's
        return b"2026-11-20" in response.data
    if path.endswith(".png") or path.startswith("/embed/") or path.startswith("/oembed"):
        return True
    text = response.get_data(as_text=True)
    if path == "/api/v1/front":
        return response.get_json()["newsroom"]["on_air"] == 2
    return SLUG in text or HEADLINE in text


@pytest.fixture
def cached_app(make_app, desk):
    """An app with every cache on: the response cache (SimpleCache and the worker's own), and
    paper snapshots kept for a day, so only the scheduled instant can move what they answer."""
    paper = desk.paper("demo")
    desk.piece(paper, "Old news from the first of the month", facts=1)
    admin = desk.key(paper, "admin")
    return make_app(CACHE_TYPE="SimpleCache"), admin


def schedule(client, admin, at: str | None = AT.isoformat()):
    filed = client.post("/api/v1/stories", json=FILING, headers=auth(admin))
    assert filed.status_code == 201, filed.get_json()
    piece_id = filed.get_json()["id"]
    aired = client.put(f"/api/v1/stories/{piece_id}/air", json={"at": at}, headers=auth(admin))
    assert aired.status_code == 200, aired.get_json()
    return piece_id, aired.get_json()


def test_a_scheduled_piece_is_on_no_public_surface_before_its_instant_and_on_all_after(cached_app):
    app, admin = cached_app
    client = app.test_client()
    with time_machine.travel(NOW, tick=False) as clock:
        piece_id, aired = schedule(client, admin)
        assert aired["on_air"] is True and aired["air_at"] == "2026-11-20T13:00:00Z"
        assert aired["on_air_at"] == "2026-11-20T13:00:00Z"
        urls = surfaces(piece_id)
        before, etags = {}, {}
        for url in urls:
            first = client.get(url)
            assert not shows(first, piece_id), url
            again = client.get(url)  # the cache is warm: the same answer, stored
            assert again.status_code == first.status_code and again.data == first.data, url
            before[url], etags[url] = first.data, first.headers.get("ETag")

        clock.move_to(AT - timedelta(seconds=1))
        for url in urls:
            assert not shows(client.get(url), piece_id), url

        clock.move_to(AT)  # the instant itself: public from now on
        for url in urls:
            response = client.get(url)
            assert shows(response, piece_id), url
            assert response.data != before[url], url
            if etags[url]:  # a client revalidating the answer it holds gets the new one
                revalidated = client.get(url, headers={"If-None-Match": etags[url]})
                assert revalidated.status_code == 200, url


def test_keyed_reads_show_air_at_and_cancel_keeps_the_piece_off_air(cached_app):
    app, admin = cached_app
    client = app.test_client()
    with time_machine.travel(NOW, tick=False) as clock:
        piece_id, _ = schedule(client, admin)
        story = client.get(f"/api/v1/stories/{piece_id}", headers=auth(admin)).get_json()
        assert story["air_at"] == "2026-11-20T13:00:00Z" and story["on_air"] is True
        rows = client.get("/api/v1/stories", headers=auth(admin)).get_json()["stories"]
        assert {row["id"]: row["air_at"] for row in rows}[piece_id] == "2026-11-20T13:00:00Z"
        assert all(row["air_at"] is None for row in client.get("/api/v1/stories").get_json()["stories"])
        assert client.get(f"/stories/{SLUG}").status_code == 404  # warm the cache with the 404

        cancelled = client.delete(f"/api/v1/stories/{piece_id}/air", headers=auth(admin))
        assert cancelled.status_code == 200
        assert cancelled.get_json()["on_air"] is False and cancelled.get_json()["air_at"] is None

        clock.move_to(AT + timedelta(minutes=1))
        for url in surfaces(piece_id):
            assert not shows(client.get(url), piece_id), url
        story = client.get(f"/api/v1/stories/{piece_id}", headers=auth(admin)).get_json()
        assert story["on_air"] is False and story["air_at"] is None


def test_at_in_the_past_or_absent_airs_now_and_a_body_is_optional(client, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False):
        past, aired = schedule(client, admin, at="2026-11-19T08:00:00+01:00")
        assert aired["on_air_at"] == "2026-11-20T12:00:00Z" and aired["air_at"] is None
        assert client.get(f"/api/v1/stories/{past}").status_code == 200
        filed = client.post("/api/v1/stories", json={**FILING, "headline": "Another"}, headers=auth(admin))
        other = filed.get_json()["id"]
        assert client.put(f"/api/v1/stories/{other}/air", headers=auth(admin)).status_code == 200
        assert client.get(f"/api/v1/stories/{other}").status_code == 200
        for bad in ({"at": "tomorrow"}, {"at": "2026-11-21T08:00:00"}, {"when": "2026-11-21T08:00:00Z"}):
            refused = client.put(f"/api/v1/stories/{other}/air", json=bad, headers=auth(admin))
            assert refused.status_code == 422 and refused.mimetype == "application/problem+json", bad


def test_scheduling_again_or_airing_now_moves_the_instant(client, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False):
        piece_id, _ = schedule(client, admin)
        later = client.put(f"/api/v1/stories/{piece_id}/air", json={"at": "2026-11-21T06:00:00Z"},
                           headers=auth(admin)).get_json()
        assert later["air_at"] == "2026-11-21T06:00:00Z"
        assert client.get(f"/api/v1/stories/{piece_id}").status_code == 404
        now = client.put(f"/api/v1/stories/{piece_id}/air", headers=auth(admin)).get_json()
        assert now["air_at"] is None and now["on_air_at"] == "2026-11-20T12:00:00Z"
        assert client.get(f"/api/v1/stories/{piece_id}").status_code == 200
        # Once public, airing again changes nothing (the instant is not moved back or forth).
        again = client.put(f"/api/v1/stories/{piece_id}/air", json={"at": "2026-11-22T06:00:00Z"},
                           headers=auth(admin)).get_json()
        assert again["on_air_at"] == "2026-11-20T12:00:00Z" and again["air_at"] is None


def purges(receiver) -> list[dict]:
    import json
    return [json.loads(request["body"]) for request in receiver.requests]


def test_drain_outbox_purges_the_cdn_once_after_a_scheduled_piece_airs(make_app, desk, receiver):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    hooked = make_app(PURGE_URL=receiver.url + "/purge")
    client, runner = hooked.test_client(), hooked.test_cli_runner()
    # The CLI runs in the app context it finds: the hooked app's, not the suite's.
    with hooked.app_context(), time_machine.travel(NOW, tick=False) as clock:
        piece_id, _ = schedule(client, admin)
        assert purge.sender.wait_idle(timeout=5)
        assert purges(receiver) == []  # scheduling changed no public answer
        assert "cdn-purge" not in runner.invoke(args=["drain-outbox", "--once"]).output
        assert purge.sender.wait_idle(timeout=5)
        assert purges(receiver) == []

        clock.move_to(AT + timedelta(seconds=30))
        result = runner.invoke(args=["drain-outbox", "--once"])
        assert result.exit_code == 0 and "changes: 1 handled by cdn-purge" in result.output, result.output
        assert purge.sender.wait_idle(timeout=5)
        assert purges(receiver) == [{"surrogate_keys": [f"paper-{paper.id}", f"piece-{piece_id}"]}]
        assert "cdn-purge" not in runner.invoke(args=["drain-outbox", "--once"]).output
        assert purge.sender.wait_idle(timeout=5)
        assert len(purges(receiver)) == 1


def test_an_instant_alert_goes_out_once_after_the_piece_airs_never_before(client, desk, runner, smtp):
    from tests.fixtures.servers import body_text
    from tests.test_alerts import alerts_to, join, run

    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(NOW, tick=False) as clock:
        join(client, smtp, "reader@example.com", cadence="instant")
        piece_id, _ = schedule(client, admin)
        cancelled = client.post("/api/v1/stories", json={**FILING, "headline": "Never aired"},
                                headers=auth(admin)).get_json()["id"]
        client.put(f"/api/v1/stories/{cancelled}/air", json={"at": AT.isoformat()}, headers=auth(admin))
        client.delete(f"/api/v1/stories/{cancelled}/air", headers=auth(admin))
        for minutes in (5, 30, 59):  # send-alerts runs before the instant: nothing to tell
            clock.move_to(NOW + timedelta(minutes=minutes))
            assert run(runner)[0].exit_code == 0
        assert alerts_to(smtp, "reader@example.com") == []
        for minutes in (65, 90, 180):  # after it: one alert, once
            clock.move_to(NOW + timedelta(minutes=minutes))
            assert run(runner)[0].exit_code == 0
    sent = alerts_to(smtp, "reader@example.com")
    assert len(sent) == 1 and HEADLINE in body_text(sent[0]) and "Never aired" not in body_text(sent[0])


def test_a_reading_service_judges_at_the_instant_it_is_given_and_at_no_other(app, client, desk):
    """No module keeps a clock (services/reading/visibility.py): the instant a public read is
    judged at is its caller's argument, so the same service call before and after a scheduled
    instant answers each its own way whatever the clock says, and a public statement run
    without an instant refuses to run rather than judge at some other one."""
    from sqlalchemy.exc import StatementError

    from extensions import db
    from services.reading import front, stories, visibility

    paper = desk.paper("demo")
    piece = desk.piece(paper, HEADLINE, on_air_at=AT)
    with time_machine.travel(AT + timedelta(days=1), tick=False):  # the clock is past the instant
        assert stories.find(paper, SLUG, now=NOW) is None
        assert stories.find(paper, SLUG, now=AT).id == piece.id
        assert [row.id for row in stories.latest(paper, 5, now=NOW)] == []
        assert front.newsroom(paper, None, now=NOW)["on_air"] == 0
        assert front.newsroom(paper, None, now=AT)["on_air"] == 1
        with pytest.raises(StatementError, match="air_now"):
            db.session.scalars(stories.items_query_for(paper.id)).all()
        db.session.rollback()
        assert db.session.scalars(stories.items_query_for(paper.id), visibility.at(AT)).all() == [piece]
    # Through HTTP, the request's one instant: before it nothing, after it the piece.
    with time_machine.travel(AT - timedelta(seconds=1), tick=False):
        assert client.get(f"/api/v1/stories/{SLUG}").status_code == 404
    with time_machine.travel(AT, tick=False):
        assert client.get(f"/api/v1/stories/{SLUG}").status_code == 200
