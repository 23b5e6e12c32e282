"""Stub: filled in by its owner."""
from __future__ import annotations

from blueprints.api.common import api_blueprint

bp = api_blueprint("subscribers", __name__, "Email alerts with double opt-in, and webhooks.")
