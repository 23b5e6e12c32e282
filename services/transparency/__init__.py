"""The papers' public transparency logs (docs/PROOFS.md "The transparency log"), on the C2SP
specifications: tlog-tiles, tlog-checkpoint, signed-note, tlog-cosignature, tlog-witness and
tlog-proof.

    merkle.py    RFC 6962 hashes, roots, inclusion and consistency proofs (and their checks)
    note.py      signed notes, checkpoints, vkeys, Ed25519 cosignatures
    entries.py   the entry format (paperdesk-log/1, RFC 8785 JSON) and entry bundles
    tiles.py     tile paths and which tiles a tree is served as
    store.py     the log in the database: appending (the change feed consumer), checkpoints,
                 tiles, proofs, the keys at rest
    witness.py   LOG_WITNESSES: submitting checkpoints and keeping the cosignatures

The monitor (`flask log verify`) reads a log over HTTP like any outside client, so it lives
beside its command, commands/log_monitor.py, not here.
"""
