"""When to try an outside call again: the one backoff of every queue and retry loop (the
outgoing queues in services/delivery/queues.py, confirm and alert mail, the log's witnesses),
and what counts as a refusal."""
from __future__ import annotations

from datetime import timedelta


def backoff(attempts: int, first: timedelta = timedelta(minutes=1), cap: timedelta = timedelta(hours=6)) -> timedelta:
    """The wait after the `attempts`-th failed try (1-based): `first`, doubling after each
    failure (first, 2x, 4x ...), at most `cap`."""
    return min(cap, first * (2 ** min(max(0, attempts - 1), 40)))


def refused(status: int | None) -> bool:
    """True for an HTTP answer that says the request will never be taken: a 4xx but 408 and 429."""
    return status is not None and 400 <= status < 500 and status not in (408, 429)
