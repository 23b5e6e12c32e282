"""idna subscribers: every stored subscriber address rewritten to normalize_email's form

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24 07:00:00

Addresses are stored as `services.delivery.subscriptions.normalize_email` makes them (domain in
ASCII/IDNA, lower-cased) only since that function learnt IDNA; older rows may hold
`ann@bücher.example` beside a newer `ann@xn--bcher-kva.example` of the same paper, which the
unique key (paper_id, email) did not catch. A data migration, no schema change:

- a row whose address normalises to another spelling gets that spelling;
- when rows of one paper collapse to one address, ONE row is kept, chosen in this order: a live
  confirmed subscription (confirmed, not unsubscribed) before a confirmed one, before one still
  on the list, before the rest; then the earliest `confirmed_at`, the oldest `created_at`, the
  lowest id. So a confirmed subscription is never lost, and the reader keeps their oldest one;
- the kept row inherits from the others what protects the reader or keeps a working channel:
  the earliest suppression (a hard bounce of that mailbox stays in force) and the highest bounce
  count, the latest `last_sent_at` (no alert twice), and a webhook (URL and secret) when it has
  none of its own;
- the other rows are deleted with their delivery records and queued messages (deleted
  explicitly: SQLite may run without `PRAGMA foreign_keys`); each merge is logged;
- an address normalize_email refuses (it was stored under older rules) is left as it is, and
  logged.

Downgrade changes nothing: the ASCII form is what older code stores too, and merged rows cannot
be split again.
"""
import logging

import sqlalchemy as sa
from alembic import op
from email_validator import EmailNotValidError

from services.delivery.subscriptions import normalize_email

# revision identifiers, used by Alembic.
revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")

COLUMNS = ("id", "paper_id", "email", "created_at", "confirmed_at", "unsubscribed_at", "suppressed_at",
           "suppressed_reason", "bounces", "last_sent_at", "webhook_url", "webhook_secret")
CHILDREN = ("alert_deliveries", "webhook_deliveries", "outbox_messages")


def keep_order(row) -> tuple:
    """Sort key: the row to keep sorts first (see the module doc)."""
    confirmed = row.confirmed_at is not None
    listed = row.unsubscribed_at is None
    rank = 0 if confirmed and listed else 1 if confirmed else 2 if listed else 3
    # None sorts last within a rank: (True, None) after (False, value).
    return (rank, row.confirmed_at is None, row.confirmed_at or 0, row.created_at, row.id)


def _last(values):
    present = [v for v in values if v is not None]
    return max(present) if present else None


def upgrade():
    bind = op.get_bind()
    rows = bind.execute(sa.text(f"SELECT {', '.join(COLUMNS)} FROM subscribers ORDER BY id")).all()
    groups: dict[tuple[int, str], list] = {}
    for row in rows:
        try:
            address = normalize_email(row.email)
        except EmailNotValidError as exc:
            log.warning("subscriber %s: %r is not an address under today's rules (%s); left as is",
                        row.id, row.email, exc)
            continue
        groups.setdefault((row.paper_id, address), []).append(row)
    for (paper_id, address), members in groups.items():
        if len(members) == 1 and members[0].email == address:
            continue
        members.sort(key=keep_order)
        keeper, others = members[0], members[1:]
        changes = {"email": address}
        if others:
            suppressed = [r for r in members if r.suppressed_at is not None]
            if suppressed:
                first = min(suppressed, key=lambda r: r.suppressed_at)
                changes.update(suppressed_at=first.suppressed_at, suppressed_reason=first.suppressed_reason)
            changes["bounces"] = max(r.bounces or 0 for r in members)
            changes["last_sent_at"] = _last(r.last_sent_at for r in members)
            if keeper.webhook_url is None:
                hooked = next((r for r in others if r.webhook_url), None)
                if hooked is not None:
                    changes.update(webhook_url=hooked.webhook_url, webhook_secret=hooked.webhook_secret)
            ids = {"ids": [r.id for r in others]}
            for table in CHILDREN:
                bind.execute(sa.text(f"DELETE FROM {table} WHERE subscriber_id IN :ids")  # noqa: S608 (constant names)
                             .bindparams(sa.bindparam("ids", expanding=True)), ids)
            bind.execute(sa.text("DELETE FROM subscribers WHERE id IN :ids")
                         .bindparams(sa.bindparam("ids", expanding=True)), ids)
            log.warning("paper %s: %s kept subscriber %s (%r), merged and removed %s", paper_id, address,
                        keeper.id, keeper.email, ", ".join(f"{r.id} ({r.email!r})" for r in others))
        assignments = ", ".join(f"{name} = :{name}" for name in changes)
        bind.execute(sa.text(f"UPDATE subscribers SET {assignments} WHERE id = :id"),  # noqa: S608 (constant names)
                     {**changes, "id": keeper.id})


def downgrade():
    pass
