"""Stub: filled in by its owner."""
from __future__ import annotations

from blueprints.api.common import api_blueprint

bp = api_blueprint("front", __name__, "The front page, video editions, short-form posts and the masthead.")
