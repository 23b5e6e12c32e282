"""Answers keyed by what they depend on (web/state.py `Scopes`, web/caching.py `answer_state`):
a write throws away only the stored and replayed answers it changed, and every read after an
answered write still reflects it, on another worker, whether the answer was kept by the replay
or stored in the response cache.

Each test warms a reader (another app on the same database and host file: another worker),
writes through a second one over HTTP, then reads through the reader. What must show the write
shows it; what the write cannot have changed (a story of another section, its JSON) is answered
without a database statement."""
from __future__ import annotations

import os
import re
from urllib.parse import quote

import pytest

from extensions import db
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements
from web import state

TABLE = re.compile(r'\b(?:FROM|JOIN)\s+"?(\w+)"?', re.IGNORECASE)
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


def cold_reads(app, client, paths) -> dict[str, str]:
    """Read each path; the bodies of those the view made afresh (that read a table besides the
    paper's row, which the first read after a write reads again, whatever it then answers)."""
    made = {}
    for path in paths:
        with statements(app) as seen:
            body = client.get(path).get_data(as_text=True)
        if {table for statement in seen for table in TABLE.findall(statement)} - {"papers"}:
            made[path] = body
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


def test_a_new_piece_on_air_reaches_its_sections_rail_and_every_list(reader, paper):
    app, client, another = reader
    paths = urls(paper)
    writer = another()
    filed = writer.test_client().post("/api/v1/stories", headers=auth(paper["admin"]), json={
        "headline": "Harbour story D", "dek": "D.", "prose": "It happened[^1].", "section": "World",
        "byline": "Ada Quill", "cited_facts": [{"statement": "It happened", "source": "Office",
                                                "instrument": "Bulletin", "claim_key": "k-1"}]})
    assert filed.status_code == 201, filed.get_json()
    write(writer, "PUT", f"/api/v1/stories/{filed.get_json()['id']}/air", paper["admin"], {})
    made = cold_reads(app, client, paths.values())
    for name in ("front", "front json", "list", "section", "feed", "json feed", "a page", "b page"):
        assert "Harbour story D" in made.get(paths[name], ""), name
    assert not {paths[name] for name in ("a json", "c page", "c json", "c card")} & set(made)


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
            tables = {table for statement in seen for table in TABLE.findall(statement)}
            assert tables and tables <= allowed, (name, tables)
    with statements(app) as seen:
        assert client.get("/api/v1/search?q=harbour").get_json()["count"] == 2
    assert {table for statement in seen for table in TABLE.findall(statement)} <= state.LIST_TABLES | state.PAPER_TABLES


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
