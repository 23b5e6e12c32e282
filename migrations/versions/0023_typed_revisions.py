"""typed revisions: pieces.notices, piece_changes.kind and .note; pieces.unsupported_figures

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-28 22:00:00

A revision of a piece carries a `kind` (`edit` before the piece was ever public; `correction`,
`clarification`, `update` or `retraction` after) and a public `note` (docs/CORRECTIONS.md), both
in its signed basis. `pieces.notices` keeps the typed revisions' `{rev, kind, note, at}` in rev
order, so a story's reads need no second query; `piece_changes.kind`/`.note` carry them into
the change feed and the transparency log. Nothing to backfill: earlier revisions have no kind.
`pieces.unsupported_figures` counts the figures of the current revision that no cited fact
states (services/newsroom/figures.py), for the cockpit's count per persona; null for pieces
filed before (not checked).
The `correction-alerts` consumer of the change feed (services/delivery/corrections.py) starts
after the last change already public on each paper, as 0019 placed its consumers: no earlier
change is a correction.
"""
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('pieces', sa.Column(
        'notices', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'),
        nullable=True))
    op.add_column('pieces', sa.Column('unsupported_figures', sa.Integer(), nullable=True))
    op.add_column('piece_changes', sa.Column('kind', sa.String(length=16), nullable=True))
    op.add_column('piece_changes', sa.Column('note', sa.Text(), nullable=True))
    now = datetime.now(timezone.utc).replace(tzinfo=None)  # stored naive UTC (models/types.py)
    bind = op.get_bind()
    last = bind.execute(sa.text(
        "SELECT c.paper_id, c.at, MAX(c.seq) FROM piece_changes c "
        "JOIN (SELECT paper_id, MAX(at) AS at FROM piece_changes WHERE at <= :now GROUP BY paper_id) m "
        "ON m.paper_id = c.paper_id AND m.at = c.at GROUP BY c.paper_id, c.at"), {"now": now}).all()
    for paper_id, at, seq in last:
        bind.execute(sa.text(
            "INSERT INTO change_cursors (consumer, paper_id, after_at, after_seq) "
            "VALUES ('correction-alerts', :paper_id, :at, :seq)"),
            {"paper_id": paper_id, "at": at, "seq": seq})


def downgrade():
    op.execute("DELETE FROM change_cursors WHERE consumer = 'correction-alerts'")
    # Plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+), not a batch copy: copying `pieces` would
    # drop the full-text search triggers migrations 0005 and 0011 put on it.
    op.drop_column('piece_changes', 'note')
    op.drop_column('piece_changes', 'kind')
    op.drop_column('pieces', 'unsupported_figures')
    op.drop_column('pieces', 'notices')
