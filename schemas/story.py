"""Story rows and full stories (docs/API.md "story row", "full story"). Views hand these schemas
`Piece` rows with `section` and `persona` loaded."""
from __future__ import annotations

from typing import NamedTuple

from flask import g
from marshmallow import Schema, fields, validate

from models import Piece
from models.clock import rfc3339
from schemas.common import AnyOf, Timestamp, Written, text
from schemas.common import url as url_field
from services.links import Links
from services.newsroom import figures
from services.reading import visibility
from services.rendering.prose import DIGITAL_SOURCE_TYPE, disclosure
from web.caching import request_now
from web.links import links


class StoryRowOut(Written):
    """One entry of a story list. Written by `story_row_wire` (below), from an ORM `Piece`
    (section and persona loaded) or a Core row of services/reading/stories.py ROW_COLUMNS."""

    id = text(metadata={"description": "Use on `/api/v1/stories/{id}`."})
    slug = fields.String(required=True, metadata={"description": "Also accepted on `/api/v1/stories/{id}`."})
    headline = fields.String(required=True)
    dek = fields.String(required=True, metadata={"description": "The standfirst."})
    section = text(metadata={"description": "The section name."})
    byline = text(metadata={"description": "A declared AI persona (see `disclosure` on the full story)."})
    digital_source_type = fields.Constant(DIGITAL_SOURCE_TYPE, required=True, metadata={
        "description": "The byline's AI disclosure for machines: the IPTC digital source type "
                       "`trainedAlgorithmicMedia` (written by an AI system), always this value.",
        "example": DIGITAL_SOURCE_TYPE})
    rev = fields.Integer(required=True, metadata={"description": "Revision number, 1 for the first filing."})
    url = url_field(metadata={"description": "Absolute URL of the story's page."})
    on_air_at = Timestamp(required=True, allow_none=True,
                          metadata={"description": "When the piece went on air (RFC 3339, UTC); null for a draft."})
    on_air = fields.Boolean(required=True, metadata={
        "description": "Always true on the public lane; false marks a draft (keyed lane)."})
    air_at = fields.String(
        required=True, allow_none=True,
        metadata={"format": "date-time", "example": "2026-11-25T07:00:00Z",
                  "description": "Keyed lane: the instant a scheduled piece airs (RFC 3339, UTC); null "
                                 "when the piece is not scheduled (a draft, or already public). Always "
                                 "null on the public lane, which never shows a scheduled piece."})

    def write(self, obj) -> dict:
        return story_row_wire(as_row(obj), links(), request_now())


class CitedFactOut(Schema):
    n = fields.Integer(required=True, metadata={"description": "The number N that prose marker `[^N]` refers to."})
    statement = fields.String(required=True)
    source = fields.String(required=True, metadata={"description": "The publisher."})
    instrument = fields.String(required=True, metadata={"description": "The instrument cited."})
    claim_key = fields.String(required=True, metadata={"description": "Pointer into the fact record."})


class NoticeOut(Schema):
    """A public notice: one revision of a piece readers had seen."""

    rev = fields.Integer(required=True, metadata={"description": "The revision that made the change."})
    kind = fields.String(required=True, metadata={
        "description": "`correction`, `clarification`, `update` or `retraction`.", "example": "correction"})
    note = fields.String(required=True, metadata={"description": "Plain text: what changed and why."})
    at = Timestamp(required=True, metadata={"description": "When the revision was filed (RFC 3339, UTC)."})


class PersonaRefOut(Schema):
    name = fields.String(required=True)
    slug = fields.String(required=True)
    title = fields.String(required=True)
    avatar = url_field()
    declared_ai = fields.Constant(True, required=True, metadata={"description": "Always true."})


class StoryOut(StoryRowOut):
    """The full story: the row plus prose, cited facts and the persona disclosure. Written by
    `story_wire` (below), from an ORM `Piece` or a Core row of STORY_COLUMNS with its facts."""

    prose = fields.String(required=True, metadata={
        "description": "Markdown with `[^N]` markers. Render them as footnotes; never strip them."})
    cited_facts = fields.List(fields.Nested(CitedFactOut), required=True)
    category = text(metadata={"description": "Equal to `section`."})
    image = fields.String(required=True, allow_none=True, metadata={"description": "The story's art (URL) or null."})
    persona = fields.Nested(PersonaRefOut, required=True)
    disclosure = text(metadata={"description": "States that the byline is an AI persona. Clients must show it."})
    content_hash = fields.String(required=True, metadata={
        "description": "`sha256:` + hex; the proof is at `/api/v1/stories/{id}/proof` (keyed)."})
    kind = fields.String(required=True, allow_none=True, metadata={
        "description": "What this revision is (docs/CORRECTIONS.md): `edit`, `correction`, `clarification`, "
                       "`update` or `retraction`; null for a first filing. Part of the hash basis.",
        "example": "correction"})
    note = fields.String(required=True, allow_none=True, metadata={
        "description": "This revision's public note (plain text); null for a first filing. Part of the "
                       "hash basis."})
    corrections = fields.List(fields.Nested(lambda: NoticeOut()), required=True, metadata={
        "description": "Every correction, clarification, update and retraction of the piece, oldest first; "
                       "the texts before each are at `/api/v1/stories/{id}/revisions`."})

    def write(self, obj) -> dict:
        facts = sorted(obj.cited_facts, key=lambda fact: fact.n)
        return story_wire(as_row(obj), facts, links(), g.paper.nameplate, request_now())


class FigureOut(Schema):
    """A figure of the filed text that no cited fact states (services/newsroom/figures.py)."""

    field = fields.String(required=True, metadata={"description": "`headline`, `dek` or `prose`.",
                                                   "example": "headline"})
    start = fields.Integer(required=True,
                           metadata={"description": "Where it starts in that field (characters, from 0)."})
    end = fields.Integer(required=True, metadata={"description": "Where it ends (exclusive)."})
    figure = fields.String(required=True, metadata={"description": "The figure as written.", "example": "32 metres"})


class FiledStoryOut(StoryOut):
    """The answer to a filing or a revision: the full story, and the figures of its text that no
    cited fact states."""

    unsupported_figures = fields.List(fields.Nested(FigureOut), required=True, metadata={
        "description": "Every number with a unit, a percent or a currency sign in the headline, dek and "
                       "prose that no cited fact's statement states: check each against the facts. Empty "
                       "when all match. A paper whose config sets `refuse_unsupported_figures` refuses such "
                       "a filing instead (422, each figure named)."})

    def write(self, obj) -> dict:
        wire = super().write(obj)
        wire["unsupported_figures"] = figures.unsupported(
            wire, [{"statement": fact["statement"]} for fact in wire["cited_facts"]])
        return wire


# A page's cursor as the API shows it (opaque; blueprints/api/paging.py makes them).
CURSOR_EXAMPLE = ("eyJwIjoxLCJmIjp7InN0YXR1cyI6Im9uX2FpciJ9LCJrIjpbMSwiMjAyNi0xMS0wMVQwODowMDowMC4wMDAwMDArMDA6"
                  "MDAiLDddfQ.x3PV1u5lQ2o7dT9m9c6dS9e6w8c")


class StoryListOut(Schema):
    stories = fields.List(AnyOf("StoryRowOut", "StoryOut"), required=True, metadata={
        "description": "Story rows; with `full=true`, full stories (the shape of `/api/v1/stories/{id}`)."})
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
    full = fields.Boolean(load_default=False, metadata={
        "description": "`true`: each row is the full story, exactly as `/api/v1/stories/{id}` answers it "
                       "(the row's fields plus `prose`, `cited_facts`, `category`, `image`, `persona`, "
                       "`disclosure`, `content_hash`): a mirror or a log monitor (`flask log verify`) reads "
                       "every piece in pages instead of one request each. Heavier pages; the same walk "
                       "and cursors.", "example": True})
    status = fields.String(validate=validate.OneOf(("on_air", "draft", "all")), metadata={
        "description": "`on_air` (pieces on air, newest first), `draft` (pieces not on air, newest filed "
                       "first) or `all` (on air, then drafts). `draft` and `all` need a key (401 without); "
                       "an agent key sees only its own persona's drafts. Absent: `on_air` without a key, "
                       "`all` with one (the keyed list has always shown drafts).", "example": "draft"})


# --- the one writer of each story shape --------------------------------------------------------
# StoryRowOut and StoryOut document these shapes (OpenAPI) and dump through them; the reading
# paths (services/reading/stories.py `page`, `find_row`) hand them Core rows directly, and the
# writes hand ORM pieces through the schemas (`as_row`). tests/test_fast_paths.py holds the keys
# each writer makes to the fields its schema documents.

class StoryRow(NamedTuple):
    """An ORM piece in the shape of a Core row of STORY_COLUMNS (ROW_COLUMNS first)."""

    id: int
    slug: str
    headline: str
    dek: str
    section: str
    byline: str
    rev: int
    on_air_at: object
    on_air: bool
    prose: str
    image: str | None
    content_hash: str
    persona_slug: str
    persona_title: str
    notices: list | None


def as_row(obj):
    """`obj` as the story writers read it: a Core row as it is, an ORM `Piece` (its section and
    persona loaded) as a StoryRow."""
    if not isinstance(obj, Piece):
        return obj
    return StoryRow(obj.id, obj.slug, obj.headline, obj.dek, obj.section.name, obj.persona.name, obj.rev,
                    obj.on_air_at, obj.on_air, obj.prose, obj.image, obj.content_hash, obj.persona.slug,
                    obj.persona.title, obj.notices)


def story_row_wire(row, links: Links, now) -> dict:
    """StoryRowOut's dump of a row of `stories.ROW_COLUMNS`. `now` (aware UTC): the instant its
    row was read at (the request's: web/caching.py `request_now`), which `air_at` is judged at;
    taken once for a whole list."""
    # Unpacked by position (ROW_COLUMNS' order, which STORY_COLUMNS and the rails' rows begin
    # with): a Row's attribute lookup by name cost more than building the dict.
    id_, slug, headline, dek, section, byline, rev, on_air_at, on_air = row[:9]
    air_at = visibility.air_at(on_air, on_air_at, now)
    return {"id": str(id_), "slug": slug, "headline": headline, "dek": dek,
            "section": section, "byline": byline,
            "digital_source_type": DIGITAL_SOURCE_TYPE,
            "rev": rev,
            "url": links.story_page(slug),
            "on_air_at": None if on_air_at is None else rfc3339(on_air_at), "on_air": on_air,
            "air_at": None if air_at is None else rfc3339(air_at)}


def story_wire(row, facts, links: Links, nameplate: str, now) -> dict:
    """StoryOut's dump of a row of `stories.STORY_COLUMNS` and its facts (`FACT_COLUMNS`); `now`
    as for `story_row_wire`."""
    wire = story_row_wire(row, links, now)
    # By position, as in story_row_wire (STORY_COLUMNS' order; StoryRow's for an ORM piece).
    _, _, _, _, section, byline, rev, _, _, prose, image, content_hash, persona_slug, persona_title, notices = row[:15]
    wire.update({
        "prose": prose,
        "cited_facts": [{"n": f.n, "statement": f.statement, "source": f.source, "instrument": f.instrument,
                         "claim_key": f.claim_key} for f in facts],
        "category": section,
        "image": links.media(image),
        "persona": {"name": byline, "slug": persona_slug, "title": persona_title,
                    "avatar": links.avatar(persona_slug), "declared_ai": True},
        "disclosure": disclosure(byline, nameplate),
        "content_hash": content_hash,
        **revision_notices(rev, notices),
    })
    return wire


def revision_notices(rev: int, notices: list | None) -> dict:
    """`kind` and `note` of revision `rev` (null for a first filing) and the piece's public
    `corrections` (every typed revision but the private `edit`s), from a piece's `notices`."""
    notices = notices or []
    current = next((n for n in notices if n["rev"] == rev), None)
    return {"kind": current["kind"] if current else None, "note": current["note"] if current else None,
            "corrections": [n for n in notices if n["kind"] != "edit"]}
