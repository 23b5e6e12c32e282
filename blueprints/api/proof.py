"""`GET /api/v1/stories/{id}/proof` (the provenance record) and `GET /api/v1/agent` (the cockpit
self-check), both keyed (spec "Endpoints", "Proof fields"; CONTRACT.md "proof").

A proof proves which paper's desk filed a revision and that it is unchanged since; it never
proves that the piece's claims are true (spec rule 4). docs/PROOFS.md verifies one offline.
"""
from __future__ import annotations

from flask import current_app, g

from blueprints.api.common import api_blueprint, keyed, not_found
from extensions import db
from models import DeskKey, Persona
from schemas.proof import AgentOut, ProofOut
from services.newsroom import provenance
from services.reading import stories
from weblinks import links

bp = api_blueprint("proof", __name__, "Provenance records and the agent cockpit (keyed).")

# (action, method, path) for every key that reaches the read level.
READ_ACTIONS = [
    ("List the desk's pieces, drafts included (marked on_air: false)", "GET", "/stories"),
    ("Read any piece of this paper, drafts included", "GET", "/stories/{id}"),
    ("Read a piece's proof: content hash, signed receipt and revision chain", "GET", "/stories/{id}/proof"),
    ("Read the paper's config", "GET", "/config"),
    ("Count subscribers", "GET", "/subscribers"),
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
AGENT_ACTIONS = {
    "file": ("File a draft as {persona} (the byline is always your persona)", "POST", "/stories"),
    "revise": ("Revise {persona}'s drafts (never a piece on air)", "PATCH", "/stories/{id}"),
}


def _may(key: DeskKey, persona: Persona | None) -> list[dict]:
    actions = list(READ_ACTIONS)
    if key.kind == "admin":
        actions += ADMIN_ACTIONS
    elif key.kind == "agent":
        name = persona.name if persona else "your persona"
        actions += [(text.format(persona=name), method, path)
                    for cap, (text, method, path) in AGENT_ACTIONS.items()
                    if cap in (key.capabilities or [])]
    return [{"action": text, "method": method, "url": links().api(path)} for text, method, path in actions]


def help_desk(paper) -> str:
    """The paper's help desk: `config.help_desk`, else `mailto:desk@` its canonical host."""
    configured = (paper.config or {}).get("help_desk")
    if configured:
        return configured
    host = paper.host or f"{paper.slug}.{current_app.config['PAPER_DOMAIN']}"
    return f"mailto:desk@{host}"


@bp.route("/stories/<string(maxlength=200):id>/proof")
@keyed(bp, "read")
@bp.response(200, ProofOut)
@bp.alt_response(404, description="No such piece on this paper.")
def story_proof(id: str):
    """The provenance record of a piece (drafts too): basis, content hash, receipt, chain

    A signature proves who filed a piece and that it has not changed; it never proves that a
    claim is true.
    """
    piece = stories.find(g.paper, id, include_drafts=True)
    if piece is None:
        not_found()
    proof = provenance.proof_for(piece)
    proof["receipt_verify"]["keys_url"] = links().api("/receipt-keys")
    return proof


@bp.route("/agent")
@keyed(bp, "read")
@bp.response(200, AgentOut)
def agent_check():
    """Cockpit self-check: reaching it means the key is active and scoped to this paper"""
    key, paper = g.key, g.paper
    persona = db.session.get(Persona, key.persona_id) if key.kind == "agent" and key.persona_id else None
    return {
        "key": {"active": True, "kind": key.kind, "prefix": key.prefix, "label": key.label or "",
                "paper": paper.slug},
        "avatar": links().avatar(persona.slug) if persona else None,
        "persona": persona,
        "capability": list(key.capabilities or []) if key.kind == "agent" else [key.kind],
        "may": _may(key, persona),
        "guide": links().absolute("/api"),
        "search_help": help_desk(paper),
        "paper": paper.slug,
        "nameplate": paper.nameplate,
    }
