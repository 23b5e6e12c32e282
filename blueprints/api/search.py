"""Stub: filled in by its owner."""
from __future__ import annotations

from blueprints.api.common import api_blueprint

bp = api_blueprint("search", __name__, "Full-text search over headline, dek and prose.")
