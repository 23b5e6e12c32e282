"""`GET /api/v1` (the paper index), `/api/v1/openapi.json` and `/api/v1/receipt-keys`."""
from __future__ import annotations

import copy
import re

from flask import current_app, g, jsonify
from sqlalchemy import select

from blueprints.api.common import API_PREFIX, OPTIONAL_SECURITY, api_blueprint
from extensions import api, db
from models import SigningKey
from schemas.paper import PaperIndexOut, ReceiptKeysOut
from services.newsroom import keys
from weblinks import links

# `<string(maxlength=200):id>` -> `{id}`
RULE_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")

bp = api_blueprint("index", __name__, "The paper index, the OpenAPI document and receipt keys.")

NOTE = ("Every piece carries a content hash and an Ed25519-signed filing receipt (readable with a "
        "desk key at /api/v1/stories/{id}/proof; public keys at /api/v1/receipt-keys). A signature "
        "proves who filed a piece and that it has not changed; it never proves that a claim is true.")
LEVELS = {
    "public": "No credential: the paper's published face (pieces on air, sections, archive, "
              "search, front, cast, posts, masthead, feeds, subscribe).",
    "read": "A read key of this paper: drafts, subscriber counts, proofs and the config as read.",
    "admin": "An admin key of this paper: every write (filing, airing, sections, personas, "
             "config, video editions) and subscriber rows.",
    "auth": "Send the key as 'Authorization: Bearer desk_...' or 'X-Desk-Key: desk_...'. A key "
            "names one paper and works only on that paper's host.",
}


def _routes(key) -> list[dict]:
    reach = keys.LEVELS[key.kind]
    # An agent key also reaches the writes its capabilities open (blueprints/api/desk.py `writer`).
    capabilities = set(key.capabilities or []) if key.kind == "agent" else set()
    found = []
    for rule in current_app.url_map.iter_rules():
        if not rule.rule.startswith(API_PREFIX):
            continue
        view = current_app.view_functions[rule.endpoint]
        access = getattr(view, "access", "public")
        if keys.LEVELS.get(access, 0) > reach and getattr(view, "agent_capability", None) not in capabilities:
            continue
        path = RULE_VARIABLE.sub(r"{\1}", rule.rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            found.append({"method": method, "path": links().absolute(path), "access": access})
    return sorted(found, key=lambda r: (r["path"], r["method"]))


@bp.route("")
@bp.doc(security=OPTIONAL_SECURITY)
@bp.response(200, PaperIndexOut)
def paper_index():
    """The paper index: every endpoint and feed as an absolute URL"""
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
        },
        "feeds": {
            "rss": links().absolute("/rss.xml"),
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
@bp.doc(responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}})
def openapi_document():
    """The OpenAPI 3.1 document of this API"""
    return jsonify(document_for(links().absolute("")))


def document_for(server_url: str) -> dict:
    """The OpenAPI document with `servers` set to `server_url`.

    The finished document (`DeskApi.document`) is built once per process and app; only
    `servers` differs per host, so each call gets a shallow copy with its own `servers`.
    """
    cached = current_app.extensions.setdefault("paperdesk.openapi", {})
    if "doc" not in cached:
        cached["doc"] = api.document()
    doc = copy.copy(cached["doc"])
    doc["servers"] = [{"url": server_url, "description": "This paper's host."}]
    return doc


@bp.route("/receipt-keys")
@bp.response(200, ReceiptKeysOut)
def receipt_keys():
    """The paper's Ed25519 receipt public keys, retired ones included, for offline verification"""
    rows = db.session.scalars(
        select(SigningKey).where(SigningKey.paper_id == g.paper.id).order_by(SigningKey.created_at)
    )
    return {"keys": [{"kid": r.kid, "alg": "Ed25519", "public_key": r.public_key,
                      "created_at": r.created_at, "retired_at": r.retired_at} for r in rows]}
