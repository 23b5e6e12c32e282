"""Host -> paper, once per request (docs/API.md "tenancy").

A request's paper is the paper whose custom `host` equals the request host, else `{slug}` when
the host is `{slug}.{PAPER_DOMAIN}`, else `DEFAULT_PAPER` on a bare host (PAPER_DOMAIN itself or
one of BARE_HOSTS). No paper: 404. A private paper answers its public lane as if absent (404);
a valid key for it opens it.
"""
from __future__ import annotations

import logging
from typing import NamedTuple

from flask import abort
from sqlalchemy import bindparam, or_, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.orm import make_transient_to_detached

from extensions import READS, db, reads_engine
from models import Paper
from services.errors import DeskError, Unauthorized
from services.links import host_name
from services.newsroom import keys
from services.reading import memo
from web import policy, request_state, state
from web.headers import KEY_HEADERS, has_any, header
from web.request_state import this_app, this_g, this_request
from web.steps import replays, runs_for

log = logging.getLogger("paperdesk.tenancy")

NO_PAPER = "No paper is served on this host."


# Built once: every request runs one of these, and building the expression costs more than
# SQLAlchemy's compiled-statement cache saves (docs/PERFORMANCE.md). Core columns, not the
# entity: the ORM's execution and loading layer cost more than the statement itself for one row
# (a cold public read's paper, after every write), and `_detached` makes the Paper from the row.
_ATTRS = tuple(attr.key for attr in sa_inspect(Paper).column_attrs)
_COLUMNS = tuple(getattr(Paper, key) for key in _ATTRS)
_BY_HOST = select(*_COLUMNS).where(Paper.host == bindparam("host"))
_BY_HOST_OR_SLUG = select(*_COLUMNS).where(or_(Paper.host == bindparam("host"),
                                               Paper.slug == bindparam("slug")))
_HOST_AT = _ATTRS.index("host")


def paper_for_host(raw_host: str) -> Paper | None:
    """The paper served on this host, or None: a detached Paper (no session owns it; merge it
    into one to use it there, as `load_paper` does). One indexed query, on the session's
    connection (its transaction, if one is open)."""
    host = host_name(raw_host)
    config = this_app().config
    domain = config["PAPER_DOMAIN"]
    slug = None
    if host == domain or host in config["BARE_HOSTS"]:
        slug = config["DEFAULT_PAPER"]
    elif host.endswith("." + domain):
        slug = host[: -len(domain) - 1]
    connection = db.session.connection()
    if slug is None:
        rows = connection.execute(_BY_HOST, {"host": host}).all()
    else:
        rows = connection.execute(_BY_HOST_OR_SLUG, {"host": host, "slug": slug}).all()
    # A custom host wins over a slug match when both exist.
    for row in rows:
        if row[_HOST_AT] == host:
            return _detached(row)
    return _detached(rows[0]) if rows else None


def _detached(row) -> Paper:
    # A Paper no session owns, its attributes the row's, as the ORM's loading sets them (straight
    # into the instance's dict, no change events): kept by a snapshot across requests, and merged
    # into each request's session (a session's own row is expired by its rollback and would
    # reload itself, a query, in the next request that merged it).
    paper = _MANAGER.new_instance()
    paper.__dict__.update(zip(_ATTRS, row, strict=True))
    make_transient_to_detached(paper)
    return paper


_MANAGER = sa_inspect(Paper).class_manager


class PaperSnapshot(NamedTuple):
    """What a 304 or a stored answer needs of a request's paper: its `id`, `slug`, `state`
    (`{id}.{version}.{birth}`, see caching.paper_state), whether it `is_public`, and the
    deployment's generation `gen` it was read under (web/state.py; None: not to be kept)."""

    id: int
    slug: str
    state: str
    is_public: bool
    gen: int | None
    paper: Paper | None = None  # the row itself, detached: what a view reads of the paper
    # Paper.air_schedule: the instants scheduled pieces air at (http_cache.paper_state).
    air_schedule: tuple = ()


def snapshot_of(paper: Paper, gen: int | None, *, keep_row: bool = False) -> PaperSnapshot:
    """The snapshot of a paper `paper_for_host` read (detached), from the database under
    generation `gen` (read before the row was); with `keep_row`, holding the row itself for
    later requests to merge into their sessions (only rows no write has touched)."""
    birth = int(paper.created_at.timestamp()) if paper.created_at else 0
    return PaperSnapshot(paper.id, paper.slug, f"{paper.id}.{paper.version}.{birth:x}",
                         paper.is_public, gen, paper if keep_row else None,
                         tuple(paper.air_schedule or ()))


def _snapshots() -> dict[str, PaperSnapshot]:
    return this_app().extensions.setdefault("paperdesk.paper_snapshots", {})


def recent_snapshot(app, raw_host: str, environ: dict) -> PaperSnapshot | None:
    """This worker's snapshot of the paper on `raw_host` while the deployment's generation (as
    the request of WSGI `environ` reads it) is the one it was read under, else None. A snapshot
    answers 304s and stored answers with no database round trip, and is never stale: any commit
    that changed a paper, in any worker or host, moved the generation before its writer was
    answered (web/state.py)."""
    snap = kept_snapshot(app, raw_host)
    return snap if snap is not None and is_current(app, snap, environ) else None


def kept_snapshot(app, raw_host: str) -> PaperSnapshot | None:
    """This worker's snapshot of the paper on `raw_host`, current or not (see `is_current`)."""
    return app.extensions.get("paperdesk.paper_snapshots", {}).get(host_name(raw_host))


def is_current(app, snap: PaperSnapshot, environ: dict) -> bool:
    """True when `snap` was read under the generation the request (`environ`) reads."""
    gen = state.generation_for(app, environ)
    return gen is not None and snap.gen == gen


def _remember(snap: PaperSnapshot, raw_host: str) -> None:
    if snap.gen is not None:
        snapshots = _snapshots()
        if len(snapshots) > 4096:  # hosts are the papers' own, but a client chooses Host
            snapshots.clear()
        snapshots[host_name(raw_host)] = snap


memo.FORGET_ON_COMMIT.append("paperdesk.paper_snapshots")  # one listener for both


def _reads_desk_keys(req) -> bool:
    return policy.of(this_app(), req.endpoint).desk_keys


def _keyless_read(req) -> bool:
    if req.method not in ("GET", "HEAD"):
        return False
    return not has_any(KEY_HEADERS, req.environ)


@runs_for(policy.reads_desk_keys)
@replays(None)  # keyed requests never match a kept answer (Vary: Authorization, X-Desk-Key)
def refuse_malformed_key() -> None:
    """Pipeline step, before the rate limits and the paper lookup: a key header that cannot be
    a desk key (an `Authorization` that is not `Bearer desk_...`, an `X-Desk-Key` of the wrong
    shape) is a 401 with `WWW-Authenticate`, without a database query. A well-formed key is
    looked up by `load_paper`. Runs only where the route reads desk keys (policy `paper` and
    `desk_keys`)."""
    plain = keys.presented_key(header("Authorization"), header("X-Desk-Key"))
    if plain is not None and not keys.well_formed(plain):
        raise Unauthorized("The desk key is malformed.")  # with WWW-Authenticate


@runs_for(policy.for_a_paper)
@replays(None)  # the kept answer holds the paper state it was made for
def load_paper() -> None:
    """Pipeline step: set `g.paper` and `g.key`, or refuse. No paper on the host: 404. A key
    that is unknown, revoked or another paper's: 401/403 on a public paper, and on a private
    one the same 404 as an unknown host, as is no key at all."""
    g, req = this_g(), this_request()  # the objects, not their proxies (request_state.this_request)
    g.key = None
    request_state.current().read_autocommit = False
    g.pop("paper", None)  # a test holding an app context open reuses one `g` across requests
    g.pop("paper_snapshot", None)
    keyless_read = _keyless_read(req)
    if keyless_read:
        session = db.session()
        reads = reads_engine()
        if reads is not None and not session.in_transaction():
            # PostgreSQL: the session runs on connections in autocommit (no BEGIN and ROLLBACK
            # round trips, two of the three a cached answer costs; extensions.reads_engine).
            # Writes and keyed requests keep the app's engine and their transactions. (A
            # session already in a transaction: a test holding one app context across requests.)
            session.info[READS] = reads
            request_state.current().read_autocommit = True
    recent = recent_snapshot(this_app(), req.host, req.environ) if keyless_read else None
    if recent is not None and recent.paper is not None and recent.is_public:
        # The row this worker read under the current generation, without a query.
        g.paper, g.paper_snapshot = db.session.merge(recent.paper, load=False), recent
        return
    gen = state.generation_for(this_app(), req.environ) if keyless_read else None  # before the row
    found = paper_for_host(req.host)
    if found is None:
        abort(404, description=NO_PAPER)
    paper = db.session.merge(found, load=False)  # as a kept snapshot's row is, above
    try:
        if _reads_desk_keys(req):
            g.key = keys.authenticate(paper, authorization=header("Authorization"),
                                      x_desk_key=header("X-Desk-Key"))
    except DeskError:
        # An unknown, revoked or other paper's key: on a private paper, the answer must be the
        # unknown host's, or it would tell that a paper lives here.
        if not paper.is_public:
            abort(404, description=NO_PAPER)
        raise
    if not paper.is_public and g.key is None:
        # Set g.paper only once visible: error pages must not show a private paper's name.
        abort(404, description=NO_PAPER)
    g.paper = paper
    g.paper_snapshot = snapshot_of(found, gen, keep_row=keyless_read)
    if keyless_read:
        _remember(g.paper_snapshot, req.host)


@runs_for(policy.for_a_paper)
@replays(None)  # the replay opens no database session
def end_read(exc: BaseException | None) -> None:
    """Pipeline teardown: give back the autocommit connection of a public read (to
    extensions.reads_engine's pool), and bind the session as usual again, so nothing else runs
    on it (in production the session ends with the request anyway; a test that holds
    one app context across requests keeps its session, and must not write in autocommit)."""
    state = request_state.current()
    if state.read_autocommit:
        state.read_autocommit = False
        session = db.session()
        try:
            session.rollback()  # no round trip: autocommit has no transaction to end
        except Exception:  # noqa: BLE001 - a teardown must not raise (web/pipeline.py); the answer is built
            log.warning("ending a public read's session failed", exc_info=True)
        finally:
            session.info.pop(READS, None)  # what comes next in this session binds as usual

