"""CLI commands (`flask --app app <command>`): thin wrappers over the services, one module per
area. docs/API.md "CLI": init-db, seed-demo, keys create|list|revoke, send-alerts, and more.

The services only flush; each command that writes commits once, at its end, after everything it
did succeeded, and only then prints what it made (a key is printed once it is stored; a failed
`seed-demo` leaves no half-seeded paper). `send-alerts`, `deliver-webhooks` and `worker` are the
exception, on purpose: a message or POST that has left cannot be called back, so each batch
of planned alerts, each sent message and each webhook attempt is committed as soon as it is
done, and a killed run resumes where it stopped without sending twice (docs/ALERTS.md "Crash
safety").
"""
from commands import alerts, database, demo, keys, log, migrations, proof, subscribers, worker

COMMANDS = [*database.COMMANDS, *demo.COMMANDS, *keys.COMMANDS, *proof.COMMANDS, *alerts.COMMANDS, *worker.COMMANDS,
            *subscribers.COMMANDS, *log.COMMANDS, *migrations.COMMANDS]
