"""Editions as a feed the worker follows: `edition.published` content webhooks derived by the
`edition-webhooks` consumer, no longer written by the newsroom

Revision ID: 0022
Revises: 0019
Create Date: 2026-11-28 22:30:00

No schema change: the consumer keeps its position in `change_cursors` like the change feed's
consumers, over (`editions.published_at`, `editions.id`). Its cursor starts after each paper's
newest edition already published (their messages were written when they were published), so
the upgrade sends no edition twice; a paper with no edition yet starts at the beginning.
"""
import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0019'
branch_labels = None
depends_on = None

CONSUMER = "edition-webhooks"


def upgrade():
    bind = op.get_bind()
    last = bind.execute(sa.text(
        "SELECT e.paper_id, e.published_at, MAX(e.id) FROM editions e "
        "JOIN (SELECT paper_id, MAX(published_at) AS at FROM editions GROUP BY paper_id) m "
        "ON m.paper_id = e.paper_id AND m.at = e.published_at GROUP BY e.paper_id, e.published_at")).all()
    for paper_id, at, seq in last:
        bind.execute(sa.text(
            "INSERT INTO change_cursors (consumer, paper_id, after_at, after_seq) "
            "VALUES (:consumer, :paper_id, :at, :seq)"),
            {"consumer": CONSUMER, "paper_id": paper_id, "at": at, "seq": seq})


def downgrade():
    op.get_bind().execute(sa.text("DELETE FROM change_cursors WHERE consumer = :consumer"),
                          {"consumer": CONSUMER})
