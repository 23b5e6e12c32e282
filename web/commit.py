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

- a 2xx or 3xx answer commits. If the commit fails, the exception propagates (web/errors.py answers
  409, 503 or 500): a write that did not land is never answered with a success. Anything a
  write sends (the confirm email) is an outbox row committed with it
  (services/delivery/outbox.py), so it leaves only once the write has landed.
- any other status (a view may return a 4xx of its own), and any exception on the way (a
  services.errors.DeskError, a webargs 422, a database error), rolls back: a 4xx or 5xx
  writes nothing and, its outbox rows rolled back with it, sends nothing.

A keyed write sent with an `Idempotency-Key` (web/idempotency.py) is checked inside the same
transaction before the view runs (a stored answer is replayed, a reused key refused), and its
2xx/3xx answer is stored in it before the commit: the record and the write commit together or not
at all.

The commit itself: the writes are flushed first (a failure there is definite: nothing was
written, and web/errors.py answers it as any other database error). Then COMMIT; a database error
during the COMMIT itself (the connection lost, the server gone) leaves the outcome unknown: the
server may have committed before the connection broke. That is answered 503 with Retry-After and
the detail OUTCOME_UNKNOWN: retry with the same Idempotency-Key, which replays the answer if the
write landed and performs it if it did not. After a successful commit nothing touches the
database again in the request, so a connection lost then cannot turn a write that landed into
an error.

A commit that changed a paper moves the deployment's generation before the answer leaves
(web/state.py); when it cannot (Redis unreachable from this host), the write is committed but
other hosts may still serve what it replaced, so it is answered 503 with the detail
NOT_YET_VISIBLE, never 200; so is every later write of this process while the move is owed
(state.check_moved). Its retry with the same Idempotency-Key replays the stored answer and
moves the generation first, so a success answer always means every host sees the write.

A view without the decorator never commits: whatever it flushed is rolled back when the request
ends (flask-sqlalchemy removes the session with the app context; `end_session` makes that
removal safe). CLI commands commit once themselves (commands/__init__.py).
"""
from __future__ import annotations

import functools
import logging

from flask import current_app
from sqlalchemy.exc import DBAPIError, OperationalError

from extensions import db
from services.errors import Unavailable
from web import idempotency, state
from web.steps import replays

log = logging.getLogger("paperdesk.transaction")

OUTCOME_UNKNOWN = ("The connection to the database was lost while this write was being committed, "
                   "so whether it was saved is unknown (outcome unknown). Retry with the same "
                   "Idempotency-Key: if the write landed you get its answer again, otherwise it is "
                   "made now. Without a key, check before retrying.")


def transactional(view):
    """Commit the view's writes once its answer is a success (2xx/3xx); roll back otherwise.
    Returns the finished `Response` (or, for a keyed write whose Idempotency-Key was answered
    before, that stored answer). Raises what the view raises, BadRequest/Conflict/Invalid for
    the Idempotency-Key (web/idempotency.py), and Unavailable (503, OUTCOME_UNKNOWN) when the
    connection is lost during the COMMIT. See the module docstring."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        claim = idempotency.claim()  # a malformed Idempotency-Key: 400 before any work
        with idempotency.running(claim):
            try:
                _begin()
                if claim is not None:
                    replayed = idempotency.replay(claim)
                    if replayed is not None:
                        _roll_back()  # nothing was written; the lock (if any) goes with it
                        _make_visible()
                        return replayed
                response = current_app.make_response(view(*args, **kwargs))
                if response.status_code >= 400:
                    _roll_back()
                    return response
                if claim is not None:
                    idempotency.record(claim, response)
                _commit()
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


def _commit() -> None:
    db.session.flush()  # a failure here is definite: the transaction is rolled back
    try:
        db.session.commit()
    except DBAPIError as error:
        if isinstance(error, OperationalError) or error.connection_invalidated:
            log.error("commit outcome unknown: %s", error.__class__.__name__)
            raise Unavailable(OUTCOME_UNKNOWN) from error
        raise
    try:
        state.check_moved(db.session)
    except state.GenerationNotMoved:
        raise Unavailable(state.NOT_YET_VISIBLE) from None


def _make_visible() -> None:
    # A replayed write may be one answered 503 NOT_YET_VISIBLE: its commit landed but the
    # shared generation did not move. Moving it now (one INCR; replays are rare) completes it,
    # on whichever host the retry reaches; if it still cannot move, the retry is answered 503.
    if not state.for_app(current_app._get_current_object()).bump():
        raise Unavailable(state.NOT_YET_VISIBLE)


def _roll_back() -> None:
    try:
        db.session.rollback()
    except Exception:  # noqa: BLE001 - the database may be what failed; keep the first error
        log.warning("rollback failed", exc_info=True)


@replays(None)  # the replay opens no database session
def end_session(exc: BaseException | None) -> None:
    """Pipeline teardown (app context), in place of flask-sqlalchemy's own: remove the session.

    flask-sqlalchemy's removal rolls back and closes the session's connection; when the
    connection was lost after the answer was built (the server gone, the backend terminated), that
    rollback raises, and an exception out of a teardown reaches the WSGI server, whose bare 500
    page would replace the answer. The answer is complete by then (a write's commit, or its
    rollback, happened inside the request), so it stands: the error is logged and the
    connection discarded (invalidated, so the pool opens a fresh one)."""
    try:
        db.session.remove()
    except Exception as error:  # noqa: BLE001 - the database may be gone; the answer is already built
        # Expected when the server goes away: one line, not a traceback per request.
        log.warning("closing the database session failed (%s: %s); its connection is discarded",
                    error.__class__.__name__, str(error).splitlines()[0][:200] if str(error) else "")
        try:
            db.session().invalidate()
        except Exception:  # noqa: BLE001 - nothing more can be done with a dead connection
            log.warning("discarding the connection failed", exc_info=True)
        db.session.registry.clear()
