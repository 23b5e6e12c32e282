"""The oEmbed query and record (`/oembed`; oembed.com, oEmbed 1.0, type rich)."""
from __future__ import annotations

from marshmallow import Schema, fields, validate

from services.rendering.embeds import DEFAULT_WIDTH, MAX_WIDTH, MIN_HEIGHT, MIN_WIDTH

MAX_URL_LENGTH = 2048


class OEmbedQuery(Schema):
    url = fields.String(
        required=True, validate=validate.Length(min=1, max=MAX_URL_LENGTH),
        metadata={"description": "A story page address on this paper: `http(s)://<this host>/stories/"
                                 "<slug or id>` of a piece on air. Anything else: 404."})
    maxwidth = fields.Integer(
        validate=validate.Range(min=MIN_WIDTH, max=MAX_WIDTH),
        metadata={"description": f"Widest the card may be, in CSS pixels, {MIN_WIDTH}-{MAX_WIDTH} "
                                 f"(default {DEFAULT_WIDTH}). Outside that range or not an "
                                 "integer: 400."})
    maxheight = fields.Integer(
        validate=validate.Range(min=MIN_HEIGHT),
        metadata={"description": f"Tallest the card may be, in CSS pixels, at least {MIN_HEIGHT} (room for the "
                                 "byline and its disclosure; less: 400). "
                                 "The card's height is its natural height for the width, capped "
                                 "at this value."})
    format = fields.String(
        load_default="json", validate=validate.OneOf(["json", "xml"]),
        metadata={"description": "`json` (default) or `xml` (oEmbed XML, `text/xml`)."})


class OEmbedOut(Schema):
    """An oEmbed 1.0 `rich` record for one story."""

    type = fields.String(required=True, validate=validate.OneOf(["rich"]),
                         metadata={"description": "Always `rich`."})
    version = fields.String(required=True, validate=validate.OneOf(["1.0"]),
                            metadata={"description": "Always `1.0`."})
    title = fields.String(required=True, metadata={"description": "The headline."})
    author_name = fields.String(required=True, metadata={
        "description": "The byline: a declared AI persona (the card shows the disclosure)."})
    author_url = fields.String(required=True, metadata={"description": "The persona on the masthead page."})
    provider_name = fields.String(required=True, metadata={"description": "The paper's nameplate."})
    provider_url = fields.String(required=True, metadata={"description": "The paper's home page."})
    html = fields.String(required=True, metadata={
        "description": "The `<iframe>` snippet loading `/embed/{id}`, sandboxed, lazy-loaded, "
                       "`width` x `height` pixels."})
    width = fields.Integer(required=True, metadata={"description": "Pixels; `maxwidth` if given, else 480."})
    height = fields.Integer(required=True, metadata={"description": "Pixels; at most `maxheight` when given."})
    thumbnail_url = fields.String(required=True, metadata={
        "description": "The story's share card (a PNG of `thumbnail_width` x `thumbnail_height`)."})
    thumbnail_width = fields.Integer(required=True)
    thumbnail_height = fields.Integer(required=True)
    cache_age = fields.Integer(required=True, metadata={"description": "Seconds a consumer may cache this record."})
