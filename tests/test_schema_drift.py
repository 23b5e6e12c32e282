"""The models and the migrations describe one schema: the suite's database, migrated to head by
`flask init-db`'s migrations, is compared with the models' metadata by Alembic's own
autogenerate comparison (types included), on SQLite and PostgreSQL. A column, index or
constraint added to a model without its migration, or the other way round, fails here.

The only objects the migrations make that no model declares are the full-text search ones,
which are SQL of their backend: SQLite's FTS5 table `pieces_fts` (and the shadow tables FTS5
keeps beside it), PostgreSQL's generated `pieces.search_vector` and its GIN index.
"""
from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from extensions import db

SEARCH_ONLY = {
    "sqlite": {("remove_table", name) for name in ("pieces_fts", "pieces_fts_data", "pieces_fts_idx",
                                                   "pieces_fts_config", "pieces_fts_docsize")},
    "postgresql": {("remove_column", "pieces.search_vector"), ("remove_index", "ix_pieces_paper_search")},
}


def _name(difference: tuple) -> tuple[str, str]:
    """(kind, what) of one Alembic difference: a table's or index's name, `table.column`."""
    kind = difference[0]
    if kind == "remove_column":
        return kind, f"{difference[2]}.{difference[3].name}"
    return kind, getattr(difference[1], "name", repr(difference[1]))


def _flatten(differences: list) -> list:
    # Column changes (type, nullable, default) come as a list of tuples for one column.
    flat = []
    for difference in differences:
        flat.extend(difference if isinstance(difference, list) else [difference])
    return flat


def test_the_models_and_the_migrations_agree(app):
    with app.app_context():
        backend = db.engine.dialect.name
        with db.engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = _flatten(compare_metadata(context, db.metadata))
    drift = [d for d in differences if _name(d) not in SEARCH_ONLY[backend]]
    assert drift == [], drift
    # The search objects are there, as the migrations made them (the test would pass vacuously
    # if the comparison found nothing at all).
    assert {_name(d) for d in differences} == SEARCH_ONLY[backend]
