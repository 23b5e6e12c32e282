"""pieces_fts: index each piece's paper too, so a search matches inside one paper only

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 05:00:00

SQLite only (PostgreSQL's tsvector search filters by paper in the same statement already).
The FTS5 table gains an indexed `paper_id` column (the piece's paper id as one token), and
services/reading/search.py matches `paper_id : "<id>"` AND the terms restricted to headline,
dek and prose. FTS5 then intersects the term with the paper's own pieces inside the index:
another paper's pieces, its private drafts included, are never sampled, looked up or counted,
so how long a search takes says nothing about them.

The table is external-content (`content='pieces'`, whose `paper_id` column it reads on a
`rebuild`), so it is dropped, made again and rebuilt from `pieces`, with its triggers.
Downgrade makes the 0001 table again. Hand-checked on SQLite (upgrade and downgrade on a
seeded database; `flask init-db` on a fresh one).
"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def _fts(columns: list[str]) -> list[str]:
    """The statements that make pieces_fts over `columns` of `pieces`, with its triggers, and
    fill it from `pieces`."""
    names = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    return [
        f"""CREATE VIRTUAL TABLE pieces_fts USING fts5({names}, content='pieces',
           content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')""",
        f"""CREATE TRIGGER pieces_fts_ai AFTER INSERT ON pieces BEGIN
           INSERT INTO pieces_fts(rowid, {names}) VALUES (new.id, {new});
           END""",
        f"""CREATE TRIGGER pieces_fts_ad AFTER DELETE ON pieces BEGIN
           INSERT INTO pieces_fts(pieces_fts, rowid, {names}) VALUES ('delete', old.id, {old});
           END""",
        f"""CREATE TRIGGER pieces_fts_au AFTER UPDATE OF {names} ON pieces BEGIN
           INSERT INTO pieces_fts(pieces_fts, rowid, {names}) VALUES ('delete', old.id, {old});
           INSERT INTO pieces_fts(rowid, {names}) VALUES (new.id, {new});
           END""",
        "INSERT INTO pieces_fts(pieces_fts) VALUES ('rebuild')",
    ]


def _replace(columns: list[str]) -> None:
    if op.get_bind().dialect.name != 'sqlite':
        return
    for trigger in ("pieces_fts_ai", "pieces_fts_ad", "pieces_fts_au"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS pieces_fts")
    for statement in _fts(columns):
        op.execute(statement)


def upgrade():
    _replace(["headline", "dek", "prose", "paper_id"])


def downgrade():
    _replace(["headline", "dek", "prose"])
