"""`/api/v1/subscribers` (and the `/api/v1/subscribe` alias): public double opt-in subscribe,
the admin batch with webhooks, and the keyed list (spec "Endpoints"; CONTRACT.md "subscribe",
"webhooks"). Business rules live in services/delivery/subscriptions.py."""
from __future__ import annotations

import functools

from flask import abort, current_app, g, request
from werkzeug.exceptions import Forbidden, UnprocessableEntity

from blueprints.api.common import OPTIONAL_SECURITY, api_blueprint, keyed
from clock import utcnow
from schemas.subscriber import SubscribeAcceptedOut, SubscribeIn, SubscribersOut
from services.delivery import subscriptions, webhooks
from services.newsroom import keys
from weblinks import links

bp = api_blueprint("subscribers", __name__, "Email alerts with double opt-in, and webhooks.")

ACCEPTED = {"status": "accepted",
            "detail": "If this address can receive mail, a confirmation link is on its way. "
                      "Alerts begin only after the link is followed."}


def unprocessable(errors: dict, detail: str = "The request body failed validation."):
    """Abort 422 with per-field messages (rendered as problem+json `errors`)."""
    exc = UnprocessableEntity(description=detail)
    exc.data = {"messages": {"json": errors}}
    raise exc


def _require_json(view):
    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        if not request.is_json:
            abort(415, description="The request body must be JSON (Content-Type: application/json).")
        return view(*args, **kwargs)

    return wrapper


def preferences(body: dict) -> subscriptions.Preferences:
    """Preferences from a validated body; 422 on a section name the paper does not have."""
    try:
        sections = subscriptions.check_sections(g.paper, body.get("sections"))
    except subscriptions.SectionsError as exc:
        unprocessable({"sections": [str(exc)]})
    return subscriptions.Preferences(cadence=body["cadence"], sections=sections, cast=body["cast"])


def _create(body: dict):
    if g.key is not None:
        if keys.LEVELS[g.key.kind] < keys.LEVELS["admin"]:
            raise Forbidden(description="Subscribing a batch needs an admin key; public subscribe takes no key.")
        return _create_batch(body)
    extra = [name for name in ("emails", "webhook") if name in body]
    if extra:
        unprocessable({name: ["Only with an admin key."] for name in extra})
    if "email" not in body:
        unprocessable({"email": ["Missing data for required field."]})
    subscriptions.subscribe(g.paper, body["email"], preferences(body), utcnow(), links=links())
    return ACCEPTED, 202


def _create_batch(body: dict):
    emails = body.get("emails") or ([body["email"]] if "email" in body else None)
    if not emails:
        unprocessable({"emails": ["Missing data for required field."]})
    webhook = body.get("webhook")
    if webhook:
        try:
            webhooks.check_url(webhook, allow_private=current_app.config["WEBHOOK_ALLOW_PRIVATE"])
        except webhooks.WebhookTargetError as exc:
            unprocessable({"webhook": [str(exc)]})
    done = subscriptions.subscribe_batch(g.paper, emails, preferences(body), utcnow(), webhook=webhook,
                                         links=links())
    return {"subscribers": [{"email": row.email, **({"webhook_secret": secret} if secret else {})}
                            for row, secret in done]}, 202


def _post_view(name: str):
    """One POST view per path (same handler), each documented on its own path."""

    def view(body):
        return _create(body)

    view.__name__ = view.__qualname__ = name
    view.__doc__ = (
        "Subscribe: without a key, one address (double opt-in); with an admin key, up to 20\n\n"
        "Without a key: `{email, cadence?, sections?, cast?}` -> 202 with the same body whether the "
        "address is new, pending or already confirmed; a confirm email is sent at once (at most one "
        "per address per 10 minutes). Limited to 5 a minute and 20 an hour per client, and per "
        "address. With an admin key: `{emails: [1-20], webhook?, cadence?, sections?, cast?}` -> "
        "202 `{subscribers: [{email, webhook_secret?}]}`. A read key gets 403.")
    view = bp.alt_response(429, description="Too many subscribe requests; see `Retry-After`.")(view)
    view = bp.alt_response(415, description="The body is not JSON.")(view)
    view = bp.alt_response(403, description="A read key: the batch needs an admin key.")(view)
    view = bp.response(202, SubscribeAcceptedOut)(view)
    view = bp.arguments(SubscribeIn)(view)
    view = bp.doc(security=OPTIONAL_SECURITY)(view)
    # The public subscribe limits (per client, per address) are counted by the pipeline
    # (ratelimits.SUBSCRIBE_ENDPOINTS), before the paper lookup.
    return _require_json(view)


bp.route("/subscribers", methods=["POST"], endpoint="create_subscribers")(_post_view("create_subscribers"))
bp.route("/subscribe", methods=["POST"], endpoint="subscribe")(_post_view("subscribe"))


@bp.route("/subscribers", methods=["GET"])
@keyed(bp, "read")
@bp.response(200, SubscribersOut)
def list_subscribers():
    """Subscribers: `{count, confirmed}` with a read key; the rows too with an admin key"""
    counts = subscriptions.counts(g.paper)
    if keys.LEVELS[g.key.kind] >= keys.LEVELS["admin"]:
        return {"subscribers": subscriptions.rows(g.paper), **counts}
    return counts
