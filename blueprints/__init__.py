"""Every blueprint, listed once. API blueprints go through flask-smorest (they are documented in
the OpenAPI document); plain ones are registered on the app directly."""
from blueprints import health
from blueprints.api import archive, front, index, search, stories

API_BLUEPRINTS = [index.bp, stories.bp, archive.bp, search.bp, front.bp]
PLAIN_BLUEPRINTS = [health.bp]
