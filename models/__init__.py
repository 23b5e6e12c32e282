"""SQLAlchemy models, one module per aggregate. Importing this package registers them all."""
from models.change_cursor import ChangeCursor
from models.desk_key import KEY_KINDS, DeskKey, SigningKey
from models.edition import Edition
from models.federation import PAPER_ACTOR, PING_KINDS, ApDelivery, ApFollower, ApKey, PingDelivery
from models.idempotency import IdempotencyKey
from models.log import LogCheckpoint, LogEntry, LogTileHash, LogWitness, TransparencyLog
from models.outbox import OUTBOX_KINDS, OutboxMessage
from models.paper import Paper, Persona, Section
from models.piece import CHANGE_TYPES, CitedFact, Piece, PieceChange, PieceRevision
from models.subscriber import CADENCES, PAUSED_INDEFINITELY, AlertDelivery, Subscriber, WebhookDelivery
from models.types import utcnow
from models.webhook import CONTENT_EVENTS, PING_EVENT, ContentDelivery, WebhookEndpoint

__all__ = [
    "PAPER_ACTOR",
    "ApDelivery",
    "ApFollower",
    "ApKey",
    "PING_KINDS",
    "PingDelivery",
    "CADENCES",
    "ChangeCursor",
    "PAUSED_INDEFINITELY",
    "AlertDelivery",
    "Subscriber",
    "WebhookDelivery",
    "KEY_KINDS",
    "CitedFact",
    "DeskKey",
    "Edition",
    "IdempotencyKey",
    "LogCheckpoint",
    "LogEntry",
    "LogTileHash",
    "LogWitness",
    "TransparencyLog",
    "OUTBOX_KINDS",
    "OutboxMessage",
    "Paper",
    "Persona",
    "Piece",
    "PieceChange",
    "PieceRevision",
    "CHANGE_TYPES",
    "Section",
    "SigningKey",
    "utcnow",
    "CONTENT_EVENTS",
    "PING_EVENT",
    "ContentDelivery",
    "WebhookEndpoint",
]
