"""pieces: indexes that hold `updated_at`, so the sitemap's lastmods seek instead of reading every piece

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 17:00:00

`/sitemap.xml` gives each page the newest `updated_at` of the pieces it shows: per day, per
section, per persona, and past 50 000 URLs per sitemap page. Each was an aggregate over every
piece on air through an index without `updated_at` (a table row per piece): about 600 ms of
worker CPU per cold request at 100 000 pieces on SQLite (docs/PERFORMANCE.md "The sitemap's
lastmods"). Now:

- `ix_pieces_day_updated (paper_id, on_air, on_air_day, updated_at, on_air_at)`,
  `ix_pieces_section_updated (paper_id, section_id, on_air, updated_at, on_air_at)` and
  `ix_pieces_persona_updated (paper_id, persona_id, on_air, updated_at, on_air_at)`: a day's,
  section's or persona's newest `updated_at` is a backward seek to the first entry whose
  `on_air_at` has come (a scheduled piece is stepped over from the index alone), and the days
  are found by hopping the first index one day at a time;
- `ix_pieces_paper_air` ends with `updated_at`: a sitemap page's lastmod is the max over a
  slice of it (OFFSET, LIMIT, from the page's nearer end), read from the index alone. A
  trailing column changes no list's order or seek.

Key columns rather than PostgreSQL's INCLUDE: SQLite has no INCLUDE, and one definition keeps
the models the same on both. Plain `op.create_index`, not a batch (a batch would drop the
full-text triggers on pieces, 0005); statistics refreshed as 0017 does.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None

PAPER_AIR = ['paper_id', 'on_air', 'on_air_at', 'id']
NEW = (
    ('ix_pieces_day_updated', ['paper_id', 'on_air', 'on_air_day', 'updated_at', 'on_air_at']),
    ('ix_pieces_section_updated', ['paper_id', 'section_id', 'on_air', 'updated_at', 'on_air_at']),
    ('ix_pieces_persona_updated', ['paper_id', 'persona_id', 'on_air', 'updated_at', 'on_air_at']),
)


def upgrade():
    op.drop_index('ix_pieces_paper_air', table_name='pieces')
    op.create_index('ix_pieces_paper_air', 'pieces', [*PAPER_AIR, 'updated_at'], unique=False)
    for name, columns in NEW:
        op.create_index(name, 'pieces', columns, unique=False)
    _analyze()


def downgrade():
    for name, _ in reversed(NEW):
        op.drop_index(name, table_name='pieces')
    op.drop_index('ix_pieces_paper_air', table_name='pieces')
    op.create_index('ix_pieces_paper_air', 'pieces', PAPER_AIR, unique=False)
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
