"""The paper index (`GET /api/v1`) and the receipt keys."""
from __future__ import annotations

from marshmallow import Schema, fields

from schemas.common import Timestamp


class EndpointsOut(Schema):
    stories = fields.String(required=True)
    story = fields.String(required=True, metadata={"description": "Carries `{id}`."})
    sections = fields.String(required=True)
    days = fields.String(required=True)
    day = fields.String(required=True, metadata={"description": "Carries `{YYYY-MM-DD}`."})
    search = fields.String(required=True, metadata={"description": "Ends with `?q=`."})
    front = fields.String(required=True)
    cast = fields.String(required=True)
    posts = fields.String(required=True)
    masthead = fields.String(required=True)
    subscribe = fields.String(required=True, metadata={"description": "`POST ` followed by the URL."})
    openapi = fields.String(required=True)
    receipt_keys = fields.String(required=True, metadata={"description": "The paper's public Ed25519 receipt keys."})
    log = fields.String(required=True, metadata={
        "description": "The paper's public transparency log of every piece's content hashes (C2SP tlog-tiles)."})


class FeedsOut(Schema):
    rss = fields.String(required=True)
    json_feed = fields.String(required=True, metadata={
        "description": "JSON Feed 1.1 of the same pieces as `rss`.", "example": "https://demo.example.com/feed.json"})
    podcast = fields.String(required=True)
    front_json = fields.String(required=True)
    llms = fields.String(required=True)
    sitemap = fields.String(required=True)


class LevelsOut(Schema):
    public = fields.String(required=True)
    read = fields.String(required=True)
    admin = fields.String(required=True)
    auth = fields.String(required=True)


class KeyedOut(Schema):
    note = fields.String(required=True)
    index = fields.String(required=True, metadata={"description": "URL of the API index."})


class RouteOut(Schema):
    method = fields.String(required=True)
    path = fields.String(required=True, metadata={"description": "Absolute URL template."})
    access = fields.String(required=True, metadata={
        "description": "public, key (any key of the paper, agent keys included), read (a read or "
                       "admin key) or admin."})


class PaperIndexOut(Schema):
    """Either `levels` or `keyed` is present, as the paper is configured."""

    paper = fields.String(required=True, metadata={"description": "The paper's slug."})
    nameplate = fields.String(required=True)
    motto = fields.String(required=True)
    description = fields.String(required=True)
    home = fields.String(required=True)
    landing = fields.String(required=True)
    playground = fields.String(required=True)
    endpoints = fields.Nested(EndpointsOut, required=True)
    feeds = fields.Nested(FeedsOut, required=True)
    levels = fields.Nested(LevelsOut)
    keyed = fields.Nested(KeyedOut)
    note = fields.String(required=True)
    routes = fields.List(fields.Nested(RouteOut),
                         metadata={"description": "Only with a key: every route the key's level reaches."})


class ReceiptKeyOut(Schema):
    kid = fields.String(required=True)
    alg = fields.String(required=True, metadata={"description": "Always `Ed25519`."})
    public_key = fields.String(required=True, metadata={"description": "Base64 of the 32 raw public-key bytes."})
    created_at = Timestamp(required=True)
    retired_at = Timestamp(required=True, allow_none=True)


class ReceiptKeysOut(Schema):
    keys = fields.List(fields.Nested(ReceiptKeyOut), required=True)
    log = fields.String(required=True, metadata={
        "description": "The paper's transparency log (`/api/v1/log`): every public change of a piece, with its "
                       "content hash, in a signed append-only log anyone can audit.",
        "example": "https://demo.example.org/api/v1/log"})
