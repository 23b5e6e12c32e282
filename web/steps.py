"""What a pipeline step does for an answer sent again.

web/replay.py sends again, ahead of Flask, a public answer the pipeline made before. It knows
nothing of what the steps do: each step of web/pipeline.py declares, with `replays`, the part of
its work that must happen for every request even when its answer is sent again (the request id,
the rate count, the log line), or that nothing must (the answer already holds what it made:
security headers, CORS, ETag, gzip). The pipeline refuses to install a step that declares
neither, and the replay runs the declared parts in the pipeline's order.

A step may also say which routes it serves (`runs_for`, a predicate of the route's policy,
web/policy.py): the pipeline builds each route's list of steps once, so a health check passes
no paper lookup, rate count or response cache at all, and a step needs no test of its own for
the routes it never serves (Indico's handler policies, in small).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

HAND_ON = "hand on"  # a before-part's answer: let the pipeline answer this request itself


@dataclass
class Replayed:
    """One request answered by the replay: the WSGI `environ`, the `app`, the kept answer's
    `status` (int), its paper `slug` and whether it was `counted` against the rate limits;
    the parts of the steps fill in the rest (`request_id`, `started`, `rate_limit`)."""

    app: object
    environ: dict
    status: int
    slug: str
    counted: bool
    request_id: str = ""
    started: float = 0.0
    rate_limit: object = None
    extra: dict = field(default_factory=dict)


def replays(part: Callable | None, *, per_request: tuple[str, ...] = ()):
    """Decorator for a pipeline step: `part(replayed)` (a before-step; may return HAND_ON) or
    `part(replayed, headers)` (an after-step; appends to `headers`, a list of pairs) is what the
    step does for an answer sent again, None when nothing. `per_request` names the answer
    headers the step makes anew for each request (never kept with an answer)."""

    def mark(step):
        step.replay, step.per_request = part, tuple(per_request)
        return step

    return mark


def runs_for(predicate: Callable):
    """Decorator for a pipeline step: it runs only on requests whose route's policy
    (web/policy.RoutePolicy; policy.DEFAULT when no route matched) satisfies `predicate`. A
    step without it runs on every request."""

    def mark(step):
        step.runs_for = predicate
        return step

    return mark


def serves(step, route) -> bool:
    """True when `step` runs on requests of a route with policy `route`."""
    predicate = getattr(step, "runs_for", None)
    return predicate is None or bool(predicate(route))


def declared(step) -> bool:
    """True when `step` said what it does for an answer sent again."""
    return hasattr(step, "replay")
