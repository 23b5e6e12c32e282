"""CLI commands (`flask --app app <command>`): thin wrappers over the services, one module per
area. CONTRACT.md "CLI": init-db, seed-demo, keys create|list|revoke, send-alerts, and more."""
from commands import alerts, database, demo, keys, proof

COMMANDS = [*database.COMMANDS, *demo.COMMANDS, *keys.COMMANDS, *proof.COMMANDS, *alerts.COMMANDS]
