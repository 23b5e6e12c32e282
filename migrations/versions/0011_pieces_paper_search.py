"""pieces paper search: on PostgreSQL, one GIN index over (paper_id, search_vector)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24 07:10:00

Search always asks for one paper's matches. With a GIN index over `search_vector` alone, the
index yields every paper's matches; PostgreSQL then visits each of those rows in the table and
throws away the other papers' (their private drafts included), so the work, and the time a
search takes, grew with what other papers hold. The two-column GIN index (paper_id through the
`btree_gin` extension, a contrib module trusted since PostgreSQL 13, so a database owner may
create it) answers `paper_id = X AND search_vector @@ q` inside the index: only the paper's own
matches reach the table, as on SQLite, where FTS5 carries `paper_id` since 0005. The one-column
index goes: every search names its paper, and leaving it would let the planner pick it again.

SQLite: nothing to do.
"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.execute("CREATE INDEX ix_pieces_paper_search ON pieces USING gin (paper_id, search_vector)")
    op.execute("DROP INDEX IF EXISTS ix_pieces_search_vector")
    op.execute("ANALYZE pieces")


def downgrade():
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE INDEX ix_pieces_search_vector ON pieces USING gin (search_vector)")
    op.execute("DROP INDEX IF EXISTS ix_pieces_paper_search")
