"""Correction alerts: readers who were mailed a piece are told when it is corrected, clarified
or retracted (docs/CORRECTIONS.md "Who is told").

    on_changes(paper, changes, now)   the change feed consumer "correction-alerts"
    correction_message(row)           the email a `correction` row of the confirm-mail queue is

Who: every subscriber whose alert mail holding the piece was sent (an `AlertDelivery` with
`sent_at`, whose window holds the instant of any of the piece's airings, its `aired` changes:
a piece pulled and aired or scheduled again keeps the readers of its earlier airings; the
piece in the reader's sections),
who is still confirmed, not unsubscribed nor suppressed, and reads by mail (a webhook reader's
alerts are no mail). A reader whose alert is still unsent gets the corrected text in it.

When: the reader's cadence decides. Instant readers at once; daily readers at the start of the
next UTC day, weekly ones at the start of the next ISO week (Monday 00:00 UTC), beside their
digest; a retraction goes to everyone at once.

How: one `OutboxMessage` (kind `correction`) per reader and revision, written by the consumer
in the transaction that moves its cursor (services/delivery/change_stream.py: exactly once
per change, so once per revision), then sent by the confirm-mail queue with the engine's
guarantees (leases, backoff, a row sent once; services/delivery/outbox.py, queues.py).
"""
from __future__ import annotations

from datetime import datetime, timedelta

from flask import current_app, render_template
from sqlalchemy import and_, insert, select

from extensions import db
from models import AlertDelivery, OutboxMessage, Paper, Piece, PieceChange, Section, Subscriber
from services.delivery import queues, subscriptions
from services.delivery.mail import compose
from services.links import Links, PaperOrigins

CONSUMER = "correction-alerts"
# The revision kinds readers who saw the piece are told about (an update is news, not a fix).
TOLD = ("correction", "clarification", "retraction")
KIND = "correction"  # the outbox kind


def due_at(cadence: str, kind: str, now: datetime) -> datetime:
    """When a reader of `cadence` is told of a `kind` revision made at `now`: now for an
    instant reader or a retraction; the next UTC midnight (daily); the next Monday 00:00 UTC
    (weekly)."""
    if cadence == "instant" or kind == "retraction":
        return now
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if cadence == "weekly":
        return midnight + timedelta(days=7 - midnight.weekday())
    return midnight + timedelta(days=1)


def readers_mailed(piece: Piece, section: str) -> list[tuple[int, str]]:
    """`(subscriber id, cadence)` of every reader still on the list who was mailed `piece` at
    any of its airings (see the module). One query."""
    airings = (select(PieceChange.at).where(PieceChange.paper_id == piece.paper_id,
                                            PieceChange.piece_id == piece.id, PieceChange.type == "aired")
               .subquery())
    rows = db.session.execute(
        select(Subscriber.id, Subscriber.cadence, Subscriber.sections).distinct()
        .join(AlertDelivery, AlertDelivery.subscriber_id == Subscriber.id)
        .join(airings, and_(AlertDelivery.window_start <= airings.c.at, AlertDelivery.window_end > airings.c.at))
        .where(Subscriber.paper_id == piece.paper_id, AlertDelivery.sent_at.is_not(None),
               Subscriber.confirmed_at.is_not(None), Subscriber.unsubscribed_at.is_(None),
               Subscriber.suppressed_at.is_(None), Subscriber.webhook_url.is_(None))
        .order_by(Subscriber.id)).all()
    return [(row.id, row.cadence) for row in rows if row.sections is None or section in row.sections]


def on_changes(paper: Paper, changes: list, now: datetime) -> None:
    """change_stream consumer: one `correction` outbox row per reader mailed the piece, for
    every correction, clarification or retraction among `changes`, due as `due_at` says."""
    told = [c for c in changes if c.type == "revised" and c.kind in TOLD]
    if not told:
        return
    origin = PaperOrigins.from_config(current_app.config).links(paper).origin
    for change in told:
        found = db.session.execute(select(Piece, Section.name).join(Section, Section.id == Piece.section_id)
                                   .where(Piece.id == change.piece_id)).first()
        if found is None:  # never aired (its airings' instants) is no reader's: readers_mailed finds none
            continue
        piece, section = found
        rows = [{"paper_id": paper.id, "kind": KIND, "subscriber_id": reader,
                 "payload": {"origin": origin, "piece": piece.id, "rev": change.rev, "kind": change.kind,
                             "note": change.note or ""},
                 "created_at": now, "next_attempt_at": due_at(cadence, change.kind, now), "attempts": 0}
                for reader, cadence in readers_mailed(piece, section)]
        if rows:
            db.session.execute(insert(OutboxMessage), rows)
    db.session.flush()


def correction_message(row: OutboxMessage):
    """The correction alert an outbox row of kind `correction` stands for
    (services/delivery/outbox.py `build`). Raises queues.GiveUp (a subscriber, paper or piece
    gone) or queues.NotNeeded (the reader left the list)."""
    subscriber = db.session.get(Subscriber, row.subscriber_id) if row.subscriber_id else None
    paper = db.session.get(Paper, row.paper_id)
    payload = row.payload or {}
    piece = db.session.get(Piece, payload.get("piece")) if payload.get("piece") else None
    if subscriber is None or paper is None or piece is None or "origin" not in payload:
        raise queues.GiveUp("the subscriber, the paper or the piece is gone")
    if subscriber.confirmed_at is None or subscriber.unsubscribed_at is not None or subscriber.suppressed_at:
        raise queues.NotNeeded("not sent: the reader left the list meanwhile")
    links = Links(payload["origin"])
    story = links.story_page(piece.slug)
    context = {"paper": paper, "piece": piece, "kind": payload["kind"], "note": payload["note"],
               "story": story, "history": f"{story}/history", "home": links.home(),
               "unsubscribe": subscriptions.unsubscribe_url(subscriber, links=links),
               "manage": subscriptions.preferences_url(subscriber, links=links)}
    from_name, from_addr = subscriptions.sender(paper, links=links)
    return compose(from_name=from_name, from_addr=from_addr, to=subscriber.email,
                   subject=f"{payload['kind'].capitalize()}: {piece.headline}", now=row.next_attempt_at,
                   list_id=subscriptions.list_id(paper, links=links), unsubscribe_url=context["unsubscribe"],
                   text=render_template("mail/correction.txt", **context),
                   html=render_template("mail/correction.html", **context))
