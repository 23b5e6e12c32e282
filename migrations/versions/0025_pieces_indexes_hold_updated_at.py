"""pieces: the on-air indexes end with `updated_at`, so the sitemap's lastmods read no table row

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-29 17:00:00

`/sitemap.xml` gives each page the newest `updated_at` of the pieces it shows: per day, per
section, per persona, and past 50 000 URLs per sitemap page, each a `max(updated_at)` over every
piece on air. The indexes those aggregates walk ended at `id`, so each piece cost a lookup of its
table row for `updated_at`: four lookups a piece, about 600 ms of worker CPU per cold request at
100 000 pieces on SQLite (docs/PERFORMANCE.md "The sitemap's lastmods"). With `updated_at` as
the last column of `ix_pieces_paper_air`, `ix_pieces_paper_air_day`, `ix_pieces_section_air` and
`ix_pieces_persona_air` each aggregate is an index-only scan. A trailing column changes no
list's order or seek: every list reads these indexes as before.

A key column rather than PostgreSQL's INCLUDE: SQLite has no INCLUDE, and one definition keeps
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

# (name, old columns); the new ones end with updated_at.
INDEXES = (
    ('ix_pieces_paper_air', ['paper_id', 'on_air', 'on_air_at', 'id']),
    ('ix_pieces_paper_air_day', ['paper_id', 'on_air', 'on_air_day', 'on_air_at', 'id']),
    ('ix_pieces_section_air', ['paper_id', 'section_id', 'on_air', 'on_air_at', 'id']),
    ('ix_pieces_persona_air', ['paper_id', 'persona_id', 'on_air', 'on_air_at', 'id']),
)


def upgrade():
    for name, old in INDEXES:
        op.drop_index(name, table_name='pieces')
        op.create_index(name, 'pieces', [*old, 'updated_at'], unique=False)
    _analyze()


def downgrade():
    for name, old in reversed(INDEXES):
        op.drop_index(name, table_name='pieces')
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
