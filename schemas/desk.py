"""Bodies of the filing desk's writes and the shapes they answer with (docs/API.md "writes").

Every input schema rejects unknown fields (marshmallow's RAISE, documented as
`additionalProperties: false`), and every constraint below is exactly what the service enforces:
string lengths match the columns, integers fit them, booleans and integers are JSON's own types
(no `"true"`, no `1` for true, no `1.0` for 1), and text never holds a NUL character, which
PostgreSQL cannot store.
"""
from __future__ import annotations

import math
import re

from marshmallow import Schema, ValidationError, fields, validate

from models.paper import INDEX_STYLES, SUBSCRIBE_PATHS
from schemas.common import Timestamp, computed_url
from services.newsroom.filing import KINDS, MAX_FACTS, NOTE_MAX, REFUSE_FIGURES
from web.links import links

NO_NUL = r"^[^\x00]*$"
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
CONFIG_DEPTH = 8


def _no_nul(value: str) -> None:
    # Lone surrogates can arrive through JSON `\ud800` escapes; neither database can store them.
    if "\x00" in value or any("\ud800" <= ch <= "\udfff" for ch in value):
        raise ValidationError("must not contain NUL characters or unpaired surrogates")


class Text(fields.String):
    """A string of `min_length`..`max_length` characters without NUL (documented as `pattern`)."""

    def __init__(self, *, max_length: int | None = None, min_length: int | None = None, **kwargs):
        metadata = {"pattern": NO_NUL, **kwargs.pop("metadata", {})}
        validators = [_no_nul]
        if max_length is not None or min_length is not None:
            validators.insert(0, validate.Length(min=min_length, max=max_length))
        super().__init__(validate=validators, metadata=metadata, **kwargs)


# Characters no header line may hold: C0 and C1 controls (CR and LF among them), DEL, and the
# Unicode line and paragraph separators.
ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]*$"
_BREAKS = re.compile(ONE_LINE.replace("^[^", "[", 1).replace("]*$", "]", 1))


def _one_line(value: str) -> None:
    # These values are written into mail headers (From, Subject, List-Id); a line break there
    # would add headers of the sender's choosing, so it is refused here, not just cleaned later.
    if _BREAKS.search(value):
        raise ValidationError("must be one line: no line breaks or other control characters")


class OneLine(Text):
    """`Text` on one line: no control characters at all (no CR, LF, tab; documented as `pattern`).
    For names that end up in mail headers."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.metadata["pattern"] = ONE_LINE
        self.validators.append(_one_line)


class StrictInt(fields.Integer):
    """A JSON integer: floats, strings and booleans are refused."""

    def __init__(self, **kwargs):
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class StrictBool(fields.Boolean):
    """A JSON boolean: `true` or `false` only (marshmallow would also take 1, "yes", "on")."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def HttpUrl(**kwargs) -> fields.URL:
    """An absolute http(s) URL of at most 2000 characters."""
    return fields.URL(schemes={"http", "https"}, require_tld=False,
                      validate=validate.Length(max=2000), **kwargs)


def _check_json(value, depth: int = 0) -> None:
    """Reject what neither JSON column can hold faithfully: NUL text, non-finite numbers, and
    nesting deeper than CONFIG_DEPTH."""
    if depth > CONFIG_DEPTH:
        raise ValidationError(f"nested deeper than {CONFIG_DEPTH} levels")
    if isinstance(value, str):
        _no_nul(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValidationError("numbers must be finite")
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key)
            _check_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth + 1)


def _check_config(value: dict) -> None:
    _check_json(value)
    help_desk = value.get("help_desk")
    if help_desk is not None and not (
        isinstance(help_desk, str) and help_desk.startswith(("mailto:", "https://", "http://"))
    ):
        raise ValidationError("help_desk must be a mailto: address or an http(s) URL")
    refuse = value.get(REFUSE_FIGURES)
    if refuse is not None and not isinstance(refuse, bool):
        # Only `true` refuses (filing.check_figures): a "yes" or a 1 stored would refuse nothing.
        raise ValidationError(f"{REFUSE_FIGURES} must be true or false (or null to remove it)")


# ----------------------------------------------------------------------------- stories


class CitedFactIn(Schema):
    n = StrictInt(validate=validate.Range(min=1, max=MAX_FACTS),
                  metadata={"description": "Optional; when given, facts must be numbered 1..k in order."})
    statement = Text(required=True, min_length=1, max_length=4000)
    source = Text(required=True, min_length=1, max_length=300, metadata={"description": "The publisher."})
    instrument = Text(required=True, min_length=1, max_length=300, metadata={"description": "The instrument cited."})
    claim_key = Text(required=True, min_length=1, max_length=300,
                     metadata={"description": "Pointer into the fact record."})


class StoryPatch(Schema):
    """A revision: only the fields given change; every `[^N]` marker must still have fact N."""

    headline = Text(min_length=1, max_length=300)
    dek = Text(max_length=600, metadata={"description": "The standfirst; may be empty."})
    prose = Text(min_length=1, max_length=50_000,
                 metadata={"description": "Markdown; every `[^N]` marker needs cited fact N."})
    section = Text(min_length=1, max_length=80, metadata={"description": "An active section's name."})
    byline = Text(min_length=1, max_length=120, metadata={
        "description": "An active persona's name. An agent key files only as its own persona."})
    cited_facts = fields.List(fields.Nested(CitedFactIn), validate=validate.Length(max=MAX_FACTS),
                              metadata={"description": f"Numbered 1..k in order (at most {MAX_FACTS}); "
                                                       "marker `[^N]` refers to entry N."})
    image = HttpUrl(allow_none=True, metadata={"description": "The story's art, or null."})
    kind = fields.String(validate=validate.OneOf(KINDS), metadata={
        "description": "What this revision is (docs/CORRECTIONS.md): `edit` for a piece never public "
                       "(the default then); `correction`, `clarification`, `update` (the default once "
                       "public) or `retraction` for one readers have seen. Signed with the revision, "
                       "logged, and shown to readers.", "example": "correction"})
    note = Text(max_length=NOTE_MAX, metadata={
        "description": f"The public note of the revision, plain text (at most {NOTE_MAX} characters): "
                       "required for a correction, clarification or retraction.",
        "example": "An earlier version gave the ice front's retreat as 32 metres; it was 157 metres."})


class StoryIn(StoryPatch):
    """A new draft. `byline` is required for an admin key; an agent key may omit it."""

    class Meta:
        # A first filing is no revision: it has no kind and no note.
        exclude = ("kind", "note")

    headline = Text(required=True, min_length=1, max_length=300)
    dek = Text(load_default="", max_length=600, metadata={"description": "The standfirst; may be empty."})
    prose = Text(required=True, min_length=1, max_length=50_000,
                 metadata={"description": "Markdown; every `[^N]` marker needs cited fact N."})
    section = Text(required=True, min_length=1, max_length=80,
                   metadata={"description": "An active section's name."})
    cited_facts = fields.List(fields.Nested(CitedFactIn), load_default=list,
                              validate=validate.Length(max=MAX_FACTS),
                              metadata={"description": f"Numbered 1..k in order (at most {MAX_FACTS}); "
                                                       "marker `[^N]` refers to entry N."})
    image = HttpUrl(allow_none=True, load_default=None, metadata={"description": "The story's art, or null."})


# ----------------------------------------------------------------------------- the cast


# Characters of an edition's transcript: an hour of speech is about 60,000, and that many fit the
# 64 KiB body limit with the rest of the edition (tests/test_openapi_served.py): a longer maximum
# would promise what the server refuses with 413.
TRANSCRIPT_MAX = 60_000


class CastIn(Schema):
    day = fields.Date(required=True, metadata={"description": "The UTC day of the edition (YYYY-MM-DD); one per day."})
    title = Text(required=True, min_length=1, max_length=300)
    summary = Text(load_default="", max_length=4000)
    video_url = HttpUrl(required=True)
    poster_url = HttpUrl(required=True)
    mime_type = fields.String(load_default="video/mp4", validate=[
        validate.Length(max=80), validate.Regexp(r"^(video|audio)/[A-Za-z0-9.+-]+$")])
    length_bytes = StrictInt(load_default=0, validate=validate.Range(min=0, max=INT64_MAX),
                             metadata={"description": "Size of the video file, for podcast enclosures."})
    duration_seconds = StrictInt(load_default=0, validate=validate.Range(min=0, max=INT32_MAX))
    captions = HttpUrl(
        allow_none=True, load_default=None, attribute="captions_url",
        metadata={"description": "WebVTT captions of the video (`text/vtt`), in the paper's language; "
                                 "shown as the player's `<track kind=\"captions\">`. Null: none.",
                  "example": "https://demo.example.com/media/captions-2026-11-22.vtt"})
    transcript = Text(
        load_default="", max_length=TRANSCRIPT_MAX,
        metadata={"description": "What the video says, as plain text (blank lines part paragraphs); "
                                 "printed under the player on the edition page (WCAG 1.2.2). At most "
                                 f"{TRANSCRIPT_MAX:,} characters (about an hour of speech), which fit "
                                 "the 64 KiB body limit as plain ASCII; a character outside ASCII "
                                 "takes 2-4 bytes (6 or 12 escaped), and a body over 64 KiB is "
                                 "refused with 413 before it is read.",
                  "example": "Good evening. Here are the day's pieces from the desk."})


def edition_media(attribute: str, description: str, example: str, *, nullable: bool = True) -> fields.Function:
    """An edition's stored media URL as an absolute URL on the host asked (`Links.media`: the
    demo stores paths on the paper's host), or null when the edition has none."""
    return fields.Function(lambda e: links().media(getattr(e, attribute)), required=True,
                           allow_none=nullable, metadata={"type": "string", "format": "uri",
                                                          "description": description, "example": example})


class EditionMediaOut(Schema):
    """The media fields every edition answer carries (the write's and the cast list's)."""

    video_url = edition_media(
        "video_url", "The video; null for a poster-only edition (its page shows the poster and "
                     "the transcript).", "https://demo.example.com/media/edition.mp4")
    poster_url = edition_media(
        "poster_url", "The 16:9 poster picture.", "https://demo.example.com/media/poster.jpg",
        nullable=False)
    captions = edition_media(
        "captions_url", "WebVTT captions of the video, or null.",
        "https://demo.example.com/media/captions.vtt")
    transcript = fields.String(required=True, metadata={
        "description": "What the video says, as plain text; empty when not given.",
        "example": "Good evening. Here are the day's pieces from the desk."})


class EditionOut(EditionMediaOut):
    day = fields.Date(required=True)
    title = fields.String(required=True)
    summary = fields.String(required=True)
    mime_type = fields.String(required=True)
    length_bytes = fields.Integer(required=True)
    duration_seconds = fields.Integer(required=True)
    published_at = Timestamp(required=True)
    url = computed_url(lambda e: links().edition_page(e.day),
                          metadata={"description": "Absolute URL of the edition's page."})


# ----------------------------------------------------------------------------- sections


_POSITION = {"description": "0-based place in the paper's order; others shift to make room. "
                            "Past the end means last."}


class SectionPatch(Schema):
    name = OneLine(min_length=1, max_length=80,
                   metadata={"description": "The string stories carry in `section` and `category`."})
    description = Text(max_length=4000)
    position = StrictInt(validate=validate.Range(min=0, max=10_000), metadata=_POSITION)
    active = StrictBool(metadata={"description": "An inactive section takes no new filings."})


class SectionIn(SectionPatch):
    name = OneLine(required=True, min_length=1, max_length=80,
                   metadata={"description": "The string stories carry in `section` and `category`."})


class SectionOut(Schema):
    name = fields.String(required=True)
    slug = fields.String(required=True, metadata={"description": "Stable: a rename keeps it."})
    description = fields.String(required=True)
    position = fields.Integer(required=True)
    active = fields.Boolean(required=True)
    url = computed_url(lambda s: links().section_page(s.slug))


# ----------------------------------------------------------------------------- personas


class PersonaPatch(Schema):
    name = OneLine(min_length=1, max_length=120, metadata={"description": "The byline."})
    title = OneLine(max_length=120)
    beat = Text(max_length=200)
    bio = Text(max_length=4000)
    position = StrictInt(validate=validate.Range(min=0, max=10_000), metadata=_POSITION)
    active = StrictBool(metadata={"description": "An inactive persona files nothing and leaves the masthead."})
    declared_ai = StrictBool(validate=validate.Equal(True), metadata={
        "description": "Every persona is a declared AI persona; only `true` is accepted."})


class PersonaIn(PersonaPatch):
    name = OneLine(required=True, min_length=1, max_length=120, metadata={"description": "The byline."})


class PersonaOut(Schema):
    name = fields.String(required=True)
    slug = fields.String(required=True, metadata={"description": "Stable: a rename keeps it (and the avatar URL)."})
    title = fields.String(required=True)
    beat = fields.String(required=True)
    bio = fields.String(required=True)
    position = fields.Integer(required=True)
    active = fields.Boolean(required=True)
    avatar = computed_url(lambda p: links().avatar(p.slug))
    declared_ai = fields.Constant(True, required=True, metadata={"description": "Always true."})


# ----------------------------------------------------------------------------- config


class ConfigPatch(Schema):
    nameplate = OneLine(min_length=1, max_length=200, metadata={"description": "One line: it is the "
                        "display name and subject of the paper's mail."})
    motto = Text(max_length=300)
    description = Text(max_length=4000)
    is_public = StrictBool(metadata={"description": "A private paper answers its public lane with 404."})
    index_style = fields.String(validate=validate.OneOf(INDEX_STYLES))
    subscribe_path = fields.String(validate=validate.OneOf(SUBSCRIBE_PATHS))
    config = fields.Dict(keys=fields.String(), validate=_check_config, metadata={
        "description": "Merged into the stored config (RFC 7396 style, one level): a key set to "
                       "null is removed. `help_desk` (mailto: or http(s) URL) feeds `search_help`; "
                       "`lead_story` is checked as the field of that name is; `refuse_unsupported_figures` "
                       "is true or false."})
    lead_story = Text(min_length=1, max_length=200, allow_none=True, metadata={
        "description": "The editor's choice of lead for the front page: a piece id (as text) or "
                       "slug of this paper (422 otherwise), stored as `config.lead_story`; null "
                       "removes the choice. The front (`/`, `/api/v1/front`) leads with that piece "
                       "while it is on air, and with the newest piece on air otherwise (a draft "
                       "may be chosen: it leads once it airs).",
        "example": "rates-rise-again-as-the-central-bank-tightens"})


class KeySummaryOut(Schema):
    prefix = fields.String(required=True)
    kind = fields.String(required=True)
    label = fields.String(required=True)
    persona = fields.Function(lambda k: k.persona.name if k.persona else None, required=True, allow_none=True)
    capabilities = fields.List(fields.String(), required=True)
    created_at = Timestamp(required=True)
    revoked_at = Timestamp(required=True, allow_none=True)
    last_used_at = Timestamp(required=True, allow_none=True)


class ConfigOut(Schema):
    """The config as read; an admin key also sees the paper's desk keys (never the keys themselves)
    and the whole `config` object, read and agent keys its public part."""

    paper = fields.String(required=True, metadata={"description": "The paper's slug."})
    nameplate = fields.String(required=True)
    motto = fields.String(required=True)
    description = fields.String(required=True)
    host = fields.String(required=True, allow_none=True, metadata={"description": "Custom host, if any."})
    is_public = fields.Boolean(required=True)
    index_style = fields.String(required=True)
    subscribe_path = fields.String(required=True)
    config = fields.Dict(required=True, metadata={
        "description": "Admin keys: the whole stored config. Read and agent keys: its public part "
                       "only (string values of timezone, language, help_desk, contact_email, "
                       "podcast_image); integration settings and credentials stay with admin."})
    desk_keys = fields.List(fields.Nested(KeySummaryOut), metadata={
        "description": "Admin keys only: the paper's desk keys (prefix, kind, label; never the key)."})


class AirIn(Schema):
    """Put a piece on air now, or schedule it: the body is optional (no body airs now)."""

    at = fields.AwareDateTime(
        format="iso", allow_none=True,
        metadata={"description": "RFC 3339 instant with an offset. Later than now: the piece is scheduled "
                                 "and is on no public surface until then. Absent, null or past: it airs now.",
                  "example": "2026-11-25T07:00:00Z"})
