"""Story rows and full stories (docs/API.md "story row", "full story"). Views hand these schemas
`Piece` rows with `section` and `persona` loaded."""
from __future__ import annotations

from flask import g
from marshmallow import Schema, fields, validate

from models.clock import rfc3339
from schemas.common import Timestamp, computed_text, computed_url
from services.links import Links
from services.reading import visibility
from services.rendering.prose import DIGITAL_SOURCE_TYPE, disclosure
from web.links import links


class StoryRowOut(Schema):
    """One entry of a story list."""

    id = computed_text(lambda p: str(p.id), metadata={"description": "Use on `/api/v1/stories/{id}`."})
    slug = fields.String(required=True, metadata={"description": "Also accepted on `/api/v1/stories/{id}`."})
    headline = fields.String(required=True)
    dek = fields.String(required=True, metadata={"description": "The standfirst."})
    section = computed_text(lambda p: p.section.name, metadata={"description": "The section name."})
    byline = computed_text(lambda p: p.persona.name,
                           metadata={"description": "A declared AI persona (see `disclosure` on the full story)."})
    digital_source_type = fields.Constant(DIGITAL_SOURCE_TYPE, required=True, metadata={
        "description": "The byline's AI disclosure for machines: the IPTC digital source type "
                       "`trainedAlgorithmicMedia` (written by an AI system), always this value.",
        "example": DIGITAL_SOURCE_TYPE})
    rev = fields.Integer(required=True, metadata={"description": "Revision number, 1 for the first filing."})
    url = computed_url(lambda p: links().story_page(p.slug),
                       metadata={"description": "Absolute URL of the story's page."})
    on_air_at = Timestamp(required=True, allow_none=True,
                          metadata={"description": "When the piece went on air (RFC 3339, UTC); null for a draft."})
    on_air = fields.Boolean(required=True, metadata={
        "description": "Always true on the public lane; false marks a draft (keyed lane)."})
    air_at = fields.Function(
        lambda p: _air_at(p), required=True, allow_none=True,
        metadata={"type": "string", "format": "date-time", "example": "2026-11-25T07:00:00Z",
                  "description": "Keyed lane: the instant a scheduled piece airs (RFC 3339, UTC); null "
                                 "when the piece is not scheduled (a draft, or already public). Always "
                                 "null on the public lane, which never shows a scheduled piece."})


def _air_at(piece, now=None) -> str | None:
    at = visibility.air_at(piece, now)
    return None if at is None else rfc3339(at)


class CitedFactOut(Schema):
    n = fields.Integer(required=True, metadata={"description": "The number N that prose marker `[^N]` refers to."})
    statement = fields.String(required=True)
    source = fields.String(required=True, metadata={"description": "The publisher."})
    instrument = fields.String(required=True, metadata={"description": "The instrument cited."})
    claim_key = fields.String(required=True, metadata={"description": "Pointer into the fact record."})


class PersonaRefOut(Schema):
    name = fields.String(required=True)
    slug = fields.String(required=True)
    title = fields.String(required=True)
    avatar = computed_url(lambda p: links().avatar(p.slug))
    declared_ai = fields.Constant(True, required=True, metadata={"description": "Always true."})


class StoryOut(StoryRowOut):
    """The full story: the row plus prose, cited facts and the persona disclosure."""

    prose = fields.String(required=True, metadata={
        "description": "Markdown with `[^N]` markers. Render them as footnotes; never strip them."})
    cited_facts = fields.List(fields.Nested(CitedFactOut), required=True)
    category = computed_text(lambda p: p.section.name, metadata={"description": "Equal to `section`."})
    image = fields.String(required=True, allow_none=True, metadata={"description": "The story's art (URL) or null."})
    persona = fields.Nested(PersonaRefOut, required=True)
    disclosure = computed_text(
        lambda p: disclosure(p.persona.name, g.paper.nameplate),
        metadata={"description": "States that the byline is an AI persona. Clients must show it."},
    )
    content_hash = fields.String(required=True, metadata={
        "description": "`sha256:` + hex; the proof is at `/api/v1/stories/{id}/proof` (keyed)."})


# A page's cursor as the API shows it (opaque; blueprints/api/paging.py makes them).
CURSOR_EXAMPLE = ("eyJwIjoxLCJmIjp7InN0YXR1cyI6Im9uX2FpciJ9LCJrIjpbMSwiMjAyNi0xMS0wMVQwODowMDowMC4wMDAwMDArMDA6"
                  "MDAiLDddfQ.x3PV1u5lQ2o7dT9m9c6dS9e6w8c")


class StoryListOut(Schema):
    stories = fields.List(fields.Nested(StoryRowOut), required=True)
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `stories`."})
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` for the rows after these (also in the `Link` header); "
                       "null on the last page.", "example": CURSOR_EXAMPLE})


def cursor_param() -> fields.String:
    """The `cursor` query parameter of a paged list."""
    return fields.String(validate=validate.Length(max=1000), metadata={
        "description": "Opaque: the `next_cursor` of the previous page (or the URL in its `Link` header). "
                       "Valid only on the same list, paper and filters; anything else is a 400.",
        "example": CURSOR_EXAMPLE})


class StoriesQuery(Schema):
    limit = fields.Integer(
        load_default=50,
        metadata={"description": "How many rows; any integer is accepted and clamped to 1-200.", "example": 20},
    )
    cursor = cursor_param()
    section = fields.String(validate=validate.Length(min=1, max=200), metadata={
        "description": "Only pieces of this section: its name as rows carry it in `section` (its slug "
                       "works too). A name that is no section of the paper is a 400.", "example": "World"})
    persona = fields.String(validate=validate.Length(min=1, max=200), metadata={
        "description": "Only pieces bylined by this persona: its `slug` on the masthead (its name works "
                       "too). A persona the paper does not have is a 400.", "example": "ada-quill"})
    status = fields.String(validate=validate.OneOf(("on_air", "draft", "all")), metadata={
        "description": "`on_air` (pieces on air, newest first), `draft` (pieces not on air, newest filed "
                       "first) or `all` (on air, then drafts). `draft` and `all` need a key (401 without); "
                       "an agent key sees only its own persona's drafts. Absent: `on_air` without a key, "
                       "`all` with one (the keyed list has always shown drafts).", "example": "draft"})


# --- the same wire shapes, straight from Core rows -------------------------------------------
# services/reading/stories.py `page` (`latest_rows`) and `find_row` feed these; they must give exactly
# what StoryRowOut and StoryOut dump (same keys, same order, same values), which
# tests/test_fast_paths.py checks on every lane and both databases. The schemas stay the
# documented contract (OpenAPI) and the shape of every other answer.

def story_row_wire(row, links: Links, now=None) -> dict:
    """StoryRowOut's dump of a row of `stories.ROW_COLUMNS`. `now` (aware UTC): the request's
    instant (visibility.request_now), passed once for a whole list; default: looked up."""
    # Unpacked by position (ROW_COLUMNS' order, which STORY_COLUMNS and the rails' rows begin
    # with): a Row's attribute lookup by name cost more than building the dict.
    id_, slug, headline, dek, section, byline, rev, on_air_at, on_air = row[:9]
    return {"id": str(id_), "slug": slug, "headline": headline, "dek": dek,
            "section": section, "byline": byline,
            "digital_source_type": DIGITAL_SOURCE_TYPE,
            "rev": rev,
            "url": links.story_page(slug),
            "on_air_at": None if on_air_at is None else rfc3339(on_air_at), "on_air": on_air,
            "air_at": _air_at(row, now) if on_air and on_air_at is not None else None}


def story_wire(row, facts, links: Links, nameplate: str) -> dict:
    """StoryOut's dump of a row of `stories.STORY_COLUMNS` and its facts (`FACT_COLUMNS`)."""
    wire = story_row_wire(row, links)
    wire.update({
        "prose": row.prose,
        "cited_facts": [{"n": f.n, "statement": f.statement, "source": f.source, "instrument": f.instrument,
                         "claim_key": f.claim_key} for f in facts],
        "category": row.section,
        "image": links.media(row.image),
        "persona": {"name": row.byline, "slug": row.persona_slug, "title": row.persona_title,
                    "avatar": links.avatar(row.persona_slug), "declared_ai": True},
        "disclosure": disclosure(row.byline, nameplate),
        "content_hash": row.content_hash,
    })
    return wire
