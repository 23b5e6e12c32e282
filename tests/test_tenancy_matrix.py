"""Tenancy (docs/API.md "tenancy"): every route of `app.url_map` x every key kind x three hosts.

Three papers share one database: A (`aard`, public, the paper whose data must not leak), B
(`bram`, public) and C (`cobalt`, private). Every word of A's data carries the token "aard",
every word of C's "cobalt", and A's draft "zebradraft", so a leak is a substring in an answer's
body or headers. The paths are filled with real ids, slugs, days and tokens (tests/routes.py):

- on B's host, with no key or any of B's keys, asking for A's pieces, sections, personas, days
  and tokens: nothing of A's appears, and no write reaches A's rows (compared before/after);
- on B's host with any of A's keys: 403 on every route of a paper, and nothing of A's;
- on C's host (private) without a key: 404 everywhere, feeds, pages, embeds, oEmbed, cards and
  avatars included, and nothing of C's; with A's key: 403; with C's own key: nothing of A's;
- on A's host without a key: the draft nowhere; with A's keys: the draft only on the keyed API
  lane, never in a feed, page, card or embed.

It runs on the suite's app, and again on an app with the response cache on (SimpleCache), where
keyed answers are asked for first: none may be stored and served to the public after.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import select

from app import create_app
from extensions import db
from models import (
    AlertDelivery,
    CitedFact,
    DeskKey,
    Edition,
    Paper,
    Persona,
    Piece,
    PieceRevision,
    Section,
    SigningKey,
    Subscriber,
    WebhookDelivery,
)
from tests.fixtures.app import dispose
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.routes import PaperData, rules, urls_for
from web import policy


def for_a_paper(app, endpoint: str) -> bool:
    """The route answers for a paper (not the process: health, static), by its policy."""
    return policy.of(app, endpoint).paper


def reads_desk_keys(app, endpoint: str) -> bool:
    """The route reads desk keys (an ActivityPub inbox reads an HTTP signature instead)."""
    return policy.of(app, endpoint).desk_keys
# A write probe per endpoint: what a request that would change something sends.
BODIES = {
    "stories.revise_story": {"headline": "Pwned"},
    "sections.update_section": {"description": "Pwned"},
    "personas.update_persona": {"beat": "Pwned"},
    "paper.update_config": {"motto": "Pwned"},
    "subscribers.create_subscribers": {"email": "probe@example.com"},
    "subscribers.subscribe": {"email": "probe@example.com"},
}
FORMS = {"subscribe.subscribe_form": lambda d: {"email": "probe2@example.com", "sections": "World"},
         "subscribe.confirm": lambda d: {"token": d.confirm_token},
         "subscribe.unsubscribe": lambda d: {"token": d.unsubscribe_token}}
OWNED = (Section, Persona, Piece, Edition, Subscriber, DeskKey, SigningKey)


@dataclass
class Newsroom:
    a: PaperData
    b: PaperData
    c: PaperData
    a_draft: tuple[int, str]
    keys: dict  # (paper letter, kind) -> key
    a_id: int


def subscriber(client, host: str, email: str, admin_key: str | None = None) -> Subscriber:
    headers = auth(admin_key, "X-Desk-Key")
    body = {"emails": [email]} if admin_key else {"email": email}
    assert client.post("/api/v1/subscribers", json=body, headers=headers,
                       base_url=f"http://{host}").status_code == 202
    return db.session.scalars(select(Subscriber).where(Subscriber.email == email)).one()


def build(desk, client) -> Newsroom:
    keys, data, ids = {}, {}, {}
    specs = {
        "a": dict(slug="aard", public=True, sections=("Aardworld", "Aardbiz"),
                  personas=("Aardpersona Quill", "Aardpersona Ledger"), nameplate="The Aard Times",
                  motto="Aard motto", description="Aard paper",
                  config={"timezone": "UTC", "help_desk": "mailto:aard-desk@example.com"}),
        "b": dict(slug="bram", public=True, sections=("World", "Business"), personas=("Bram Quill",),
                  nameplate="The Bram Post", motto="Bram motto", description="Bram paper"),
        "c": dict(slug="cobalt", public=False, sections=("Cobaltsec",), personas=("Cobalt Persona",),
                  nameplate="The Cobalt Ledger", motto="Cobalt motto", description="Cobalt paper"),
    }
    draft = None
    for letter, spec in specs.items():
        slug = spec["slug"]
        paper = desk.paper(**spec)
        section, persona = spec["sections"][0], spec["personas"][0]
        piece = desk.piece(paper, f"{slug.title()} rates rise", section=section, byline=persona,
                           dek=f"{slug} dek", prose=f"{slug.title()} prose[^1] and more[^2].",
                           on_air_at=T0)
        desk.piece(paper, f"{slug.title()} second story", section=spec["sections"][-1],
                   on_air_at=T0 + timedelta(hours=2))
        if letter == "a":
            d = desk.piece(paper, "Zebradraft under embargo", section=section, byline=persona,
                           dek="zebradraft dek", on_air_at=None)
            draft = (d.id, d.slug)
        desk.edition(paper, T0.date(), title=f"{slug.title()} cast")
        for kind in ("read", "admin"):
            keys[(letter, kind)] = desk.key(paper, kind, label=f"{slug} {kind}")
        keys[(letter, "agent")] = desk.key(paper, "agent", persona=desk.persona(paper, persona),
                                           capabilities=["file", "revise"], label=f"{slug} agent")
        host = f"{slug}.localhost"
        row = subscriber(client, host, f"{slug}reader@example.com",
                         admin_key=None if spec["public"] else keys[(letter, "admin")])
        data[letter] = PaperData.of(piece, host, T0.date(),
                                    section_slug=desk.section(paper, section).slug,
                                    persona_slug=desk.persona(paper, persona).slug, subscriber=row)
        ids[letter] = paper.id
    return Newsroom(a=data["a"], b=data["b"], c=data["c"], a_draft=draft, keys=keys, a_id=ids["a"])


def snapshot_of(paper_id: int) -> dict:
    """Every row that belongs to the paper, as plain tuples."""
    rows = {"papers": db.session.execute(select(Paper.__table__).where(Paper.id == paper_id)).all()}
    for model in OWNED:
        table = model.__table__
        rows[table.name] = db.session.execute(
            select(table).where(table.c.paper_id == paper_id).order_by(table.c.id)).all()
    pieces = select(Piece.id).where(Piece.paper_id == paper_id)
    for model in (PieceRevision, CitedFact):
        table = model.__table__
        rows[table.name] = db.session.execute(
            select(table).where(table.c.piece_id.in_(pieces)).order_by(table.c.id)).all()
    subscribers = select(Subscriber.id).where(Subscriber.paper_id == paper_id)
    for model in (AlertDelivery, WebhookDelivery):
        table = model.__table__
        rows[table.name] = db.session.execute(
            select(table).where(table.c.subscriber_id.in_(subscribers)).order_by(table.c.id)).all()
    db.session.rollback()
    return rows


def answer_text(response) -> str:
    head = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    return (head + "\n" + response.get_data().decode("utf-8", "replace")).lower()


def sweep(client, app, host_data: PaperData, probe: PaperData, key: str | None, *,
          writes: bool, overrides: dict | None = None):
    """Yield (method, url, endpoint, response) for every route on `host_data`'s host, with the
    paths filled from `probe`'s values (another paper's, for cross-tenant probes)."""
    headers = auth(key, "X-Desk-Key")
    for method, rule in rules(app, None if writes else {"GET"}):
        for url in urls_for(rule, probe, overrides):
            kwargs = {}
            if rule.endpoint in FORMS:
                kwargs["data"] = FORMS[rule.endpoint](probe)
            elif method in ("POST", "PATCH", "PUT"):
                kwargs["json"] = BODIES.get(rule.endpoint, {})
            response = client.open(url, method=method, headers=headers,
                                   base_url=host_data.base_url, **kwargs)
            yield method, url, rule.endpoint, response
            response.close()


def run_matrix(client, app, world: Newsroom) -> int:
    """The whole matrix; returns the number of requests made."""
    a, b, c, keys = world.a, world.b, world.c, world.keys
    made = 0
    # Positive controls: the tokens do show where they belong, so their absence means something.
    shown = {"bram": 0, "cobalt": 0, "zebradraft": 0}
    before = snapshot_of(world.a_id)

    # B's host, A's ids and tokens: no key and each of B's keys see nothing of A's.
    for key in (None, keys[("b", "read")], keys[("b", "admin")], keys[("b", "agent")]):
        for method, url, _endpoint, response in sweep(client, app, b, a, key, writes=True):
            made += 1
            assert response.status_code < 500, (method, url, response.status_code)
            text = answer_text(response)
            assert "aard" not in text, (method, url, key and key[:12])
            shown["bram"] += "bram" in text
    # B's host with A's keys: refused on every route of a paper.
    for kind in ("read", "admin", "agent"):
        for method, url, endpoint, response in sweep(client, app, b, a, keys[("a", kind)], writes=True):
            made += 1
            if for_a_paper(app, endpoint) and reads_desk_keys(app, endpoint):
                assert response.status_code == 403, (method, url, kind, response.status_code)
            assert "aard" not in answer_text(response), (method, url, kind)
    # The private paper: the unknown host's 404 everywhere without a key of its own, another
    # paper's valid key included.
    for key, status in ((None, 404), (keys[("a", "admin")], 404)):
        for method, url, endpoint, response in sweep(client, app, c, c, key, writes=True):
            made += 1
            if for_a_paper(app, endpoint):
                assert response.status_code == status, (method, url, response.status_code)
            text = answer_text(response)
            assert "cobalt" not in text and "aard" not in text, (method, url)
    for method, url, _endpoint, response in sweep(client, app, c, a, keys[("c", "read")], writes=True):
        made += 1
        text = answer_text(response)
        assert response.status_code < 500 and "aard" not in text, (method, url)
        shown["cobalt"] += "cobalt" in text
    assert snapshot_of(world.a_id) == before, "a request on another host changed paper A"

    # A's own host: the draft never reaches the public lane, feeds, pages, cards or embeds.
    draft_id, draft_slug = world.a_draft
    for overrides in (None, {"id": draft_id, "slug": draft_slug}):
        for key in (keys[("a", "read")], keys[("a", "admin")], keys[("a", "agent")], None):
            for _method, url, _endpoint, response in sweep(client, app, a, a, key, writes=False,
                                                          overrides=overrides):
                made += 1
                assert response.status_code < 500, (url, response.status_code)
                text = answer_text(response)
                if key is None or not url.startswith("/api/v1"):
                    assert "zebradraft" not in text, (url, key and key[:12])
                shown["zebradraft"] += "zebradraft" in text
    assert min(shown.values()) >= 3, shown
    return made


@pytest.fixture
def world(desk, client) -> Newsroom:
    return build(desk, client)


@pytest.mark.slow
def test_no_answer_leaks_across_papers_keys_or_lanes(app, client, world):
    made = run_matrix(client, app, world)
    assert made > 500, made  # every route, every key kind, three hosts
    print("tenancy matrix requests:", made)


@pytest.mark.slow
def test_the_response_cache_keeps_papers_and_lanes_apart(app, world, tmp_path):
    cached = create_app({
        "TESTING": True, "SQLALCHEMY_DATABASE_URI": app.config["SQLALCHEMY_DATABASE_URI"],
        "RATELIMIT_ENABLED": False,
        "INSTANCE_PATH": str(tmp_path / "instance"), "OUTBOX_DIR": str(tmp_path / "outbox"),
        "CACHE_TYPE": "SimpleCache", "CACHE_THRESHOLD": 5000,
    })
    try:
        client = cached.test_client()
        # Fill the cache from A's host, keyed and public, then ask B's and C's hosts the same.
        for key in (world.keys[("a", "admin")], None):
            for _ in sweep(client, cached, world.a, world.a, key, writes=False,
                           overrides={"id": world.a_draft[0], "slug": world.a_draft[1]}):
                pass
        run_matrix(client, cached, world)
        assert any(k.startswith("resp:") for k in cached.extensions["cache"][cache_key(cached)]._cache)
    finally:
        dispose(cached)


def cache_key(app):
    # flask-caching keeps one cache object per Cache instance in app.extensions["cache"].
    return next(iter(app.extensions["cache"]))
