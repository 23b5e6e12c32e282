"""The front document, video editions (the cast), short-form posts and the masthead (docs/API.md
"list responses")."""
from __future__ import annotations

import re
from datetime import datetime, timezone

from marshmallow import Schema, ValidationError, fields, validate

from models.clock import rfc3339
from schemas.common import Timestamp, Written, computed_url
from schemas.common import url as url_field
from schemas.desk import EditionMediaOut
from schemas.story import CURSOR_EXAMPLE, StoryRowOut, as_row, cursor_param, story_row_wire
from services.links import Links
from web.caching import request_now
from web.links import links

POSTS_LIMIT_MAX = 100


# --- the front document -------------------------------------------------------------------

class FrontConfigOut(Schema):
    """The allow-list of services/reading/front.py PUBLIC_CONFIG; each key only when set."""

    timezone = fields.String(metadata={"description": "The paper's home timezone (IANA name)."})
    language = fields.String(metadata={"description": "The paper's language tag (RSS, Google News)."})
    help_desk = fields.String(metadata={"description": "A mailto: address or http(s) URL for readers' questions."})
    contact_email = fields.String(metadata={"description": "The podcast feed's owner address."})
    podcast_image = fields.String(metadata={"description": "The podcast artwork URL."})


class FrontPaperOut(Schema):
    slug = fields.String(required=True, metadata={"description": "The paper's slug."})
    nameplate = fields.String(required=True)
    motto = fields.String(required=True, metadata={"description": "May be empty."})
    description = fields.String(required=True, metadata={"description": "May be empty."})
    home = fields.String(required=True, metadata={"description": "Absolute URL of the paper's home page."})
    config = fields.Nested(FrontConfigOut, required=True, metadata={
        "description": "The public part of the paper's config: only the keys listed here, each "
                       "when set to a string. Every other config key is withheld."})


class NewsroomOut(Schema):
    personas = fields.Integer(required=True, metadata={"description": "Active personas on the masthead."})
    sections = fields.Integer(required=True, metadata={"description": "Active sections."})
    on_air = fields.Integer(required=True, metadata={"description": "Pieces on air."})
    days = fields.Integer(required=True,
                          metadata={"description": "UTC days with pieces on air (the archive's length, uncapped)."})
    editions = fields.Integer(required=True, metadata={"description": "Published video editions."})
    latest_on_air_at = Timestamp(required=True, allow_none=True,
                                 metadata={"description": "When the newest piece went on air; null before the first."})
    latest_edition = fields.Date(required=True, allow_none=True,
                                 metadata={"description": "Day of the newest video edition; null before the first."})
    declared_ai = fields.Constant(True, required=True,
                                  metadata={"description": "Always true: every byline is a declared AI persona."})


class RailOut(Schema):
    section = fields.String(required=True, metadata={"description": "The section name."})
    slug = fields.String(required=True)
    url = url_field(metadata={"description": "Absolute URL of the section's page."})
    stories = fields.List(fields.Nested(StoryRowOut), required=True,
                          metadata={"description": "Up to six newest pieces on air in this section, newest first."})


class FrontOut(Written):
    """Also served verbatim at `/front.json`. Written by `front_wire` (below) from
    `front.build_front(..., rows=True)`."""

    paper = fields.Nested(FrontPaperOut, required=True)
    newsroom = fields.Nested(NewsroomOut, required=True)
    rails = fields.List(fields.Nested(RailOut), required=True, metadata={
        "description": "One rail per active section, in section order (empty rails included)."})
    lead = fields.Nested(StoryRowOut, required=True, allow_none=True, metadata={
        "description": "The front's lead story: the editor's choice (`lead_story`, written with "
                       "`PATCH /api/v1/config`) while that piece is on air, otherwise the newest "
                       "piece on air in an active section; null while nothing is on air. It also "
                       "appears in its section's rail."})
    lead_chosen = fields.Boolean(required=True, metadata={
        "description": "True when `lead` is the editor's choice, false when it is the newest piece.",
        "example": False})
    top_stories = fields.List(fields.Nested(StoryRowOut), required=True, metadata={
        "description": "Up to four newest pieces on air in active sections after the lead (the "
                       "lead left out), newest first, whatever their section. They also appear "
                       "in their sections' rails."})

    def write(self, obj) -> dict:
        return front_wire(obj, links(), request_now())


# --- the cast -----------------------------------------------------------------------------

class CastEditionOut(EditionMediaOut):
    day = fields.Date(required=True, metadata={"description": "The UTC day the edition covers (YYYY-MM-DD)."})
    title = fields.String(required=True)
    summary = fields.String(required=True)
    embed_url = computed_url(lambda e: links().edition_embed(e.day),
                                metadata={"description": "Absolute URL of a frameable page that plays the video."})
    url = computed_url(lambda e: links().edition_page(e.day),
                          metadata={"description": "Absolute URL of the edition's page."})
    duration_seconds = fields.Integer(required=True)
    mime_type = fields.String(required=True)
    length_bytes = fields.Integer(required=True)
    published_at = Timestamp(required=True)


class CastOut(Schema):
    editions = fields.List(fields.Nested(CastEditionOut), required=True, metadata={
        "description": "One per published day, newest first; empty until an edition is published."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `editions`."})


# --- posts --------------------------------------------------------------------------------

class SinceField(fields.DateTime):
    """An instant as RFC 3339 / ISO 8601 ('2026-11-01T12:00:00Z', '...+02:00', naive
    '2026-11-01T12:00:00' read as UTC, or a bare date meaning its midnight UTC). Loads as an aware
    UTC datetime; anything else is a validation error (400 on the query string)."""

    _SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
                        r"([Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?"
                        r"([Zz]|[+-][0-9]{2}(:?[0-9]{2}(:?[0-9]{2}(\.[0-9]+)?)?)?)?)?", re.ASCII)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or not self._SHAPE.fullmatch(value.strip()):
            raise ValidationError("Not an RFC 3339 / ISO 8601 time (e.g. 2026-11-01T12:00:00Z).")
        text = value.strip().upper().replace("Z", "+00:00")
        # RFC 3339 allows a leap second; Python's datetime does not.
        text = re.sub(r"(T[0-9]{2}:[0-9]{2}):60", r"\1:59", text)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ValidationError("Not a real time (e.g. 2026-11-01T12:00:00Z).") from None
        if moment.tzinfo is None:
            return moment.replace(tzinfo=timezone.utc)
        try:
            return moment.astimezone(timezone.utc)
        except OverflowError:
            # '0001-01-01T00:00:00+01:00' is valid RFC 3339 but before datetime.min in UTC.
            edge = datetime.min if moment.year == 1 else datetime.max
            return edge.replace(tzinfo=timezone.utc)


class PostsQuery(Schema):
    limit = fields.Integer(
        load_default=20, validate=validate.Range(min=1, max=POSTS_LIMIT_MAX),
        metadata={"description": "How many posts, 1-100 (default 20). Outside that range: 400.", "example": 20})
    since = SinceField(metadata={
        "description": "Only pieces that went on air strictly after this time, listed oldest first "
                       "(ascending `on_air_at`, then id). RFC 3339 / ISO 8601; a time without an offset "
                       "is read as UTC. Unparseable: 400.", "example": "2026-11-01T08:00:00Z"})
    cursor = cursor_param()


class PostOut(Schema):
    id = fields.String(required=True, metadata={"description": "The piece id (use on `/api/v1/stories/{id}`)."})
    headline = fields.String(required=True, metadata={"description": "The piece's headline, in full."})
    dek = fields.String(metadata={
        "description": "Present only when it fits: when len(headline) + len(dek) + len(link) + 4 "
                       "(two `\\n\\n` separators) is at most 280 characters (Unicode code points). "
                       "An empty dek is never included."})
    link = fields.String(required=True, metadata={"description": "Absolute URL of the story's page."})
    image = fields.String(required=True,
                          metadata={"description": "The story's own art, otherwise its share card (1200x630 PNG; "
                                                 "a new URL at each revision, cached as immutable)."})
    text = fields.String(required=True, metadata={
        "description": "The composed post, at most 280 characters: headline, dek (when included) "
                       "and link joined by `\\n\\n`. When headline and link alone exceed 280, the "
                       "headline is cut at a word boundary where possible and ends with `…`."})
    on_air_at = Timestamp(required=True)


class PostListOut(Schema):
    posts = fields.List(fields.Nested(PostOut), required=True, metadata={
        "description": "Newest first; with `since`, oldest first."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `posts`."})
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` (with the same `since`) for the posts after these; null on the "
                       "last page.", "example": CURSOR_EXAMPLE})


# --- the masthead -------------------------------------------------------------------------

class MastheadPersonaOut(Schema):
    name = fields.String(required=True, metadata={"description": "The byline stories carry."})
    slug = fields.String(required=True)
    title = fields.String(required=True)
    beat = fields.String(required=True)
    bio = fields.String(required=True)
    avatar = computed_url(lambda p: links().avatar(p["slug"]),
                             metadata={"description": "Absolute, stable URL of the persona's SVG portrait."})
    declared_ai = fields.Constant(True, required=True, metadata={"description": "Always true."})
    pieces = fields.Integer(required=True, metadata={"description": "Pieces on air under this byline."})


class MastheadOut(Schema):
    personas = fields.List(fields.Nested(MastheadPersonaOut), required=True,
                           metadata={"description": "Active personas in masthead order."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `personas`."})


def front_wire(document: dict, links: Links, now) -> dict:
    """The front's one writer (FrontOut documents it): `front.build_front(..., rows=True)`
    (rails of Core rows) on the wire, with absolute URLs under `links`; `now` is the instant
    the document was built at (its rows' `air_at` are judged at it)."""
    paper, counts = document["paper"], document["newsroom"]
    latest_on_air, latest_edition = counts["latest_on_air_at"], counts["latest_edition"]
    return {
        "paper": {"slug": paper["slug"], "nameplate": paper["nameplate"], "motto": paper["motto"],
                  "description": paper["description"], "home": paper["home"],
                  # front.PUBLIC_CONFIG's order, which FrontConfigOut declares too.
                  "config": dict(paper["config"])},
        "newsroom": {"personas": counts["personas"], "sections": counts["sections"], "on_air": counts["on_air"],
                     "days": counts["days"], "editions": counts["editions"],
                     "latest_on_air_at": None if latest_on_air is None else rfc3339(latest_on_air),
                     "latest_edition": None if latest_edition is None else latest_edition.isoformat(),
                     "declared_ai": True},
        "rails": [{"section": rail["section"], "slug": rail["slug"], "url": links.section_page(rail["slug"]),
                   "stories": [story_row_wire(as_row(row), links, now) for row in rail["stories"]]}
                  for rail in document["rails"]],
        "lead": None if document["lead"] is None else story_row_wire(as_row(document["lead"]), links, now),
        "lead_chosen": document["lead_chosen"],
        "top_stories": [story_row_wire(as_row(row), links, now) for row in document["top_stories"]],
    }
