"""The preference centre through HTTP and `flask send-alerts`, over a real SMTP server on loopback
with a frozen clock: the "Manage your alerts" link of a real alert opens the page; changing
cadence, sections, cast and a pause through the form and through the API changes what the next
alerts hold (no backlog after a pause, no gap or duplicate across a cadence change); bad,
expired, foreign-paper and left-the-list tokens; a GET changes nothing."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from html import unescape
from urllib.parse import urlsplit

import time_machine

from services.delivery import subscriptions
from tests.fixtures.servers import body_text

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)  # a Friday, ISO week 47
API = "/api/v1/subscribers/preferences"
MANAGE = re.compile(r"(http://localhost/subscribe/preferences\?token=(\S+))")


def join(client, smtp, email, **prefs):
    """Subscribe over HTTP and press the confirm button, like a reader."""
    assert client.post("/api/v1/subscribers", json={"email": email, **prefs}).status_code == 202
    token = re.search(r"/subscribe/confirm\?token=(\S+)", body_text(smtp.to(email)[-1])).group(1)
    assert client.post("/subscribe/confirm", data={"token": token}).status_code == 200


def send(runner, *args) -> str:
    result = runner.invoke(args=["send-alerts", *args])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def alerts_to(smtp, email):
    return [m for m in smtp.to(email) if m["List-Unsubscribe"]]


def manage_token(alert) -> str:
    """The preferences token of an alert's "Manage your alerts" link (the text part)."""
    return MANAGE.search(body_text(alert)).group(2)


def first_alert_token(client, desk, runner, smtp, paper, email, clock, **prefs) -> str:
    """Join `email` (instant), air a piece, send, and return the manage token of its alert."""
    join(client, smtp, email, cadence="instant", **prefs)
    desk.piece(paper, "Opening news", on_air_at=clock.now + timedelta(minutes=1))
    clock.shift(timedelta(minutes=5))
    send(runner)
    [alert] = alerts_to(smtp, email)
    return manage_token(alert)


def prefs(client, token) -> dict:
    response = client.get(API, query_string={"token": token})
    assert response.status_code == 200, response.get_json()
    return response.get_json()


class Clock:
    """time-machine's traveller with `now` and `shift` (stopped: no ticking)."""

    def __init__(self, traveller, start):
        self.traveller, self.now = traveller, start

    def shift(self, delta):
        self.now += delta
        self.traveller.move_to(self.now)


def test_the_manage_link_of_a_real_alert_opens_the_page_and_a_get_changes_nothing(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "ann@example.com", clock)
        [alert] = alerts_to(smtp, "ann@example.com")
        text, html = body_text(alert), alert.get_body(("html",)).get_content()
        link = MANAGE.search(text).group(1)
        assert "Manage your alerts" in text
        assert f'<a href="{link.replace("&", "&amp;")}">Manage your alerts</a>' in html
        # Each reader's own link: the token names this address on this paper.
        assert subscriptions.read_token("preferences", token, paper).email == "ann@example.com"

        before = prefs(client, token)
        assert before == {"email": "ann@example.com", "cadence": "instant",
                          "sections": ["World", "Business", "Science"], "cast": True,
                          "paused": False, "paused_until": None}
        page = client.get(urlsplit(link).path + "?" + urlsplit(link).query)
        assert page.status_code == 200 and page.mimetype == "text/html"
        assert page.headers["Cache-Control"] == "no-store" and "ETag" not in page.headers
        assert page.headers["Referrer-Policy"] == "no-referrer"
        body = unescape(page.get_data(as_text=True))
        assert "ann@example.com" in body and "Alerts are on." in body
        assert f'name="token" value="{token}"' in body
        assert 'name="cadence" value="instant" checked' in body
        for name in ("World", "Business", "Science"):
            assert f'name="sections" value="{name}" checked' in body
        assert 'name="cast" value="true" checked' in body
        assert "Pause until I resume" in body and 'action="/subscribe/unsubscribe"' in body
        # Opening the page (a mail scanner does, and HEADs it) changed nothing.
        assert client.head(f"/subscribe/preferences?token={token}").status_code == 200
        assert prefs(client, token) == before


def test_the_form_changes_cadence_sections_and_cast_for_the_next_alerts(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "bo@example.com", clock)
        page = client.post("/subscribe/preferences", data={
            "token": token, "action": "save", "cadence": "daily", "sections": ["World"], "pause": ""})
        assert page.status_code == 200
        assert "Your choices are saved." in page.get_data(as_text=True)
        assert prefs(client, token) | {"email": None} == {
            "email": None, "cadence": "daily", "sections": ["World"], "cast": False, "paused": False,
            "paused_until": None}

        desk.piece(paper, "World later", section="World", on_air_at=clock.now + timedelta(minutes=1))
        desk.piece(paper, "Business later", section="Business", on_air_at=clock.now + timedelta(minutes=2))
        desk.edition(paper, date(2026, 11, 20))  # 18:00 today: cast is off now
        clock.shift(timedelta(hours=1))
        # Today's daily slot is free: the digest goes at the next run, from the instant alert's end.
        assert send(runner).startswith("sent 1,")
        digest = alerts_to(smtp, "bo@example.com")[-1]
        text = body_text(digest)
        assert digest["Subject"] == "The Demo Times, Friday 20 November 2026: World later"
        assert "World later" in text and "Business later" not in text and "Opening news" not in text
        # The next day's digest: the new World piece alone; no edition (cast off), nothing twice.
        desk.piece(paper, "World tomorrow", section="World", on_air_at=datetime(2026, 11, 21, 7, tzinfo=timezone.utc))
        clock.now = datetime(2026, 11, 21, 8, 0, tzinfo=timezone.utc)
        traveller.move_to(clock.now)
        assert send(runner).startswith("sent 1,")
        text = body_text(alerts_to(smtp, "bo@example.com")[-1])
        assert "World tomorrow" in text and "World later" not in text and "The cast" not in text


def test_form_errors_come_back_on_the_page_with_422_and_save_nothing(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        token = first_alert_token(client, desk, runner, smtp, paper, "cy@example.com", Clock(traveller, T))
        before = prefs(client, token)
        for data, message in [({"cadence": "daily"}, "Pick at least one section."),
                              ({"cadence": "hourly", "sections": ["World"]}, "How often: Must be one of"),
                              ({"cadence": "daily", "sections": ["Sport"]}, "Unknown section(s): Sport"),
                              ({"cadence": "daily", "sections": ["World"], "pause": "forever"}, "Pause: Must be")]:
            page = client.post("/subscribe/preferences", data={"token": token, **data})
            assert page.status_code == 422, data
            assert message in unescape(page.get_data(as_text=True)), data
            assert prefs(client, token) == before


def test_a_week_long_pause_sends_nothing_and_no_backlog_after(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "di@example.com", clock)
        page = client.post("/subscribe/preferences", data={
            "token": token, "cadence": "instant", "sections": ["World", "Business", "Science"],
            "cast": "true", "pause": "week"})
        paused_at = clock.now
        assert page.status_code == 200
        assert "Alerts are paused until Friday 27 November 2026, 08:05 UTC." in page.get_data(as_text=True)
        assert prefs(client, token)["paused_until"] == "2026-11-27T08:05:00Z"
        assert "Resume alerts now" in client.get(f"/subscribe/preferences?token={token}").get_data(as_text=True)

        # During the pause: news, runs, nothing sent.
        for _ in range(6):
            clock.shift(timedelta(days=1))
            desk.piece(paper, f"Paused news {clock.now:%d}", on_air_at=clock.now - timedelta(hours=1))
            assert send(runner).startswith("sent 0,")
        desk.piece(paper, "Paused news, last minute", on_air_at=paused_at + timedelta(days=7, seconds=-1))
        # The pause ends; what airs after it is the next alert, nothing from during it.
        clock.now = paused_at + timedelta(days=7)
        traveller.move_to(clock.now)
        desk.piece(paper, "Back in the news", on_air_at=clock.now + timedelta(minutes=1))
        clock.shift(timedelta(minutes=5))
        assert send(runner).startswith("sent 1,")
        alerts = alerts_to(smtp, "di@example.com")
        assert len(alerts) == 2
        assert alerts[-1]["Subject"] == "Back in the news"
        assert "Paused news" not in body_text(alerts[-1])
        assert prefs(client, token)["paused"] is False


def test_pause_until_resumed_then_resume_on_the_page(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "ed@example.com", clock)
        page = client.post("/subscribe/preferences", data={
            "token": token, "cadence": "instant", "sections": ["World", "Business", "Science"],
            "pause": "indefinitely"})
        assert "Alerts are paused until you resume." in page.get_data(as_text=True)
        assert prefs(client, token) | {"email": None} == {
            "email": None, "cadence": "instant", "sections": ["World", "Business", "Science"], "cast": False,
            "paused": True, "paused_until": None}
        desk.piece(paper, "Quiet news", on_air_at=clock.now + timedelta(days=40))
        clock.shift(timedelta(days=60))
        assert send(runner).startswith("sent 0,")

        page = client.post("/subscribe/preferences", data={"token": token, "action": "resume"})
        assert page.status_code == 200 and "Alerts are on again." in page.get_data(as_text=True)
        desk.piece(paper, "Fresh news", on_air_at=clock.now + timedelta(minutes=1))
        clock.shift(timedelta(minutes=5))
        assert send(runner).startswith("sent 1,")
        last = alerts_to(smtp, "ed@example.com")[-1]
        assert last["Subject"] == "Fresh news" and "Quiet news" not in body_text(last)


def test_the_api_reads_and_changes_the_same_preferences(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "fi@example.com", clock)
        response = client.get(API, query_string={"token": token})
        assert response.headers["Cache-Control"] == "no-store" and "ETag" not in response.headers
        assert response.headers["Access-Control-Allow-Origin"] == "*"

        changed = client.patch(API, query_string={"token": token},
                               json={"cadence": "weekly", "sections": ["Science", "World"], "cast": False})
        assert changed.status_code == 200
        assert changed.get_json() == {"email": "fi@example.com", "cadence": "weekly",
                                      "sections": ["World", "Science"], "cast": False,
                                      "paused": False, "paused_until": None}
        assert changed.headers["Cache-Control"] == "no-store"
        assert prefs(client, token) == changed.get_json()
        # The page shows what the API saved.
        page = client.get(f"/subscribe/preferences?token={token}").get_data(as_text=True)
        assert 'value="weekly" checked' in page and 'value="Business" checked' not in page

        # Every section again (null), a pause until a time, then resume.
        assert client.patch(API, query_string={"token": token}, json={"sections": None}).get_json()["sections"] \
            == ["World", "Business", "Science"]
        until = client.patch(API, query_string={"token": token}, json={"paused_until": "2026-12-01T00:00:00Z"})
        assert until.get_json()["paused"] is True and until.get_json()["paused_until"] == "2026-12-01T00:00:00Z"
        forever = client.patch(API, query_string={"token": token}, json={"paused": True}).get_json()
        assert (forever["paused"], forever["paused_until"]) == (True, None)
        resumed = client.patch(API, query_string={"token": token}, json={"paused": False}).get_json()
        assert (resumed["paused"], resumed["paused_until"]) == (False, None)



def test_cadence_changes_take_effect_from_the_next_window_with_no_gap_and_no_duplicate(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "jo@example.com", clock)
        aired = ["Opening news"]

        def air(headline):
            desk.piece(paper, headline, on_air_at=clock.now - timedelta(minutes=30))
            aired.append(headline)

        def switch(cadence):
            assert client.patch(API, query_string={"token": token}, json={"cadence": cadence}).status_code == 200

        # Instant -> weekly on Friday: this week's slot is still free, so the next run sends what
        # aired since the instant alert as this week's digest; then nothing until next week.
        clock.shift(timedelta(hours=1))
        air("Before the switch")
        switch("weekly")
        clock.shift(timedelta(hours=1))
        assert send(runner).startswith("sent 1,")
        assert alerts_to(smtp, "jo@example.com")[-1]["Subject"].startswith("The Demo Times, Week of 16 November 2026")
        clock.shift(timedelta(hours=1))
        air("Friday afternoon")
        clock.shift(timedelta(hours=1))
        assert send(runner).startswith("sent 0,")
        # Weekly -> daily on Saturday: today's digest holds Friday afternoon too.
        clock.shift(timedelta(days=1))
        air("Saturday news")
        switch("daily")
        assert send(runner).startswith("sent 1,")
        clock.shift(timedelta(hours=2))
        air("Saturday later")
        assert send(runner).startswith("sent 0,")  # today's daily slot is taken
        # Daily -> instant: the very next run, from where the digest ended.
        switch("instant")
        clock.shift(timedelta(minutes=5))
        assert send(runner).startswith("sent 1,")
        # Back to weekly in week 48: Monday's digest.
        switch("weekly")
        clock.now = datetime(2026, 11, 23, 7, 0, tzinfo=timezone.utc)
        traveller.move_to(clock.now)
        air("Monday news")
        assert send(runner).startswith("sent 1,")

        alerts = alerts_to(smtp, "jo@example.com")
        assert len(alerts) == 5
        texts = [body_text(alert) for alert in alerts]
        for headline in aired:  # every piece in exactly one alert: no gap, no duplicate
            assert sum(f"* {headline} [" in text for text in texts) == 1, headline


def test_bad_values_are_422_and_bad_tokens_400(client, desk, runner, smtp):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "gu@example.com", clock)
        before = prefs(client, token)
        for body, field in [({"cadence": "hourly"}, "cadence"), ({"sections": ["Sport"]}, "sections"),
                            ({"sections": []}, "sections"), ({"cast": "maybe"}, "cast"),
                            ({"paused_until": "2026-11-19T00:00:00Z"}, "paused_until"),
                            ({"paused_until": "2028-01-01T00:00:00Z"}, "paused_until"),
                            ({"paused_until": "next week"}, "paused_until"),
                            ({"paused": False, "paused_until": "2026-12-01T00:00:00Z"}, "paused"),
                            ({"email": "other@example.com"}, "email")]:
            response = client.patch(API, query_string={"token": token}, json=body)
            assert response.status_code == 422, body
            assert response.mimetype == "application/problem+json"
            assert field in str(response.get_json()["errors"]), (body, response.get_json())
        assert prefs(client, token) == before

        for query in ({}, {"token": ""}, {"token": "junk"}, {"token": token[:-2]}):
            for response in (client.get(API, query_string=query),
                             client.patch(API, query_string=query, json={"cadence": "daily"})):
                assert response.status_code == 400, query
                assert response.mimetype == "application/problem+json"
        for path in ("/subscribe/preferences?token=junk", "/subscribe/preferences"):
            assert client.get(path).status_code == 400
            assert client.post(path, data={"cadence": "daily", "sections": ["World"]}).status_code == 400
        # Another purpose's token is not a preferences token.
        other = subscriptions.make_token("unsubscribe", subscriptions.read_token("preferences", token, paper))
        assert client.get(API, query_string={"token": other}).status_code == 400
        assert prefs(client, token) == before


def test_a_token_of_another_paper_expired_or_from_before_leaving_is_refused(client, desk, runner, smtp):
    paper = desk.paper("demo")
    gazette = desk.paper("gazette")
    with time_machine.travel(T, tick=False) as traveller:
        clock = Clock(traveller, T)
        token = first_alert_token(client, desk, runner, smtp, paper, "ho@example.com", clock)
        # The gazette's own reader: its token works on the gazette's host only.
        assert client.post("/api/v1/subscribers", json={"email": "ho@example.com"},
                                   base_url="http://gazette.localhost").status_code == 202
        confirm = re.search(r"confirm\?token=(\S+)", body_text(smtp.to("ho@example.com")[-1])).group(1)
        assert client.post("/subscribe/confirm", data={"token": confirm},
                           base_url="http://gazette.localhost").status_code == 200
        row = subscriptions.read_token("confirm", confirm, gazette)
        foreign = subscriptions.make_token("preferences", row)
        assert client.get(API, query_string={"token": foreign}, base_url="http://gazette.localhost").status_code == 200
        assert client.get(API, query_string={"token": foreign}).status_code == 400
        assert client.get(f"/subscribe/preferences?token={foreign}").status_code == 400

        # A year and a day later the demo link has expired (each new alert brings a fresh one).
        with time_machine.travel(T + timedelta(days=367), tick=False):
            assert client.get(API, query_string={"token": token}).status_code == 400
            page = client.get(f"/subscribe/preferences?token={token}")
            assert page.status_code == 400 and "newest alert" in page.get_data(as_text=True)

        # Unsubscribing voids it, and coming back does not bring the old link back.
        assert client.get(API, query_string={"token": token}).status_code == 200
        unsubscribe = re.search(r"unsubscribe\?token=(\S+)", body_text(alerts_to(smtp, "ho@example.com")[0])).group(1)
        assert client.post("/subscribe/unsubscribe", data={"token": unsubscribe}).status_code == 200
        assert client.get(API, query_string={"token": token}).status_code == 400
        assert client.post("/subscribe/preferences", data={"token": token, "action": "resume"}).status_code == 400
        clock.shift(timedelta(seconds=2))
        join(client, smtp, "ho@example.com", cadence="instant")
        assert client.get(API, query_string={"token": token}).status_code == 400
