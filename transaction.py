"""The one commit point of a request that writes.

A writing view is decorated with `@transactional`, placed directly under its route decorator
(outside flask-smorest's `arguments` and `response`, and outside the key checks):

    @bp.route("/sections", methods=["POST"])
    @transactional
    @keyed(bp, "admin")
    ...
    def create_section(body): return desk.create_section(...), 201, {...}

The view and the services it calls only flush; the view returns what to serialise, and
flask-smorest dumps it inside the decorated call, while the transaction is still open (so
attributes a flush expired, server defaults and the paper's moved version, load in the same
transaction). Then, with the finished response in hand:

- a 2xx or 3xx answer commits. If the commit fails, the exception propagates (errors.py answers
  409, 503 or 500): a write that did not land is never answered with a success. Anything a
  write sends (the confirm email) is an outbox row committed with it
  (services/delivery/outbox.py), so it leaves only once the write has landed.
- any other status (a view may return a 4xx of its own), and any exception on the way (a
  services.errors.DeskError, a webargs 422, a database error), rolls back: a 4xx or 5xx
  writes nothing and, its outbox rows rolled back with it, sends nothing.

A view without the decorator never commits: whatever it flushed is rolled back when the request
ends (flask-sqlalchemy removes the session with the app context). CLI commands commit once
themselves (commands/__init__.py).
"""
from __future__ import annotations

import functools
import logging

from flask import current_app

from extensions import db

log = logging.getLogger("paperdesk.transaction")


def transactional(view):
    """Commit the view's writes once its answer is a success (2xx/3xx); roll back otherwise.
    Returns the finished `Response`. See the module docstring."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        try:
            _begin()
            response = current_app.make_response(view(*args, **kwargs))
            if response.status_code >= 400:
                _roll_back()
                return response
            db.session.commit()
        except BaseException:
            _roll_back()
            raise
        return response

    wrapper.transactional = True
    return wrapper


def _begin() -> None:
    # SQLite (pysqlite) opens a transaction only before its first INSERT, UPDATE or DELETE. A
    # SAVEPOINT issued before that (services/delivery/subscriptions.py upsert) starts a transaction
    # of its own, and releasing it commits at once, past this commit point. So the request's
    # transaction is opened here, as a writer: BEGIN IMMEDIATE takes the write lock now, rather
    # than upgrading a read later, which fails outright once another writer has committed.
    # PostgreSQL nests savepoints in the session's transaction as it is.
    connection = db.session.connection()
    if connection.dialect.name == "sqlite" and not connection.connection.dbapi_connection.in_transaction:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _roll_back() -> None:
    try:
        db.session.rollback()
    except Exception:  # noqa: BLE001 - the database may be what failed; keep the first error
        log.warning("rollback failed", exc_info=True)
