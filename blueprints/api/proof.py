"""Stub: filled in by its owner."""
from __future__ import annotations

from blueprints.api.common import api_blueprint

bp = api_blueprint("proof", __name__, "Provenance records and the agent cockpit (keyed).")
