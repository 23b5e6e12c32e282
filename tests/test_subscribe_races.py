"""One confirm email per address per 10 minutes when subscribes of that address arrive at once
(the database decides, not a read in each request), and one per-address rate limit count for
every spelling of an address (counted in the form the row stores).

On SQLite a write request holds the database's write lock from its start, so the race is
PostgreSQL's: there a read-then-write sends several confirm emails."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import httpx
import time_machine

from tests.fixtures.newsroom import Desk

T = datetime(2026, 11, 20, 12, 0, tzinfo=timezone.utc)


def _at_once(url: str, bodies: list[dict]) -> list[int]:
    """POST each body from its own thread, all released together; the status codes."""
    gate = threading.Barrier(len(bodies))
    codes: list[int] = [0] * len(bodies)

    def post(i: int) -> None:
        with httpx.Client(timeout=30) as http:
            gate.wait()
            codes[i] = http.post(url, json=bodies[i]).status_code

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return codes


def test_ten_concurrent_subscribes_of_one_address_send_one_confirm(desk, live, smtp):
    desk.paper("demo")
    url = live + "/api/v1/subscribers"
    with time_machine.travel(T, tick=False) as clock:
        assert _at_once(url, [{"email": "racer@example.com"}] * 10) == [202] * 10
        assert len(smtp.to("racer@example.com")) == 1
        # A pending row whose last confirm is older than 10 minutes: again exactly one more.
        clock.shift(timedelta(minutes=11))
        assert _at_once(url, [{"email": "racer@example.com", "cadence": "weekly"}] * 10) == [202] * 10
        assert len(smtp.to("racer@example.com")) == 2
        clock.shift(timedelta(minutes=5))
        assert _at_once(url, [{"email": "racer@example.com"}] * 10) == [202] * 10
        assert len(smtp.to("racer@example.com")) == 2


def test_every_spelling_of_an_address_shares_one_address_limit(make_app, still_clock):
    limited = make_app(RATELIMIT_ENABLED=True, RATELIMIT_STORAGE_URI="memory://",
                       SUBSCRIBE_ADDRESS_RATELIMIT="2/hour", CACHE_TYPE="NullCache")
    with limited.app_context():
        Desk(limited).paper("demo")
        client = limited.test_client()
        n = iter(range(1, 100))

        def post(email: str) -> int:
            # Each from another client address: only the per-address limit can refuse.
            return client.post("/api/v1/subscribers", json={"email": email},
                               environ_base={"REMOTE_ADDR": f"10.0.0.{next(n)}"}).status_code

        assert [post("Foo@Example.COM"), post("foo@example.com"), post("FOO@example.com")] == [202, 202, 429]
        # An IDNA domain and its Unicode spelling are one address too.
        assert [post("ann@xn--bcher-kva.example"), post("Ann@BÜCHER.example"),
                post("ann@bücher.example")] == [202, 202, 429]
        assert post("someone.else@example.com") == 202
