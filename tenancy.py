"""Host -> paper, once per request (CONTRACT.md "tenancy").

A request's paper is the paper whose custom `host` equals the request host, else `{slug}` when
the host is `{slug}.{PAPER_DOMAIN}`, else `DEFAULT_PAPER` on a bare host (PAPER_DOMAIN itself or
one of BARE_HOSTS). No paper: 404. A private paper answers its public lane as if absent (404);
a valid key for it opens it.
"""
from __future__ import annotations

from flask import Flask, abort, current_app, g, request
from sqlalchemy import bindparam, or_, select

from extensions import db
from models import Paper
from services import keys

# Endpoints that answer for the process, not for a paper.
UNSCOPED = {"static", "health.healthz", "health.readyz", "bench_bare"}


def host_name(raw_host: str) -> str:
    """The request host without its port, lower-cased. `[::1]:5000` -> `[::1]`."""
    host = raw_host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host


# Built once: every request runs one of these, and building the expression costs more than
# SQLAlchemy's compiled-statement cache saves (issue 6, docs/PERFORMANCE.md).
_BY_HOST = select(Paper).where(Paper.host == bindparam("host"))
_BY_HOST_OR_SLUG = select(Paper).where(or_(Paper.host == bindparam("host"),
                                           Paper.slug == bindparam("slug")))


def paper_for_host(raw_host: str) -> Paper | None:
    """The paper served on this host, or None. One indexed query."""
    host = host_name(raw_host)
    domain = current_app.config["PAPER_DOMAIN"]
    slug = None
    if host == domain or host in current_app.config["BARE_HOSTS"]:
        slug = current_app.config["DEFAULT_PAPER"]
    elif host.endswith("." + domain):
        slug = host[: -len(domain) - 1]
    if slug is None:
        papers = db.session.scalars(_BY_HOST, {"host": host}).all()
    else:
        papers = db.session.scalars(_BY_HOST_OR_SLUG, {"host": host, "slug": slug}).all()
    # A custom host wins over a slug match when both exist.
    for paper in papers:
        if paper.host == host:
            return paper
    return papers[0] if papers else None


def _public_read() -> bool:
    if request.method not in ("GET", "HEAD") or db.engine.dialect.name != "postgresql":
        return False
    return "Authorization" not in request.headers and "X-Desk-Key" not in request.headers


def load_paper() -> None:
    """before_request: set `g.paper` and `g.key`, or abort 404/401/403."""
    g.key = None
    g.pop("read_autocommit", None)
    g.pop("paper", None)  # a test holding an app context open reuses one `g` across requests
    if request.endpoint in UNSCOPED:
        return
    if _public_read() and not db.session().in_transaction():
        # Under READ COMMITTED each statement sees its own snapshot in a transaction or not, so
        # a read needs none: autocommit saves PostgreSQL the BEGIN and ROLLBACK round trips
        # (two of the three a cached answer costs). Writes and keyed requests keep theirs. (A
        # session already in a transaction: a test holding one app context across requests.)
        db.session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})
        g.read_autocommit = True
    paper = paper_for_host(request.host)
    if paper is None:
        abort(404, description="No paper is served on this host.")
    g.key = keys.authenticate(request, paper)
    if not paper.is_public and g.key is None:
        # Set g.paper only once visible: error pages must not show a private paper's name.
        abort(404, description="No paper is served on this host.")
    g.paper = paper


def end_read(exc: BaseException | None) -> None:
    """teardown_request: give back the autocommit connection of a public read, so nothing
    else runs on it (in production the session ends with the request anyway; a test that holds
    one app context across requests keeps its session, and must not write in autocommit)."""
    if g.pop("read_autocommit", False):
        db.session.rollback()  # no round trip: autocommit has no transaction to end


def register(app: Flask) -> None:
    app.before_request(load_paper)
    app.teardown_request(end_read)
