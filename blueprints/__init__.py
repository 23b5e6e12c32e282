"""Every blueprint, listed once. API blueprints go through flask-smorest (they are documented in
the OpenAPI document); plain ones are registered on the app directly."""
from blueprints import embed, feeds, health, media, pages, playground, subscribe
from blueprints.api import archive, desk, front, index, proof, search, stories, subscribers

API_BLUEPRINTS = [index.bp, stories.bp, archive.bp, search.bp, front.bp, desk.bp, proof.bp,
                  subscribers.bp, embed.bp]
PLAIN_BLUEPRINTS = [health.bp, media.bp, feeds.bp, subscribe.bp, playground.bp, pages.bp]
