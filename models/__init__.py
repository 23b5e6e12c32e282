"""SQLAlchemy models, one module per aggregate. Importing this package registers them all."""
from models.desk_key import KEY_KINDS, DeskKey, SigningKey
from models.edition import Edition
from models.idempotency import IdempotencyKey
from models.outbox import OUTBOX_KINDS, OutboxMessage
from models.paper import Paper, Persona, Section
from models.piece import CitedFact, Piece, PieceRevision
from models.subscriber import CADENCES, PAUSED_INDEFINITELY, AlertDelivery, Subscriber, WebhookDelivery
from models.types import utcnow

__all__ = [
    "CADENCES",
    "PAUSED_INDEFINITELY",
    "AlertDelivery",
    "Subscriber",
    "WebhookDelivery",
    "KEY_KINDS",
    "CitedFact",
    "DeskKey",
    "Edition",
    "IdempotencyKey",
    "OUTBOX_KINDS",
    "OutboxMessage",
    "Paper",
    "Persona",
    "Piece",
    "PieceRevision",
    "Section",
    "SigningKey",
    "utcnow",
]
