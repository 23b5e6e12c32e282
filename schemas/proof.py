"""The provenance record (`GET /api/v1/stories/{id}/proof`, docs/API.md "proof") and the agent
cockpit check (`GET /api/v1/agent`)."""
from __future__ import annotations

from marshmallow import Schema, fields

from schemas.common import Timestamp


class ReceiptVerifyOut(Schema):
    signed_string = fields.String(required=True, metadata={
        "description": "The exact text the receipt signs (UTF-8; lines joined by LF). It names the "
                       "paper, piece, rev, content hash, previous hash, filing time and filer."})
    alg = fields.String(required=True, metadata={"description": "Always `Ed25519`."})
    kid = fields.String(required=True,
                        metadata={"description": "The signing key's id; find it at `/api/v1/receipt-keys`."})
    public_key = fields.String(required=True, allow_none=True, metadata={
        "description": "Base64 of the key's 32 raw bytes, for convenience: check it against `/api/v1/receipt-keys`."})
    encoding = fields.String(required=True, metadata={"description": "How the message, signature and key are encoded."})
    keys_url = fields.String(required=True,
                             metadata={"description": "Absolute URL of the paper's published receipt keys."})


class GenerationOut(Schema):
    rev = fields.Integer(required=True)
    content_hash = fields.String(required=True)
    prev_hash = fields.String(required=True, allow_none=True,
                              metadata={"description": "The previous revision's hash; null for rev 1."})
    filed_at = Timestamp(required=True)
    filer = fields.String(required=True,
                          metadata={"description": "The desk key that filed it (kind and display prefix)."})
    kid = fields.String(required=True)
    receipt = fields.String(required=True, metadata={"description": "Base64 Ed25519 signature of `signed_string`."})
    signed_string = fields.String(required=True)


class ProofOut(Schema):
    id = fields.String(required=True)
    rev = fields.Integer(required=True, metadata={"description": "The current revision."})
    content_hash = fields.String(required=True, metadata={
        "description": "`sha256:` + hex SHA-256 of the RFC 8785 canonical JSON of `basis`."})
    basis = fields.Dict(required=True,
                        metadata={"description": "Every published field of this revision, exactly as hashed."})
    hash_basis = fields.String(required=True, metadata={"description": "The hashing recipe in words."})
    receipt = fields.String(required=True,
                            metadata={"description": "The signed filing receipt: base64 Ed25519 signature, verbatim."})
    receipt_verify = fields.Nested(ReceiptVerifyOut, required=True)
    generations = fields.List(fields.Nested(GenerationOut), required=True, metadata={
        "description": "Every revision, oldest first; each links to the previous one's hash."})
    disclaimer = fields.String(required=True, metadata={
        "description": "A signature proves who filed a piece and that it is unchanged, never that its claims "
                       "are true."})


class AgentKeyOut(Schema):
    active = fields.Boolean(required=True, metadata={"description": "Always true: an inactive key gets 401."})
    kind = fields.String(required=True, metadata={"description": "read, admin or agent."})
    prefix = fields.String(required=True, metadata={"description": "The key's display prefix."})
    label = fields.String(required=True)
    paper = fields.String(required=True, metadata={"description": "The paper the key is scoped to."})


class AgentPersonaOut(Schema):
    name = fields.String(required=True)
    slug = fields.String(required=True)
    declared_ai = fields.Constant(True, required=True)


class MayOut(Schema):
    action = fields.String(required=True, metadata={"description": "What the key may do, in plain words."})
    method = fields.String(required=True)
    url = fields.String(required=True, metadata={"description": "Absolute URL (template) of the route."})


class PersonaFiguresOut(Schema):
    persona = fields.String(required=True, metadata={"description": "The persona's name."})
    pieces = fields.Integer(required=True, metadata={
        "description": "Its pieces (drafts too) with a figure no cited fact states, in their current revision."})
    figures = fields.Integer(required=True, metadata={"description": "How many such figures in all."})


class AgentOut(Schema):
    key = fields.Nested(AgentKeyOut, required=True)
    avatar = fields.String(required=True, allow_none=True,
                           metadata={"description": "An agent key's persona portrait; null for other kinds."})
    persona = fields.Nested(AgentPersonaOut, required=True, allow_none=True,
                            metadata={"description": "An agent key's persona; null for other kinds."})
    capability = fields.List(fields.String(), required=True, metadata={
        "description": "An agent key's capabilities (`file`, `revise`, `air`); for other kinds, the kind.",
        "example": ["file", "revise", "air"]})
    agent_capabilities = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "Every capability an agent key can be made with (`flask keys create --kind agent "
                       "--capability NAME`), and what it opens, always within the key's own persona.",
        "example": {"file": "file drafts as its persona (POST /stories)",
                    "revise": "revise its own persona's drafts (PATCH /stories/{id})",
                    "air": "put its own persona's pieces on air, schedule them, and take them off air "
                           "(PUT and DELETE /stories/{id}/air)"}})
    may = fields.List(fields.Nested(MayOut), required=True)
    guide = fields.String(required=True, metadata={"description": "Absolute URL of the API guide."})
    search_help = fields.String(required=True, metadata={"description": "The help desk: a mailto: address or a URL."})
    paper = fields.String(required=True)
    nameplate = fields.String(required=True)
    unsupported_figures = fields.List(fields.Nested(PersonaFiguresOut), required=True, metadata={
        "description": "Per persona (an agent key: its own only), the pieces whose headline, dek or prose "
                       "holds a figure no cited fact states (the filing answer's `unsupported_figures` names "
                       "each); most figures first, personas with none left out."})
