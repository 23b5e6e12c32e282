"""alert failures: per-message retry state on alert_deliveries, a suppression list on subscribers

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24 04:45:00

`alert_deliveries.next_attempt_at` (a row is not read before it: temporary refusals back off)
and `failed_at` (the row is done without being sent: a permanent refusal, too many temporary
ones, or a message that could not be built). `subscribers.bounces` (permanent refusals),
`suppressed_at` and `suppressed_reason` (the address gets no alert again). Every new column
is nullable or has a server default, so existing rows need no backfill: their pending alerts
are due at once, as before. SQLite through batch mode (it rebuilds the tables).
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('alert_deliveries', schema=None) as batch_op:
        batch_op.add_column(sa.Column('next_attempt_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('failed_at', sa.DateTime(), nullable=True))
    with op.batch_alter_table('subscribers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('bounces', sa.Integer(), server_default='0', nullable=False))
        batch_op.add_column(sa.Column('suppressed_at', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('suppressed_reason', sa.String(length=1000), nullable=True))


def downgrade():
    with op.batch_alter_table('subscribers', schema=None) as batch_op:
        batch_op.drop_column('suppressed_reason')
        batch_op.drop_column('suppressed_at')
        batch_op.drop_column('bounces')
    with op.batch_alter_table('alert_deliveries', schema=None) as batch_op:
        batch_op.drop_column('failed_at')
        batch_op.drop_column('next_attempt_at')
