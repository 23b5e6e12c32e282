"""The change feed's wire shapes (docs/API.md "Change feed")."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from models import CHANGE_TYPES
from schemas.common import Timestamp

# A next_cursor as the feed hands it out (opaque, signed: blueprints/api/paging.py).
CHANGES_CURSOR_EXAMPLE = ("eyJwIjoxLCJmIjp7fSwiayI6WyIyMDI2LTExLTI0VDA5OjA1OjAwLjAwMDAwMCswMDowMCIsNDJdfQ"
                          ".q1Xo3v5C8mJzVv0W2aS8dKf0nQk")


class ChangesQuery(Schema):
    cursor = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "Opaque: the `next_cursor` of an earlier answer from this paper. "
                                 "Absent: from the first change. Malformed, or another paper's: 400.",
                  "example": CHANGES_CURSOR_EXAMPLE})
    limit = fields.Integer(
        load_default=100,
        metadata={"description": "How many changes at most; any integer is accepted and clamped to 1-500.",
                  "example": 100})


class ChangeOut(Schema):
    seq = fields.Integer(required=True, metadata={
        "description": "The change's number on this paper (1, 2, ...), in the order written.", "example": 42})
    type = fields.String(required=True, validate=validate.OneOf(CHANGE_TYPES), metadata={
        "description": "`aired`: the piece became public; `revised`: a new revision of a public piece; "
                       "`unaired`: the piece was taken off air (a tombstone: drop your copy).",
        "example": "aired"})
    id = fields.String(required=True, metadata={
        "description": "The piece's id, for `/api/v1/stories/{id}` (which answers 404 after `unaired`).",
        "example": "17"})
    rev = fields.Integer(required=True, metadata={"description": "The piece's revision at the change.",
                                                  "example": 2})
    content_hash = fields.String(required=True, allow_none=True, metadata={
        "description": "The revision's content hash (`sha256:` + hex); null on `unaired`.",
        "example": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"})
    at = Timestamp(required=True, metadata={
        "description": "When the change became public (RFC 3339, UTC): for a scheduled airing, its instant.",
        "example": "2026-11-25T07:00:00Z"})
    kind = fields.String(metadata={
        "description": "Only on a `revised` change: the revision's kind (docs/CORRECTIONS.md), "
                       "`correction`, `clarification`, `update` or `retraction` (absent for revisions "
                       "filed before kinds existed).", "example": "correction"})


class ChangeListOut(Schema):
    changes = fields.List(fields.Nested(ChangeOut), required=True, metadata={
        "description": "Oldest first; apply them in this order."})
    next_cursor = fields.String(required=True, metadata={
        "description": "Never null: poll again from here (an empty page keeps the same position). "
                       "`Link: rel=\"next\"` is sent only when more changes are listable now.",
        "example": CHANGES_CURSOR_EXAMPLE})
