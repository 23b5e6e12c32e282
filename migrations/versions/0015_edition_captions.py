"""edition captions: a WebVTT captions URL and a transcript; poster-only editions

Revision ID: 0015
Revises: 0011
Create Date: 2026-11-24 10:45:00

Editions carry captions (`captions_url`, a WebVTT file in the paper's language) and a `transcript`
(WCAG 1.2.2), both optional, and `video_url` may be null: a poster-only edition (the demo's, made
where no video can be drawn) shows its poster and transcript and stays out of the podcast feed.

Down-revision: 0011 for now; 0012-0014 land in parallel and the chain is re-linked at merge.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0015'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('editions') as batch:
        batch.add_column(sa.Column('captions_url', sa.String(length=2000), nullable=True))
        batch.add_column(sa.Column('transcript', sa.Text(), nullable=False, server_default=''))
        batch.alter_column('video_url', existing_type=sa.String(length=2000), nullable=True)


def downgrade():
    # A poster-only edition has no video to keep: it cannot outlive the column's NOT NULL.
    op.execute("DELETE FROM editions WHERE video_url IS NULL")
    with op.batch_alter_table('editions') as batch:
        batch.alter_column('video_url', existing_type=sa.String(length=2000), nullable=False)
        batch.drop_column('transcript')
        batch.drop_column('captions_url')
