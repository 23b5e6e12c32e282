"""Delivery: what leaves the process. The subscriber list with its double opt-in, cadence
alerts planned and sent crash-safely (recorded before sending, marked sent right after),
their content rendered once per distinct alert, mail over SMTP or to a file outbox, signed
webhooks through an outbox with retries, and CDN purges after commit. Outside a request
(`send-alerts`), URLs are under each paper's canonical origin (rendering.links.PaperOrigins)."""
