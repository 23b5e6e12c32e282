"""subscriber pause: `subscribers.paused_until` (the preference centre's "pause for a while")

Revision ID: 0014
Revises: 0011
Create Date: 2026-11-24 10:40:00

No alert is planned for a reader while `paused_until` is in the future (9999-12-31 stands for
"until I resume"); once passed it is the floor of the next window, so nothing aired during the
pause is sent (docs/ALERTS.md "Managing alerts"). Nullable: existing rows are not paused and
need no backfill. SQLite through batch mode.

down_revision is 0011 while 0012 and 0013 are written on other branches; it is re-chained onto
the last of them when the branches are merged.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0014'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('subscribers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('paused_until', sa.DateTime(), nullable=True))


def downgrade():
    with op.batch_alter_table('subscribers', schema=None) as batch_op:
        batch_op.drop_column('paused_until')
