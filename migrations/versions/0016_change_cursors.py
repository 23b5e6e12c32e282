"""the change feed as the one record of a change: change_cursors; pieces.announced_at goes

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27 02:00:00

Content webhook messages and CDN purges are derived from `piece_changes` by `flask drain-outbox`
(services/delivery/change_stream.py), each consumer keeping its position per paper in
`change_cursors`. Until now both were written by the change's own transaction, so for existing
papers the consumers start after the last change already public (their work for it is done),
and the content webhook messages of scheduled airings written ahead of their instant (never
tried) are withdrawn: the consumer writes them at the instant instead. `pieces.announced_at`
(the scheduled airing's CDN purge, now the `cdn-purge` consumer's) goes.
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

CONSUMERS = ("content-webhooks", "cdn-purge")


def upgrade():
    op.create_table(
        'change_cursors',
        sa.Column('consumer', sa.String(length=40), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('after_at', sa.DateTime(), nullable=False),
        sa.Column('after_seq', sa.Integer(), nullable=False),
        sa.Column('leased_until', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_change_cursors_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('consumer', 'paper_id', name=op.f('pk_change_cursors')),
    )
    now = datetime.now(timezone.utc).replace(tzinfo=None)  # stored naive UTC (models/types.py)
    bind = op.get_bind()
    last = bind.execute(sa.text(
        "SELECT c.paper_id, c.at, MAX(c.seq) FROM piece_changes c "
        "JOIN (SELECT paper_id, MAX(at) AS at FROM piece_changes WHERE at <= :now GROUP BY paper_id) m "
        "ON m.paper_id = c.paper_id AND m.at = c.at GROUP BY c.paper_id, c.at"), {"now": now}).all()
    for paper_id, at, seq in last:
        for consumer in CONSUMERS:
            bind.execute(sa.text(
                "INSERT INTO change_cursors (consumer, paper_id, after_at, after_seq) "
                "VALUES (:consumer, :paper_id, :at, :seq)"),
                {"consumer": consumer, "paper_id": paper_id, "at": at, "seq": seq})
    bind.execute(sa.text(
        "DELETE FROM content_deliveries WHERE event = 'piece.aired' AND attempts = 0 "
        "AND delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at > :now"), {"now": now})
    # Not a batch (table copy) on SQLite: that would drop the full-text triggers on pieces
    # (0005); SQLite >= 3.35 drops a plain column in place.
    op.drop_column('pieces', 'announced_at')


def downgrade():
    op.add_column('pieces', sa.Column('announced_at', sa.DateTime(), nullable=True))
    op.execute("UPDATE pieces SET announced_at = on_air_at WHERE on_air AND on_air_at IS NOT NULL")
    op.drop_table('change_cursors')
