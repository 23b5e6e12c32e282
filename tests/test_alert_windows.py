"""Alert windows: every piece that goes on air reaches each instant subscriber in exactly one
alert, whenever it airs relative to the `send-alerts` runs, including during a run, in the
very second the run started. Pieces are put on air over HTTP (`PUT /stories/{id}/air` with an
admin key), some by the SMTP server itself while it receives a run's alerts; the alerts are
read back from the server."""
from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta

import pytest
import time_machine

from tests.fixtures.keys import auth
from tests.fixtures.servers import SinkHandler, body_text, serving_smtp
from tests.test_alerts import T, alerts_to, join, run

READERS = ("r0@example.com", "r1@example.com", "r2@example.com")


class AiringSink(SinkHandler):
    """A sink that, once `during` is set, calls it on the first alert of a run (from the
    server's thread, while the run is still sending)."""

    def __init__(self):
        super().__init__()
        self.during = None

    async def handle_DATA(self, server, session, envelope):
        answer = await super().handle_DATA(server, session, envelope)
        if self.during is not None and self.received[-1]["List-Unsubscribe"]:
            during, self.during = self.during, None
            during()
        return answer


@pytest.fixture
def airing(app):
    handler = AiringSink()
    handler.app = app
    with serving_smtp(app, handler):
        yield handler


def test_every_piece_reaches_each_instant_reader_exactly_once_whenever_it_airs(client, desk, runner, airing, app):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    drafts = [str(desk.piece(paper, f"Piece {n:02d}", on_air_at=None).id) for n in range(24)]
    aired: list[str] = []

    def air(http=client):
        n = len(aired)
        response = http.put(f"/api/v1/stories/{drafts[n]}/air", headers=auth(admin))
        assert response.status_code == 200, response.get_data(as_text=True)
        aired.append(f"Piece {n:02d}")

    during_client = app.test_client()  # the SMTP server's thread has a client of its own

    with time_machine.travel(T, tick=False) as clock:
        for address in READERS:
            join(client, airing, address, cadence="instant")
        # Runs every few minutes, some starting on a whole second and some within one; around
        # each: pieces aired a little before, at the very instant the run starts, and during it.
        for k, offset in enumerate((0, 0.4, 0, 0.999, 0.5, 0)):
            start = T + timedelta(minutes=5 * (k + 1), seconds=offset)
            clock.move_to(start - timedelta(seconds=30))
            air()
            clock.move_to(start - timedelta(seconds=0.5))
            air()
            clock.move_to(start)
            air()  # at the run's start instant, just before it
            airing.during = lambda: air(during_client)  # in the same second, while the run sends
            result, _ = run(runner)
            assert result.exit_code == 0, result.output
            assert airing.during is None or k == 0  # it aired one (the first run may have nothing to send)
        airing.during = None
        clock.move_to(T + timedelta(hours=2))
        assert run(runner)[0].exit_code == 0
        clock.move_to(T + timedelta(hours=3))
        assert run(runner)[1].startswith("sent 0,")

    for address in READERS:
        got = Counter(h for m in alerts_to(airing, address) for h in re.findall(r"Piece \d\d", body_text(m)))
        assert got == Counter(aired), address
    assert len(aired) == 23  # 3 around each of 6 runs, 1 during each run but the first (nothing due yet)
