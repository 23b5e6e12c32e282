"""The desk's writes besides filing: sections, personas, the paper's config and video editions.

docs/API.md "writes". Each function validates what the schema cannot (uniqueness), writes,
moves the paper's version (so public ETags and caches go stale) and flushes; the request or the
CLI commits once. A clash raises services.errors.Conflict (409). Names and slugs are unique per
paper, and a slug never changes after creation (a rename keeps page and avatar URLs stable).
"""
from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from extensions import db
from models import DeskKey, Edition, Paper, Persona, Section
from models.clock import utcnow
from services.errors import Conflict
from services.newsroom.filing import lock_paper, slugify
from services.reading.front import public_config

CONFIG_FIELDS = ("nameplate", "motto", "description", "is_public", "index_style", "subscribe_path")


def _flush(what: str) -> None:
    # Two requests racing past the uniqueness check meet the database's unique constraint. The
    # session is unusable after that; the caller's commit point rolls it back.
    try:
        db.session.flush()
    except IntegrityError as exc:
        raise Conflict(f"{what} already exists") from exc


def _place(rows: list, target, position: int | None) -> None:
    """Put `target` at 0-based `position` among `rows` (all of one paper, in order; target may
    be among them) and renumber 0..n-1. `position` None keeps target's place, or appends it."""
    others = [row for row in rows if row is not target]
    if position is None:
        position = rows.index(target) if target in rows else len(others)
    others.insert(min(max(position, 0), len(others)), target)
    for i, row in enumerate(others):
        row.position = i


# ----------------------------------------------------------------------------- sections


def _ordered_sections(paper: Paper) -> list[Section]:
    return list(db.session.scalars(
        select(Section).where(Section.paper_id == paper.id).order_by(Section.position, Section.id)))


def _check_free(model, paper: Paper, *, name: str, own_id: int | None) -> None:
    query = select(model.name).where(model.paper_id == paper.id, model.name == name)
    if own_id is not None:
        query = query.where(model.id != own_id)
    if db.session.scalar(query) is not None:
        raise Conflict(f"a {model.__name__.lower()} named {name!r} already exists")


def _free_slug(model, paper: Paper, name: str, max_length: int) -> str:
    """A slug for `name` no row of `model` on this paper holds: 'sport', else 'sport-2', ..."""
    base = slugify(name, max_length=max_length - 4, fallback=model.__name__.lower())
    taken = set(db.session.scalars(
        select(model.slug).where(model.paper_id == paper.id, model.slug.startswith(base))))
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    return slug


def create_section(paper: Paper, *, name: str, description: str = "", position: int | None = None,
                   active: bool = True) -> Section:
    """Add a section at `position` (default: last). Raises Conflict for a taken name; a taken
    slug gets a number ('sport-2')."""
    _check_free(Section, paper, name=name, own_id=None)
    slug = _free_slug(Section, paper, name, max_length=80)
    rows = _ordered_sections(paper)
    section = Section(paper_id=paper.id, name=name, slug=slug, description=description,
                      active=active)
    db.session.add(section)
    _place(rows, section, position)
    paper.bump()
    _flush("that section")
    return section


def update_section(paper: Paper, section: Section, changes: dict) -> Section:
    """Apply `changes` (name, description, position, active). Raises Conflict for a taken name."""
    if "name" in changes and changes["name"] != section.name:
        _check_free(Section, paper, name=changes["name"], own_id=section.id)
    for name in ("name", "description", "active"):
        if name in changes:
            setattr(section, name, changes[name])
    if "position" in changes:
        _place(_ordered_sections(paper), section, changes["position"])
    paper.bump()
    _flush("that section")
    return section


# ----------------------------------------------------------------------------- personas


def _ordered_personas(paper: Paper) -> list[Persona]:
    return list(db.session.scalars(
        select(Persona).where(Persona.paper_id == paper.id).order_by(Persona.position, Persona.id)))


def create_persona(paper: Paper, fields: dict) -> Persona:
    """Add a declared AI persona (name, title, beat, bio, active, position). Raises Conflict for
    a taken name (a taken slug gets a number). `declared_ai` is not stored: it is always true."""
    name = fields["name"]
    _check_free(Persona, paper, name=name, own_id=None)
    slug = _free_slug(Persona, paper, name, max_length=120)
    rows = _ordered_personas(paper)
    persona = Persona(paper_id=paper.id, name=name, slug=slug, title=fields.get("title", ""),
                      beat=fields.get("beat", ""), bio=fields.get("bio", ""),
                      active=fields.get("active", True))
    db.session.add(persona)
    _place(rows, persona, fields.get("position"))
    paper.bump()
    _flush("that persona")
    return persona


def update_persona(paper: Paper, persona: Persona, changes: dict) -> Persona:
    """Apply `changes` (name, title, beat, bio, active, position). Raises Conflict for a taken
    name."""
    if "name" in changes and changes["name"] != persona.name:
        _check_free(Persona, paper, name=changes["name"], own_id=persona.id)
    for name in ("name", "title", "beat", "bio", "active"):
        if name in changes:
            setattr(persona, name, changes[name])
    if "position" in changes:
        _place(_ordered_personas(paper), persona, changes["position"])
    paper.bump()
    _flush("that persona")
    return persona


# ----------------------------------------------------------------------------- config


def config_of(paper: Paper, *, with_keys: bool = False, full: bool = True) -> dict:
    """The config as read (nameplate, motto, description, host, is_public, index_style,
    subscribe_path, config); `with_keys` adds the paper's desk keys (admin view, one query).
    `full` False gives only the public part of `config` (front.public_config, an allow-list):
    integration settings and credentials stay with the admin view."""
    body = {"paper": paper.slug, "nameplate": paper.nameplate, "motto": paper.motto or "",
            "description": paper.description or "", "host": paper.host,
            "is_public": paper.is_public, "index_style": paper.index_style,
            "subscribe_path": paper.subscribe_path,
            "config": dict(paper.config or {}) if full else public_config(paper)}
    if with_keys:
        body["desk_keys"] = list(db.session.scalars(
            select(DeskKey).where(DeskKey.paper_id == paper.id)
            .options(joinedload(DeskKey.persona)).order_by(DeskKey.created_at, DeskKey.id)))
    return body


def update_config(paper: Paper, changes: dict) -> Paper:
    """Apply `changes` to the paper: the CONFIG_FIELDS as given, and `config` merged one level
    deep (a key set to None is removed)."""
    for name in CONFIG_FIELDS:
        if name in changes:
            setattr(paper, name, changes[name])
    if "config" in changes:
        merged = dict(paper.config or {})
        for key, value in changes["config"].items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        # A new object: the JSON column does not track in-place mutation.
        paper.config = merged
    paper.bump()
    db.session.flush()
    return paper


# ----------------------------------------------------------------------------- the cast


def publish_edition(paper: Paper, fields: dict, now: datetime) -> Edition:
    """Publish the video edition of `fields["day"]` (a date), published at `now` or, when the
    paper's lock was waited for, the instant it was had. Raises Conflict when that day already
    has one (one edition per published day)."""
    # Like a piece's airing, under the paper's lock with its time taken after it: the change
    # feed's consumers (the instant alert planner among them) wait for the same lock
    # (changes.settle_writes) to know that nothing dated before their `now` is still to commit.
    lock_paper(paper)
    now = max(now, utcnow())
    day: date = fields["day"]
    if db.session.scalar(select(Edition.id).where(Edition.paper_id == paper.id, Edition.day == day)):
        raise Conflict(f"the edition of {day.isoformat()} is already published")
    edition = Edition(paper_id=paper.id, published_at=now, **fields)
    db.session.add(edition)
    paper.bump()
    # Content webhooks' `edition.published` follows from the row (the worker's editions feed).
    _flush(f"the edition of {day.isoformat()}")
    return edition
