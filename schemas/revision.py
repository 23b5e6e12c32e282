"""A piece's public history (`/api/v1/stories/{id}/revisions`, docs/CORRECTIONS.md)."""
from __future__ import annotations

from marshmallow import Schema, fields

from schemas.common import Timestamp
from schemas.proof import ReceiptVerifyOut
from schemas.story import CURSOR_EXAMPLE, cursor_param


class RevisionsQuery(Schema):
    limit = fields.Integer(load_default=50, metadata={
        "description": "How many revisions; any integer is accepted and clamped to 1-200.", "example": 20})
    cursor = cursor_param()


class RevisionOut(Schema):
    rev = fields.Integer(required=True)
    kind = fields.String(required=True, allow_none=True, metadata={
        "description": "`edit`, `correction`, `clarification`, `update` or `retraction`; null for a "
                       "first filing (and revisions filed before kinds existed).", "example": "correction"})
    note = fields.String(required=True, allow_none=True, metadata={
        "description": "The revision's public note (plain text); null where `kind` is."})
    at = Timestamp(required=True, metadata={"description": "When the revision was filed (RFC 3339, UTC)."})
    content_hash = fields.String(required=True, metadata={
        "description": "`sha256:` + hex of the RFC 8785 form of the revision's text (its `basis`), "
                       "as the transparency log holds it."})
    prev_hash = fields.String(required=True, allow_none=True,
                              metadata={"description": "The previous revision's hash; null for rev 1."})
    receipt = fields.String(required=True, metadata={"description": "Base64 Ed25519 signature of `signed_string`."})
    kid = fields.String(required=True, metadata={"description": "The receipt key, at `/api/v1/receipt-keys`."})
    signed_string = fields.String(required=True)
    url = fields.String(required=True, metadata={"description": "Absolute URL of the revision's full text."})


class RevisionListOut(Schema):
    revisions = fields.List(fields.Nested(RevisionOut), required=True, metadata={
        "description": "Newest first, from the revision the piece first aired with."})
    count = fields.Integer(required=True)
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` for older revisions; null on the last page.", "example": CURSOR_EXAMPLE})


class RevisionTextOut(Schema):
    id = fields.String(required=True, metadata={"description": "The piece's id."})
    rev = fields.Integer(required=True)
    kind = fields.String(required=True, allow_none=True)
    note = fields.String(required=True, allow_none=True)
    at = Timestamp(required=True)
    content_hash = fields.String(required=True)
    prev_hash = fields.String(required=True, allow_none=True)
    basis = fields.Dict(required=True, metadata={
        "description": "The revision's full public text, every published field exactly as hashed: its RFC "
                       "8785 form hashes to `content_hash` (docs/PROOFS.md)."})
    hash_basis = fields.String(required=True, metadata={"description": "The hashing recipe in words."})
    receipt = fields.String(required=True)
    receipt_verify = fields.Nested(ReceiptVerifyOut, required=True)
    disclaimer = fields.String(required=True)
