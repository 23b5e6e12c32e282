"""The oEmbed query and record (`/oembed`; oembed.com, oEmbed 1.0, type rich)."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from services.rendering.embeds import DEFAULT_WIDTH, FORMATS, MAX_WIDTH, MIN_HEIGHT, MIN_WIDTH
from services.rendering.prose import DIGITAL_SOURCE_TYPE

MAX_URL_LENGTH = 2048


class OEmbedQuery(Schema):
    url = fields.String(
        required=True, validate=validate.Length(min=1, max=MAX_URL_LENGTH),
        metadata={"description": "A story page address on this paper: `http(s)://<this host>/stories/"
                                 "<slug or id>` of a piece on air. Anything else: 404."})
    maxwidth = fields.Integer(
        validate=validate.Range(min=1),
        metadata={"description": f"Widest the card may be, in CSS pixels (default {DEFAULT_WIDTH}). An "
                                 f"upper bound, as oEmbed consumers mean it: above {MAX_WIDTH} the card is "
                                 f"{MAX_WIDTH} wide; below {MIN_WIDTH}, the narrowest card, it is {MIN_WIDTH} "
                                 "wide. Not a positive integer: 400.",
                  "example": 480})
    maxheight = fields.Integer(
        validate=validate.Range(min=1),
        metadata={"description": "Tallest the card may be, in CSS pixels. The card's height is its natural "
                                 f"height for the width, capped at this value but never below {MIN_HEIGHT} "
                                 "(room for the byline and its disclosure). Not a positive integer: 400.",
                  "example": 360})
    # Not validated here: oEmbed 1.0 answers an unsupported format with 501, not 400 (the view).
    format = fields.String(
        load_default="json",
        metadata={"description": f"{' or '.join(f'`{name}`' for name in FORMATS)} (default, and "
                                 "when empty, `json`; `xml` is oEmbed XML, `text/xml`). Any other format: "
                                 "501 Not Implemented, as oEmbed 1.0 says.",
                  "example": "json"})


class OEmbedOut(Schema):
    """An oEmbed 1.0 `rich` record for one story."""

    type = fields.String(required=True, validate=validate.OneOf(["rich"]),
                         metadata={"description": "Always `rich`."})
    version = fields.String(required=True, validate=validate.OneOf(["1.0"]),
                            metadata={"description": "Always `1.0`."})
    title = fields.String(required=True, metadata={"description": "The headline."})
    author_name = fields.String(required=True, metadata={
        "description": "The byline: a declared AI persona (the card shows the disclosure)."})
    author_url = fields.String(required=True, metadata={
        "description": "The persona's page, `/masthead/<slug>`.",
        "example": "https://demo.example.org/masthead/ada-quill"})
    provider_name = fields.String(required=True, metadata={"description": "The paper's nameplate."})
    provider_url = fields.String(required=True, metadata={"description": "The paper's home page."})
    html = fields.String(required=True, metadata={
        "description": "The `<iframe>` snippet loading `/embed/{id}`, sandboxed, lazy-loaded, "
                       "`width` x `height` pixels."})
    width = fields.Integer(required=True, metadata={
        "description": f"Pixels: `maxwidth` if given, at most {MAX_WIDTH}; else {DEFAULT_WIDTH}."})
    height = fields.Integer(required=True, metadata={"description": "Pixels; at most `maxheight` when given."})
    thumbnail_url = fields.String(required=True, metadata={
        "description": "The story's share card (a PNG of `thumbnail_width` x `thumbnail_height`) at "
                       "its current revision: a new URL at each revision, each cached as immutable; "
                       "an earlier one redirects to the current card."})
    thumbnail_width = fields.Integer(required=True)
    thumbnail_height = fields.Integer(required=True)
    cache_age = fields.Integer(required=True, metadata={"description": "Seconds a consumer may cache this record."})
    # Extra members, which oEmbed 1.0 allows: the byline's AI disclosure, for people and machines.
    disclosure = fields.String(required=True, metadata={
        "description": "The sentence stating that `author_name` is an AI persona; show it beside "
                       "the byline (the card does).",
        "example": "Ada Quill is an AI persona of The Demo Times's masthead, declared as such; this "
                   "piece was written by an AI system, not by a human reporter."})
    digital_source_type = fields.Constant(DIGITAL_SOURCE_TYPE, required=True, metadata={
        "description": "The same disclosure for machines: the IPTC digital source type "
                       "`trainedAlgorithmicMedia`, always this value.",
        "example": DIGITAL_SOURCE_TYPE})
    corrected = fields.String(metadata={
        "format": "date-time", "example": "2026-11-28T09:30:00Z",
        "description": "Only for a piece corrected, clarified, updated or retracted since it aired: when "
                       "it last was (RFC 3339, UTC). The card says \"Corrected\"; the notes are on the story "
                       "page (docs/CORRECTIONS.md)."})
