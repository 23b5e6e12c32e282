"""idempotency: the first answer to each keyed write sent with an Idempotency-Key

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 06:30:00

A new table only; nothing to backfill (no write before this one carried a key).
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# revision identifiers, used by Alembic.
revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'idempotency_keys',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('key_owner', sa.Integer(), nullable=False),
        sa.Column('key', sa.String(length=255), nullable=False),
        sa.Column('method', sa.String(length=10), nullable=False),
        sa.Column('path', sa.String(length=2048), nullable=False),
        sa.Column('fingerprint', sa.String(length=64), nullable=False),
        sa.Column('status', sa.Integer(), nullable=False),
        sa.Column('headers', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
                  nullable=False),
        sa.Column('body', sa.LargeBinary(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f('fk_idempotency_keys_paper_id_papers'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['key_owner'], ['desk_keys.id'],
                                name=op.f('fk_idempotency_keys_key_owner_desk_keys'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_keys')),
        sa.UniqueConstraint('paper_id', 'key_owner', 'key', name=op.f('uq_idempotency_keys_paper_id_key_owner_key')),
    )
    op.create_index('ix_idempotency_keys_paper_created', 'idempotency_keys', ['paper_id', 'created_at'])


def downgrade():
    op.drop_index('ix_idempotency_keys_paper_created', table_name='idempotency_keys')
    op.drop_table('idempotency_keys')
