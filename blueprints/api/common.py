"""Helpers shared by the `/api/v1` blueprints: access levels, list wrappers, 404s."""
from __future__ import annotations

import functools

from flask import abort, g
from flask_smorest import Blueprint

from services.newsroom import keys

API_PREFIX = "/api/v1"
SECURITY = [{"bearer": []}, {"deskKey": []}]
OPTIONAL_SECURITY = [{}, *SECURITY]


def api_blueprint(name: str, import_name: str, description: str) -> Blueprint:
    """A flask-smorest blueprint mounted under `/api/v1`; its name becomes an OpenAPI tag."""
    return Blueprint(name, import_name, url_prefix=API_PREFIX, description=description)


def keyed(bp: Blueprint, level: str):
    """Require a key of at least `level` ('read' or 'admin') on this view, and document the
    security schemes and the 401/403 answers. Use directly under `@bp.route`."""

    def decorator(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            keys.require(g.key, level)
            return view(*args, **kwargs)

        wrapper.access = level
        documented = bp.doc(security=SECURITY)(wrapper)
        documented = bp.alt_response(401, description="Missing, malformed, unknown or revoked key.")(documented)
        return bp.alt_response(403, description="A key of another paper, or below the level needed.")(documented)

    return decorator


def not_found(what: str = "piece"):
    """Abort with a 404 problem naming what was not found."""
    abort(404, description=f"No such {what} on this paper.")
