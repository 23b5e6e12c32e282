"""subscribers: the alert list, the record of sent alert windows, the webhook outbox

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 00:11:13.023171

Hand-checked on SQLite and PostgreSQL (`flask init-db` on a fresh database).

"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('subscribers',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('paper_id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=320), nullable=False),
    sa.Column('cadence', sa.String(length=16), nullable=False),
    sa.Column('sections', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=True),
    sa.Column('cast', sa.Boolean(), nullable=False),
    sa.Column('webhook_url', sa.String(length=2000), nullable=True),
    sa.Column('webhook_secret', sa.String(length=100), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('confirm_sent_at', sa.DateTime(), nullable=True),
    sa.Column('confirmed_at', sa.DateTime(), nullable=True),
    sa.Column('unsubscribed_at', sa.DateTime(), nullable=True),
    sa.Column('last_sent_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_subscribers_paper_id_papers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_subscribers')),
    sa.UniqueConstraint('paper_id', 'email', name=op.f('uq_subscribers_paper_id_email'))
    )
    with op.batch_alter_table('subscribers', schema=None) as batch_op:
        batch_op.create_index('ix_subscribers_paper_confirmed', ['paper_id', 'confirmed_at'], unique=False)

    op.create_table('alert_deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('subscriber_id', sa.Integer(), nullable=False),
    sa.Column('period', sa.String(length=40), nullable=False),
    sa.Column('window_start', sa.DateTime(), nullable=False),
    sa.Column('window_end', sa.DateTime(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('sent_at', sa.DateTime(), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['subscriber_id'], ['subscribers.id'], name=op.f('fk_alert_deliveries_subscriber_id_subscribers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_deliveries')),
    sa.UniqueConstraint('subscriber_id', 'period', name=op.f('uq_alert_deliveries_subscriber_id_period')),
    sa.UniqueConstraint('subscriber_id', 'window_start', name=op.f('uq_alert_deliveries_subscriber_id_window_start'))
    )
    with op.batch_alter_table('alert_deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_alert_deliveries_unsent', ['sent_at', 'id'], unique=False)

    op.create_table('webhook_deliveries',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('delivery_id', sa.String(length=40), nullable=False),
    sa.Column('subscriber_id', sa.Integer(), nullable=False),
    sa.Column('alert_id', sa.Integer(), nullable=True),
    sa.Column('event', sa.String(length=40), nullable=False),
    sa.Column('url', sa.String(length=2000), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(), nullable=False),
    sa.Column('last_status', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('delivered_at', sa.DateTime(), nullable=True),
    sa.Column('failed_at', sa.DateTime(), nullable=True),
    sa.ForeignKeyConstraint(['alert_id'], ['alert_deliveries.id'], name=op.f('fk_webhook_deliveries_alert_id_alert_deliveries'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['subscriber_id'], ['subscribers.id'], name=op.f('fk_webhook_deliveries_subscriber_id_subscribers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_deliveries')),
    sa.UniqueConstraint('alert_id', name=op.f('uq_webhook_deliveries_alert_id')),
    sa.UniqueConstraint('delivery_id', name=op.f('uq_webhook_deliveries_delivery_id'))
    )
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.create_index('ix_webhook_deliveries_due', ['delivered_at', 'failed_at', 'next_attempt_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_webhook_deliveries_subscriber_id'), ['subscriber_id'], unique=False)



def downgrade():
    with op.batch_alter_table('webhook_deliveries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_webhook_deliveries_subscriber_id'))
        batch_op.drop_index('ix_webhook_deliveries_due')

    op.drop_table('webhook_deliveries')
    with op.batch_alter_table('alert_deliveries', schema=None) as batch_op:
        batch_op.drop_index('ix_alert_deliveries_unsent')

    op.drop_table('alert_deliveries')
    with op.batch_alter_table('subscribers', schema=None) as batch_op:
        batch_op.drop_index('ix_subscribers_paper_confirmed')

    op.drop_table('subscribers')
