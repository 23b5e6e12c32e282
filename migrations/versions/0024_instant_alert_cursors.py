"""Instant alerts planned by change feed consumers (`instant-alerts` on the pieces' feed,
`instant-edition-alerts` on the editions'), no longer by a poll of the alert queue

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-29 02:00:00

No schema change: the consumers keep their positions in `change_cursors`. Each starts after the
last change already public on each paper (and after its newest edition), as 0022 and 0023
placed theirs: what aired before the upgrade was planned by the old poll (or is cron's to plan),
so the upgrade plans nothing twice and replays no old feed. A scheduled airing still to come
is after the cursor and reaches the consumer at its instant.
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None

CONSUMERS = ("instant-alerts", "instant-edition-alerts")


def upgrade():
    now = datetime.now(timezone.utc).replace(tzinfo=None)  # stored naive UTC (models/types.py)
    bind = op.get_bind()
    pieces = bind.execute(sa.text(
        "SELECT c.paper_id, c.at, MAX(c.seq) FROM piece_changes c "
        "JOIN (SELECT paper_id, MAX(at) AS at FROM piece_changes WHERE at < :now GROUP BY paper_id) m "
        "ON m.paper_id = c.paper_id AND m.at = c.at GROUP BY c.paper_id, c.at"), {"now": now}).all()
    editions = bind.execute(sa.text(
        "SELECT e.paper_id, e.published_at, MAX(e.id) FROM editions e "
        "JOIN (SELECT paper_id, MAX(published_at) AS at FROM editions WHERE published_at < :now "
        "GROUP BY paper_id) m ON m.paper_id = e.paper_id AND m.at = e.published_at "
        "GROUP BY e.paper_id, e.published_at"), {"now": now}).all()
    for consumer, last in zip(CONSUMERS, (pieces, editions), strict=True):
        for paper_id, at, seq in last:
            bind.execute(sa.text(
                "INSERT INTO change_cursors (consumer, paper_id, after_at, after_seq) "
                "VALUES (:consumer, :paper_id, :at, :seq)"),
                {"consumer": consumer, "paper_id": paper_id, "at": at, "seq": seq})


def downgrade():
    for consumer in CONSUMERS:
        op.get_bind().execute(sa.text("DELETE FROM change_cursors WHERE consumer = :consumer"),
                              {"consumer": consumer})
