"""The service layer: the paper's work as plain functions over the session, grouped by kind.

    services/
      errors       DeskError and its kinds (400, 401, 403, 404, 409, 422): what every service
                   raises to refuse; web/errors.py answers each once
      links        Links (absolute URLs on an origin), PaperOrigins (canonical ones)
      http         the one HTTP client: SSRF-checked targets, one deadline per call (DNS included)
      retry        the one backoff, and what counts as a refusal
      newsroom/    the desk's writes (who may make them: blueprints/api/permissions.py)
                   filing       file, revise, put on air, take off air; slugs; the change feed's rows
                   provenance   content hashes, Ed25519 filing receipts, signing keys
                   seeds        receipt signing seeds sealed at rest under the instance secret
                   desk         sections, personas, the paper's config, video editions
                   keys         desk keys: issue, authenticate (from header values), revoke
                   figures      numbers with a unit or percent that no cited fact holds
      reading/     what readers and clients read, on-air pieces only on the public lane
                   visibility   which pieces the public sees, at which instant
                   stories      story queries for the public and keyed lanes
                   archive      sections with counts, the day-by-day archive
                   front        the front document (plain data), the cast, the masthead
                   search       full-text search
                   posts        ready-to-post short forms
                   changes      the change feed's reading side
                   cursors      opaque signed paging cursors
                   reader       the reader pages' own queries (section, day, related pieces)
                   lookups      find_section, find_persona, parse_day: the one copy of each
                   memo         values kept per paper version in the worker
                   revisions    a piece's public history: typed revisions and their texts
      rendering/   turning data into documents
                   prose        prose -> HTML with footnote markers; the byline disclosure
                   feeds        RSS, podcast, llms.txt
                   sitemaps     sitemaps.org urlset or index, Google News sitemap
                   embeds       story cards, player iframes, oEmbed records
                   xmltext      xml_safe: text without what XML 1.0 forbids, for every XML answer
                   media        persona avatars (SVG), share cards (PNG), stored media
                   art          the demo paper's own pictures, posters and captions
                   diffs        the history page's readable diffs between revisions
      delivery/    what leaves the process for readers, subscribers and CDNs (`flask worker`)
                   change_stream  the change feed handed to its consumers, cursor per paper
                   queues         the engine of the outgoing queues: claim, send, record, prune
                   claims         leases on queue rows, shared by every sender
                   subscriptions  double opt-in list, confirm and unsubscribe tokens
                   outbox         confirm mail queued by requests, sent by the worker
                   alerts         plan and send cadence alerts, crash-safe; `instant-alerts` consumer
                   origins        the origin of links written outside a request (alert mail)
                   alert_content  what an alert says, rendered once per distinct alert
                   mail           SMTP or file outbox, connection pool
                   webhooks       signed subscriber webhooks (a queue)
                   content_webhooks  site owners' Standard Webhooks (a consumer and a queue)
                   purge          CDN purge by surrogate key (a consumer)
                   corrections    correction alerts to readers mailed the earlier version (a consumer)
                   federation/    the paper and its personas in the fediverse (docs/FEDERATION.md):
                     keys           the paper's RSA key (sealed), its Ed25519 key as a Multikey
                     documents      WebFinger, NodeInfo, actors, Articles with proofs, activities
                     httpsig        draft-cavage HTTP signatures and Digest, both ways
                     messagesig     RFC 9421 HTTP message signatures and Content-Digest
                     remote         the bounded fetch of a sender's key (inbox POSTs), fetch slots
                     inbox          Follow, Undo, Delete; everything else ignored
                     deliveries     the change feed's `activitypub` consumer and its queue
                     pings          the `pings` consumer and its queue: WebSub hub and IndexNow
      transparency/  the papers' public C2SP transparency logs (docs/PROOFS.md):
                   merkle       RFC 6962 tree hashes and proofs
                   note         signed notes, checkpoints, cosignatures
                   entries      the entry format
                   tiles        tile paths and sizes
                   store        the log in the database (the change feed consumer, checkpoints, proofs)
                   sealing      the log keys' seeds at rest
                   witness      submitting checkpoints to witnesses
                   (the log's monitor, an HTTP client of any paper, is commands/log_monitor.py)

The demo newsroom (`seed-demo`'s content) lives apart, in the top-level `demo` package.

Layer rules (tests/test_layers.py enforces the first): services never import blueprints,
schemas or web/, and never read
`flask.request`, `flask.g` or `flask.session`. What a service needs of a request comes as an
argument: the paper, `now`, a `links: Links` for absolute URLs, header values, the paper's
version state. `current_app` (config, extensions, templates) is read only where passing it
would be absurd (session event listeners, mail templates, token signing); those functions say
so in their docstrings. Services flush; the request (web/commit.py) or the CLI command
commits, except where a docstring says the function commits (crash safety in alerts and
webhook deliveries; the transparency logs' checkpoints and witness submissions).
"""
