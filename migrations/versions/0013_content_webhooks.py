"""content webhooks: site owners' endpoints and their Standard Webhooks outbox

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24 10:40:00

Two new tables; nothing to backfill.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'webhook_endpoints',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('public_id', sa.String(length=40), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('url', sa.String(length=2000), nullable=False),
        sa.Column('events', sa.JSON(), nullable=False),
        sa.Column('secret', sa.String(length=100), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('failing_since', sa.DateTime(), nullable=True),
        sa.Column('disabled_at', sa.DateTime(), nullable=True),
        sa.Column('disabled_reason', sa.String(length=1000), nullable=True),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_webhook_endpoints_paper_id_papers'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_endpoints')),
        sa.UniqueConstraint('public_id', name=op.f('uq_webhook_endpoints_public_id')),
    )
    op.create_index('ix_webhook_endpoints_paper_id', 'webhook_endpoints', ['paper_id'])
    op.create_table(
        'content_deliveries',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('delivery_id', sa.String(length=40), nullable=False),
        sa.Column('message_id', sa.String(length=40), nullable=False),
        sa.Column('endpoint_id', sa.Integer(), nullable=False),
        sa.Column('event', sa.String(length=40), nullable=False),
        sa.Column('piece_id', sa.Integer(), nullable=True),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
        sa.Column('last_status', sa.Integer(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('delivered_at', sa.DateTime(), nullable=True),
        sa.Column('failed_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['endpoint_id'], ['webhook_endpoints.id'],
                                name=op.f('fk_content_deliveries_endpoint_id_webhook_endpoints'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_content_deliveries')),
        sa.UniqueConstraint('delivery_id', name=op.f('uq_content_deliveries_delivery_id')),
    )
    op.create_index('ix_content_deliveries_due', 'content_deliveries', ['delivered_at', 'failed_at', 'next_attempt_at'])
    op.create_index('ix_content_deliveries_endpoint', 'content_deliveries', ['endpoint_id', 'id'])
    op.create_index('ix_content_deliveries_message_id', 'content_deliveries', ['message_id'])


def downgrade():
    op.drop_index('ix_content_deliveries_message_id', table_name='content_deliveries')
    op.drop_index('ix_content_deliveries_endpoint', table_name='content_deliveries')
    op.drop_index('ix_content_deliveries_due', table_name='content_deliveries')
    op.drop_table('content_deliveries')
    op.drop_index('ix_webhook_endpoints_paper_id', table_name='webhook_endpoints')
    op.drop_table('webhook_endpoints')
