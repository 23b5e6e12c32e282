"""The transparency log's wire shapes (docs/PROOFS.md "The transparency log")."""
from __future__ import annotations

from marshmallow import Schema, fields


class WitnessOut(Schema):
    name = fields.String(required=True, metadata={"description": "The witness's key name.",
                                                  "example": "witness.example/w1"})
    vkey = fields.String(required=True, metadata={
        "description": "Its Ed25519 cosignature verifier key (c2sp.org/tlog-cosignature, type 0x04).",
        "example": "witness.example/w1+4a5b6c7d+BGZvbyBiYXIgYmF6IHF1eCBxdXV4IGNvcmdlIGdyYXVsdA"})


class LogOut(Schema):
    origin = fields.String(required=True, metadata={
        "description": "The checkpoint origin line and the log key's name: `<paper host>/log`, fixed "
                       "when the log was made.", "example": "demo.example.org/log"})
    vkey = fields.String(required=True, metadata={
        "description": "The log's signed-note verifier key (c2sp.org/signed-note, Ed25519): what Go's "
                       "`note.NewVerifier` and every tlog client read.",
        "example": "demo.example.org/log+2b5b0e34+AdrzPk3mNqRAsWdLHvA5U8d7MyBJZ7Tzv6nqWrRr4q3E"})
    checkpoint = fields.String(required=True, metadata={
        "description": "URL of the newest signed checkpoint (c2sp.org/tlog-checkpoint, text).",
        "example": "https://demo.example.org/log/checkpoint"})
    prefix = fields.String(required=True, metadata={
        "description": "The tlog-tiles prefix: tiles at `{prefix}/tile/<L>/<N>[.p/<W>]`, entry bundles at "
                       "`{prefix}/tile/entries/<N>[.p/<W>]`.", "example": "https://demo.example.org/log"})
    size = fields.Integer(required=True, metadata={
        "description": "Entries in the newest signed checkpoint.", "example": 1204})
    entry_format = fields.String(required=True, metadata={
        "description": "The entries' format tag (each entry is RFC 8785 JSON; docs/PROOFS.md).",
        "example": "paperdesk-log/1"})
    witnesses = fields.List(fields.Nested(WitnessOut), required=True, metadata={
        "description": "The witnesses the log submits its checkpoints to (their cosignatures are on the "
                       "checkpoint); empty when none is configured."})
    proof = fields.String(required=True, metadata={
        "description": "URL template of a piece's inclusion proof (c2sp.org/tlog-proof@v1).",
        "example": "https://demo.example.org/api/v1/stories/{id}/log-proof"})
