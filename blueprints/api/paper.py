"""The paper itself: its index, its API document, its config, its keys' self-check, its
receipt keys.

    GET   /api/v1                  the paper index: every endpoint and feed as absolute URLs
                                   (with a key: every route that key reaches)
    GET   /api/v1/openapi.json     the OpenAPI 3.1 document, `servers` set to this host
    GET   /api/v1/config           the config as read (any key; admin also sees desk keys and
                                   the whole `config` object, others its public part)
    PATCH /api/v1/config           change nameplate, motto, visibility, the front's lead, ... (admin)
    GET   /api/v1/agent            the cockpit self-check of the key sent (any key)
    GET   /api/v1/receipt-keys     the Ed25519 public keys that verify filing receipts

The config write commits once, at the commit point (web/commit.py).
"""
from __future__ import annotations

import copy
import re

from flask import current_app, g, jsonify
from sqlalchemy import select

from blueprints.api import permissions
from blueprints.api.common import API_PREFIX, OPTIONAL_SECURITY, api_blueprint, json_body
from blueprints.api.permissions import keyed
from extensions import db
from models import DeskKey, Persona, SigningKey
from schemas import openapi as openapi_doc
from schemas.apidoc import api
from schemas.desk import ConfigOut, ConfigPatch
from schemas.paper import PaperIndexOut, ReceiptKeysOut
from schemas.proof import AgentOut
from services.errors import Invalid
from services.newsroom import desk
from services.newsroom.keys import AGENT_CAPABILITIES
from services.reading import front, stories
from web import caching
from web.commit import transactional
from web.links import links

# `<string(maxlength=200):id>` -> `{id}`
RULE_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")

bp = api_blueprint("paper", __name__, "The paper index, the OpenAPI document, the config, the "
                                      "key self-check and receipt keys.")

NOTE = ("Every piece carries a content hash and an Ed25519-signed filing receipt (readable with a "
        "desk key at /api/v1/stories/{id}/proof; public keys at /api/v1/receipt-keys). A signature "
        "proves who filed a piece and that it has not changed; it never proves that a claim is true.")
LEVELS = {
    "public": "No credential: the paper's published face (pieces on air, sections, archive, "
              "search, front, cast, posts, masthead, feeds, subscribe).",
    "read": "A read key of this paper: drafts, subscriber counts, proofs and the config as read "
            "(its public settings). An agent key reaches its own persona's drafts and their proofs, "
            "the config as read and what its capabilities allow (filing, revising), never "
            "subscribers.",
    "admin": "An admin key of this paper: every write (filing, airing, sections, personas, "
             "config, video editions) and subscriber rows.",
    "auth": "Send the key as 'Authorization: Bearer desk_...' or 'X-Desk-Key: desk_...'. A key "
            "names one paper and works only on that paper's host.",
}


def _routes(key: DeskKey) -> list[dict]:
    """Every `/api/v1` route `key` may call (permissions.may_call), with its access level."""
    found = []
    for rule in current_app.url_map.iter_rules():
        if not rule.rule.startswith(API_PREFIX):
            continue
        view = current_app.view_functions[rule.endpoint]
        if not permissions.may_call(key, view):
            continue
        access = getattr(view, "access", "public")
        path = RULE_VARIABLE.sub(r"{\1}", rule.rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            found.append({"method": method, "path": links().absolute(path), "access": access})
    return sorted(found, key=lambda r: (r["path"], r["method"]))


@bp.route("")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.response(200, PaperIndexOut)
def paper_index():
    """The paper index: every endpoint and feed as an absolute URL

    The place to start: the paper's name and motto, the URL of every API endpoint and feed on
    this host, and how keys work (`levels`, or `keyed` on a paper whose index says less). With a
    key, `routes` lists every `/api/v1` route that key may call.
    """
    paper = g.paper
    body = {
        "paper": paper.slug,
        "nameplate": paper.nameplate,
        "motto": paper.motto or "",
        "description": paper.description or "",
        "home": links().home(),
        "landing": links().absolute("/subscribe"),
        "playground": links().absolute("/api"),
        "endpoints": {
            "stories": links().api("/stories"),
            "story": links().api("/stories/{id}"),
            "sections": links().api("/sections"),
            "days": links().api("/days"),
            "day": links().api("/days/{YYYY-MM-DD}"),
            "search": links().api("/search?q="),
            "front": links().api("/front"),
            "cast": links().api("/cast"),
            "posts": links().api("/posts"),
            "masthead": links().api("/masthead"),
            "subscribe": "POST " + links().api("/" + paper.subscribe_path),
            "openapi": links().api("/openapi.json"),
            "receipt_keys": links().api("/receipt-keys"),
            "log": links().api("/log"),
        },
        "feeds": {
            "rss": links().absolute("/rss.xml"),
            "json_feed": links().absolute("/feed.json"),
            "podcast": links().absolute("/podcast.xml"),
            "front_json": links().absolute("/front.json"),
            "llms": links().absolute("/llms.txt"),
            "sitemap": links().absolute("/sitemap.xml"),
        },
        "note": NOTE,
    }
    if paper.index_style == "keyed":
        body["keyed"] = {
            "note": "Drafts, subscribers, proofs and writes need a desk key of this paper. "
                    + LEVELS["auth"] + " Read this index with a key to list every route it reaches.",
            "index": links().api(),
        }
    else:
        body["levels"] = LEVELS
    if g.key is not None:
        body["routes"] = _routes(g.key)
    return body


@bp.route("/openapi.json")
@bp.response(200, description="This API as an OpenAPI 3.1 document, servers set to this host.")
@bp.doc(responses={200: {"content": {"application/json": {"schema": {"type": "object"}, "example": {
    "openapi": "3.1.0", "info": {"title": "Paper Desk", "version": "1"},
    "servers": [{"url": "https://demo.example.org", "description": "This paper's host."}],
    "paths": {"/api/v1/stories": {"get": {"operationId": "listStories"}}}}}}}})
def openapi_document():
    """The OpenAPI 3.1 document of this API

    This document, with `servers` set to the host it was asked on and this paper's active
    section names as the values a subscribe's `sections` may take. Every operation has an
    `operationId`, examples and its `security`; CI generates a Python and a TypeScript client
    from it (docs/API.md "Generated clients").
    """
    sections = [section.name for section in front.active_sections(g.paper)]
    return jsonify(document_for(links().absolute(""), sections))


def document_for(server_url: str, sections: list[str] | None = None) -> dict:
    """The OpenAPI document with `servers` set to `server_url` and, given a paper's active
    `sections` names, those as the enum of every request body's `sections`
    (schemas/openapi.py `with_sections`); without them, the generic document (`flask openapi`).

    The finished document (`DeskApi.document`) is built once per process and app; only
    `servers` and the sections differ per paper, so each call copies only those parts.
    """
    cached = current_app.extensions.setdefault("paperdesk.openapi", {})
    if "doc" not in cached:
        cached["doc"] = api.document()
    doc = copy.copy(cached["doc"]) if sections is None else openapi_doc.with_sections(cached["doc"], sections)
    doc["servers"] = [{"url": server_url, "description": "This paper's host."}]
    return doc


@bp.route("/receipt-keys")
@bp.response(200, ReceiptKeysOut)
def receipt_keys():
    """The paper's Ed25519 receipt public keys, retired ones included, for offline verification

    Each key has its `kid` (named by every filing receipt), the base64 raw public key and when
    it was made and retired. A retired key still verifies the receipts it signed; docs/PROOFS.md
    verifies one offline.
    """
    rows = db.session.scalars(
        select(SigningKey).where(SigningKey.paper_id == g.paper.id).order_by(SigningKey.created_at)
    )
    return {"keys": [{"kid": r.kid, "alg": "Ed25519", "public_key": r.public_key,
                      "created_at": r.created_at, "retired_at": r.retired_at} for r in rows],
            "log": links().api("/log")}


# ----------------------------------------------------------------------------- config


@bp.route("/config", methods=["GET"])
@keyed(bp, "key")
@bp.response(200, ConfigOut)
def read_config():
    """The paper's config as read (any key)

    An admin key also sees the desk keys (never the keys themselves) and the whole `config`
    object; read and agent keys see only its public settings.
    """
    return _config(g.key)


def _config(key: DeskKey) -> dict:
    return desk.config_of(g.paper, with_keys=permissions.sees_desk_keys(key),
                          full=permissions.sees_full_config(key))


@bp.route("/config", methods=["PATCH"])
@transactional
@keyed(bp, "admin")
@json_body(bp)
@bp.arguments(ConfigPatch)
@bp.response(200, ConfigOut)
def update_config(body: dict):
    """Change the paper's nameplate, motto, description, visibility, index style, config or front-page lead (admin)

    Only the fields given change. `config` is merged one level deep into the stored object;
    `lead_story` (a piece id or slug of this paper, or null) picks the front page's lead. The
    answer is the config as an admin reads it.
    """
    _fold_lead_story(body)
    desk.update_config(g.paper, body)
    return _config(g.key)


def _fold_lead_story(body: dict) -> None:
    """Move the `lead_story` field into the `config` change (where it is stored), after checking
    it, and check a `config.lead_story` sent directly the same way: a non-empty text of at most
    200 characters naming a piece of this paper, or null to remove the choice. Raises Invalid
    (422, `errors.lead_story`) otherwise, or when both are sent and differ."""
    key = front.LEAD_STORY
    config = dict(body.get("config") or {})
    if key in body:
        value = body.pop(key)
        if key in config and config[key] != value:
            raise Invalid(errors={key: ["Sent twice with different values (as `lead_story` and "
                                        "`config.lead_story`); send it once."]})
        config[key] = value
    if key not in config:
        return
    value = config[key]
    if value is not None:
        if not isinstance(value, str) or not 1 <= len(value) <= 200:
            raise Invalid(errors={key: ["Must be a piece id or slug (1-200 characters of text), or null."]})
        front.check_lead_story(g.paper, value, now=caching.request_now())
    body["config"] = config


# ----------------------------------------------------------------------------- the cockpit

# (action, method, path) for read and admin keys (the `read` level).
READ_ACTIONS = [
    ("List the desk's pieces, drafts included (marked on_air: false)", "GET", "/stories"),
    ("Read any piece of this paper, drafts included", "GET", "/stories/{id}"),
    ("Read a piece's proof: content hash, signed receipt and revision chain", "GET", "/stories/{id}/proof"),
    ("Read the paper's config", "GET", "/config"),
    ("Count subscribers", "GET", "/subscribers"),
    ("Check this key", "GET", "/agent"),
]
# ... for agent keys (the `key` level): on-air pieces and their own persona's drafts, no counts.
AGENT_READ_ACTIONS = [
    ("List the pieces on air and {persona}'s drafts (marked on_air: false)", "GET", "/stories"),
    ("Read a piece on air, or one of {persona}'s drafts", "GET", "/stories/{id}"),
    ("Read the proof of a piece you may read: content hash, signed receipt and revision chain", "GET",
     "/stories/{id}/proof"),
    ("Read the paper's config (its public settings)", "GET", "/config"),
    ("Check this key", "GET", "/agent"),
]
ADMIN_ACTIONS = [
    ("File a draft under any active persona", "POST", "/stories"),
    ("Revise any piece", "PATCH", "/stories/{id}"),
    ("Put a piece on air", "PUT", "/stories/{id}/air"),
    ("Take a piece off air", "DELETE", "/stories/{id}/air"),
    ("Publish a day's video edition", "POST", "/cast"),
    ("Add a section", "POST", "/sections"),
    ("Rename, reorder or deactivate a section", "PATCH", "/sections/{slug}"),
    ("Add a persona", "POST", "/personas"),
    ("Change a persona", "PATCH", "/personas/{slug}"),
    ("Change the paper's config", "PATCH", "/config"),
    ("Read subscriber rows", "GET", "/subscribers"),
    ("Add up to 20 subscribers (each confirms by email)", "POST", "/subscribers"),
]
# What each agent capability opens (permissions.writer).
AGENT_ACTIONS = {
    "file": [("File a draft as {persona} (the byline is always your persona)", "POST", "/stories")],
    "revise": [("Revise {persona}'s drafts (never a piece on air)", "PATCH", "/stories/{id}")],
    "air": [("Put one of {persona}'s pieces on air now, or schedule it with {{\"at\": ...}}", "PUT",
             "/stories/{id}/air"),
            ("Take one of {persona}'s pieces off air, or cancel its schedule", "DELETE", "/stories/{id}/air")],
}


def _may(key: DeskKey, persona: Persona | None) -> list[dict]:
    """The `may` list of /agent: what `key` may do here, as absolute URLs."""
    name = persona.name if persona else "your persona"
    if permissions.reaches(key, "read"):
        actions = list(READ_ACTIONS)
    else:
        actions = [(text.format(persona=name), method, path) for text, method, path in AGENT_READ_ACTIONS]
    if permissions.reaches(key, "admin"):
        actions += ADMIN_ACTIONS
    else:
        actions += [(text.format(persona=name), method, path)
                    for capability, opened in AGENT_ACTIONS.items() if permissions.has_capability(key, capability)
                    for text, method, path in opened]
    return [{"action": text, "method": method, "url": links().api(path)} for text, method, path in actions]


def help_desk(paper) -> str:
    """The paper's help desk: `config.help_desk`, else `mailto:desk@` its canonical host."""
    configured = (paper.config or {}).get("help_desk")
    if configured:
        return configured
    host = paper.host or f"{paper.slug}.{current_app.config['PAPER_DOMAIN']}"
    return f"mailto:desk@{host}"


@bp.route("/agent")
@keyed(bp, "key")
@bp.response(200, AgentOut)
def agent_check():
    """Cockpit self-check: reaching it means the key is active and scoped to this paper

    Names the key (kind, prefix, label), the persona an agent key files as, its capabilities
    and every capability an agent key can have (`agent_capabilities`), and `may`: every action
    the key may take here, each with its method and absolute URL. `unsupported_figures`
    counts, per persona (an agent key: its own), the pieces whose figures no cited fact states.
    """
    key, paper = g.key, g.paper
    persona = permissions.persona_of(key)
    return {
        "key": {"active": True, "kind": key.kind, "prefix": key.prefix, "label": key.label or "",
                "paper": paper.slug},
        "avatar": links().avatar(persona.slug) if persona else None,
        "persona": persona,
        "capability": permissions.capabilities(key),
        "agent_capabilities": dict(AGENT_CAPABILITIES),
        "may": _may(key, persona),
        "guide": links().absolute("/api"),
        "search_help": help_desk(paper),
        "paper": paper.slug,
        "nameplate": paper.nameplate,
        "unsupported_figures": stories.unsupported_by_persona(paper, persona.id if persona else None),
    }
