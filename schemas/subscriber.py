"""Subscribe bodies and subscriber answers (docs/API.md "subscribe", "webhooks"). Section names are
checked against the paper in services/delivery/subscriptions.py (they need the database)."""
from __future__ import annotations

from email_validator import EmailNotValidError, validate_email
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from models import CADENCES
from schemas.common import Timestamp

MAX_EMAILS = 20


# RFC 5321 section 4.5.3.1.1; email-validator lets one more character through.
MAX_LOCAL_PART = 64


def normalize_email(text: str) -> str:
    """`text` as stored: checked by `email-validator` (syntax only: no DNS), normalised,
    lower-cased, the domain in ASCII (`Leser@Bücher.example` -> `leser@xn--bcher-kva.example`).
    Raises ValidationError on an address it refuses, or a local part over 64 characters."""
    try:
        result = validate_email(text, check_deliverability=False)
    except EmailNotValidError as exc:
        raise ValidationError(f"Not a valid email address: {exc}") from exc
    if len(result.local_part) > MAX_LOCAL_PART:
        raise ValidationError(f"Not a valid email address: the part before @ is longer than "
                              f"{MAX_LOCAL_PART} characters.")
    return (result.ascii_email or f"{result.local_part}@{result.ascii_domain}").lower()


class EmailAddress(fields.String):
    """An email address as `normalize_email` stores it: its domain in ASCII (IDNA), so sending
    needs SMTPUTF8 only for a non-ASCII local part; a local part over 64 characters refused."""

    def __init__(self, **kwargs):
        kwargs.setdefault("validate", validate.Length(min=3, max=320))
        super().__init__(**kwargs)
        self.metadata.setdefault("format", "email")

    def _deserialize(self, value, attr, data, **kwargs):
        return normalize_email(super()._deserialize(value, attr, data, **kwargs))


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
    cast = fields.Boolean(load_default=True, metadata={"description": "Include the video edition; default true."})


class SubscribeIn(_Preferences):
    """Without a key: `{email, cadence?, sections?, cast?}`. With an admin key:
    `{emails: [...] (1-20), webhook?, cadence?, sections?, cast?}` (the preferences apply to the
    whole batch). Unknown fields are a 422."""

    email = EmailAddress(metadata={"description": "Public subscribe: the address (required without a key)."})
    emails = fields.List(EmailAddress(), validate=validate.Length(min=1, max=MAX_EMAILS),
                         metadata={"description": "Admin key only: 1-20 addresses."})
    webhook = fields.String(validate=validate.Length(min=8, max=2000),
                            metadata={"format": "uri", "description": "Admin key only: an https URL "
                                      "that receives every alert of these rows, signed (see docs/ALERTS.md)."})


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
    webhook = fields.String(metadata={"description": "The webhook URL; absent on rows without one."})
    webhook_secret = fields.String(metadata={"description": "Only on rows with a webhook."})


class SubscribersOut(Schema):
    """Read key: `count` and `confirmed` alone. Admin key: the rows too."""

    subscribers = fields.List(fields.Nested(SubscriberRowOut), metadata={"description": "Admin key only."})
    count = fields.Integer(required=True, metadata={"description": "Addresses on the list (pending and confirmed)."})
    confirmed = fields.Integer(required=True, metadata={"description": "Confirmed addresses."})
