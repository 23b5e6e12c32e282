"""What the four queues of outgoing POSTs share: subscriber webhooks (`webhook_deliveries`),
content webhooks (`content_deliveries`), ActivityPub activities (`ap_deliveries`) and WebSub and
IndexNow pings (`ping_deliveries`).

Each queue is a table with one row per POST to make: `attempts`, `next_attempt_at` (also the
claim's lease), `delivered_at`, `failed_at` (given up), `last_status` and `last_error`. Each
queue claims and sends its own way (services/delivery/webhooks.py `run_concurrently` runs the
loop); what happens after an attempt, how a run is reported, and what counts as pending or old
enough to prune is written here once:

- a 2xx is delivered;
- a refusal (a 4xx other than 408 and 429), where the queue gives up on one
  (`refusal_gives_up`), or the `max_attempts`-th failure is given up (`failed_at`);
- any other failure is tried again after `backoff(attempts)` (1 min, 2, 4 ... 6 h).

Content webhooks keep their own rule for giving up (a retry window and an endpoint's failure
streak, services/delivery/content_webhooks.py) and share the report and the bookkeeping.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select, update

from extensions import db

BASE_BACKOFF = timedelta(minutes=1)
MAX_BACKOFF = timedelta(hours=6)


def backoff(attempts: int) -> timedelta:
    """Wait before attempt `attempts + 1`: 1 min, 2, 4, ... capped at 6 h."""
    return min(BASE_BACKOFF * (2 ** max(0, attempts - 1)), MAX_BACKOFF)


@dataclass
class Report:
    """What one `deliver_due` run of a queue did: POSTs `delivered`, `failed` (given up ones
    included), `given_up`, endpoints `disabled` (content webhooks only), and `left`: the run's
    time budget ran out with POSTs still due."""

    delivered: int = 0
    failed: int = 0
    given_up: int = 0
    disabled: int = 0
    left: bool = False


def refused(status: int | None) -> bool:
    """True for an answer that says the POST will never be taken: a 4xx but 408 and 429."""
    return status is not None and 400 <= status < 500 and status not in (408, 429)


def outcome(attempt, attempts: int, report: Report, at: datetime, *, max_attempts: int,
            refusal_gives_up: bool) -> dict:
    """The column values of a row after `attempt` (webhooks.Attempt), its `attempts`-th
    (counting this one), at `at` (aware UTC), by the rules of the module; counts it in `report`."""
    values: dict = {"attempts": attempts, "last_status": attempt.status, "last_error": attempt.error}
    if attempt.ok:
        values["delivered_at"] = at
        report.delivered += 1
        return values
    report.failed += 1
    if (refusal_gives_up and refused(attempt.status)) or attempts >= max_attempts:
        values["failed_at"] = at
        report.given_up += 1
    else:
        values["next_attempt_at"] = at + backoff(attempts)
    return values


def record(model, row_id: int, values: dict) -> None:
    """Write an attempt's `values` (from `outcome`) to row `row_id` of `model`, and commit:
    each result is kept as it comes, while other POSTs of the run are in flight."""
    db.session.execute(update(model).where(model.id == row_id).values(**values))
    db.session.commit()


def pending_count(model) -> int:
    """Rows of `model` neither delivered nor given up."""
    return db.session.scalar(select(func.count()).select_from(model).where(
        model.delivered_at.is_(None), model.failed_at.is_(None))) or 0


def prune(model, before: datetime) -> int:
    """Delete the rows of `model` delivered or given up before `before`; returns how many. The
    caller commits."""
    done = or_(model.delivered_at < before, model.failed_at < before)
    return db.session.execute(delete(model).where(done)).rowcount or 0
