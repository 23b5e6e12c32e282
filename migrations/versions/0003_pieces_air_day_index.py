"""pieces: index the archive by (paper, on air, day, time) instead of (paper, day)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 01:40:00

Every archive query filters on `on_air` as well as the day: the day list (GROUP BY day), a
back issue, its neighbour days, and the front's count of days. With `on_air` in the index
they read the index alone, in day order: the count of distinct days at 100 000 pieces drops
from a full table read (about 45 ms on SQLite, 80 ms on PostgreSQL) to under a millisecond
on SQLite (docs/PERFORMANCE.md). `on_air_at` last gives a back issue its order (newest
first) from the index too, so no planner, with or without statistics, prefers walking the
whole paper newest first to find one day. The new index serves every query the old one did,
so the old one goes.

On SQLite, a database that has statistics (`ANALYZE` or `PRAGMA optimize` ran on it) gets
them for the new index too: SQLite takes an index it knows nothing about for a very selective
one, and would read the whole paper through it to sort the story list (3 ms -> 700 ms at
100 000 pieces). A database without statistics is left without (empty-table statistics would
mislead the planner later).

Hand-checked on SQLite and PostgreSQL (`flask init-db` on a fresh database, and upgrade and
downgrade on a seeded one).
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('pieces', schema=None) as batch_op:
        batch_op.create_index('ix_pieces_paper_air_day', ['paper_id', 'on_air', 'on_air_day', 'on_air_at'],
                              unique=False)
        batch_op.drop_index('ix_pieces_paper_day')
    _analyze('ix_pieces_paper_air_day')


def _analyze(index: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != 'sqlite':
        return  # PostgreSQL keeps statistics per column, which a new plain index reuses
    has_stats = bind.execute(sa.text(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")).first()
    if has_stats:
        bind.execute(sa.text(f'ANALYZE "{index}"'))


def downgrade():
    with op.batch_alter_table('pieces', schema=None) as batch_op:
        batch_op.create_index('ix_pieces_paper_day', ['paper_id', 'on_air_day'], unique=False)
        batch_op.drop_index('ix_pieces_paper_air_day')
    _analyze('ix_pieces_paper_day')
