"""Content webhook bodies and answers (docs/API.md "Content webhooks"). The URL's target is
checked in services/delivery/content_webhooks.py (it resolves the host)."""
from __future__ import annotations

from marshmallow import RAISE, Schema, fields, validate

from models import CONTENT_EVENTS
from schemas.common import Timestamp

ENDPOINT_ID = {"description": "The endpoint's id.", "example": "wh_3f9a1c2b7d4e5f601a2b"}
DELIVERY_ID = {"description": "The delivery's id (one attempt series of a message).",
               "example": "dlv_5e1f0c2a9b8d7e6f5a4b3c2d"}


class WebhookIn(Schema):
    """`{url, events}`. Unknown fields and unknown events are a 422."""

    class Meta:
        unknown = RAISE

    url = fields.String(required=True, validate=validate.Length(min=1, max=2000), metadata={
        "description": "Where to POST: https only; hosts resolving to loopback, private, shared, link-local or "
                       "reserved addresses are refused (422).",
        "example": "https://hooks.example.com/paper-desk"})
    events = fields.List(fields.String(validate=validate.OneOf(CONTENT_EVENTS)), required=True,
                         validate=validate.Length(min=1, max=len(CONTENT_EVENTS)), metadata={
                             "description": "The events to receive: " + ", ".join(CONTENT_EVENTS) + ".",
                             "example": ["piece.aired", "piece.unaired"]})


class WebhookOut(Schema):
    id = fields.String(required=True, attribute="public_id", metadata=ENDPOINT_ID)
    url = fields.String(required=True, metadata={"description": "The endpoint's URL.",
                                                 "example": "https://hooks.example.com/paper-desk"})
    events = fields.List(fields.String(), required=True, metadata={
        "description": "The events it receives.", "example": ["piece.aired", "piece.unaired"]})
    created_at = Timestamp(required=True, metadata={"description": "When it was registered.",
                                                    "example": "2026-11-24T10:00:00Z"})
    disabled_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "When it was disabled after 24 hours of failed deliveries; null while active.",
        "example": None})
    disabled_reason = fields.String(required=True, allow_none=True, metadata={
        "description": "Why it was disabled; null while active.", "example": None})


class WebhookCreatedOut(WebhookOut):
    secret = fields.String(required=True, metadata={
        "description": "The signing secret (`whsec_` + base64), shown on creation only: keep it.",
        "example": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})


class WebhookListOut(Schema):
    webhooks = fields.List(fields.Nested(WebhookOut), required=True, metadata={
        "description": "The paper's endpoints, oldest first (never their secrets)."})


class DeliveryOut(Schema):
    id = fields.String(required=True, attribute="delivery_id", metadata=DELIVERY_ID)
    message_id = fields.String(required=True, metadata={
        "description": "The `webhook-id` header: the same on every retry and on a redelivery.",
        "example": "msg_9c8b7a6f5e4d3c2b1a0f9e8d"})
    event = fields.String(required=True, metadata={"description": "The event type.", "example": "piece.aired"})
    status = fields.Function(lambda row: ("delivered" if row.delivered_at else "failed" if row.failed_at
                                          else "pending"), required=True, metadata={
        "type": "string", "enum": ["pending", "delivered", "failed"],
        "description": "pending (to be tried), delivered (a 2xx came back) or failed (given up).",
        "example": "delivered"})
    attempts = fields.Integer(required=True, metadata={"description": "Attempts made so far.", "example": 1})
    last_response_code = fields.Integer(required=True, allow_none=True, attribute="last_status", metadata={
        "description": "The HTTP status of the last attempt; null when no answer came.", "example": 200})
    last_error = fields.String(required=True, allow_none=True, metadata={
        "description": "Why the last attempt failed; null after a success.", "example": None})
    next_attempt_at = fields.Function(
        lambda row: None if (row.delivered_at or row.failed_at) else Timestamp()._serialize(
            row.next_attempt_at, None, None), required=True, allow_none=True, metadata={
            "type": "string", "format": "date-time",
            "description": "When the next attempt is due; null once delivered or failed.", "example": None})
    created_at = Timestamp(required=True, metadata={"description": "When the message became due.",
                                                    "example": "2026-11-24T10:00:00Z"})
    delivered_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "When a 2xx came back.", "example": "2026-11-24T10:00:01Z"})
    failed_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "When it was given up.", "example": None})


class DeliveriesOut(Schema):
    deliveries = fields.List(fields.Nested(DeliveryOut), required=True, metadata={
        "description": "Newest first."})
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` for the next page; null at the end.", "example": None})


class DeliveriesQuery(Schema):
    cursor = fields.String(validate=validate.Length(max=200), metadata={
        "description": "Opaque: `next_cursor` from the page before. A malformed cursor is a 400.",
        "example": "ZGx2OjQy"})
    limit = fields.Integer(load_default=50, validate=validate.Range(min=1, max=200), metadata={
        "description": "How many deliveries, 1-200.", "example": 50})


class AcceptedDeliveryOut(Schema):
    id = fields.String(required=True, metadata=DELIVERY_ID)
    message_id = fields.String(required=True, metadata={
        "description": "The message's `webhook-id`.", "example": "msg_9c8b7a6f5e4d3c2b1a0f9e8d"})
    status = fields.String(required=True, metadata={"description": "Always `pending`: the outbox worker "
                                                                  "sends it within seconds.", "example": "pending"})
