"""Stub: filled in by its owner."""
from __future__ import annotations

from blueprints.api.common import api_blueprint

bp = api_blueprint("archive", __name__, "Sections and the day-by-day archive.")
