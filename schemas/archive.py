"""Sections and the day-by-day archive (section rows, day rows; docs/API.md "list responses"). Rows
come from services/reading/archive.py as plain dicts."""
from __future__ import annotations

from marshmallow import Schema, ValidationError, fields

from schemas.common import computed_url
from schemas.story import CURSOR_EXAMPLE, StoryRowOut, cursor_param
from services.reading.lookups import parse_day
from web.links import links

# A real calendar day in UTC written YYYY-MM-DD, nothing else: the OpenAPI pattern of what
# services.reading.lookups.parse_day enforces.
DAY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


class DayField(fields.Date):
    """A path or query day: exactly `YYYY-MM-DD`, and a real date. Documented as
    `{type: string, format: date, pattern: DAY_PATTERN}` so the OpenAPI document says what is
    enforced."""

    def __init__(self, **kwargs):
        metadata = {"pattern": DAY_PATTERN, **kwargs.pop("metadata", {})}
        super().__init__(metadata=metadata, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        day = parse_day(value)
        if day is None:
            raise ValidationError("Not a real day in the form YYYY-MM-DD.")
        return day


class DayPath(Schema):
    day = DayField(required=True, metadata={
        "description": "A UTC date, YYYY-MM-DD, that must exist on the calendar (2026-02-30 is a 400)."})


class SectionRowOut(Schema):
    name = fields.String(required=True,
                         metadata={"description": "The section name; stories carry it in `section` and `category`."})
    slug = fields.String(required=True)
    description = fields.String(required=True, metadata={"description": "May be empty."})
    count = fields.Integer(required=True, metadata={"description": "Pieces of this section on air."})
    url = computed_url(lambda row: links().section_page(row["slug"]),
                          metadata={"description": "Absolute URL of the section's page."})


class SectionListOut(Schema):
    sections = fields.List(fields.Nested(SectionRowOut), required=True,
                           metadata={"description": "Active sections in the paper's own order."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `sections`."})
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` for the sections after these; null on the last page.",
        "example": CURSOR_EXAMPLE})


class SectionsQuery(Schema):
    limit = fields.Integer(load_default=200, metadata={
        "description": "How many sections a page; any integer is accepted and clamped to 1-200.", "example": 50})
    cursor = cursor_param()


class DayRowOut(Schema):
    day = fields.Date(required=True, metadata={"description": "A UTC date (YYYY-MM-DD) on which pieces went on air."})
    count = fields.Integer(required=True,
                           metadata={"description": "Pieces that went on air that day and are on air now."})
    url = computed_url(lambda row: links().day_page(row["day"]),
                          metadata={"description": "Absolute URL of the back-issue page."})
    api = computed_url(lambda row: links().api(f"/days/{row['day'].isoformat()}"),
                          metadata={"description": "Absolute URL of `/api/v1/days/{day}`."})


class DayListOut(Schema):
    days = fields.List(fields.Nested(DayRowOut), required=True,
                       metadata={"description": "Newest day first; at most `limit` (366) days a page."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `days`."})
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` for the older days; null on the last page.", "example": CURSOR_EXAMPLE})


class DaysQuery(Schema):
    limit = fields.Integer(load_default=366, metadata={
        "description": "How many days a page; any integer is accepted and clamped to 1-366.", "example": 30})
    cursor = cursor_param()


class DayStoriesQuery(Schema):
    limit = fields.Integer(load_default=200, metadata={
        "description": "How many rows a page; any integer is accepted and clamped to 1-200.", "example": 50})
    cursor = cursor_param()


class DayStoriesOut(Schema):
    day = fields.Date(required=True, metadata={"description": "The day asked for (YYYY-MM-DD, UTC)."})
    stories = fields.List(fields.Nested(StoryRowOut), required=True, metadata={
        "description": "Pieces that went on air that day, newest first; empty for a day with nothing on air."})
    count = fields.Integer(required=True, metadata={"description": "Number of rows in `stories`."})
    next_cursor = fields.String(required=True, allow_none=True, metadata={
        "description": "Pass as `cursor` for the day's older pieces; null on the last page.",
        "example": CURSOR_EXAMPLE})
