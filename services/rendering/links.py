"""Absolute URLs for the current request's host (spec: "all URLs absolute").

The scheme is PUBLIC_URL_SCHEME (https in production behind a proxy); the host is the request's
own, so every paper's answers point at that paper's host. Reader page paths live here, in one
place, so the API, feeds and pages agree on them.
"""
from __future__ import annotations

from datetime import date

from flask import current_app, request


def absolute(path: str) -> str:
    """`/x` -> `{scheme}://{request host}/x`."""
    return f"{current_app.config['PUBLIC_URL_SCHEME']}://{request.host}{path}"


def home() -> str:
    return absolute("/")


def story_page(slug: str) -> str:
    return absolute(f"/stories/{slug}")


def section_page(slug: str) -> str:
    return absolute(f"/sections/{slug}")


def day_page(day: date) -> str:
    return absolute(f"/days/{day.isoformat()}")


def edition_page(day: date) -> str:
    return absolute(f"/cast/{day.isoformat()}")


def edition_embed(day: date) -> str:
    """The edition page in its frameable form (video only), for `<iframe>` embeds."""
    return edition_page(day) + "?embed=1"


def embed(id_or_slug: str) -> str:
    return absolute(f"/embed/{id_or_slug}")


def share_card(slug: str) -> str:
    return absolute(f"/cards/{slug}.png")


def avatar(slug: str) -> str:
    return absolute(f"/masthead/{slug}/avatar.svg")


def api(path: str = "") -> str:
    """`api('/stories')` -> `{scheme}://{host}/api/v1/stories`."""
    return absolute("/api/v1" + path)
