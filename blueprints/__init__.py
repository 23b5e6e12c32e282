"""Every blueprint, listed once. API blueprints go through flask-smorest (they are documented in
the OpenAPI document, one tag each); plain ones are registered on the app directly.

The `/api/v1` tree, one module per resource in blueprints/api/ (blueprint name = module name):

    paper        GET /api/v1, /openapi.json, /config (GET, PATCH), /agent, /receipt-keys
    stories      /stories (GET, POST), /stories/{id} (GET, PATCH), /stories/{id}/air (PUT,
                 DELETE), /stories/{id}/proof
    sections     /sections (GET, POST), /sections/{slug} (PATCH)
    personas     /masthead, /personas (POST), /personas/{slug} (PATCH)
    cast         /cast (GET, POST)
    days         /days, /days/{day}
    front        /front
    search       /search
    posts        /posts
    changes      /changes
    log          /log, /stories/{id}/log-proof (the transparency log's JSON face)
    subscribers  /subscribers (GET, POST), /subscribe (POST)
    webhooks     /webhooks (GET, POST), /webhooks/{id} (GET, DELETE), /webhooks/{id}/ping,
                 /webhooks/{id}/deliveries, /webhooks/{id}/deliveries/{delivery_id}/redeliver

Outside it: embed (/embed/{id}, /oembed; documented too), health, media, feeds, site
(/robots.txt, /favicon.ico), subscribe (the reader's pages), playground, activitypub
(/.well-known/webfinger, /.well-known/nodeinfo, /nodeinfo/2.1, /ap/...: docs/FEDERATION.md), log
(/log/checkpoint, /log/tile/...: the transparency log's tlog-tiles), pages.
"""
from blueprints import activitypub, embed, feeds, health, media, pages, playground, site, subscribe
from blueprints import log as transparency
from blueprints.api import (
    cast,
    changes,
    days,
    front,
    log,
    paper,
    personas,
    posts,
    search,
    sections,
    stories,
    subscribers,
    webhooks,
)
from web import policy

API_BLUEPRINTS = [paper.bp, stories.bp, sections.bp, personas.bp, cast.bp, days.bp, front.bp,
                  search.bp, posts.bp, changes.bp, log.bp, subscribers.bp, webhooks.bp, embed.bp]
# The /api/v1 tree is open to any origin (keyed answers lose CORS again: web/caching.py).
for _bp in API_BLUEPRINTS[:-1]:
    policy.blueprint(_bp, cors="any", problems=True)
PLAIN_BLUEPRINTS = [health.bp, media.bp, feeds.bp, site.bp, subscribe.bp, playground.bp, activitypub.bp,
                    transparency.bp, pages.bp]
