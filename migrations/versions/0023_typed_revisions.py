"""typed revisions: pieces.notices, piece_changes.kind and .note

Revision ID: 0023
Revises: 0019
Create Date: 2026-11-28 22:00:00

A revision of a piece carries a `kind` (`edit` before the piece was ever public; `correction`,
`clarification`, `update` or `retraction` after) and a public `note` (docs/CORRECTIONS.md), both
in its signed basis. `pieces.notices` keeps the typed revisions' `{rev, kind, note, at}` in rev
order, so a story's reads need no second query; `piece_changes.kind`/`.note` carry them into
the change feed and the transparency log. Nothing to backfill: earlier revisions have no kind.
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0023'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('pieces', sa.Column(
        'notices', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=True))
    op.add_column('piece_changes', sa.Column('kind', sa.String(length=16), nullable=True))
    op.add_column('piece_changes', sa.Column('note', sa.Text(), nullable=True))


def downgrade():
    with op.batch_alter_table('piece_changes', schema=None) as batch_op:
        batch_op.drop_column('note')
        batch_op.drop_column('kind')
    with op.batch_alter_table('pieces', schema=None) as batch_op:
        batch_op.drop_column('notices')
