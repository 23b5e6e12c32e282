"""pieces: every list in index order (the keyset's `id` in the indexes; persona and draft lists)

Revision ID: 0017
Revises: 0015
Create Date: 2026-11-27 02:00:00

Every list of pieces is paged by a keyset, newest first: `(on_air_at, id)` for pieces on air,
`(filed_at, id)` for drafts. The indexes ended at `on_air_at`, so PostgreSQL (whose indexes,
unlike SQLite's, do not carry the row id) read every row of the newest instant and sorted
them, and with statistics that misjudged the paper it read and sorted the whole paper (a top-N
heapsort over 1 000 rows for a page of 15; docs/PERFORMANCE.md "Lists in index order"). Now:

- `ix_pieces_paper_air`, `ix_pieces_paper_air_day`, `ix_pieces_section_air` end with `id`;
- `ix_pieces_persona_air (persona_id, on_air, on_air_at, id)` serves `/stories?persona=` and
  replaces the plain foreign-key index `ix_pieces_persona_id` (it leads with the same column);
- `ix_pieces_paper_filed (paper_id, on_air, filed_at, id)` serves the drafts lane.

Plain `op.create_index`, not a batch: a batch that rebuilt the table on SQLite would drop the
full-text triggers on pieces (0005). Statistics: PostgreSQL keeps them per column, which plain
indexes reuse, but `ANALYZE pieces` runs anyway (cheap, and a database bulk-loaded without it
would keep misjudging the new indexes); SQLite gets them for the new indexes when it already
has statistics (migration 0003 says why a database without is left without).
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0017'
down_revision = '0015'
branch_labels = None
depends_on = None

# (name, new columns, old columns or None for an index that is new)
INDEXES = (
    ('ix_pieces_paper_air', ['paper_id', 'on_air', 'on_air_at', 'id'], ['paper_id', 'on_air', 'on_air_at']),
    ('ix_pieces_paper_air_day', ['paper_id', 'on_air', 'on_air_day', 'on_air_at', 'id'],
     ['paper_id', 'on_air', 'on_air_day', 'on_air_at']),
    ('ix_pieces_section_air', ['section_id', 'on_air', 'on_air_at', 'id'], ['section_id', 'on_air', 'on_air_at']),
    ('ix_pieces_persona_air', ['persona_id', 'on_air', 'on_air_at', 'id'], None),
    ('ix_pieces_paper_filed', ['paper_id', 'on_air', 'filed_at', 'id'], None),
)


def upgrade():
    for name, columns, old in INDEXES:
        if old is not None:
            op.drop_index(name, table_name='pieces')
        op.create_index(name, 'pieces', columns, unique=False)
    op.drop_index('ix_pieces_persona_id', table_name='pieces')
    _analyze()


def downgrade():
    op.create_index('ix_pieces_persona_id', 'pieces', ['persona_id'], unique=False)
    for name, _, old in reversed(INDEXES):
        op.drop_index(name, table_name='pieces')
        if old is not None:
            op.create_index(name, 'pieces', old, unique=False)
    _analyze()


def _analyze() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'postgresql':
        bind.execute(sa.text('ANALYZE pieces'))
        return
    has_stats = bind.execute(sa.text(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_stat1'")).first()
    if has_stats:
        bind.execute(sa.text('ANALYZE pieces'))
