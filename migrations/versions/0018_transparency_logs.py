"""transparency logs: every public change of a piece in a C2SP tlog-tiles Merkle tree per paper

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 03:00:00

Five new tables (models/log.py). Nothing is backfilled here: the log is derived from the change
feed by the `transparency-log` consumer of `flask drain-outbox`, whose cursor starts at the
beginning of each paper's feed (no cursor is placed). The feed begins, since 0012, with one
`aired` change per piece that was on air then (dated its airing; the demo seeder writes the same
for its bulk pieces), so each existing paper's log starts with one `aired` entry per piece on air,
followed by every change since: that is the log's genesis (docs/PROOFS.md). A paper's log key and
origin are made by the worker (or `flask log checkpoint`) the first time it needs them.
"""
import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0016'
branch_labels = None
depends_on = None


def _paper_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(['paper_id'], ['papers.id'], name=op.f(f'fk_{table}_paper_id_papers'),
                                   ondelete='CASCADE')


def upgrade():
    op.create_table(
        'transparency_logs',
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('origin', sa.String(length=300), nullable=False),
        sa.Column('public_key', sa.String(length=64), nullable=False),
        sa.Column('private_seed', sa.Text(), nullable=False),
        sa.Column('size', sa.Integer(), nullable=False),
        sa.Column('signed_size', sa.Integer(), nullable=False),
        sa.Column('signed_at', sa.DateTime(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        _paper_fk('transparency_logs'),
        sa.PrimaryKeyConstraint('paper_id', name=op.f('pk_transparency_logs')),
    )
    op.create_table(
        'log_entries',
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('idx', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('piece_id', sa.Integer(), nullable=False),
        sa.Column('data', sa.LargeBinary(), nullable=False),
        sa.Column('hash', sa.LargeBinary(length=32), nullable=False),
        _paper_fk('log_entries'),
        sa.PrimaryKeyConstraint('paper_id', 'idx', name=op.f('pk_log_entries')),
    )
    op.create_index('ix_log_entries_piece', 'log_entries', ['paper_id', 'piece_id', 'idx'])
    op.create_table(
        'log_tile_hashes',
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('level', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('idx', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('hash', sa.LargeBinary(length=32), nullable=False),
        _paper_fk('log_tile_hashes'),
        sa.PrimaryKeyConstraint('paper_id', 'level', 'idx', name=op.f('pk_log_tile_hashes')),
    )
    op.create_table(
        'log_checkpoints',
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('size', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('root', sa.LargeBinary(length=32), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('cosignatures', sa.Text(), nullable=False),
        sa.Column('signed_at', sa.DateTime(), nullable=False),
        _paper_fk('log_checkpoints'),
        sa.PrimaryKeyConstraint('paper_id', 'size', name=op.f('pk_log_checkpoints')),
    )
    op.create_table(
        'log_witnesses',
        sa.Column('paper_id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('size', sa.Integer(), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('next_attempt_at', sa.DateTime(), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        _paper_fk('log_witnesses'),
        sa.PrimaryKeyConstraint('paper_id', 'name', name=op.f('pk_log_witnesses')),
    )


def downgrade():
    # The consumer's position goes with its log: a later upgrade derives the log afresh.
    op.execute("DELETE FROM change_cursors WHERE consumer = 'transparency-log'")
    op.drop_table('log_witnesses')
    op.drop_table('log_checkpoints')
    op.drop_table('log_tile_hashes')
    op.drop_index('ix_log_entries_piece', table_name='log_entries')
    op.drop_table('log_entries')
    op.drop_table('transparency_logs')
