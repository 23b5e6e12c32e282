"""Schemas shared by every surface: the RFC 9457 problem body and small helpers."""
from __future__ import annotations

from marshmallow import Schema, fields

from models.clock import rfc3339


class ProblemSchema(Schema):
    """RFC 9457 problem details (docs/API.md "errors"), served as `application/problem+json`."""

    type = fields.String(required=True,
                         metadata={"description": "Problem type URI; `about:blank` when the status says it all."})
    title = fields.String(required=True, metadata={"description": "Short summary of the problem type."})
    status = fields.Integer(required=True, metadata={"description": "The HTTP status code."})
    detail = fields.String(required=True, metadata={"description": "What went wrong with this request."})
    errors = fields.Dict(
        keys=fields.String(),
        metadata={"description": "On 400 and 422: messages per field (by location for query and path values)."},
    )


class Timestamp(fields.DateTime):
    """An RFC 3339 UTC timestamp with a `Z` suffix (docs/API.md "time")."""

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else rfc3339(value)


class AnyOf(fields.Nested):
    """A value that is any one of `schemas` (names in marshmallow's class registry, or classes),
    documented as OpenAPI `anyOf` of their references (schemas/apidoc.py `any_of_attributes`).
    Dumped with the first (the shape a view writes by default; the others are written by the
    view itself, as `full=true` story rows are)."""

    def __init__(self, first, *others, **kwargs):
        super().__init__(first, **kwargs)
        self.schemas = (first, *others)


class Written(Schema):
    """A schema that documents a wire shape whose one writer is `write(obj) -> dict`: its fields
    say what the OpenAPI document promises, and dumping through it (a view's `@bp.response`, a
    `fields.Nested`) calls the writer, so the shape is built in one place whatever the object
    (an ORM row or a Core row). tests/test_fast_paths.py holds the writer's keys to the fields."""

    def write(self, obj) -> dict:
        raise NotImplementedError

    def dump(self, obj, *, many: bool | None = None):
        many = self.many if many is None else bool(many)
        return [self.write(item) for item in obj] if many else self.write(obj)


def text(**kwargs) -> fields.String:
    """A required string of a Written schema (its writer fills it)."""
    return fields.String(required=True, **kwargs)


def url(**kwargs) -> fields.String:
    """A required absolute URL of a Written schema, documented as a string of format uri."""
    metadata = {"format": "uri", **kwargs.pop("metadata", {})}
    return fields.String(required=True, metadata=metadata, **kwargs)


def computed_url(fn, **kwargs) -> fields.Function:
    """A required absolute URL computed from the object, documented as a string of format uri."""
    metadata = {"type": "string", "format": "uri", **kwargs.pop("metadata", {})}
    return fields.Function(fn, required=True, metadata=metadata, **kwargs)
