"""Answers keyed by what they depend on (web/state.py `Scopes`, web/caching.py `answer_state`):
a write throws away only the stored and replayed answers it changed, and every read after an
answered write still reflects it, on another worker, whether the answer was kept by the replay
or stored in the response cache.

Each test warms a reader (another app on the same database and host file: another worker),
writes through a second one over HTTP, then reads through the reader. What must show the write
shows it; what the write cannot have changed (a story of another section, its JSON) is answered
without a database statement."""
from __future__ import annotations

import logging
import os
import re
from urllib.parse import quote

import pytest

from extensions import db
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements
from web import state

_NAMED = re.compile(r'\b(?:FROM|JOIN)\s+"?(\w+)"?', re.IGNORECASE)
# A common table expression's name (WITH [RECURSIVE] name ... AS): read FROM like a table, not one.
_CTE = re.compile(r'(?:\bWITH\s+(?:RECURSIVE\s+)?|,\s*)"?(\w+)"?\s*(?:\([^()]*\))?\s+AS\s*\(', re.IGNORECASE)


def tables_read(statement: str) -> list[str]:
    """The tables a SQL statement reads (FROM and JOIN), without its own CTEs' names."""
    ctes = set(_CTE.findall(statement))
    return [name for name in _NAMED.findall(statement) if name not in ctes]
MODES = {"replay": {}, "response cache": {"RESPONSE_CACHE_LOCAL_BYTES": 0},
         # The generation and the scopes on Redis (the production shape), with its own limiter.
         "redis": {"SHARED_STATE": os.environ.get("TEST_REDIS_URL", ""), "RATELIMIT_ENABLED": True,
                   "RATELIMIT_STORAGE_URI": os.environ.get("TEST_REDIS_URL", "")}}


@pytest.fixture
def paper(desk):
    paper = desk.paper("demo")
    # A and B share a section (B's page shows A in its rail); C is in another one. Aired oldest
    # first, so that no airing leaves a scheduled instant behind it (one passing moves every key).
    c = desk.piece(paper, "Market story C", section="Business", on_air_at=T0.replace(hour=7), byline="Rex Ledger")
    b = desk.piece(paper, "Harbour story B", section="World", on_air_at=T0.replace(hour=8))
    a = desk.piece(paper, "Harbour story A", section="World", on_air_at=T0.replace(hour=9))
    return {"a": a, "b": b, "c": c, "admin": desk.key(paper, "admin")}


def urls(paper) -> dict[str, str]:
    a, b, c = paper["a"], paper["b"], paper["c"]
    oembed = quote(f"http://localhost/stories/{a.slug}", safe="")
    return {"a page": f"/stories/{a.slug}", "a json": f"/api/v1/stories/{a.id}", "a card": f"/embed/{a.id}",
            "a oembed": f"/oembed?url={oembed}", "front": "/", "front json": "/api/v1/front",
            "list": "/api/v1/stories?limit=15", "section": "/sections/world", "feed": "/rss.xml",
            "json feed": "/feed.json", "b page": f"/stories/{b.slug}", "b json": f"/api/v1/stories/{b.id}",
            "c page": f"/stories/{c.slug}", "c json": f"/api/v1/stories/{c.id}", "c card": f"/embed/{c.id}"}


def warm(client, paths) -> None:
    for path in paths:
        for _ in range(2):  # made, then kept or stored
            assert client.get(path).status_code == 200, path


class _Served(logging.Handler):
    """How each request was served, from its request line (web/request_log.py `served`)."""

    def __init__(self):
        super().__init__()
        self.served: list[str] = []

    def emit(self, record):
        self.served.append(getattr(record, "served", None))


def cold_reads(app, client, paths) -> dict[str, str]:
    """Read each path; the bodies of those the view made afresh (its request line says `app`:
    neither the replay nor the response cache had an answer kept at the current state). A
    view may make one without a statement of its own: a story page whose rail moved is its
    kept shell and a rail another page of the section read."""
    made = {}
    served = _Served()
    request_log = logging.getLogger("paperdesk.request")
    request_log.addHandler(served)
    try:
        for path in paths:
            body = client.get(path).get_data(as_text=True)
            if served.served[-1] == "app":
                made[path] = body
    finally:
        request_log.removeHandler(served)
    return made


def write(app, method: str, path: str, admin: str, body=None) -> None:
    answer = app.test_client().open(path, method=method, json=body, headers=auth(admin))
    assert answer.status_code == 200, answer.get_json()


@pytest.fixture(params=sorted(MODES))
def reader(request, make_app, paper):
    if request.param == "redis" and not os.environ.get("TEST_REDIS_URL"):
        pytest.skip("the Redis shape needs TEST_REDIS_URL")
    app = make_app(**MODES[request.param])
    client = app.test_client()
    warm(client, urls(paper).values())
    return app, client, lambda: make_app(**MODES[request.param])  # another worker, to write


def test_a_revision_shows_everywhere_it_is_shown_and_nowhere_else_goes_cold(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    write(another(), "PATCH", f"/api/v1/stories/{paper['a'].id}", paper["admin"], {"headline": "Harbour reopens"})
    made = cold_reads(app, client, paths.values())
    shows_a = ["a page", "a json", "a card", "a oembed", "front", "front json", "list", "section", "feed",
               "json feed", "b page"]
    for name in shows_a:
        assert "Harbour reopens" in made.get(paths[name], ""), name
    # B's JSON and C's answers show nothing of A: still the kept ones.
    assert set(made) == {paths[name] for name in shows_a}


def test_a_story_page_whose_rail_moved_is_its_kept_shell_and_the_new_rail(make_app, paper):
    """An airing in World moves B's rail and nothing else of B's page: B's page is then the
    shell kept for it and the new rail (no statement for B itself, blueprints/pages.py
    `story`), byte for byte the page a worker that keeps nothing makes. A revision of B, a
    persona or a section renamed end the kept shell (B's own row is read again)."""
    app = make_app()
    client = app.test_client()
    b_page = urls(paper)["b page"]
    warm(client, [b_page])
    writer = make_app()

    def read_b() -> tuple[str, list[str]]:
        with statements(app) as seen:
            body = client.get(b_page).get_data(as_text=True)
        return body, [s for s in seen if "pieces" in tables_read(s)]

    def fresh_b() -> str:  # a worker that keeps nothing: the page made whole
        return make_app(CACHE_TYPE="NullCache").test_client().get(b_page).get_data(as_text=True)

    write(writer, "PUT", f"/api/v1/stories/{file_draft(writer, paper)}/air", paper["admin"], {})
    body, read = read_b()
    assert "Harbour story D" in body  # the new rail
    assert len(read) == 1 and "LIMIT" in read[0].upper(), read  # the rail's statement alone
    assert body == fresh_b()

    for method, path, change, shown in [
            ("PATCH", f"/api/v1/stories/{paper['b'].id}", {"headline": "Harbour story B, corrected"},
             "Harbour story B, corrected"),
            ("PATCH", "/api/v1/personas/ada-quill", {"name": "Ada Harbour"}, "Ada Harbour"),
            ("PATCH", "/api/v1/sections/world", {"name": "The World"}, "The World")]:
        write(writer, method, path, paper["admin"], change)
        body, read = read_b()
        assert shown in body, path
        assert len(read) == 2, (path, read)  # B's own row, then its rail
        assert body == fresh_b(), path


@pytest.mark.parametrize("fault", ["redis restarted", "a scope version unreadable"])
def test_a_kept_story_shell_is_not_used_across_a_store_fault(make_app, paper, fault):
    """The shell is kept under the scope versions and the Redis server's lifetime, as whole
    answers are: once Redis restarts (another lifetime, whose numbers start over and may
    match the earlier ones) or hands back a version that is no whole number, the shell kept
    before is not trusted, though no write moved anything: B's page reads B's row again."""
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("the Redis shape needs TEST_REDIS_URL")
    import redis

    app = make_app(**MODES["redis"])
    client = app.test_client()
    b_page = urls(paper)["b page"]
    warm(client, [b_page])
    before = client.get(b_page).get_data(as_text=True)
    shared = state.for_app(app)
    if fault == "redis restarted":
        shared._lifetime ^= 1  # as `connected` makes it for a server of another run_id
        shared._table = None
    else:
        redis.Redis.from_url(url).hset(shared.scopes_key, str(state.scope_slot(f"piece:{paper['b'].id}")),
                                       "1.6962886574239153e+18")
        shared._table = None
    with statements(app) as seen:
        body = client.get(b_page).get_data(as_text=True)
    assert any("cited_facts" in tables_read(s) for s in seen), seen  # B's own row, read again
    assert body == before


def file_draft(writer, paper) -> int:
    """File "Harbour story D" in World through `writer` (an app); its id."""
    filed = writer.test_client().post("/api/v1/stories", headers=auth(paper["admin"]), json={
        "headline": "Harbour story D", "dek": "D.", "prose": "It happened[^1].", "section": "World",
        "byline": "Ada Quill", "cited_facts": [{"statement": "It happened", "source": "Office",
                                                "instrument": "Bulletin", "claim_key": "k-1"}]})
    assert filed.status_code == 201, filed.get_json()
    return filed.get_json()["id"]


def test_a_new_piece_on_air_reaches_its_sections_rail_and_every_list(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    writer = another()
    write(writer, "PUT", f"/api/v1/stories/{file_draft(writer, paper)}/air", paper["admin"], {})
    made = cold_reads(app, client, paths.values())
    for name in ("front", "front json", "list", "section", "feed", "json feed", "a page", "b page"):
        assert "Harbour story D" in made.get(paths[name], ""), name
    assert not {paths[name] for name in ("a json", "c page", "c json", "c card")} & set(made)


def test_a_draft_filed_and_revised_leaves_every_list_warm_until_it_airs(reader, paper):
    """A draft is on no public list: filing and revising one moves its own piece and the
    paper's other answers (`rest:`), not the lists, front, feeds or rails; airing it moves them."""
    app, client, another = reader
    paths = urls(paper)
    writer = another()
    draft = file_draft(writer, paper)
    write(writer, "PATCH", f"/api/v1/stories/{draft}", paper["admin"], {"headline": "Harbour story D2"})
    assert cold_reads(app, client, paths.values()) == {}
    write(writer, "PUT", f"/api/v1/stories/{draft}/air", paper["admin"], {})
    made = cold_reads(app, client, paths.values())
    for name in ("front", "front json", "list", "section", "feed", "json feed", "a page", "b page"):
        assert "Harbour story D2" in made.get(paths[name], ""), name


def test_a_pull_leaves_its_page_and_every_list_and_rail(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    write(another(), "DELETE", f"/api/v1/stories/{paper['a'].id}/air", paper["admin"])
    for name in ("a page", "a json", "a card"):
        assert client.get(paths[name]).status_code == 404, name
    assert client.get(paths["a oembed"]).status_code == 404
    for name in ("front", "front json", "list", "section", "feed", "json feed", "b page"):
        assert "Harbour story A" not in client.get(paths[name]).get_data(as_text=True), name


def test_a_settings_change_shows_on_every_answer(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    write(another(), "PATCH", "/api/v1/config", paper["admin"], {"nameplate": "The Harbour Herald"})
    made = cold_reads(app, client, paths.values())
    for name in ("a page", "a card", "b page", "c page", "c card", "front", "feed", "json feed"):
        assert "The Harbour Herald" in made.get(paths[name], ""), name
    assert set(made) == set(paths.values())  # every answer of the paper is made afresh


def test_a_persona_renamed_shows_on_its_bylines(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    write(another(), "PATCH", "/api/v1/personas/rex-ledger", paper["admin"], {"name": "Rex Harbour"})
    made = cold_reads(app, client, paths.values())
    for name in ("c page", "c json", "c card", "front"):
        assert "Rex Harbour" in made.get(paths[name], ""), name


def test_a_write_of_the_paper_that_changes_no_piece_leaves_the_lists_and_stories_warm(reader, paper):
    """As a checkpoint of the transparency log does: the paper's version moves, and only the
    answers that declare nothing narrower (the log, the API's index) are made again."""
    from models import Paper

    app, client, another = reader
    paths = urls(paper)
    warm(client, ["/api/v1/changes"])  # an answer that declares nothing narrower
    writer = another()
    with writer.app_context():
        db.session.get(Paper, paper["a"].paper_id).bump()
        db.session.commit()
    made = cold_reads(app, client, [*paths.values(), "/api/v1/changes"])
    assert set(made) == {"/api/v1/changes"}


# The tables an answer narrowed to one piece, or to the paper's lists, may read
# (web/caching.py `depends_on_piece`, `depends_on_lists`): anything else it read could change
# without moving its scopes.
NARROWED = ["a page", "a json", "a card", "a oembed"]
LISTS = ["front", "front json", "list", "section", "feed", "json feed"]


def test_an_answer_narrowed_to_a_piece_reads_only_what_its_scopes_cover(make_app, paper):
    app = make_app(CACHE_TYPE="NullCache")
    client = app.test_client()
    paths = urls(paper)
    # A corrected piece shows its notice too.
    write(app, "PATCH", f"/api/v1/stories/{paper['a'].id}", paper["admin"],
          {"dek": "Corrected.", "kind": "correction", "note": "The date was wrong."})
    assert "The date was wrong." in client.get(paths["a page"]).get_data(as_text=True)
    for names, allowed in ((NARROWED, state.PIECE_TABLES | state.PAPER_TABLES),
                           (LISTS, state.LIST_TABLES | state.PAPER_TABLES)):
        for name in names:
            with statements(app) as seen:
                assert client.get(paths[name]).status_code == 200, name
            tables = {table for statement in seen for table in tables_read(statement)}
            assert tables and tables <= allowed, (name, tables)
    with statements(app) as seen:
        assert client.get("/api/v1/search?q=harbour").get_json()["count"] == 2
    assert {table for statement in seen for table in tables_read(statement)} <= state.LIST_TABLES | state.PAPER_TABLES


def test_a_change_the_session_runs_as_a_statement_moves_the_piece_it_names(app, paper):
    """A bulk DELETE of one piece's cited facts is that piece's change; one that names no piece
    (or any statement on the paper's own tables) moves the whole paper."""
    from sqlalchemy import delete, update

    from models import Paper
    from models.piece import CitedFact

    a = paper["a"]
    with app.app_context():
        session = db.session()
        # As services/newsroom/filing.py drops a piece's facts: a statement on the table.
        db.session.execute(CitedFact.__table__.delete().where(CitedFact.piece_id == a.id))
        scopes = session.info[state._SCOPES]
        assert scopes.names == {f"piece:{a.id}"} and not scopes.unknown
        db.session.execute(delete(CitedFact).where(CitedFact.n > 5))
        assert scopes.unknown
        db.session.rollback()
        assert state._SCOPES not in session.info
        db.session.execute(update(Paper).values(motto="x"))
        assert session.info[state._SCOPES].unknown
        db.session.rollback()


def test_a_scope_version_redis_cannot_read_back_falls_back_to_the_papers_whole_version(make_app, paper):
    """A value in the scopes hash that is no whole number (an older script wrote floats) is
    never trusted: the answers that depend on it are keyed by the paper's version, and made
    again after every write of the paper, still right; the other scopes are read as ever."""
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("the Redis shape needs TEST_REDIS_URL")
    import redis

    app = make_app(**MODES["redis"])
    client = app.test_client()
    paths = urls(paper)
    warm(client, [paths["c page"], paths["b json"]])
    shared = state.for_app(app)
    redis.Redis.from_url(url).hset(shared.scopes_key, str(state.scope_slot(f"piece:{paper['c'].id}")),
                                   "1.6962886574239153e+18")
    write(make_app(**MODES["redis"]), "PATCH", f"/api/v1/stories/{paper['a'].id}", paper["admin"],
          {"headline": "Harbour reopens"})
    made = cold_reads(app, client, [paths["c page"], paths["b json"]])
    assert "Market story C" in made[paths["c page"]]  # made afresh, as every answer after a write once was
    assert paths["b json"] not in made  # the other scopes still read: B's JSON stays warm
    assert client.get(paths["a page"]).get_data(as_text=True).count("Harbour reopens") >= 1


@pytest.fixture
def deep_section(desk):
    """Seven pieces in World, aired an hour apart (index 0 the newest): a story page's rail
    shows the section's newest RAIL_DEPTH (5) but its own piece, so index 4 is on every rail of
    the section and index 5 on none."""
    paper = desk.paper("demo")
    market = desk.piece(paper, "Market story", section="Business", on_air_at=T0.replace(hour=8))
    # Aired oldest first (see `paper`): no airing leaves a scheduled instant behind it.
    pieces = [desk.piece(paper, f"World story {n}", section="World", on_air_at=T0.replace(hour=16 - n))
              for n in reversed(range(7))][::-1]
    return {"pieces": pieces, "market": market, "admin": desk.key(paper, "admin")}


@pytest.mark.parametrize("depth, on_the_rails", [(4, True), (5, False), (6, False)])
def test_a_revision_moves_its_sections_rail_only_from_among_the_sections_newest(
        reader_of, deep_section, depth, on_the_rails):
    pieces = deep_section["pieces"]
    pages = [f"/stories/{piece.slug}" for piece in pieces[:3]]
    app, client, another = reader_of(pages + [f"/stories/{pieces[depth].slug}"])
    write(another(), "PATCH", f"/api/v1/stories/{pieces[depth].id}", deep_section["admin"],
          {"headline": "Revised deep down"})
    made = cold_reads(app, client, pages + [f"/stories/{pieces[depth].slug}"])
    assert "Revised deep down" in made[f"/stories/{pieces[depth].slug}"]  # its own page, always
    for page in pages:
        if on_the_rails:
            assert "Revised deep down" in made.get(page, ""), page
        else:
            assert page not in made, page  # kept: the write changed nothing it shows


def test_a_piece_moved_into_a_section_reaches_its_rails_and_leaves_the_old_ones(reader_of, deep_section):
    pieces = deep_section["pieces"]
    pages = [f"/stories/{piece.slug}" for piece in pieces[:2]]
    market = f"/stories/{deep_section['market'].slug}"
    _app, client, another = reader_of(pages + [market])
    moved = {"id": deep_section["market"].id}
    # Aired at 08:00, older than every World piece but the oldest two: it enters World's rail
    # only because World's newest are pulled first, one of them by this same writer.
    writer = another()
    for piece in pieces[1:4]:
        write(writer, "DELETE", f"/api/v1/stories/{piece.id}/air", deep_section["admin"])
    write(writer, "PATCH", f"/api/v1/stories/{moved['id']}", deep_section["admin"], {"section": "World"})
    body = client.get(pages[0]).get_data(as_text=True)
    assert "Market story" in body and "World story 1" not in body
    assert client.get(market).status_code == 200


def test_a_pull_below_the_rail_leaves_the_sections_pages_warm_and_a_pull_on_it_does_not(reader_of, deep_section):
    pieces = deep_section["pieces"]
    pages = [f"/stories/{piece.slug}" for piece in pieces[:2]]
    app, client, another = reader_of(pages)
    write(another(), "DELETE", f"/api/v1/stories/{pieces[6].id}/air", deep_section["admin"])
    assert cold_reads(app, client, pages) == {}
    write(another(), "DELETE", f"/api/v1/stories/{pieces[2].id}/air", deep_section["admin"])
    made = cold_reads(app, client, pages)
    for page in pages:  # the rail closes up: index 5 comes onto it
        assert "World story 2" not in made[page] and "World story 5" in made[page], page


@pytest.fixture(params=sorted(MODES))
def reader_of(request, make_app):
    """(app, client, another) as `reader` gives them, warmed on the paths given."""
    if request.param == "redis" and not os.environ.get("TEST_REDIS_URL"):
        pytest.skip("the Redis shape needs TEST_REDIS_URL")

    def make(paths):
        app = make_app(**MODES[request.param])
        client = app.test_client()
        warm(client, paths)
        return app, client, lambda: make_app(**MODES[request.param])

    return make


# ---------------------------------------------------------------------------------- ETags
# A public answer's ETag names the state its stored answer is keyed by (web/caching.py
# `answer_etag`): a 304 survives every write that left its scopes alone, on any worker.

SHOW_C = ["c page", "c json", "c card", *LISTS]  # what a revision of C changes
SHOW_NOT_C = ["a page", "a json", "a card", "a oembed", "b page", "b json"]  # C is in another section


def etags(client, paths) -> dict[str, str]:
    tags = {}
    for name, path in paths.items():
        answer = client.get(path)
        assert answer.status_code == 200 and answer.headers.get("ETag"), name
        tags[name] = answer.headers["ETag"]
    return tags


def revalidate(app, client, path, tag):
    """The answer to a GET of `path` holding `tag`, and the tables it read besides the paper's."""
    with statements(app) as seen:
        answer = client.get(path, headers={"If-None-Match": tag})
    return answer, {table for statement in seen for table in tables_read(statement)} - {"papers"}


def test_an_unrelated_write_leaves_the_etags_of_what_it_did_not_change_good(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    held = etags(client, paths)
    assert len({held[name] for name in ("a page", "a json", "b json", "c json")}) == 4  # one per answer
    write(another(), "PATCH", f"/api/v1/stories/{paper['c'].id}", paper["admin"], {"headline": "Market rallies"})
    # On the warm worker, on another one that never saw the paper, and on the warm one again
    # (its kept 304s).
    for worker in (app, another(), app):
        reading = worker.test_client()
        for name in SHOW_NOT_C:
            answer, read = revalidate(worker, reading, paths[name], held[name])
            assert answer.status_code == 304 and answer.data == b"", name
            assert answer.headers["ETag"] == held[name], name
            assert not read, (name, read)  # no piece read for a 304
        for name in SHOW_C:
            answer, _ = revalidate(worker, reading, paths[name], held[name])
            assert answer.status_code == 200 and answer.headers["ETag"] != held[name], name
            if name != "section":  # the World section shows nothing of C
                assert "Market rallies" in answer.get_data(as_text=True), name


def test_a_kept_answer_carries_the_etag_every_worker_names_and_304s(reader, paper):
    """After an unrelated write the warm worker still sends its kept (replayed or stored) answer
    of A: with the ETag a worker that makes it afresh gives, and one its 304 step accepts."""
    app, client, another = reader
    paths = urls(paper)
    before = etags(client, paths)
    write(another(), "PATCH", f"/api/v1/stories/{paper['c'].id}", paper["admin"], {"headline": "Market rallies"})
    assert "Market rallies" in client.get(paths["c json"]).get_data(as_text=True)  # the worker has seen the write
    stats = app.extensions["paperdesk.replay.stats"]
    replayed = stats["replayed"]
    kept = {}
    for name in SHOW_NOT_C:
        with statements(app) as seen:
            answer = client.get(paths[name])
        assert not {table for statement in seen for table in tables_read(statement)} - {"papers"}, name
        kept[name] = answer.headers["ETag"]
        assert kept[name] == before[name], name
    if app.config["RESPONSE_CACHE_LOCAL_BYTES"]:  # sent again by the replay, ahead of Flask
        assert stats["replayed"] == replayed + len(SHOW_NOT_C)
    fresh = etags(another().test_client(), {name: paths[name] for name in SHOW_NOT_C})
    assert fresh == kept
    for name in SHOW_NOT_C:
        assert client.get(paths[name], headers={"If-None-Match": kept[name]}).status_code == 304, name


def test_a_write_that_changes_the_answer_ends_its_304_everywhere(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    held = etags(client, paths)
    write(another(), "PATCH", f"/api/v1/stories/{paper['a'].id}", paper["admin"], {"headline": "Harbour reopens"})
    shows_a = ["a page", "a json", "a card", "a oembed", "b page", *LISTS]
    for worker in (app, another()):
        reading = worker.test_client()
        for name in shows_a:
            answer = reading.get(paths[name], headers={"If-None-Match": held[name]})
            assert answer.status_code == 200 and "Harbour reopens" in answer.get_data(as_text=True), name
            # The new tag revalidates at once.
            assert reading.get(paths[name], headers={"If-None-Match": answer.headers["ETag"]}).status_code == 304
        for name in ("b json", "c page", "c json", "c card"):
            assert reading.get(paths[name], headers={"If-None-Match": held[name]}).status_code == 304, name


def test_a_write_of_the_paper_alone_leaves_the_lists_etags_good(reader, paper):
    """A checkpoint of the transparency log moves `rest:` only: the lists, front and feeds still
    304; an answer that declares nothing narrower (the changes) does not."""
    from models import Paper

    app, client, another = reader
    paths = {name: urls(paper)[name] for name in LISTS} | {"changes": "/api/v1/changes"}
    held = etags(client, paths)
    writer = another()
    with writer.app_context():
        db.session.get(Paper, paper["a"].paper_id).bump()
        db.session.commit()
    for worker in (app, another()):
        reading = worker.test_client()
        for name in LISTS:
            assert reading.get(paths[name], headers={"If-None-Match": held[name]}).status_code == 304, name
        assert reading.get(paths["changes"], headers={"If-None-Match": held["changes"]}).status_code == 200


def test_settings_or_a_new_deploy_end_every_304(reader, paper, monkeypatch):
    from web import caching

    app, client, another = reader
    paths = urls(paper)
    held = etags(client, paths)
    with monkeypatch.context() as patch:  # a worker of a deploy that changed the wire format
        patch.setattr(caching, "FORMAT_SALT", "f-next")
        deployed = another().test_client()
        for name, path in paths.items():
            assert deployed.get(path, headers={"If-None-Match": held[name]}).status_code == 200, name
    write(another(), "PATCH", "/api/v1/config", paper["admin"], {"nameplate": "The Harbour Herald"})
    for worker in (client, another().test_client()):
        for name, path in paths.items():
            answer = worker.get(path, headers={"If-None-Match": held[name]})
            assert answer.status_code == 200, name


@pytest.mark.parametrize("shared", ["off", "redis://127.0.0.1:9/0"])
def test_without_the_scope_versions_the_etag_is_the_papers_whole_state(make_app, paper, shared):
    """No shared state to read the scopes from (SHARED_STATE=off, or a Redis that does not
    answer): the ETag is the paper's whole version, as the keys are, and every write ends its 304."""
    app = make_app(SHARED_STATE=shared)
    client = app.test_client()
    paths = urls(paper)
    tag = client.get(paths["a json"]).headers["ETag"]
    assert re.fullmatch(r'"\d+\.\d+\.[0-9a-f]+\.f\w+"', tag), tag
    assert client.get(paths["a json"], headers={"If-None-Match": tag}).status_code == 304
    # (A write through a worker whose Redis is down is answered 503, committed but not visible.)
    write(make_app(SHARED_STATE="off"), "PATCH", f"/api/v1/stories/{paper['c'].id}", paper["admin"],
          {"headline": "Market rallies"})
    assert client.get(paths["a json"], headers={"If-None-Match": tag}).status_code == 200


def test_a_tag_names_its_own_url(reader, paper):
    """The tag of one answer is no 304 for another, even of the same scopes (A's page and card)."""
    app, client, _ = reader
    paths = urls(paper)
    held = etags(client, paths)
    assert client.get(paths["a card"], headers={"If-None-Match": held["a page"]}).status_code == 200
    assert client.get(paths["a json"], headers={"If-None-Match": held["c json"]}).status_code == 200


def test_a_gzipped_answer_and_a_head_revalidate_across_an_unrelated_write(reader, paper):
    """The weak tag of a gzipped answer (web/compression.py) and a HEAD's tag name the same state."""
    app, client, another = reader
    paths = urls(paper)
    gzip = {"Accept-Encoding": "gzip"}
    page = client.get(paths["a page"], headers=gzip)
    assert page.headers["Content-Encoding"] == "gzip" and page.headers["ETag"].startswith('W/"')
    head = client.head(paths["a json"])
    write(another(), "PATCH", f"/api/v1/stories/{paper['c'].id}", paper["admin"], {"headline": "Market rallies"})
    for worker in (client, another().test_client()):
        again = worker.get(paths["a page"], headers={**gzip, "If-None-Match": page.headers["ETag"]})
        assert again.status_code == 304 and again.headers["ETag"] == page.headers["ETag"]
        assert "Accept-Encoding" in again.headers["Vary"]
        assert worker.head(paths["a json"], headers={"If-None-Match": head.headers["ETag"]}).status_code == 304


def test_a_new_lifetime_of_redis_ends_every_scoped_304(make_app, paper):
    """The scope versions carry the Redis server's lifetime (web/state.py `SharedState.connected`):
    numbers a restarted Redis gives out again never make an earlier lifetime's tag good."""
    if not os.environ.get("TEST_REDIS_URL"):
        pytest.skip("the Redis shape needs TEST_REDIS_URL")
    app = make_app(**MODES["redis"])
    client = app.test_client()
    paths = urls(paper)
    held = etags(client, paths)
    assert client.get(paths["a json"], headers={"If-None-Match": held["a json"]}).status_code == 304
    shared = state.for_app(app)
    shared._lifetime ^= 1  # as `connected` makes it for a server of another run_id
    shared._table = None
    for name, path in paths.items():
        assert client.get(path, headers={"If-None-Match": held[name]}).status_code == 200, name
