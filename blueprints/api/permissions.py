"""Who may do what on the `/api/v1` tree, in one place (docs/API.md "keys", "writes").

Levels. A request is public (no key), or carries a key of the paper. Four levels, each reaching
the ones before it: `public`; `key`, any key of the paper (an `agent` key reaches this one only:
its cockpit, the config as read, its own persona's drafts, proofs, and what its capabilities
open); `read`, a
read or admin key (subscriber counts, as the spec's "read" level promises); `admin`, an admin
key. `keyed(bp, level)` puts a level on a view.

Least privilege for agents. An agent key is a machine's credential for filing: the spec gives the
agent level "the cockpit check and what the key's capability allows", so it reaches the `key`
level and no further: never the subscriber counts (`read`), never the integration settings of the
config (`sees_full_config`).

Writers. `writer(bp, capability)`: an admin key, or an agent key holding `capability` (`file`,
`revise`, `air`: services/newsroom/keys.py AGENT_CAPABILITIES). Such a view is listed as admin
for everyone else. A refusal names the capability that was missing.

Agents. An agent key acts as its persona: it files only under that byline
(`check_file`), revises only that persona's pieces, only while they are drafts, and never moves
a piece to another byline (`check_revise`); airs, schedules and pulls only that persona's
pieces (`check_air`).

Admin-only rows and fields. Subscriber rows and batches (`emails`, `webhook`) need an admin
key (`check_subscriber_batch`, `check_public_subscribe`, `sees_subscriber_rows`); the config
shows the desk keys and its whole `config` object (integration settings, credentials, anything
beyond the public allow-list) to admin keys alone (`sees_desk_keys`, `sees_full_config`); other
keys see the config as read with the public part of `config`. Drafts show to read and admin keys
of the paper, and to an agent key only its own persona's (`sees_drafts`, `drafts_of`).

Every rule takes the key (None for a public request) and raises services.errors.Unauthorized
(401), Forbidden (403) or Invalid (422); web/errors.py answers them. The decorated views carry
`access` ("key", "read" or "admin") and, for writers, `agent_capability`: the paper index lists the
routes a key reaches from them (`may_call`).
"""
from __future__ import annotations

import functools

from flask import g
from flask_smorest import Blueprint

from blueprints.api.common import SECURITY
from extensions import db
from models import DeskKey, Persona, Piece
from services.errors import Forbidden, Invalid, Unauthorized
from services.newsroom.filing import REFUSED
from services.newsroom.keys import AGENT_CAPABILITIES

# How far each key kind reaches, and what each access level needs.
REACH = {"agent": 1, "read": 2, "admin": 3}
NEEDS = {"public": 0, "key": 1, "read": 2, "admin": 3}
# Body fields of POST /subscribers that only an admin key may send.
ADMIN_SUBSCRIBE_FIELDS = ("emails", "webhook")


# ----------------------------------------------------------------------------- levels


def reaches(key: DeskKey | None, level: str) -> bool:
    """True when `key` (None: a public request) reaches `level` ("public", "key", "read",
    "admin")."""
    return (REACH[key.kind] if key is not None else 0) >= NEEDS[level]


def require_level(key: DeskKey | None, level: str) -> DeskKey:
    """Return `key` when it reaches `level` ("key", "read" or "admin"). Raises Unauthorized
    without a key, Forbidden below the level."""
    if key is None:
        raise Unauthorized("This route needs a desk key.")
    if not reaches(key, level):
        if level == "read":
            raise Forbidden("This route needs a read or admin key; an agent key reaches only its cockpit, "
                            "the config as read, drafts, proofs and what its capabilities allow.")
        raise Forbidden(f"This route needs an admin key; no agent capability opens it (agent keys may have: "
                        f"{', '.join(AGENT_CAPABILITIES)})." if key.kind == "agent"
                        else f"This route needs an {level} key.")
    return key


def capabilities(key: DeskKey) -> list[str]:
    """What `key` may do, as `/agent` reports it: an agent key's capabilities, else its kind."""
    return list(key.capabilities or []) if key.kind == "agent" else [key.kind]


def has_capability(key: DeskKey | None, capability: str) -> bool:
    """True for an agent key holding `capability`."""
    return key is not None and key.kind == "agent" and capability in (key.capabilities or [])


def require_writer(key: DeskKey | None, capability: str) -> DeskKey:
    """Return `key` when it is an admin key, or an agent key holding `capability`. Raises
    Unauthorized without a key, Forbidden otherwise."""
    require_level(key, "key")
    if not (reaches(key, "admin") or has_capability(key, capability)):
        held = ", ".join(key.capabilities or []) or "none"
        raise Forbidden(f"This route needs an admin key or an agent key with the capability {capability!r} "
                        f"({AGENT_CAPABILITIES[capability]}); this {key.kind} key has "
                        + (f"the capabilities: {held}. A key with it is made by `flask keys create --kind agent "
                           f"--persona NAME --capability {capability}`." if key.kind == "agent" else "no such right."))
    return key


def may_call(key: DeskKey | None, view) -> bool:
    """True when `key` may call `view` (a registered view function): its `access` level, or the
    writer rule through its `agent_capability`."""
    access = getattr(view, "access", "public")
    return reaches(key, access) or has_capability(key, getattr(view, "agent_capability", None))


# ----------------------------------------------------------------------------- decorators


def _document(bp: Blueprint, view):
    documented = bp.doc(security=SECURITY)(view)
    documented = bp.alt_response(401, description="Missing, malformed, unknown or revoked key.")(documented)
    return bp.alt_response(403, description="A key of another paper, or below the level needed.")(documented)


def keyed(bp: Blueprint, level: str):
    """Require a key of at least `level` ("key", "read" or "admin") on this view (401/403 otherwise),
    and document the security schemes and those answers. Use under `@bp.route` (and
    `@transactional`), above the schema decorators: the key is checked before the body."""

    def decorator(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            require_level(g.key, level)
            return view(*args, **kwargs)

        wrapper.access = level
        return _document(bp, wrapper)

    return decorator


def writer(bp: Blueprint, capability: str):
    """Require an admin key, or an agent key holding `capability` (401/403 otherwise). The
    route is listed as admin, and for agent keys with that capability (`agent_capability`)."""

    def decorator(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            require_writer(g.key, capability)
            return view(*args, **kwargs)

        wrapper.access = "admin"
        wrapper.agent_capability = capability
        return _document(bp, wrapper)

    return decorator


# ----------------------------------------------------------------------------- pieces


def sees_drafts(key: DeskKey | None) -> bool:
    """Any key of the paper sees drafts (lists, stories by id, proofs); the public never. Which
    drafts: `drafts_of`."""
    return key is not None


def drafts_of(key: DeskKey | None) -> int | None:
    """Whose drafts `key` sees, when it sees drafts: None for every draft (read and admin keys);
    for an agent key, the id of its persona (0, nobody's, for one without a persona). Filing and
    revising need an agent's own drafts only; the desk's other drafts are unpublished work that
    the spec opens to the read level, not to agents."""
    if key is None or key.kind != "agent":
        return None
    return key.persona_id or 0


def persona_of(key: DeskKey) -> Persona | None:
    """The persona an agent key acts as; None for other keys (and an agent key without one)."""
    if key.kind != "agent" or not key.persona_id:
        return None
    return db.session.get(Persona, key.persona_id)


def agent_persona(key: DeskKey) -> Persona:
    """The persona an agent key acts as. Raises Forbidden when it has none."""
    persona = persona_of(key)
    if persona is None:
        raise Forbidden("This agent key has no persona to file as.")
    return persona


def check_file(key: DeskKey, body: dict) -> dict:
    """The filing fields `key` may file: an agent's byline is always its persona's name (a
    different one: Forbidden); an admin must name a byline (Invalid otherwise). Returns a new
    dict; `body` is left alone."""
    fields = dict(body)
    if key.kind == "agent":
        persona = agent_persona(key)
        if fields.get("byline", persona.name) != persona.name:
            raise Forbidden(f"An agent key files only as its own persona, {persona.name}.")
        fields["byline"] = persona.name
    elif "byline" not in fields:
        raise Invalid(REFUSED, errors={"byline": ["a byline (persona name) is required"]})
    return fields


def check_air(key: DeskKey, piece: Piece) -> None:
    """May `key` put `piece` on air, schedule it, or take it off air? An admin key any piece;
    an agent key (capability `air`) only its own persona's. Raises Forbidden."""
    if key.kind == "agent" and piece.persona_id != key.persona_id:
        raise Forbidden("An agent key may air and pull only its own persona's pieces.")


def check_revise(key: DeskKey, piece: Piece, body: dict) -> None:
    """May `key` file `body` as the next revision of `piece` (its persona loaded)? An admin key
    may revise anything; an agent key only its own persona's drafts, keeping the byline.
    Raises Forbidden."""
    if key.kind != "agent":
        return
    if piece.persona_id != key.persona_id:
        raise Forbidden("An agent key may revise only its own persona's pieces.")
    if piece.on_air:
        raise Forbidden("An agent key may revise drafts only; this piece is on air.")
    if body.get("byline", piece.persona.name) != piece.persona.name:
        raise Forbidden("An agent key cannot move a piece to another byline.")


# ----------------------------------------------------------------------------- subscribers


def check_subscriber_batch(key: DeskKey) -> None:
    """A keyed POST /subscribers is the admin batch. Raises Forbidden below admin."""
    if not reaches(key, "admin"):
        raise Forbidden("Subscribing a batch needs an admin key; public subscribe takes no key.")


def check_public_subscribe(body: dict) -> None:
    """A public subscribe may not send the admin batch's fields: such a body is the admin batch
    (`SubscribeBatchIn`), which needs an admin key. Raises Unauthorized (401) naming them."""
    extra = [name for name in ADMIN_SUBSCRIBE_FIELDS if name in body]
    if extra:
        names = " and ".join(f"`{name}`" for name in extra)
        raise Unauthorized(f"{names} {'is' if len(extra) == 1 else 'are'} for the admin batch: send an admin "
                           "key, or subscribe one address with `email` and no key.")


def sees_subscriber_rows(key: DeskKey) -> bool:
    """Admin keys see subscriber rows (addresses, webhook secrets); read keys only counts (the
    route needs the `read` level, so agent keys see neither)."""
    return reaches(key, "admin")


# ----------------------------------------------------------------------------- config


def sees_desk_keys(key: DeskKey) -> bool:
    """Admin keys see the paper's desk keys (never the keys themselves) beside its config."""
    return reaches(key, "admin")


def sees_full_config(key: DeskKey) -> bool:
    """Admin keys see the paper's whole `config` object (integration settings and whatever else
    the desk stored there); read and agent keys only its public part, the allow-list the front
    document publishes (services.reading.front.PUBLIC_CONFIG: timezone, language, help desk, ...).
    The spec: read "the config as read", admin "the full config"."""
    return reaches(key, "admin")
