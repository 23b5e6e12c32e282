"""Delivery: what leaves the process. The subscriber list with its double opt-in, cadence
alerts planned and sent crash-safely (recorded before sending, marked sent right after),
their content rendered once per distinct alert, mail over SMTP or to a file outbox, signed
webhooks through an outbox with retries, and CDN purges after commit. The four queues of
outgoing POSTs (subscriber webhooks, content webhooks, ActivityPub activities, WebSub and
IndexNow pings) share their retry rules, report and bookkeeping (post_queue.py), their leases
(claims.py) and their bounded send loop (webhooks.run_concurrently). Outside a request
(`send-alerts`), URLs are under each paper's canonical origin (rendering.links.PaperOrigins)."""
