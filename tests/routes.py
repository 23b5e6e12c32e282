"""Every route of the app, with its path (and the query its view reads) filled from one paper's
real data: the route lists of the header, tenancy and limit tests come from `app.url_map`, so a
route added later is covered without anyone remembering to list it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from flask import current_app
from sqlalchemy import select
from sqlalchemy.orm import joinedload

from extensions import db
from models import Paper, Piece, Subscriber
from services.delivery import subscriptions
from services.links import card_version
from services.rendering import media

SKIPPED_METHODS = {"HEAD", "OPTIONS"}
# Which of the paper's slugs a `<slug>` argument names, per endpoint.
SLUG_KIND = {
    "media.share_card": "piece_slug",
    "media.current_share_card": "piece_slug",
    "media.avatar": "persona_slug",
    "media.avatar_png": "persona_slug",
    "pages.section": "section_slug",
    "pages.persona": "persona_slug",
    "sections.update_section": "section_slug",
    "personas.update_persona": "persona_slug",
    "activitypub.persona_actor": "persona_slug",
    "activitypub.persona_inbox": "persona_slug",
    "activitypub.persona_outbox": "persona_slug",
    "activitypub.persona_followers": "persona_slug",
}
_ARG = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


@dataclass
class PaperData:
    """One paper's real values for paths and queries."""

    host: str
    piece_id: int
    piece_slug: str
    section_slug: str
    persona_slug: str
    day: str
    edition_day: str
    card_version: str = ""
    confirm_token: str = ""
    unsubscribe_token: str = ""
    preferences_token: str = ""

    @classmethod
    def of(cls, piece: Piece, host: str, edition_day, *, section_slug: str, persona_slug: str,
           subscriber: Subscriber | None = None) -> PaperData:
        """Values from `piece` (on air) and `edition_day`; tokens when `subscriber` is given."""
        data = cls(host=host, piece_id=piece.id, piece_slug=piece.slug, section_slug=section_slug,
                   persona_slug=persona_slug, day=piece.on_air_at.date().isoformat(),
                   edition_day=edition_day.isoformat(), card_version=_card_version(piece.id))
        if subscriber is not None:
            data.confirm_token = subscriptions.make_token("confirm", subscriber)
            data.unsubscribe_token = subscriptions.make_token("unsubscribe", subscriber)
            data.preferences_token = subscriptions.make_token("preferences", subscriber)
        return data

    @property
    def base_url(self) -> str:
        return f"http://{self.host}"


def _card_version(piece_id: int) -> str:
    """The current version of the piece's share card (its URL's last segment)."""
    piece = db.session.scalars(select(Piece).where(Piece.id == piece_id)
                               .options(joinedload(Piece.section), joinedload(Piece.persona))).one()
    return card_version(db.session.get(Paper, piece.paper_id).nameplate, piece)


def rules(app, methods: set[str] | None = None) -> list[tuple[str, object]]:
    """(method, rule) for every route of `app` (HEAD and OPTIONS aside), optionally only
    `methods`, sorted by path."""
    found = []
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods - SKIPPED_METHODS):
            if methods is None or method in methods:
                found.append((method, rule))
    return sorted(found, key=lambda item: (item[1].rule, item[0]))


def value_for(endpoint: str, name: str, data: PaperData) -> str:
    if name == "id":
        return str(data.piece_id)
    if name == "slug":
        return getattr(data, SLUG_KIND[endpoint])
    if name == "day":
        return data.edition_day if endpoint == "pages.edition" else data.day
    if name == "key" and endpoint == "activitypub.indexnow_key":
        return "0" * 32
    if name == "delivery_id":
        return "dlv_0"
    if name == "version" and endpoint == "media.share_card":
        return data.card_version  # the current one: a 200, not the redirect
    if name == "n":
        return "1"
    if name == "filename":
        return "css/paper.css"
    if name == "path" and endpoint == "transparency.tile":
        return "entries/000.p/1"  # the first entry bundle of a log with one entry
    if name == "name" and endpoint == "media.media_file":
        # A real stored file: captions are the smallest kind.
        return media.store(current_app.instance_path, b"WEBVTT\n", "vtt").removeprefix(media.MEDIA_PREFIX)
    raise KeyError(f"no value for <{name}> of {endpoint}: extend tests/routes.py")


def path_for(rule, data: PaperData, overrides: dict | None = None) -> str:
    """The rule's path with every argument filled (percent-encoded) from `data`."""
    overrides = overrides or {}

    def fill(match: re.Match) -> str:
        name = match.group(1)
        value = overrides[name] if name in overrides else value_for(rule.endpoint, name, data)
        return quote(str(value), safe="/" if name in ("filename", "path") else "")

    return _ARG.sub(fill, rule.rule)


def queries_for(endpoint: str, data: PaperData) -> list[dict]:
    """The query strings worth sending to a view that reads one (at least `{}`)."""
    story_page = f"{data.base_url}/stories/{data.piece_slug}"
    return {
        "embed.oembed": [{"url": story_page}, {"url": story_page, "format": "xml", "maxwidth": 300}],
        "search.search_stories": [{"q": "rates"}],
        "posts.list_posts": [{}, {"since": "2000-01-01T00:00:00Z", "limit": 100}],
        "stories.list_stories": [{"limit": 200}],
        "playground.playground": [{}, {"story": data.piece_slug, "maxwidth": 300}],
        "pages.edition": [{}, {"embed": "1"}],
        "pages.search_page": [{}, {"q": "rates"}],
        "subscribe.confirm_page": [{"token": data.confirm_token}],
        "subscribe.unsubscribe_page": [{"token": data.unsubscribe_token}],
        "subscribe.preferences_page": [{"token": data.preferences_token}],
        "subscribers.get_preferences": [{"token": data.preferences_token}],
        "activitypub.webfinger": [{"resource": f"acct:{data.persona_slug}@{data.host}"}],
        "activitypub.paper_outbox": [{}, {"page": 1}],
        "activitypub.persona_outbox": [{}, {"page": 1}],
    }.get(endpoint, [{}])


def urls_for(rule, data: PaperData, overrides: dict | None = None) -> list[str]:
    """Every URL (path and query) to try for `rule` on `data`'s paper."""
    path = path_for(rule, data, overrides)
    return [path + ("?" + urlencode(q) if q else "") for q in queries_for(rule.endpoint, data)]
