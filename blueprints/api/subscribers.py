"""Subscribers: email alerts with double opt-in, and webhooks (docs/API.md "subscribe",
"webhooks").

    POST /api/v1/subscribers    without a key: subscribe one address (202, confirm email);
                                with an admin key: a batch of up to 20, optionally a webhook
    POST /api/v1/subscribe      the same, under the paper's other subscribe path
    GET  /api/v1/subscribers    counts with a read key; the rows too with an admin key; an
                                agent key gets 403 (permissions.py: agents reach the `key` level)
    GET, PATCH /api/v1/subscribers/preferences?token=...
                                a reader's own preferences (cadence, sections, cast, a pause),
                                the token of an alert's "Manage your alerts" link the credential

Business rules live in services/delivery/subscriptions.py, who may send what in
blueprints/api/permissions.py. A subscribe commits once, at the commit point (web/commit.py);
the confirm email leaves only after that commit.
"""
from __future__ import annotations

from flask import current_app, g

from blueprints.api import permissions
from blueprints.api.common import OPTIONAL_SECURITY, api_blueprint, json_body
from blueprints.api.permissions import keyed
from models import PAUSED_INDEFINITELY
from models.clock import utcnow
from schemas.subscriber import (
    PreferencesOut,
    PreferencesPatch,
    PreferencesTokenQuery,
    SubscribeAcceptedOut,
    SubscribeBatchIn,
    SubscribeBody,
    SubscribeIn,
    SubscribersOut,
)
from services import http
from services.delivery import subscriptions
from services.errors import BadRequest, Invalid
from web import policy
from web.commit import transactional
from web.links import links

bp = api_blueprint("subscribers", __name__, "Email alerts with double opt-in, and webhooks.")

ACCEPTED = {"status": "accepted",
            "detail": "If this address can receive mail, a confirmation link is on its way. "
                      "Alerts begin only after the link is followed."}


def preferences(body: dict) -> subscriptions.Preferences:
    """Preferences from a validated body. Raises Invalid (422) on a section name the paper
    does not have."""
    sections = subscriptions.check_sections(g.paper, body.get("sections"))
    return subscriptions.Preferences(cadence=body["cadence"], sections=sections, cast=body["cast"])


def _create(body: dict):
    if g.key is not None:
        permissions.check_subscriber_batch(g.key)
        return _create_batch(body)
    permissions.check_public_subscribe(body)
    if "email" not in body:
        raise Invalid(errors={"email": ["Missing data for required field."]})
    subscriptions.subscribe(g.paper, body["email"], preferences(body), utcnow(), links=links())
    return ACCEPTED, 202


def _create_batch(body: dict):
    # One of the two documented bodies: `SubscribeBatchIn`, or `SubscribeIn`'s one `email`
    # (a batch of one); never a mix of them.
    if "email" in body and ("emails" in body or "webhook" in body):
        mixed = [name for name in ("emails", "webhook") if name in body]
        raise Invalid(errors={name: ["Not with `email`: send the batch as `emails`."] for name in mixed})
    emails = body.get("emails") or ([body["email"]] if "email" in body else None)
    if not emails:
        raise Invalid(errors={"emails": ["Missing data for required field."]})
    webhook = body.get("webhook")
    if webhook:
        http.check_url(webhook, allow_private=current_app.config["WEBHOOK_ALLOW_PRIVATE"])
    done = subscriptions.subscribe_batch(g.paper, emails, preferences(body), utcnow(), webhook=webhook,
                                         links=links())
    return {"subscribers": [{"email": row.email, **({"webhook_secret": secret} if secret else {})}
                            for row, secret in done]}, 202


# The two bodies, as the document shows them: a client (or a fuzzer) without a key builds the
# first, and one with an admin key the second. Registered as components on the app's Api when
# the blueprint is (`_register_bodies`).
BODY_SCHEMAS = {"SubscribeIn": SubscribeIn, "SubscribeBatchIn": SubscribeBatchIn}
REQUEST_BODY = {"required": True, "content": {"application/json": {"schema": {"oneOf": [
    {"$ref": f"#/components/schemas/{name}"} for name in BODY_SCHEMAS]}}}}


@bp.record_once
def _register_bodies(state) -> None:
    spec = state.app.extensions["flask-smorest"]["apis"][""]["ext_obj"].spec
    for name, schema in BODY_SCHEMAS.items():
        if name not in spec.components.schemas:
            spec.components.schema(name, schema=schema)


def _post_view(name: str):
    """One POST view per path (same handler), each documented on its own path. The body is read
    here with `SubscribeBody` (the fields of both bodies; a 422 with per-field `errors` as
    `@bp.arguments` gives) and documented as one of `SubscribeIn` and `SubscribeBatchIn`."""

    def view():
        return _create(bp.ARGUMENTS_PARSER.parse(SubscribeBody(), location="json"))

    view.__name__ = view.__qualname__ = name
    view.__doc__ = (
        "Subscribe: without a key, one address (double opt-in); with an admin key, up to 20\n\n"
        "Without a key: `{email, cadence?, sections?, cast?}` -> 202 with the same body whether the "
        "address is new, pending or already confirmed; a confirm email is queued and sent within seconds (at most one "
        "per address per 10 minutes). Limited to 5 a minute and 20 an hour per client, and per "
        "address. With an admin key: `{emails: [1-20], webhook?, cadence?, sections?, cast?}` -> "
        "202 `{subscribers: [{email, webhook_secret?}]}`. A read key gets 403.")
    view = bp.alt_response(429, description="Too many subscribe requests; see `Retry-After`.")(view)
    view = bp.alt_response(403, description="A read key: the batch needs an admin key.")(view)
    view = bp.alt_response(401, description="The admin batch's `emails` or `webhook` without a key, or a "
                                             "malformed, unknown or revoked key.")(view)
    view = bp.alt_response(422, description="The body failed validation (`errors` names each field).")(view)
    view = bp.response(202, SubscribeAcceptedOut)(view)
    view = bp.doc(security=OPTIONAL_SECURITY, requestBody=REQUEST_BODY)(view)
    # The public subscribe limits (per client, per address) are counted by the pipeline,
    # before the paper lookup.
    view = policy.route(limit="subscribe")(view)
    view = json_body(bp)(view)
    return transactional(view)


bp.route("/subscribers", methods=["POST"], endpoint="create_subscribers")(_post_view("create_subscribers"))
bp.route("/subscribe", methods=["POST"], endpoint="subscribe")(_post_view("subscribe"))


@bp.route("/subscribers", methods=["GET"])
@keyed(bp, "read")
@bp.response(200, SubscribersOut)
def list_subscribers():
    """Subscribers: `{count, confirmed}` with a read key; the rows too with an admin key

    An agent key gets 403: subscribers are no part of filing."""
    counts = subscriptions.counts(g.paper)
    if permissions.sees_subscriber_rows(g.key):
        return {"subscribers": subscriptions.rows(g.paper), **counts}
    return counts


# --- a reader's own preferences -------------------------------------------------------------

# Personal answers: no cache may keep them.
NO_STORE = {"Cache-Control": "no-store"}
BAD_TOKEN = ("The token is not valid: malformed, expired (a year), for another paper, or the address "
             "has left the list. The newest alert holds a fresh link.")


def _reader(token: str):
    row = subscriptions.read_token("preferences", token, g.paper)
    if row is None:
        raise BadRequest(BAD_TOKEN, errors={"token": [BAD_TOKEN]})
    return row


@bp.route("/subscribers/preferences", methods=["GET"])
@policy.route(cache=False)
@bp.arguments(PreferencesTokenQuery(), location="query")
@bp.response(200, PreferencesOut, example={
    "email": "reader@example.com", "cadence": "daily", "sections": ["World", "Science"], "cast": True,
    "paused": True, "paused_until": "2026-12-24T08:00:00Z"})
@bp.alt_response(400, description="No token, or a token that is not valid (malformed, expired, another "
                                  "paper's, or the address left the list).")
def get_preferences(query):
    """A reader's alert preferences, by the token of any alert's "Manage your alerts" link

    No key: the token is the credential. Changes nothing (a mail scanner may open it). Answers
    `{email, cadence, sections, cast, paused, paused_until}`; `paused: true` with `paused_until:
    null` means paused until resumed."""
    row = _reader(query["token"])
    return subscriptions.preferences_of(g.paper, row, utcnow()), 200, NO_STORE


@bp.route("/subscribers/preferences", methods=["PATCH"])
@policy.route(cache=False, limit="link")
@transactional
@json_body(bp)
@bp.arguments(PreferencesTokenQuery(), location="query")
@bp.arguments(PreferencesPatch, example={"cadence": "weekly", "sections": ["World"], "cast": False,
                                         "paused_until": "2026-12-24T08:00:00Z"})
@bp.response(200, PreferencesOut)
@bp.alt_response(400, description="No token, or a token that is not valid; or the body is not valid JSON.")
def update_preferences(query, body):
    """Change a reader's alert preferences, by the token of any alert's "Manage your alerts" link

    Send only what changes: `{cadence?, sections?, cast?, paused?, paused_until?}`. `sections:
    null` takes every section; `paused: true` pauses until resumed; `paused_until: <time>` pauses
    until then; `paused: false` or `paused_until: null` resumes now. Nothing aired while paused
    is sent later; a cadence change takes effect from the next alert. An unknown cadence or
    section, or a pause end in the past or over 366 days ahead: 422. Answers the preferences
    as saved."""
    row = _reader(query["token"])
    now = utcnow()
    changes = {name: body[name] for name in ("cadence", "sections", "cast") if name in body}
    if "paused_until" in body:
        changes["paused_until"] = body["paused_until"]
    elif body.get("paused") is True:
        changes["paused_until"] = PAUSED_INDEFINITELY
    elif body.get("paused") is False:
        changes["paused_until"] = None
    subscriptions.change_preferences(g.paper, row, now, changes)
    return subscriptions.preferences_of(g.paper, row, now), 200, NO_STORE
