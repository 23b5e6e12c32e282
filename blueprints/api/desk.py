"""Stub: filled in by its owner."""
from __future__ import annotations

from blueprints.api.common import api_blueprint

bp = api_blueprint("desk", __name__, "Filing desk: file, revise, air and unair pieces; sections, personas, config and video editions (keyed).")
