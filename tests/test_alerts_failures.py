"""`flask send-alerts` when the SMTP server refuses some messages: each failure is classified per
message (5xx permanent, 4xx temporary, connection-level), no failing row holds up the others,
addresses refused for good land on the suppression list, and a message that cannot be built is
recorded and skipped. Over a real aiosmtpd server that answers chosen recipients 550 or 451."""
from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from sqlalchemy import select, update

from tests.fixtures.keys import auth
from tests.fixtures.servers import SinkHandler, serving_smtp
from tests.test_alerts import T, alerts_to, join, run


class PickyHandler(SinkHandler):
    """A sink that answers RCPT with a chosen reply per recipient (`replies`, e.g. "550 ..." or
    "451 ..."), and counts every RCPT it was given per address (`tried`)."""

    def __init__(self):
        super().__init__()
        self.replies: dict[str, str] = {}
        self.tried: dict[str, int] = {}

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        self.tried[address.lower()] = self.tried.get(address.lower(), 0) + 1
        if address.lower() in self.replies:
            return self.replies[address.lower()]
        envelope.rcpt_tos.append(address)
        return "250 OK"


@pytest.fixture
def picky(app):
    handler = PickyHandler()
    handler.app = app
    with serving_smtp(app, handler):
        yield handler


def _rows(client, desk, paper):
    key = desk.key(paper, "admin")
    return {r["email"]: r for r in client.get("/api/v1/subscribers", headers=auth(key)).get_json()["subscribers"]}


def test_refused_recipients_never_stop_the_run_and_are_suppressed_after_three(client, desk, runner, picky):
    """Six addresses refused with 550, read first: every other address still gets its alert in
    the same run, the refused rows are not retried, and the third refusal in a row suppresses
    each address (visible on admin rows; never sent to again)."""
    paper = desk.paper("demo")
    bad = [f"bad{i}@example.com" for i in range(6)]
    good = [f"good{i}@example.com" for i in range(4)]
    with time_machine.travel(T, tick=False) as clock:
        for address in bad + good:  # the refused rows get the lowest ids: read first
            join(client, picky, address, cadence="instant")
        picky.tried.clear()  # the confirm emails
        for address in bad:
            picky.replies[address] = "550 mailbox unavailable"
        for n in range(1, 4):
            desk.piece(paper, f"News {n}", on_air_at=T + timedelta(minutes=10 * n - 5))
            clock.move_to(T + timedelta(minutes=10 * n))
            result, summary = run(runner, "--connections", "1")
            assert result.exit_code == 1, result.output
            assert summary == "sent 4, failed 6, skipped 0", result.output
            suppressed = 6 if n == 3 else 0
            assert (f"failed: 6 refused for good, 0 to retry later, 0 not handed over (server unreachable), "
                    f"0 could not be built; {suppressed} address(es) suppressed") in result.output
            assert all(len(alerts_to(picky, a)) == n for a in good)
            # A refused alert is not tried again: one RCPT per address per run.
            assert all(picky.tried[a] == n for a in bad)
        rows = _rows(client, desk, paper)
        assert rows["bad0@example.com"]["bounces"] == 3
        assert rows["bad0@example.com"]["suppressed_at"] == "2026-11-20T08:30:00Z"
        assert "550" in rows["bad0@example.com"]["suppressed_reason"]
        assert rows["good0@example.com"]["bounces"] == 0 and rows["good0@example.com"]["suppressed_at"] is None

        # Suppressed: no alert is even tried, and the run is clean.
        picky.replies.clear()
        desk.piece(paper, "News 4", on_air_at=T + timedelta(minutes=35))
        clock.move_to(T + timedelta(minutes=40))
        result, summary = run(runner)
        # (Suppressed addresses are not planned for: not even counted as skipped.)
        assert result.exit_code == 0 and summary == "sent 4, failed 0, skipped 0", result.output
        assert all(picky.tried[a] == 3 for a in bad) and all(alerts_to(picky, a) == [] for a in bad)

        # The reader fixed the mailbox: ops lift the suppression (any spelling of the address).
        lifted = runner.invoke(args=["subscribers", "unsuppress", "--paper", "demo", "BAD0@Example.com"])
        assert lifted.exit_code == 0 and "bad0@example.com: no longer suppressed (was: smtp 550" in lifted.output
        again = runner.invoke(args=["subscribers", "unsuppress", "--paper", "demo", "bad0@example.com"])
        assert again.exit_code == 1 and "is not suppressed" in again.output
        assert runner.invoke(args=["subscribers", "unsuppress", "--paper", "demo", "nobody@example.com"]).exit_code == 1
        rows = _rows(client, desk, paper)
        assert rows["bad0@example.com"]["suppressed_at"] is None and rows["bad0@example.com"]["bounces"] == 0
        desk.piece(paper, "News 5", on_air_at=T + timedelta(minutes=45))
        clock.move_to(T + timedelta(minutes=50))
        result, summary = run(runner)
        assert result.exit_code == 0 and summary == "sent 5, failed 0, skipped 0", result.output
        [alert] = alerts_to(picky, "bad0@example.com")
        assert "News 5" in alert.get_body(("plain",)).get_content()
        assert all(alerts_to(picky, a) == [] for a in bad[1:])


def test_no_such_user_is_suppressed_at_once_and_a_delivery_resets_bounces(client, desk, runner, picky):
    paper = desk.paper("demo")
    with time_machine.travel(T, tick=False) as clock:
        join(client, picky, "gone@example.com", cadence="instant")
        join(client, picky, "flaky@example.com", cadence="instant")
        picky.replies["gone@example.com"] = "550 5.1.1 no such user"
        picky.replies["flaky@example.com"] = "554 5.7.1 message refused"
        desk.piece(paper, "One", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result, summary = run(runner)
        assert summary == "sent 0, failed 2, skipped 0" and "1 address(es) suppressed" in result.output
        rows = _rows(client, desk, paper)
        assert rows["gone@example.com"]["suppressed_at"] is not None
        assert rows["flaky@example.com"]["bounces"] == 1 and rows["flaky@example.com"]["suppressed_at"] is None

        del picky.replies["flaky@example.com"]
        desk.piece(paper, "Two", on_air_at=T + timedelta(minutes=15))
        clock.move_to(T + timedelta(minutes=20))
        assert run(runner)[1] == "sent 1, failed 0, skipped 0"
        [alert] = alerts_to(picky, "flaky@example.com")
        assert "Two" in alert.get_body(("plain",)).get_content()
        assert _rows(client, desk, paper)["flaky@example.com"]["bounces"] == 0


def test_temporary_refusals_back_off_then_give_up(client, desk, runner, picky, app):
    """451: the row waits for its next attempt (5, 10, 20 minutes ...) without holding anyone
    up, is delivered once the server takes it, and is given up after ALERT_MAX_ATTEMPTS tries;
    a temporary refusal never suppresses the address."""
    from extensions import db
    from models import AlertDelivery, Subscriber

    paper = desk.paper("demo")
    app.config["ALERT_MAX_ATTEMPTS"] = 3
    with time_machine.travel(T, tick=False) as clock:
        for address in ("later@example.com", "never@example.com", "fine@example.com"):
            join(client, picky, address, cadence="instant")
        picky.tried.clear()  # the confirm emails
        picky.replies["later@example.com"] = picky.replies["never@example.com"] = "451 4.7.1 greylisted"
        desk.piece(paper, "One", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result, summary = run(runner)
        assert result.exit_code == 1 and summary == "sent 1, failed 2, skipped 0"
        assert "0 refused for good, 2 to retry later" in result.output

        clock.move_to(T + timedelta(minutes=14))  # not yet due (5 minutes after the first try)
        result, summary = run(runner)
        assert result.exit_code == 0 and summary == "sent 0, failed 0, skipped 3"
        assert picky.tried["later@example.com"] == 1

        del picky.replies["later@example.com"]
        clock.move_to(T + timedelta(minutes=15))
        result, summary = run(runner)
        assert summary == "sent 1, failed 1, skipped 3", result.output
        assert len(alerts_to(picky, "later@example.com")) == 1

        clock.move_to(T + timedelta(minutes=24))  # second wait: 10 minutes
        assert run(runner)[1] == "sent 0, failed 0, skipped 3"
        clock.move_to(T + timedelta(minutes=25))
        result, summary = run(runner)
        assert summary == "sent 0, failed 1, skipped 3" and "1 refused for good, 0 to retry later" in result.output
        clock.move_to(T + timedelta(days=1))
        assert run(runner)[1] == "sent 0, failed 0, skipped 3"
        assert picky.tried["never@example.com"] == 3
        row = db.session.scalar(select(AlertDelivery).join(Subscriber).where(Subscriber.email == "never@example.com"))
        assert row.failed_at is not None and row.sent_at is None and row.attempts == 3
        assert row.last_error.startswith("gave up after 3 attempts: smtp 451")
        assert _rows(client, desk, paper)["never@example.com"]["suppressed_at"] is None


def test_a_message_that_cannot_be_built_is_recorded_and_the_run_goes_on(client, desk, runner, picky):
    from extensions import db
    from models import AlertDelivery, Subscriber

    demo, other = desk.paper("demo"), desk.paper("other")
    with time_machine.travel(T, tick=False) as clock:
        for address in ("broken@example.com", "a@example.com", "b@example.com"):
            join(client, picky, address, cadence="instant")
        for i in range(2):
            db.session.add(Subscriber(paper_id=other.id, email=f"o{i}@example.com", cadence="instant", cast=True,
                                      created_at=T, confirmed_at=T))
        # Bad data: a line break in a stored address (no header can carry it).
        db.session.execute(update(Subscriber).where(Subscriber.email == "broken@example.com")
                           .values(email="broken@example.com\r\nBcc: x@example.com"))
        db.session.commit()
        desk.piece(demo, "Demo news", on_air_at=T + timedelta(minutes=5))
        desk.piece(other, "Other news", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result, summary = run(runner)
        assert result.exit_code == 1, result.output
        assert summary == "sent 4, failed 1, skipped 0", result.output
        assert "1 could not be built" in result.output
        for address in ("a@example.com", "b@example.com", "o0@example.com", "o1@example.com"):
            assert len(alerts_to(picky, address)) == 1
        row = db.session.scalar(select(AlertDelivery).join(Subscriber).where(Subscriber.email.like("broken%")))
        assert row.failed_at is not None and row.sent_at is None
        assert row.last_error.startswith("cannot build the message: ValueError")
        clock.move_to(T + timedelta(minutes=20))
        assert run(runner)[1] == "sent 0, failed 0, skipped 5"  # given up, not retried


def test_only_connection_level_failures_stop_the_run_and_they_give_nothing_up(client, desk, runner, picky):
    """421 (the server closing the connection) says nothing about the message: five in a row
    stop the run, the rows stay due with no attempt counted, and the next run sends them all."""
    from extensions import db
    from models import AlertDelivery

    paper = desk.paper("demo")
    readers = [f"r{i}@example.com" for i in range(8)]
    with time_machine.travel(T, tick=False) as clock:
        for address in readers:
            join(client, picky, address, cadence="instant")
        for address in readers:
            picky.replies[address] = "421 4.3.2 shutting down"
        desk.piece(paper, "News", on_air_at=T + timedelta(minutes=5))
        clock.move_to(T + timedelta(minutes=10))
        result, summary = run(runner, "--connections", "1")
        assert result.exit_code == 1 and summary == "sent 0, failed 5, skipped 0", result.output
        assert "5 not handed over (server unreachable)" in result.output
        assert "stopped: the SMTP server is down" in result.output
        rows = db.session.scalars(select(AlertDelivery)).all()
        assert len(rows) == 8 and all(r.failed_at is None and r.next_attempt_at is None and r.attempts == 0
                                      for r in rows)
        picky.replies.clear()
        clock.move_to(T + timedelta(minutes=11))
        result, summary = run(runner)
        assert result.exit_code == 0 and summary == "sent 8, failed 0, skipped 8", result.output
        assert all(len(alerts_to(picky, a)) == 1 for a in readers)
