"""Subscribe bodies and subscriber answers (docs/API.md "subscribe", "webhooks"). Section names are
checked against the paper in services/delivery/subscriptions.py (they need the database)."""
from __future__ import annotations

from datetime import timezone

from email_validator import EmailNotValidError
from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from models import CADENCES
from schemas.common import Timestamp
from schemas.desk import StrictBool
from services.delivery.subscriptions import normalize_email

MAX_EMAILS = 20


class EmailAddress(fields.String):
    """An email address checked by `email-validator` (syntax only: no DNS), normalised,
    lower-cased, its domain in ASCII and its local part at most 64 characters
    (`subscriptions.normalize_email`, the form rows and rate limits use)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("validate", validate.Length(min=3, max=320))
        super().__init__(**kwargs)
        self.metadata.setdefault("format", "email")

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            return normalize_email(text)
        except EmailNotValidError as exc:
            raise ValidationError(f"Not a valid email address: {exc}") from exc


class _Preferences(Schema):
    class Meta:
        unknown = RAISE

    cadence = fields.String(load_default="daily", validate=validate.OneOf(CADENCES),
                            metadata={"description": "instant, daily or weekly; default daily."})
    sections = fields.List(fields.String(validate=validate.Length(min=1, max=80)),
                           validate=validate.Length(min=1, max=50),
                           metadata={"description": "Names of the paper's sections (as in `category`); "
                                                    "default: every section, including ones added later. "
                                                    "An unknown name is a 422."})
    cast = StrictBool(load_default=True, metadata={"description": "Include the video edition; default true."})


class SubscribeIn(_Preferences):
    """Public subscribe (no key): `{email, cadence?, sections?, cast?}`. Unknown fields are a
    422; the admin batch's `emails` and `webhook` without a key are a 401 (they need an admin
    key)."""

    email = EmailAddress(required=True, metadata={"description": "The address to subscribe.",
                                                  "example": "reader@example.com"})


class SubscribeBatchIn(_Preferences):
    """The admin batch (an admin key): `{emails: [...] (1-20), webhook?, cadence?, sections?,
    cast?}`; the preferences apply to the whole batch. Unknown fields are a 422."""

    emails = fields.List(EmailAddress(), required=True, validate=validate.Length(min=1, max=MAX_EMAILS),
                         metadata={"description": "1-20 addresses; each gets its own confirm email.",
                                   "example": ["a@example.com", "b@example.com"]})
    webhook = fields.String(validate=validate.Length(min=8, max=2000),
                            metadata={"format": "uri", "description": "An https URL on public addresses "
                                      "that receives every alert of these rows, signed (see docs/ALERTS.md).",
                                      "example": "https://hooks.example.com/paper-desk"})


class SubscribeBody(_Preferences):
    """What the subscribe routes read, before they know which of the two bodies it is: the
    fields of both (`SubscribeIn` without a key, `SubscribeBatchIn` with an admin key, which
    may also send one `email`). Parsing only; the document shows the two schemas
    (blueprints/api/subscribers.py)."""

    email = EmailAddress()
    emails = fields.List(EmailAddress(), validate=validate.Length(min=1, max=MAX_EMAILS))
    webhook = fields.String(validate=validate.Length(min=8, max=2000))


class SubscribeAcceptedOut(Schema):
    """Without a key: `{status: "accepted", detail}`, the same whether the address is new,
    pending or already confirmed. With an admin key: `{subscribers: [{email, webhook_secret?}]}`."""

    status = fields.String(metadata={"description": "Public subscribe: always `accepted`."})
    detail = fields.String(metadata={"description": "Public subscribe: what happens next."})
    subscribers = fields.List(fields.Nested(lambda: AdminSubscribedOut()),
                              metadata={"description": "Admin batch: one entry per distinct address."})


class AdminSubscribedOut(Schema):
    email = fields.String(required=True)
    webhook_secret = fields.String(metadata={"description": "Present when a webhook was given: the "
                                             "HMAC key (its UTF-8 bytes) of `X-Desk-Signature`."})


class SubscriberRowOut(Schema):
    """An admin subscriber row."""

    email = fields.String(required=True)
    confirmed_at = Timestamp(required=True, allow_none=True,
                             metadata={"description": "Null until the confirm link is used."})
    cadence = fields.String(required=True)
    sections = fields.List(fields.String(), required=True,
                           metadata={"description": "Section names; every current section when the row takes all."})
    cast = fields.Boolean(required=True)
    last_sent_at = Timestamp(required=True, allow_none=True)
    bounces = fields.Integer(required=True, metadata={
        "description": "Alerts the mail server refused for good (5xx) in a row; a delivered alert resets it."})
    suppressed_at = Timestamp(required=True, allow_none=True, metadata={
        "description": "When the address was put on the suppression list (no alert is sent to it "
                       "again); null when it is not. See docs/ALERTS.md \"When a message fails\"."})
    suppressed_reason = fields.String(required=True, allow_none=True, metadata={
        "description": "The mail server's refusal that suppressed the address; null when not suppressed."})
    webhook = fields.String(metadata={"description": "The webhook URL; absent on rows without one."})
    webhook_secret = fields.String(metadata={"description": "Only on rows with a webhook."})


class SubscribersOut(Schema):
    """Read key: `count` and `confirmed` alone. Admin key: the rows too."""

    subscribers = fields.List(fields.Nested(SubscriberRowOut), metadata={"description": "Admin key only."})
    count = fields.Integer(required=True, metadata={"description": "Addresses on the list (pending and confirmed)."})
    confirmed = fields.Integer(required=True, metadata={"description": "Confirmed addresses."})


# --- the preference centre through the API -------------------------------------------------

_TOKEN_EXAMPLE = "WzEsIDQyLCAicmVhZGVyQGV4YW1wbGUuY29tIl0.Z0Nf2w.3bZ0nQk3kq9lG7c3uR0y8wqA1mE"


class PreferencesTokenQuery(Schema):
    """`?token=...`: the signed token of the "Manage your alerts" link in any alert."""

    class Meta:
        unknown = RAISE

    token = fields.String(required=True, validate=validate.Length(min=1, max=1000), metadata={
        "description": "The `token` of the \"Manage your alerts\" link (`/subscribe/preferences?token=...`) "
                       "of any alert to this address: signed, bound to the address and the paper, valid "
                       "for a year and only while the address is on the list. It is the credential: no "
                       "desk key, no cookie.",
        "example": _TOKEN_EXAMPLE})


class PreferencesPatch(Schema):
    """A reader's changes: any of `cadence`, `sections`, `cast`, `paused`, `paused_until`;
    missing fields stay as they are. Unknown fields, an unknown cadence or section: 422."""

    class Meta:
        unknown = RAISE

    cadence = fields.String(validate=validate.OneOf(CADENCES), metadata={
        "description": "instant, daily or weekly; takes effect from the next alert (no gap, no piece twice).",
        "example": "weekly"})
    sections = fields.List(fields.String(validate=validate.Length(min=1, max=80)),
                           validate=validate.Length(min=1, max=50), allow_none=True, metadata={
                               "description": "Names of the paper's sections; null (or every one of them): "
                                              "every section, those added later too. An unknown name is a 422.",
                               "example": ["World", "Science"]})
    cast = StrictBool(metadata={"description": "Include the video edition.", "example": False})
    paused = StrictBool(metadata={
        "description": "`true` without `paused_until`: pause until resumed; `false`: resume now. "
                       "`false` with a `paused_until` time is a 422.",
        "example": True})
    paused_until = fields.AwareDateTime(allow_none=True, default_timezone=timezone.utc, metadata={
        "description": "Pause until this RFC 3339 time (after now, at most 366 days ahead); null: resume now. "
                       "Nothing that goes on air while paused is sent later.",
        "example": "2026-12-24T08:00:00Z"})

    @validates_schema
    def _pause_agrees(self, data, **kwargs):
        if data.get("paused") is False and data.get("paused_until") is not None:
            raise ValidationError("`paused: false` resumes now; leave out `paused_until`.", "paused")


class PreferencesOut(Schema):
    """The reader's preferences."""

    email = fields.String(required=True, metadata={"description": "The address (as stored).",
                                                   "example": "reader@example.com"})
    cadence = fields.String(required=True, metadata={"description": "instant, daily or weekly.", "example": "daily"})
    sections = fields.List(fields.String(), required=True, metadata={
        "description": "Section names; every current section when the reader takes all.",
        "example": ["World", "Business", "Science"]})
    cast = fields.Boolean(required=True, metadata={"description": "The video edition is included.", "example": True})
    paused = fields.Boolean(required=True, metadata={"description": "Alerts are paused now.", "example": True})
    paused_until = Timestamp(required=True, allow_none=True, metadata={
        "description": "When the pause ends; null when not paused, or paused until the reader resumes.",
        "example": "2026-12-24T08:00:00Z"})
