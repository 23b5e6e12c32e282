"""outbox: confirm mail waits in outbox_messages for `flask drain-outbox`

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 05:00:00

A new table only; nothing to backfill (confirm mail of older subscribes was sent already).
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'outbox_messages',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=32), nullable=False),
        sa.Column('subscriber_id', sa.Integer(), nullable=True),
        sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
                  nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
        sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
        sa.Column('claimed_until', sa.DateTime(), nullable=True),
        sa.Column('sent_at', sa.DateTime(), nullable=True),
        sa.Column('failed_at', sa.DateTime(), nullable=True),
        sa.Column('last_error', sa.String(length=1000), nullable=True),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['subscriber_id'], ['subscribers.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_outbox_messages_due', 'outbox_messages', ['sent_at', 'failed_at', 'next_attempt_at'])


def downgrade():
    op.drop_index('ix_outbox_messages_due', table_name='outbox_messages')
    op.drop_table('outbox_messages')
