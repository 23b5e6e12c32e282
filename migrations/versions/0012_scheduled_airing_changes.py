"""scheduled airing and the change feed: piece_changes, pieces.announced_at, papers.air_schedule

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24 10:30:00

`piece_changes` is the change feed's log (GET /api/v1/changes). It is backfilled with one
`aired` change per piece on air, dated its `on_air_at` and numbered in (`on_air_at`, `id`)
order, so a mirror starting from the beginning still sees every piece on air; changes made
before this revision (revisions, pulls) were never recorded and are not invented.
`pieces.announced_at` is when a piece's airing was announced (CDN purge); pieces already on air
were announced when they aired. `papers.air_schedule` holds the instants scheduled pieces air
at (none before this revision).
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'piece_changes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('piece_id', sa.Integer(), nullable=False),
        sa.Column('type', sa.String(length=16), nullable=False),
        sa.Column('rev', sa.Integer(), nullable=False),
        sa.Column('content_hash', sa.String(length=80), nullable=True),
        sa.Column('at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_piece_changes_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_piece_changes')),
        sa.UniqueConstraint('paper_id', 'seq', name=op.f('uq_piece_changes_paper_id_seq')),
    )
    op.create_index('ix_piece_changes_paper_at_seq', 'piece_changes', ['paper_id', 'at', 'seq'])
    op.create_index('ix_piece_changes_piece', 'piece_changes', ['piece_id'])
    op.add_column('pieces', sa.Column('announced_at', sa.DateTime(), nullable=True))
    op.add_column('papers', sa.Column(
        'air_schedule', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=True))
    op.execute("UPDATE pieces SET announced_at = on_air_at WHERE on_air AND on_air_at IS NOT NULL")
    op.execute("""
        INSERT INTO piece_changes (paper_id, seq, piece_id, type, rev, content_hash, at)
        SELECT paper_id, row_number() OVER (PARTITION BY paper_id ORDER BY on_air_at, id),
               id, 'aired', rev, content_hash, on_air_at
        FROM pieces WHERE on_air AND on_air_at IS NOT NULL""")


def downgrade():
    op.drop_column('papers', 'air_schedule')
    op.drop_column('pieces', 'announced_at')
    op.drop_index('ix_piece_changes_piece', table_name='piece_changes')
    op.drop_index('ix_piece_changes_paper_at_seq', table_name='piece_changes')
    op.drop_table('piece_changes')
