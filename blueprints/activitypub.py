"""The paper and its AI personas in the fediverse (docs/FEDERATION.md): WebFinger, NodeInfo,
ActivityPub actors, Articles, inboxes, outboxes and follower counts.

Every ActivityPub document lives at its own URL under `/ap/` and answers
`application/activity+json` whatever the `Accept` header, but for an Article's id, which
sends a browser (`Accept` preferring text/html) to the story page: that route's policy
`offers` both (web/policy.py), so its answers say `Vary: Accept` and the response cache and the
replay keep the two apart (web/caching.py `chosen_type`); the others are kept by URL. Reader
pages name their twin with `<link rel="alternate" type="application/activity+json">`
(templates/base.html), and WebFinger names the actors. A
private paper, an unknown host, or ACTIVITYPUB_ENABLED off: 404 on every route here.

Inbox POSTs (`/ap/inbox`, `<actor>/inbox`) need an HTTP signature
(services/delivery/federation/inbox.py): 401 and nothing recorded without one; a Follow is
answered by a signed Accept that the worker delivers (a row committed with the follow, never a
call from here). The IndexNow key file (`/<key>.txt`) lives here too.
"""
from __future__ import annotations

import json
import logging
import os
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from flask import Blueprint, Response, abort, current_app, g, redirect, request, url_for
from sqlalchemy import func, select
from sqlalchemy.orm import joinedload, selectinload

from blueprints.api import permissions
from extensions import db
from models import PAPER_ACTOR, ApFollower, Persona, Piece, PieceChange
from models.clock import utcnow
from services.delivery.federation import deliveries, documents, inbox, keys, pings, remote
from services.errors import BadRequest, NotFound
from services.newsroom import seeds
from services.reading import stories, visibility
from web import caching, policy
from web.commit import transactional
from web.links import links, paper_links

# Any origin may read these documents from a browser (fediverse web clients do).
bp = policy.blueprint(Blueprint("activitypub", __name__), cors="read", problems=True)
# An inbox's Authorization is an HTTP signature (some servers send one there), never a desk key.
INBOX = policy.route(cache=False, desk_keys=False)
log = logging.getLogger("paperdesk.activitypub")

ACTIVITY_JSON = "application/activity+json"
JRD = "application/jrd+json"
LD_JSON = "application/ld+json"
MAX_PAGE = 10_000


def _json(document: dict, content_type: str = ACTIVITY_JSON, status: int = 200) -> Response:
    return Response(json.dumps(document, ensure_ascii=False, separators=(",", ":")), status=status,
                    content_type=content_type)


def _paper():
    """The request's paper, if it federates: 404 for a private paper or with ActivityPub off."""
    if not current_app.config.get("ACTIVITYPUB_ENABLED", True) or not g.paper.is_public:
        abort(404, description="This paper does not federate.")
    return g.paper


def _persona(slug: str) -> Persona:
    found = db.session.scalar(select(Persona).where(
        Persona.paper_id == g.paper.id, Persona.slug == slug, Persona.active.is_(True)))
    if found is None:
        raise NotFound("There is no such persona on this paper's masthead.")
    return found


def _rsa_pem(paper) -> str:
    return keys.ensure_rsa_key(paper, current_app.config["SECRET_KEY"], utcnow()).public_pem


# ----------------------------------------------------------------------------- discovery


@bp.route("/.well-known/webfinger")
@policy.route(query=("resource",))
def webfinger():
    """RFC 7033 WebFinger for `acct:<paper slug>@<host>` (the paper) or `acct:<persona
    slug>@<host>` (a persona), or an actor's URL: a JRD whose `self` link is the actor, on the
    paper's canonical origin whichever of its hosts is asked. 400 without `resource`; 404 for a
    name or host of no actor here."""
    paper = _paper()
    here, asked = paper_links(), links()
    resource = request.args.get("resource", "").strip()
    if not resource:
        raise BadRequest("Name the account in `resource`, e.g. acct:demo@host.")
    if resource.startswith("acct:"):
        name, _, host = resource[5:].rpartition("@")
        name = name.lstrip("@").lower()
        if host.lower() not in (here.host, here.host_name, asked.host, asked.host_name):
            raise NotFound("That account is not on this host.")
    elif resource.startswith((here.origin + "/ap/", asked.origin + "/ap/")):
        path = "/ap/" + resource.split("/ap/", 1)[1]
        name = paper.slug if path == "/ap/paper" else path.removeprefix("/ap/personas/")
    else:
        raise NotFound("That account is not on this host.")
    subject = "acct:" + documents.handle(here, name).removeprefix("@")
    if name == paper.slug:
        return _json(documents.webfinger(subject, documents.paper_actor(here), here.home()), JRD)
    persona = _persona(name)
    return _json(documents.webfinger(subject, documents.persona_actor(here, persona.slug),
                                     here.absolute(f"/masthead/{persona.slug}")), JRD)


@bp.route("/.well-known/nodeinfo")
def nodeinfo_index():
    """The NodeInfo discovery document: links to NodeInfo 2.0 and 2.1."""
    _paper()
    return _json(documents.nodeinfo_index(paper_links()), "application/json")


@bp.route("/nodeinfo/2.0", defaults={"schema": "2.0"})
@bp.route("/nodeinfo/2.1", defaults={"schema": "2.1"})
def nodeinfo(schema: str):
    """NodeInfo 2.0 or 2.1 of this paper's host."""
    paper = _paper()
    personas = db.session.scalar(select(func.count()).select_from(Persona).where(
        Persona.paper_id == paper.id, Persona.active.is_(True))) or 0
    pieces = db.session.scalar(select(func.count()).select_from(Piece).where(
        Piece.paper_id == paper.id, visibility.on_air()), visibility.at(caching.request_now())) or 0
    try:
        version = package_version("paper-desk")
    except PackageNotFoundError:  # pragma: no cover - always installed (make install)
        version = "0"
    return _json(documents.nodeinfo(paper, schema=schema, version=version, personas=personas, pieces=pieces),
                 f'application/json; profile="{documents.nodeinfo_schema(schema)}#"')


@bp.route("/ap/context.jsonld")
def context():
    """The JSON-LD context of the terms ActivityStreams does not define (documents.EXTRA_TERMS)."""
    _paper()
    return _json(documents.EXTRA_TERMS, LD_JSON)


@bp.route("/<string:key>.txt")
# No CORS: flask-cors matches by path pattern, and this one's would take in /robots.txt too.
@policy.route(cors=None)
def indexnow_key(key: str):
    """The paper's IndexNow key file (the protocol's proof that the host owns the key), at
    `/<key>.txt` with the key as its body; 404 for any other name or when INDEXNOW_ENDPOINT is
    off. (`/robots.txt` and `/llms.txt` are rules of their own, matched first.)"""
    paper = g.paper
    config = current_app.config
    if not config.get("INDEXNOW_ENDPOINT") or not paper.is_public:
        raise NotFound()
    expected = pings.indexnow_key(config["SECRET_KEY"], paper)
    if key != expected:
        raise NotFound()
    return Response(expected, content_type="text/plain; charset=utf-8")


# ----------------------------------------------------------------------------- actors


@bp.route("/ap/paper")
def paper_actor():
    """The paper's actor (a `Service`)."""
    paper = _paper()
    here = paper_links()
    icon = here.absolute(url_for("static", filename="img/icon-512.png"))
    return _json(documents.paper_document(paper, here, rsa_pem=_rsa_pem(paper), receipt=keys.receipt_key(paper),
                                          icon=icon))


@bp.route("/ap/personas/<string:slug>")
def persona_actor(slug: str):
    """A persona's actor (a `Service` whose summary says it is an AI persona); 404 for a
    persona not on the masthead."""
    paper = _paper()
    persona = _persona(slug)
    return _json(documents.persona_document(paper, persona, paper_links(), rsa_pem=_rsa_pem(paper),
                                            receipt=keys.receipt_key(paper)))


# ----------------------------------------------------------------------------- objects


def _article(piece: Piece) -> dict:
    """The Article of `piece` with its proof; without one (logged) when this instance's
    SECRET_KEY does not open the receipt key: a reader still gets the piece, and a proof is
    never made with another key (the worker, by contrast, stops and retries: nothing is sent)."""
    try:
        return documents.article(g.paper, piece, paper_links(), receipt=keys.receipt_key(g.paper),
                                 secret=current_app.config["SECRET_KEY"])
    except seeds.SeedLocked:
        log.warning("serving an Article without its proof: the receipt key does not open (SECRET_KEY)")
        return documents.article(g.paper, piece, paper_links(), receipt=None, secret="")


@bp.route("/ap/stories/<int:id>")
# Peers hand the `id` to their readers as the post's link: a browser is sent to the page.
@policy.route(offers=(ACTIVITY_JSON, LD_JSON, "application/json", "text/html"))
def article(id: int):  # noqa: A002 - `id`, as every route of a piece names it (tests/routes.py)
    """A piece on air as an Article with its proof, or, for a request whose `Accept` prefers
    text/html (a browser), 303 to its story page (`Vary: Accept` on both); 410 with a Tombstone
    for a piece pulled from the air (or deleted) since it aired; 404 for a draft, a scheduled
    piece before its instant, or no piece."""
    paper = _paper()
    if id > stories.MAX_ID:
        raise NotFound("There is no such story on air.")
    piece = db.session.scalar(select(Piece).where(Piece.paper_id == paper.id, Piece.id == id, visibility.on_air())
                              .options(joinedload(Piece.section), joinedload(Piece.persona),
                                       selectinload(Piece.cited_facts)), visibility.at(caching.request_now()))
    if piece is None:
        # Once public, now pulled (or deleted): 410 with a Tombstone, so a server that refetches
        # the object removes its copy. A draft never aired stays a plain 404.
        pulled = db.session.scalar(select(PieceChange.at).where(
            PieceChange.paper_id == paper.id, PieceChange.piece_id == id, PieceChange.type == "unaired")
            .order_by(PieceChange.at.desc()).limit(1))
        if pulled is None:
            raise NotFound("There is no such story on air.")
        return _json(documents.tombstone(paper_links(), id, pulled), status=410)
    caching.tag_piece(piece)
    if caching.chosen_type() == "text/html":
        return redirect(paper_links().story_page(piece.slug), code=303)
    return _json(_article(piece))


# ----------------------------------------------------------------------------- collections


def _page() -> int | None:
    raw = request.args.get("page")
    if raw is None:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE:
        raise BadRequest(f"`page` is a whole number from 1 to {MAX_PAGE}.")
    return int(raw)


def _outbox(local: str, persona: Persona | None):
    paper = g.paper
    here = paper_links()
    actor = documents.actor_of(here, local)
    collection_id = f"{actor}/outbox"
    query = stories.rows_query(paper)
    if persona is not None:
        query = query.where(Piece.persona_id == persona.id)
    page, now = _page(), visibility.at(caching.request_now())
    if page is None:
        total = db.session.scalar(select(func.count()).select_from(query.order_by(None).subquery()), now) or 0
        return _json(documents.collection(collection_id, total, paged=True))
    size = documents.PAGE_SIZE
    rows = list(db.session.scalars(query.options(selectinload(Piece.cited_facts))
                                   .offset((page - 1) * size).limit(size + 1), now))
    items = []
    for piece in rows[:size]:
        at = piece.on_air_at
        if persona is not None:
            items.append(documents.create(here, _article(piece), at))
        else:
            items.append(documents.announce(here, documents.article_id(here, piece.id),
                                            documents.persona_actor(here, piece.persona.slug), at))
    return _json(documents.collection_page(collection_id, page, items, more=len(rows) > size))


@bp.route("/ap/paper/outbox")
@policy.route(query=("page",))
def paper_outbox():
    """The paper's outbox: an OrderedCollection of its `Announce`s of the pieces on air, newest
    first, PAGE_SIZE a page (`?page=N`)."""
    _paper()
    return _outbox(PAPER_ACTOR, None)


@bp.route("/ap/personas/<string:slug>/outbox")
@policy.route(query=("page",))
def persona_outbox(slug: str):
    """A persona's outbox: the `Create`s of its pieces on air, newest first, paged."""
    _paper()
    persona = _persona(slug)
    return _outbox(persona.slug, persona)


def _followers(local: str):
    paper = g.paper
    collection_id = documents.actor_of(paper_links(), local) + "/followers"
    document = documents.collection(collection_id, deliveries.followers_count(paper, local), paged=False)
    # The public sees a count; the paper's admin sees who (keyed answers are never cached).
    if permissions.reaches(g.get("key"), "admin"):
        document["orderedItems"] = list(db.session.scalars(select(ApFollower.actor_uri).where(
            ApFollower.paper_id == paper.id, ApFollower.local == local).order_by(ApFollower.id)))
    return _json(document)


@bp.route("/ap/paper/followers")
@policy.route(cache=False)
def paper_followers():
    """The paper's followers: `totalItems` publicly; with an admin key, `orderedItems` too.
    Never cached: a follow does not move the paper's version."""
    _paper()
    return _followers(PAPER_ACTOR)


@bp.route("/ap/personas/<string:slug>/followers")
@policy.route(cache=False)
def persona_followers(slug: str):
    """A persona's followers, as for the paper's."""
    _paper()
    return _followers(_persona(slug).slug)


# ----------------------------------------------------------------------------- inboxes


def _receive(local: str | None):
    """Authenticate the POST (services/delivery/federation/inbox.py: the cheap checks, then at
    most the sender's key and actor fetched, within ACTIVITYPUB_KEY_FETCH_SECONDS in all)
    holding no database transaction, then act on it in one (web/commit.py)."""
    paper = _paper()
    config = current_app.config
    target = request.path + (f"?{request.query_string.decode('latin-1')}" if request.query_string else "")
    received = inbox.Request(method=request.method, target=target, headers=dict(request.headers),
                             body=request.get_data(cache=True))
    # End the read transaction tenancy opened: nothing is held (no connection, no lock, no
    # snapshot) while an unauthenticated sender is checked, however slow its server is.
    db.session.rollback()
    sender = inbox.authenticate(received, links().absolute(target), utcnow(),
                                allow_private=config["WEBHOOK_ALLOW_PRIVATE"],
                                seconds=config["ACTIVITYPUB_KEY_FETCH_SECONDS"],
                                slots=remote.FetchSlots(os.path.join(current_app.instance_path, "ap-fetch-slots"),
                                                        config["ACTIVITYPUB_FETCH_SLOTS"]))

    def act():
        outcome = inbox.receive(paper, paper_links(), local, sender, utcnow(),
                                max_per_origin=config["ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN"])
        return _json({"status": outcome.action, "detail": outcome.detail}, "application/json", 202)

    return transactional(act)()


@bp.route("/ap/inbox", methods=["POST"])
@INBOX
def shared_inbox():
    """The shared inbox: a signed Follow, Undo or Delete for any actor of the paper (202);
    401 without a valid HTTP signature (draft-cavage or RFC 9421)."""
    return _receive(None)


@bp.route("/ap/paper/inbox", methods=["POST"])
@INBOX
def paper_inbox():
    """The paper's inbox (see `shared_inbox`)."""
    return _receive(PAPER_ACTOR)


@bp.route("/ap/personas/<string:slug>/inbox", methods=["POST"])
@INBOX
def persona_inbox(slug: str):
    """A persona's inbox (see `shared_inbox`); 404 for a persona not on the masthead."""
    _paper()
    return _receive(_persona(slug).slug)
