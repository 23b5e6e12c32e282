"""pieces: every list in index order (the keyset's `id` in the indexes; persona and draft lists)

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27 02:00:00

Every list of pieces is paged by a keyset, newest first: `(on_air_at, id)` for pieces on air,
`(filed_at, id)` for drafts. The indexes ended at `on_air_at`, so PostgreSQL (whose indexes,
unlike SQLite's, do not carry the row id) read every row of the newest instant and sorted
them, and with statistics that misjudged the paper it read and sorted the whole paper (a top-N
heapsort over 1 000 rows for a page of 15; docs/PERFORMANCE.md "Lists in index order"). Now:

- `ix_pieces_paper_air` and `ix_pieces_paper_air_day` end with `id`;
- `ix_pieces_section_air` becomes `(paper_id, section_id, on_air, on_air_at, id)`: PostgreSQL
  prices an index scan by the physical correlation of the index's first column, and with
  `section_id` first (pieces of many sections interleaved in the table) it preferred walking
  the whole paper's index and filtering on the section (three rows read per row listed with
  three sections, twelve with twelve);
- `ix_pieces_persona_air (paper_id, persona_id, on_air, on_air_at, id)` serves
  `/stories?persona=` and the masthead's counts (the plain foreign-key index stays, for the
  foreign key's own checks);
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
down_revision = '0016'
branch_labels = None
depends_on = None

# (name, new columns, old columns or None for an index that is new)
INDEXES = (
    ('ix_pieces_paper_air', ['paper_id', 'on_air', 'on_air_at', 'id'], ['paper_id', 'on_air', 'on_air_at']),
    ('ix_pieces_paper_air_day', ['paper_id', 'on_air', 'on_air_day', 'on_air_at', 'id'],
     ['paper_id', 'on_air', 'on_air_day', 'on_air_at']),
    ('ix_pieces_section_air', ['paper_id', 'section_id', 'on_air', 'on_air_at', 'id'],
     ['section_id', 'on_air', 'on_air_at']),
    ('ix_pieces_persona_air', ['paper_id', 'persona_id', 'on_air', 'on_air_at', 'id'], None),
    ('ix_pieces_paper_filed', ['paper_id', 'on_air', 'filed_at', 'id'], None),
)


def upgrade():
    for name, columns, old in INDEXES:
        if old is not None:
            op.drop_index(name, table_name='pieces')
        op.create_index(name, 'pieces', columns, unique=False)
    _analyze()


def downgrade():
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
