"""alert claims: senders lease alert_deliveries rows instead of taking one global send lock

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 06:20:00

One nullable column; existing rows are unclaimed (NULL), which is what every pending row
should be when no sender runs.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('alert_deliveries') as batch:
        batch.add_column(sa.Column('claimed_until', sa.DateTime(), nullable=True))


def downgrade():
    with op.batch_alter_table('alert_deliveries') as batch:
        batch.drop_column('claimed_until')
