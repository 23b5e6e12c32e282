"""ActivityPub: the papers' HTTP-signature keys, their followers and the activity outbox; WebSub and IndexNow pings

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 03:00:00

Four new tables (docs/FEDERATION.md); nothing to backfill. The `activitypub` and `pings`
consumers of the change feed (services/delivery/federation/deliveries.py, pings.py) start after the last change already public on
each paper (as 0016 placed the other consumers): no paper has followers yet, and there is no
back catalogue to walk.
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

CONSUMERS = ("activitypub", "pings")


def upgrade():
    op.create_table(
        'ap_keys',
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('public_pem', sa.Text(), nullable=False),
        sa.Column('private_key', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_ap_keys_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('paper_id', name=op.f('pk_ap_keys')),
    )
    op.create_table(
        'ap_followers',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('local', sa.String(length=120), nullable=False),
        sa.Column('actor_uri', sa.String(length=2000), nullable=False),
        sa.Column('inbox', sa.String(length=2000), nullable=False),
        sa.Column('shared_inbox', sa.String(length=2000), nullable=True),
        sa.Column('follow_id', sa.String(length=2000), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_ap_followers_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_ap_followers')),
        sa.UniqueConstraint('paper_id', 'local', 'actor_uri', name=op.f('uq_ap_followers_paper_id_local_actor_uri')),
    )
    op.create_index('ix_ap_followers_actor', 'ap_followers', ['actor_uri'])
    op.create_table(
        'ap_deliveries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('signer', sa.String(length=120), nullable=False),
        sa.Column('inbox', sa.String(length=2000), nullable=False),
        sa.Column('kind', sa.String(length=20), nullable=False),
        sa.Column('piece_id', sa.Integer(), nullable=True),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
        sa.Column('last_status', sa.Integer(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('delivered_at', sa.DateTime(), nullable=True),
        sa.Column('failed_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_ap_deliveries_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_ap_deliveries')),
    )
    op.create_index('ix_ap_deliveries_due', 'ap_deliveries', ['delivered_at', 'failed_at', 'next_attempt_at'])
    op.create_index('ix_ap_deliveries_paper', 'ap_deliveries', ['paper_id', 'id'])
    op.create_index('ix_ap_deliveries_inbox', 'ap_deliveries', ['inbox', 'id'])
    op.create_table(
        'ping_deliveries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=20), nullable=False),
        sa.Column('target', sa.String(length=2000), nullable=False),
        sa.Column('content_type', sa.String(length=100), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
        sa.Column('last_status', sa.Integer(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('delivered_at', sa.DateTime(), nullable=True),
        sa.Column('failed_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_ping_deliveries_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_ping_deliveries')),
    )
    op.create_index('ix_ping_deliveries_due', 'ping_deliveries', ['delivered_at', 'failed_at', 'next_attempt_at'])
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


def downgrade():
    op.execute("DELETE FROM change_cursors WHERE consumer IN ('activitypub', 'pings')")
    op.drop_index('ix_ping_deliveries_due', table_name='ping_deliveries')
    op.drop_table('ping_deliveries')
    op.drop_index('ix_ap_deliveries_inbox', table_name='ap_deliveries')
    op.drop_index('ix_ap_deliveries_paper', table_name='ap_deliveries')
    op.drop_index('ix_ap_deliveries_due', table_name='ap_deliveries')
    op.drop_table('ap_deliveries')
    op.drop_index('ix_ap_followers_actor', table_name='ap_followers')
    op.drop_table('ap_followers')
    op.drop_table('ap_keys')
