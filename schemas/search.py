"""`GET /api/v1/search` (docs/API.md "status codes").

The `q` constraints documented in the OpenAPI document (minLength, maxLength, pattern) are the
very validators that run, so the document and the 400 answers cannot drift apart.
"""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from schemas.story import StoryRowOut
from services.reading.search import MAX_Q_LENGTH, Q_PATTERN

Q_DESCRIPTION = (
    "Search words, matched in headline, dek and prose. 1 to 120 characters, holding 1 to 4 terms "
    "separated by whitespace (any character Python's `str.isspace()` accepts: ASCII whitespace, "
    "U+001C-U+001F, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, "
    "U+3000); whitespace around the terms is allowed and ignored. A term is a run of "
    "non-whitespace characters, and every term must match (AND). A term is read like text: its "
    "words are stemmed (`rates` finds `rate`), case is ignored, and its words must stand next to "
    "each other in order (`covid-19`, `interest-rate`). Search operators (quotes, `*`, `OR`, "
    "`AND`, `NOT`, `NEAR`, `-`, `:`, `&`, `|`, `!`, parentheses) are never interpreted: they are "
    "plain words or punctuation. A term without a letter or digit is ignored; if none is left "
    "the answer is an empty list. Missing, empty, over 120 characters, or more than four terms: "
    "400."
)


class SearchQuery(Schema):
    q = fields.String(
        required=True,
        validate=[
            validate.Length(min=1, max=MAX_Q_LENGTH),
            validate.Regexp(Q_PATTERN, error="q must hold 1 to 4 terms separated by whitespace."),
        ],
        metadata={"description": Q_DESCRIPTION, "example": "rates rise"},
    )


class SearchOut(Schema):
    q = fields.String(required=True, metadata={"description": "The query as received, without surrounding whitespace."})
    stories = fields.List(fields.Nested(StoryRowOut), required=True,
                          metadata={"description": "At most 30 pieces on air, newest on air first."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `stories`."})
