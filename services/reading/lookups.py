"""Finding one row of a paper by what a URL names: a section or persona by slug, a day by its
`YYYY-MM-DD` text. The single copy of each, used by the reader pages, the desk API, the avatar
route and the schemas' day field alike.

Each lookup answers None for anything that cannot name a row (too long, a NUL, not a calendar
day) without asking the database: PostgreSQL refuses NUL in text parameters, and an over-long
slug cannot exist (the slug columns are `String(80)` and `String(120)`).
"""
from __future__ import annotations

import re
from datetime import date

from sqlalchemy import select

from extensions import db
from models import Paper, Persona, Section

# ASCII digits only: `\d` would also match other scripts' digits.
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)
SECTION_SLUG_MAX = 80
PERSONA_SLUG_MAX = 120


def parse_day(text: object) -> date | None:
    """`'2026-11-01'` -> `date(2026, 11, 1)`. None for anything that is not a string naming a
    real calendar day as exactly `YYYY-MM-DD` (`'2026-02-30'`, `'2026-1-1'`, `'20261101'`,
    `'2026-11-01\\n'`, `'today'`, a non-string). Never raises."""
    if not isinstance(text, str) or not _DAY.fullmatch(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _plausible(slug: str, longest: int) -> bool:
    return bool(slug) and len(slug) <= longest and "\x00" not in slug


def find_section(paper: Paper, slug: str, *, active_only: bool) -> Section | None:
    """The section of `paper` with this slug, or None. `active_only`: retired sections count as
    absent (reader pages); the desk passes False to reach them too. At most one query."""
    if not _plausible(slug, SECTION_SLUG_MAX):
        return None
    query = select(Section).where(Section.paper_id == paper.id, Section.slug == slug)
    if active_only:
        query = query.where(Section.active.is_(True))
    return db.session.scalar(query)


def find_persona(paper: Paper, slug: str) -> Persona | None:
    """Any persona of `paper` with this slug, retired ones too (old bylines still point at their
    portraits, and the desk edits them), or None. At most one query."""
    if not _plausible(slug, PERSONA_SLUG_MAX):
        return None
    return db.session.scalar(select(Persona).where(Persona.paper_id == paper.id, Persona.slug == slug))
