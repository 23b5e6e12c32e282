"""Every blueprint, listed once. API blueprints go through flask-smorest (they are documented in
the OpenAPI document); plain ones are registered on the app directly."""
from blueprints import embed, feeds, health, media, pages
from blueprints.api import archive, desk, front, index, proof, search, stories

API_BLUEPRINTS = [index.bp, stories.bp, archive.bp, search.bp, front.bp, desk.bp, proof.bp, embed.bp]
PLAIN_BLUEPRINTS = [health.bp, media.bp, feeds.bp, pages.bp]
