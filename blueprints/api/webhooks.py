"""Content webhooks for site owners (admin; docs/API.md "Content webhooks").

    POST   /api/v1/webhooks                                    register an endpoint (201, its secret)
    GET    /api/v1/webhooks                                    the paper's endpoints (no secrets)
    GET    /api/v1/webhooks/{id}                               one endpoint, `disabled_at`/`disabled_reason`
    DELETE /api/v1/webhooks/{id}                               delete it and its log (204)
    POST   /api/v1/webhooks/{id}/ping                          queue a `webhook.ping` (202)
    GET    /api/v1/webhooks/{id}/deliveries                    its delivery log, newest first, cursor paging
    POST   /api/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver   the same message again (202)

The secret is shown once, in the creation answer, as Standard Webhooks providers do: a secret
that any admin read could show again would be one more place for it to leak. Writes commit once,
at the commit point (web/commit.py); what they queue leaves through `flask worker`.
"""
from __future__ import annotations

from flask import g

from blueprints.api import paging
from blueprints.api.common import api_blueprint, json_body
from blueprints.api.permissions import keyed
from models.clock import utcnow
from schemas.webhook import (
    AcceptedDeliveryOut,
    DeliveriesOut,
    DeliveriesQuery,
    WebhookCreatedOut,
    WebhookIn,
    WebhookListOut,
    WebhookOut,
)
from services.delivery import content_webhooks
from services.reading import cursors
from web.commit import transactional
from web.links import links

bp = api_blueprint("webhooks", __name__, "Content webhooks for site owners (admin): endpoints, pings, "
                                         "delivery logs and redelivery, signed after Standard Webhooks.")

LOCATION = {"Location": {"description": "The new endpoint's API URL.", "schema": {"type": "string"}}}
ENDPOINT = "/webhooks/<string(maxlength=40):id>"
NO_ENDPOINT = "No such webhook endpoint on this paper."
DISABLED = "The endpoint is disabled: delete it and register it again."


@bp.route("/webhooks", methods=["POST"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(WebhookIn)
@bp.response(201, WebhookCreatedOut, headers=LOCATION)
@bp.alt_response(409, description="The paper already has 20 endpoints.")
def create_webhook(body: dict):
    """Register a content webhook endpoint (admin); the answer carries its secret, shown only here

    `{url, events}` -> 201 with the endpoint and its `whsec_` signing secret. The URL must be
    https and resolve to public addresses (422 otherwise); events are `piece.aired`,
    `piece.revised`, `piece.unaired` and `edition.published` (an unknown one: 422)."""
    endpoint = content_webhooks.create_endpoint(g.paper, body["url"], body["events"], now=utcnow())
    return endpoint, 201, {"Location": links().api(f"/webhooks/{endpoint.public_id}")}


@bp.route("/webhooks")
@keyed(bp, "admin")
@bp.response(200, WebhookListOut)
def list_webhooks():
    """The paper's content webhook endpoints (admin), oldest first, without their secrets

    Each endpoint with its URL, events, creation time and, when it was disabled after 24 hours
    of failed deliveries, `disabled_at` and `disabled_reason`. The secret is shown only in the
    creation answer.
    """
    return {"webhooks": content_webhooks.endpoints(g.paper)}


@bp.route(ENDPOINT)
@keyed(bp, "admin")
@bp.response(200, WebhookOut)
@bp.alt_response(404, description=NO_ENDPOINT)
def get_webhook(id: str):
    """One content webhook endpoint (admin): whether it is disabled, and why

    An endpoint whose deliveries all failed for 24 hours is disabled: `disabled_at` says when,
    `disabled_reason` carries the last error. A disabled endpoint gets no new messages; register
    it again once the receiver is fixed.
    """
    return content_webhooks.find_endpoint(g.paper, id)


@bp.route(ENDPOINT, methods=["DELETE"])
@transactional
@keyed(bp, "admin")
@bp.response(204, description="Deleted, with its delivery log; nothing more is sent to it.")
@bp.alt_response(404, description=NO_ENDPOINT)
def delete_webhook(id: str):
    """Delete a content webhook endpoint (admin) and its delivery log

    Nothing more is sent to it, pending messages included. 204 without a body.
    """
    content_webhooks.delete_endpoint(content_webhooks.find_endpoint(g.paper, id))
    return None


@bp.route(ENDPOINT + "/ping", methods=["POST"])
@transactional
@keyed(bp, "admin")
@bp.response(202, AcceptedDeliveryOut)
@bp.alt_response(404, description=NO_ENDPOINT)
@bp.alt_response(409, description=DISABLED)
def ping_webhook(id: str):
    """Queue a `webhook.ping` test message to an endpoint (admin)

    202: the outbox worker posts it within seconds; follow it in the delivery log."""
    row = content_webhooks.ping(content_webhooks.find_endpoint(g.paper, id), now=utcnow())
    return {"id": row.delivery_id, "message_id": row.message_id, "status": "pending"}, 202


@bp.route(ENDPOINT + "/deliveries")
@keyed(bp, "admin")
@bp.arguments(DeliveriesQuery(), location="query", as_kwargs=True)
@paging.paginated(bp, DeliveriesOut, "deliveries",
                  bad_cursor="A `limit` outside 1-200, or a malformed or foreign `cursor`.")
@bp.alt_response(404, description=NO_ENDPOINT)
def list_deliveries(id: str, page: paging.Page):
    """An endpoint's delivery log (admin), newest first, with cursor paging

    Each delivery: its message id (`webhook-id`), event, status (pending, delivered, failed),
    attempts, the last response code and error, and when the next attempt is due. A malformed
    cursor is a 400."""
    endpoint = content_webhooks.find_endpoint(g.paper, id)
    after = page.after({"endpoint": endpoint.public_id}, cursors.parse_id)
    rows, last = content_webhooks.deliveries_page(endpoint, before=None if after is None else after[0],
                                                  limit=page.size)
    return {"deliveries": rows}, None if last is None else [last]


@bp.route(ENDPOINT + "/deliveries/<string(maxlength=40):delivery_id>/redeliver", methods=["POST"])
@transactional
@keyed(bp, "admin")
@bp.response(202, AcceptedDeliveryOut)
@bp.alt_response(404, description="No such endpoint on this paper, or no such delivery of it.")
@bp.alt_response(409, description=DISABLED)
def redeliver(id: str, delivery_id: str):
    """Send a delivery's message again (admin): a new attempt series with the same `webhook-id`

    The same body and message id as the first delivery, so a receiver that deduplicates on
    `webhook-id` processes it once; signed afresh with a new `webhook-timestamp`. 202: the
    outbox worker posts it within seconds. A disabled endpoint: 409.
    """
    row = content_webhooks.redeliver(content_webhooks.find_endpoint(g.paper, id), delivery_id, now=utcnow())
    return {"id": row.delivery_id, "message_id": row.message_id, "status": "pending"}, 202
