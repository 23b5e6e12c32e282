"""Every list is read in index order: a page of N reads about N rows and sorts nothing
(docs/PERFORMANCE.md "Lists in index order"; the indexes of models/piece.py, migration 0017).

The rows are bulk-written with SQL (100 000 pieces on PostgreSQL, each pair sharing one instant so
the keyset's `id` matters; their changes in the feed), then each list is requested through HTTP
exactly as a client asks for it. The statements the request ran are captured and explained on
the same database with the same parameters:

- PostgreSQL: `EXPLAIN (ANALYZE, FORMAT JSON)` must hold no Sort or Incremental Sort node, and
  every scan of `pieces` or `piece_changes` together must produce and discard no more than a few
  dozen rows. After `flask analyze-db`, as `seed-demo` and docs/DEPLOYING.md do after a bulk
  load: with the statistics of the table before the load, the planner believes the paper a
  dozen rows and sorts all 100 000 (a top-N heapsort after a bitmap scan, 180 ms here).
- SQLite: `EXPLAIN QUERY PLAN` must not say `USE TEMP B-TREE FOR ORDER BY` (its sort).
"""
from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from psycopg import sql as psycopg_sql
from sqlalchemy import event, select, text

import config
from app import create_app
from extensions import db, per_value_engine, reads_engine
from models import Piece
from services.reading import cursors
from tests.fixtures.app import dispose
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements

PIECES = {"postgresql": 100_000, "sqlite": 5_000}
# "A few dozen": a page of 15 reads its 16 rows (one more tells whether a next page follows); the
# search for the cursor's position and the join lookups are not scans of these tables.
MAX_ROWS_READ = 40
# A cursor deep in the paper: the position of the 50 000th piece (sqlite: the 2 500th).
DEEP = {"postgresql": 50_000, "sqlite": 2_500}


def bulk_load(app, paper, template_id: int, count: int) -> None:
    """`count` more pieces on air, newest first every 5 minutes before T0 (two per instant), over
    the paper's sections and personas in turn, and an `aired` change for each: plain SQL, one
    statement per table."""
    sections = db.session.scalars(text("SELECT id FROM sections WHERE paper_id = :p ORDER BY id"),
                                  {"p": paper.id}).all()
    personas = db.session.scalars(text("SELECT id FROM personas WHERE paper_id = :p ORDER BY id"),
                                  {"p": paper.id}).all()
    start = T0.replace(tzinfo=None)
    if app.backend == "postgresql":
        at = "(:start - (g / 2) * interval '5 minutes')"
        source = "generate_series(1, :count) AS s(g)"
        pick = lambda ids: f"(ARRAY[{','.join(map(str, ids))}])[1 + g % {len(ids)}]"  # noqa: E731
        day = f"CAST({at} AS date)"
    else:
        # As SQLAlchemy stores a datetime on SQLite (text with microseconds), so it sorts alike.
        at = "(datetime(:start, '-' || ((g / 2) * 5) || ' minutes') || '.000000')"
        source = ("(WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < :count) "
                  "SELECT g FROM s)")
        pick = lambda ids: f"CASE g % {len(ids)} " + " ".join(  # noqa: E731
            f"WHEN {n} THEN {i}" for n, i in enumerate(ids)) + " END"
        day = "date(datetime(:start, '-' || ((g / 2) * 5) || ' minutes'))"
    db.session.execute(text(f"""
        INSERT INTO pieces (paper_id, slug, section_id, persona_id, headline, dek, prose, rev, content_hash,
                            on_air, on_air_at, on_air_day, filed_at, updated_at)
        SELECT t.paper_id, 'bulk-' || g, {pick(sections)}, {pick(personas)}, 'Bulk headline ' || g, t.dek,
               t.prose, 1, t.content_hash, true, {at}, {day}, {at}, {at}
        FROM {source}, pieces AS t WHERE t.id = :template"""),
        {"start": start, "count": count, "template": template_id})
    db.session.execute(text("""
        INSERT INTO piece_changes (paper_id, seq, piece_id, type, rev, content_hash, at)
        SELECT paper_id, 100 + id, id, 'aired', 1, content_hash, on_air_at FROM pieces
        WHERE paper_id = :p AND slug LIKE 'bulk-%'"""), {"p": paper.id})
    db.session.commit()


def captured(app, client, url: str, headers: dict) -> list[tuple[str, object]]:
    """The statements (text, parameters) a GET of `url` ran that read pieces or changes."""
    seen: list[tuple[str, dict]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if re.search(r"\bFROM (pieces|piece_changes)\b", statement):
            seen.append((statement, parameters))  # a dict (psycopg), a tuple (sqlite3)

    engines = {db.engine, reads_engine()} - {None}  # public reads run on the second (PostgreSQL)
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        response = client.get(url, headers=headers)
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)
    assert response.status_code == 200, (url, response.get_json())
    assert seen, f"{url} read no pieces"
    return seen


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from nodes(child)


def postgres_plan(statement: str, parameters: dict, *, generic: bool = False) -> dict:
    """The executed plan of `statement` with `parameters`: the plan for these values, or with
    `generic` the plan PostgreSQL keeps for a prepared statement once it plans it for any
    values (what a worker's connection runs after a few executions, config.py
    DB_PREPARE_THRESHOLD)."""
    with db.engine.connect() as conn:
        if not generic:
            return conn.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + statement,
                                        parameters).scalar()[0]["Plan"]
        names: list[str] = []

        def dollar(match) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        raw = conn.connection.driver_connection
        raw.execute("PREPARE plan_probe AS " + re.sub(r"%\((\w+)\)s", dollar, statement))
        try:
            raw.execute("SET plan_cache_mode = force_generic_plan")
            values = psycopg_sql.SQL(", ").join(psycopg_sql.Literal(parameters[name]) for name in names)
            return raw.execute(psycopg_sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE plan_probe ({})")
                               .format(values)).fetchone()[0][0]["Plan"]
        finally:
            raw.execute("RESET plan_cache_mode")
            raw.execute("DEALLOCATE plan_probe")


def check_postgres(url: str, statement: str, parameters: dict, may_sort: int = 0) -> None:
    """No sort (but of at most `may_sort` rows), at most MAX_ROWS_READ rows read (twice that
    when two lanes are merged): in the plan for the request's values and in the generic plan."""
    for generic in (False, True):
        check_plan(f"{url} ({'generic' if generic else 'custom'} plan)", statement,
                   postgres_plan(statement, parameters, generic=generic), may_sort)


def check_plan(url: str, statement: str, plan: dict, may_sort: int) -> None:
    shown = f"{url}: {statement}\n{plan}"
    sorted_rows = [sum(c["Actual Rows"] * c["Actual Loops"] for c in n.get("Plans", ()))
                   for n in nodes(plan) if "Sort" in n["Node Type"]]
    assert all(rows <= may_sort for rows in sorted_rows), f"sorted {sorted_rows} rows: {shown}"
    read = sum((n.get("Actual Rows", 0) + n.get("Rows Removed by Filter", 0)
                + n.get("Rows Removed by Index Recheck", 0)) * n.get("Actual Loops", 1)
               for n in nodes(plan) if n.get("Relation Name") in ("pieces", "piece_changes"))
    assert read <= (2 * MAX_ROWS_READ if may_sort else MAX_ROWS_READ), f"read {read} rows: {shown}"


def check_sqlite(url: str, statement: str, parameters, may_sort: int = 0) -> None:
    """No sort: SQLite's plan says nothing of a temporary B-tree for ORDER BY (but in the
    merge of the `all` lane's two cut lanes, when `may_sort`)."""
    with db.engine.connect() as conn:
        steps = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
    sorts = [s for s in steps if "TEMP B-TREE" in s]
    assert len(sorts) <= (1 if may_sort else 0), f"{url}: {statement}\n{steps}"


def lists(paper, deep_cursor: str, change_cursor: str, day: str, since: str) -> list[tuple[str, bool, int]]:
    """(URL, keyed?, rows it may sort) of every list a client pages through, first pages and
    deep ones. The keyed `all` lane merges its two index-ordered lanes (on air, then drafts),
    each cut at the page's 16 rows: it sorts those, never the paper."""
    return [
        ("/api/v1/stories?limit=15", False, 0),
        (f"/api/v1/stories?limit=15&cursor={deep_cursor}", False, 0),
        ("/api/v1/stories?limit=15&section=business", False, 0),
        ("/api/v1/stories?limit=15&persona=rex-ledger", False, 0),
        ("/api/v1/stories?limit=15&status=draft", True, 0),
        ("/api/v1/stories?limit=15&status=all", True, 32),
        (f"/api/v1/days/{day}?limit=15", False, 0),
        ("/api/v1/posts?limit=15", False, 0),
        (f"/api/v1/posts?limit=15&since={since}", False, 0),
        ("/api/v1/changes?limit=15", False, 0),
        (f"/api/v1/changes?limit=15&cursor={change_cursor}", False, 0),
    ]


@pytest.mark.slow
def test_every_list_page_reads_about_its_rows_in_index_order(app, client, runner, desk):
    paper = desk.paper("demo", sections=("World", "Business", "Science"))
    template = desk.piece(paper, "The template piece", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "A draft", on_air_at=None)
    key = desk.key(paper, "read")
    count = PIECES[app.backend]
    bulk_load(app, paper, template.id, count)

    # Cursors as the API hands them out, at a piece (and its change) deep in the paper.
    deep_at, deep_id = db.session.execute(select(Piece.on_air_at, Piece.id).where(
        Piece.slug == f"bulk-{DEEP[app.backend]}")).one()
    deep_cursor = cursors.encode(app.config["SECRET_KEY"], "stories", paper.id,
                                 {"status": "on_air", "section": None, "persona": None, "drafts_of": None},
                                 [1, cursors.moment(deep_at), deep_id])
    change_cursor = cursors.encode(app.config["SECRET_KEY"], "changes", paper.id, {},
                                   [cursors.moment(deep_at), 100 + deep_id])
    day = (T0 - timedelta(days=100)).date().isoformat()
    since = (T0 - timedelta(days=30)).isoformat().replace("+00:00", "Z")

    # What seed-demo does after its bulk load, and operators after theirs (docs/DEPLOYING.md).
    refreshed = runner.invoke(args=["analyze-db"])
    assert refreshed.exit_code == 0 and "statistics refreshed" in refreshed.output, refreshed.output
    for url, keyed, may_sort in lists(paper, deep_cursor, change_cursor, day, since):
        for statement, parameters in captured(app, client, url, auth(key) if keyed else {}):
            if app.backend == "postgresql":
                check_postgres(url, statement, parameters, may_sort)
            else:
                check_sqlite(url, statement, parameters, may_sort)

    # Lists of counts (each section's, day's, persona's pieces on air) must count the paper; they
    # do it once per paper version in a worker, then page from memory without reading a piece.
    for url in ("/api/v1/sections?limit=2", "/api/v1/days?limit=15", "/api/v1/masthead"):
        first = client.get(url).get_json()
        with statements() as seen:
            again = client.get(url)
        assert again.get_json() == first
        assert not [s for s in seen if re.search(r"\bpieces\b", s)], (url, seen)


def test_an_app_on_another_database_url_gets_its_production_engine_options(monkeypatch, tmp_path):
    """An app built on a PostgreSQL URL that DATABASE_URL does not name (create_app's
    SQLALCHEMY_DATABASE_URI, as the test suite builds its apps) runs with production's engine
    options for PostgreSQL on all three of its pools. It used to keep the options config.load
    had read off DATABASE_URL: a SQLite file's, none (a plain QueuePool, no prepared
    statements, psycopg's own cursors)."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    url = "postgresql+psycopg://nobody@127.0.0.1:1/nothing"  # never connected to
    built = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": url, "INSTANCE_PATH": str(tmp_path),
                        "CACHE_TYPE": "NullCache", "CACHE_NO_NULL_WARNING": True})
    assert built.config["SQLALCHEMY_ENGINE_OPTIONS"] == config.postgres_engine_options()
    try:
        with built.app_context():
            for engine in (db.engine, reads_engine(), per_value_engine()):
                assert type(engine.pool) is config.live_pool() and not engine.pool._pre_ping
    finally:
        dispose(built)


def test_the_suites_app_is_built_as_production_builds_it(app):
    """The suite's app (tests/fixtures/app.py) runs with the engine options production gives
    its database, nothing added: on PostgreSQL the LivePool without pre-ping, prepared
    statements, generic plans and lazy descriptions (config.postgres_engine_options)."""
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    assert app.config["SQLALCHEMY_ENGINE_OPTIONS"] == config.engine_options(url)
    if app.backend == "postgresql":
        options = app.config["SQLALCHEMY_ENGINE_OPTIONS"]
        assert options["connect_args"]["cursor_factory"] is config.lazy_description_cursor()
        assert "plan_cache_mode=force_generic_plan" in options["connect_args"]["options"]
        with app.app_context():
            assert type(db.engine.pool) is config.live_pool() and not db.engine.pool._pre_ping
            assert type(reads_engine().pool) is config.live_pool()


def test_a_killed_backend_costs_no_request_and_a_live_one_no_ping(app, desk, make_app):
    """Production's PostgreSQL pool (config.postgres_engine_options): no pre-ping, yet every
    request after the server killed the pool's connections is answered 200, because the pool
    drops them at checkout (config.LivePool); and the hot read runs as a server-side prepared
    statement on its connection."""
    if app.backend != "postgresql":
        pytest.skip("PostgreSQL's pool")
    paper = desk.paper("demo")
    desk.piece(paper, "On air")
    options = config.postgres_engine_options()
    assert options["pool_pre_ping"] is False and options["connect_args"]["prepare_threshold"] == 1
    worker = make_app(SQLALCHEMY_ENGINE_OPTIONS=options, CACHE_TYPE="NullCache")
    client = worker.test_client()
    for _ in range(3):
        assert client.get("/api/v1/stories?limit=15").status_code == 200
    with worker.app_context():
        with reads_engine().connect() as conn:  # public reads' pool's one connection, the requests' own
            prepared = conn.exec_driver_sql("SELECT statement FROM pg_prepared_statements").scalars().all()
    assert any("FROM pieces" in statement for statement in prepared), prepared

    with db.engine.connect() as conn:
        killed = conn.exec_driver_sql(
            "SELECT array_agg(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()").scalar()
        assert killed
        conn.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM unnest(%(pids)s) AS pid", {"pids": killed})
        # pg_terminate_backend only signals: wait until the backends have gone (and said so on
        # their sockets), as a restart or a kill has by the time a later request comes.
        deadline = time.monotonic() + 5
        while conn.exec_driver_sql("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%(pids)s)",
                                   {"pids": killed}).scalar() and time.monotonic() < deadline:
            time.sleep(0.01)
    answers = [client.get("/api/v1/stories?limit=15").status_code for _ in range(5)]
    assert answers == [200] * 5
    with worker.app_context():
        assert not db.engine.pool._pre_ping and not reads_engine().pool._pre_ping


def test_public_reads_run_in_autocommit_on_their_own_pool_and_writes_in_transactions(app, desk, make_app):
    """On PostgreSQL a keyless GET's statements run on extensions.reads_engine, whose
    connections are in autocommit from their start (no BEGIN, no ROLLBACK, no switch of a
    connection per request), and a write's on the app's engine in a transaction; in one app
    context held across both (as a test client's may be), the write after the read still binds
    to the app's engine (tenancy.end_read)."""
    if app.backend != "postgresql":
        pytest.skip("PostgreSQL's public reads")
    paper = desk.paper("demo")
    piece_id = desk.piece(paper, "On air").id  # read here, not in the worker's app context below
    admin = desk.key(paper, "admin")
    worker = make_app(SQLALCHEMY_ENGINE_OPTIONS=config.postgres_engine_options(), CACHE_TYPE="NullCache")
    client = worker.test_client()
    seen: list[tuple[str, bool, str]] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(("reads" if conn.engine is reads else "app", conn.connection.driver_connection.autocommit,
                     statement.split()[0]))

    with worker.app_context():
        reads = reads_engine()
        assert reads is not db.engine
        for engine in (db.engine, reads):
            event.listen(engine, "before_cursor_execute", record)
        try:
            for _ in range(2):
                assert client.get(f"/api/v1/stories/{piece_id}").status_code == 200
            read = list(seen)
            changed = client.patch(f"/api/v1/stories/{piece_id}", json={"headline": "Harbour reopens"},
                                   headers=auth(admin))
            assert changed.status_code == 200, changed.get_json()
            written = seen[len(read):]
            assert client.get(f"/api/v1/stories/{piece_id}").get_json()["headline"] == "Harbour reopens"
        finally:
            for engine in (db.engine, reads):
                event.remove(engine, "before_cursor_execute", record)
    assert read and all(engine == "reads" and autocommit for engine, autocommit, _ in read), read
    assert any(verb == "UPDATE" for *_, verb in written), written
    assert all(engine == "app" and not autocommit for engine, autocommit, _ in written), written


def test_hot_reads_are_planned_once_and_search_for_its_terms(app, desk, make_app):
    """With production's engine options (config.postgres_engine_options, `plan_cache_mode`
    `force_generic_plan`), a list's prepared statement is planned once on its connection and
    then only executed: left to choose, PostgreSQL planned a list of 30 or more pieces anew at
    every execution. Search reads on its own connection (extensions.per_value_engine), where
    each execution is planned for its terms, and still finds what it should."""
    if app.backend != "postgresql":
        pytest.skip("PostgreSQL's plan cache")
    paper = desk.paper("demo")
    for n in range(6):
        desk.piece(paper, f"Harbour dues rise {n}" if n % 2 else f"Council meets {n}")
    worker = make_app(SQLALCHEMY_ENGINE_OPTIONS=config.postgres_engine_options(), CACHE_TYPE="NullCache")
    client = worker.test_client()
    for _ in range(8):
        assert client.get("/api/v1/stories?limit=50").status_code == 200
        found = client.get("/api/v1/search?q=harbour")
        assert found.status_code == 200
        assert sorted(r["headline"] for r in found.get_json()["stories"]) == [
            "Harbour dues rise 1", "Harbour dues rise 3", "Harbour dues rise 5"]

    def plans(engine, like: str) -> list[tuple[int, int]]:
        with engine.connect() as conn:  # the pool's one connection, the requests' own
            return conn.exec_driver_sql(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %(like)s",
                {"like": like}).all()

    with worker.app_context():
        lists = plans(reads_engine(), "%LIMIT 51%")  # public reads' own connections
        searches = plans(per_value_engine(), "%search_vector%")
    assert lists and all(generic >= 7 and custom == 0 for generic, custom in lists), lists
    assert searches and all(generic == 0 and custom >= 7 for generic, custom in searches), searches


def test_a_lazy_description_is_psycopgs_own(app, desk, make_app):
    """Production's cursors build `description` only when it is read
    (config.lazy_description_cursor): what it then holds is psycopg's own, column for column,
    for hot statements and new ones, read through SQLAlchemy by name; it stays the result's
    after the cursor runs another statement; None where psycopg says None."""
    if app.backend != "postgresql":
        pytest.skip("psycopg's cursors")
    import psycopg

    paper = desk.paper("demo")
    desk.piece(paper, "On air")
    options = config.postgres_engine_options()
    lazy = options["connect_args"]["cursor_factory"]
    worker = make_app(SQLALCHEMY_ENGINE_OPTIONS=options, CACHE_TYPE="NullCache")
    client = worker.test_client()
    for _ in range(3):  # hot: SQLAlchemy's cached metadata, psycopg's prepared statement
        assert client.get("/api/v1/stories/1").get_json()["headline"] == "On air"

    def shown(description) -> list[tuple]:
        return [(*column, column.type_display) for column in description]

    query = "SELECT id, headline, on_air_at, notices, 1.5::numeric(4, 2) AS n, NULL AS z FROM pieces"
    with worker.app_context():
        with db.engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert isinstance(raw, psycopg.Connection) and raw.cursor_factory is lazy
            ours, theirs = raw.cursor(), psycopg.Cursor(raw)
            for cursor in (ours, theirs):
                cursor.execute(query)
            held = ours.description
            assert type(held) is not list and len(held) == 6
            assert shown(held) == shown(theirs.description)
            assert held[-1].name == "z" and [c.name for c in held[1:3]] == ["headline", "on_air_at"]
            ours.execute("SELECT 1 AS other")  # the held description is still the first result's
            assert shown(held) == shown(theirs.description) and ours.description[0].name == "other"
            for statement in ("SET statement_timeout = 0", "SELECT"):
                ours.execute(statement)
                theirs.execute(statement)
                assert (ours.description is None) == (theirs.description is None)
                assert list(ours.description or []) == list(theirs.description or [])
            # A statement SQLAlchemy has not seen: its result metadata is read from the names.
            row = conn.execute(text("SELECT id AS piece, headline FROM pieces")).one()
            assert row._mapping["piece"] == 1 and row.headline == "On air"
