"""Delivery: what leaves the process, run by `flask worker` (commands/worker.py). The subscriber
list with its double opt-in, cadence alerts planned and sent crash-safely (recorded before
sending, marked sent right after), their content rendered once per distinct alert, mail over
SMTP or to a file outbox, the change feed handed to its consumers (change_stream.py), and the
outgoing queues: confirm mail, alert mail, and four declared queues (subscriber webhooks,
content webhooks, ActivityPub activities, WebSub and IndexNow pings) run by one engine
(queues.py) on leases (claims.py), through the one HTTP client (services/http.py). Outside a
request, URLs are under each paper's canonical origin (services.links.PaperOrigins)."""
