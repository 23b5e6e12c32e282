"""Full-text search over headline, dek and prose.

The index is made by migrations 0001 and 0005 and is not mapped by the ORM: on SQLite the
external-content FTS5 table `pieces_fts(headline, dek, prose, paper_id)` (tokenizer `porter
unicode61 remove_diacritics 2`, kept in sync by triggers); on PostgreSQL the generated column
`pieces.search_vector` (weighted english tsvector) with a GIN index over (paper_id,
search_vector) (migration 0011, `btree_gin`).

A search never looks outside the request's paper: on SQLite every MATCH carries `paper_id :
"<id>"`, so FTS5 intersects the terms with that paper's pieces inside the index, and no
other paper's match (a private draft's included) is sampled, counted or looked up; on
PostgreSQL the paper filter is part of the one statement, and the two-column GIN index answers
`paper_id = X AND search_vector @@ q` inside the index, so no other paper's match reaches the
table (a GIN over search_vector alone handed every paper's matches to the recheck; tested by
tests/test_search.py::test_postgresql_search_reads_only_the_papers_own_matches).

User text never reaches either query language's syntax: each term becomes one FTS5 string
(double-quoted, inner quotes doubled: FTS5 only tokenizes what is inside) on SQLite, or the
text argument of one `phraseto_tsquery` (which parses it as document text, never as tsquery
syntax) on PostgreSQL, always as a bind parameter. So a term's words form a phrase, operators
are plain words or punctuation, and terms are ANDed. The two tokenizers differ in small ways
(PostgreSQL drops English stop words and reads `covid-19` as `covid` + `-19`).
"""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from functools import cache

from sqlalchemy import Integer, String, bindparam, literal_column, select, text
from sqlalchemy.orm import joinedload

from extensions import db, per_value_engine
from models import Paper, Piece
from services.reading import visibility

MAX_Q_LENGTH = 120
MAX_TERMS = 4
MAX_ROWS = 30

# Exactly the characters for which `str.isspace()` is true, spelled out so the pattern means the
# same in Python's `re`, ECMA-262 and Rust's `regex` (their `\s` classes differ): the OpenAPI
# document publishes this pattern and schemathesis checks it with those engines.
_SPACE = r"\t\n\x0b\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# 1 to 4 runs of non-whitespace separated by whitespace, optional whitespace around them.
Q_PATTERN = rf"^[{_SPACE}]*[^{_SPACE}]+(?:[{_SPACE}]+[^{_SPACE}]+){{0,{MAX_TERMS - 1}}}[{_SPACE}]*$"
_Q_RE = re.compile(Q_PATTERN)
# A word: a run of letters and digits (the underscore is punctuation to both tokenizers).
_WORD = re.compile(r"[^\W_]+")

# Up to this many index matches, looking every match up and sorting is cheapest (bounded work).
SMALL_MATCH_SET = 500
# The most on-air pieces the RECENT plan examines, and how much wider than their number their
# span of ids may be (filing order far from on-air order makes the plan pointless).
MAX_WALK = 5000
MAX_SPAN_FACTOR = 8


def parse_query(q: str) -> list[str]:
    """The search terms of `q`: split on whitespace, each term NFC-normalised with control
    characters removed; terms without a letter or digit are dropped.
    `' Rates  "covid-19" * '` -> `['Rates', '"covid-19"']`.

    Terms stay text: the backends tokenize them as they tokenize pieces, each term as one phrase.
    Raises ValueError when `q` breaks the documented rule: not 1-120 characters, or not 1-4
    whitespace-separated terms (the same rule `schemas.search.SearchQuery` enforces).
    """
    if not 1 <= len(q) <= MAX_Q_LENGTH or not _Q_RE.match(q):
        raise ValueError("q must be 1-120 characters holding 1 to 4 terms separated by whitespace")
    terms = []
    for raw in q.split():
        # NUL and other controls: PostgreSQL refuses NUL in text, and none of them is a word.
        term = "".join(ch for ch in unicodedata.normalize("NFC", raw)
                       if unicodedata.category(ch) not in ("Cc", "Cs"))
        if _WORD.search(term):
            terms.append(term)
    return terms


def search_pieces(paper: Paper, terms: list[str], limit: int = MAX_ROWS, *, now: datetime) -> list[Piece]:
    """Pieces of `paper` on air by `now` whose headline, dek or prose match every term (each term's words
    as a phrase, stemmed), newest on air first (`on_air_at` desc, `id` desc), at most `limit`,
    with `section` and `persona` loaded. `terms` come from `parse_query`; no terms -> [].

    A constant number of statements whatever the number of rows: at most five on SQLite (the
    plan is picked from a sample of the matches), one on PostgreSQL.
    """
    if not terms or limit < 1:
        return []
    if db.engine.dialect.name == "postgresql":
        return _search_postgresql(paper, terms, limit, now)
    return _search_sqlite(paper, terms, limit, now)


def _rows():
    return select(Piece).options(joinedload(Piece.section), joinedload(Piece.persona))


def _search_postgresql(paper: Paper, terms: list[str], limit: int, now: datetime) -> list[Piece]:
    params = {"paper_id": paper.id, "limit": limit, **{f"term_{i}": term for i, term in enumerate(terms)},
              **visibility.at(now)}
    # On its own connection, planned for these terms at each execution: the app's connections
    # plan a statement once, and no single plan suits both a common and a rare term
    # (extensions.per_value_engine).
    return list(db.session.scalars(_postgresql_statement(len(terms)), params,
                                   bind_arguments={"bind": per_value_engine()}))


@cache
def _postgresql_statement(count: int):
    # Built once per number of terms: building it cost about a tenth of a search.
    english = literal_column("'english'::regconfig")
    query = None
    for i in range(count):
        part = db.func.phraseto_tsquery(english, bindparam(f"term_{i}", type_=String()))
        query = part if query is None else query.op("&&")(part)
    matches = literal_column("pieces.search_vector").op("@@")(query)
    return (
        _rows()
        .where(Piece.paper_id == bindparam("paper_id"), visibility.on_air(), matches)
        .order_by(Piece.on_air_at.desc(), Piece.id.desc())
        .limit(bindparam("limit", type_=Integer()))
    )


# The columns a search term may match: never `paper_id` (a term "12" is not paper 12).
_TEXT_COLUMNS = "{headline dek prose}"


def fts5_query(terms: list[str], paper_id: int) -> str:
    """The FTS5 MATCH expression for `terms` in paper `paper_id`: the paper's token in the
    `paper_id` column AND each term, a double-quoted string (inner quotes doubled) matched in
    headline, dek or prose. `(['rates', 'a"b'], 7)` ->
    `'paper_id : "7" AND {headline dek prose} : "rates" AND {headline dek prose} : "a""b"'`."""
    return " AND ".join([f'paper_id : "{int(paper_id)}"',
                         *(f'{_TEXT_COLUMNS} : "' + term.replace('"', '""') + '"' for term in terms)])


# SQLite plans. Each yields ids of the paper's on-air matches in answer order. The public
# predicate comes from services/reading/visibility.py, its instant bound at each execution.
_ON_AIR = {"on_air_p": visibility.on_air_sql("p"), "on_air": visibility.on_air_sql()}
#
# SPARSE, few matches in all: look each one up by rowid, then sort (work bounded by the matches).
_SPARSE = text("""
    SELECT p.id FROM pieces AS p
    WHERE p.id IN (SELECT rowid FROM pieces_fts WHERE pieces_fts MATCH :match)
      AND p.paper_id = :paper AND {on_air_p}
    ORDER BY p.on_air_at DESC, p.id DESC LIMIT :limit""".format(**_ON_AIR)).bindparams(visibility.AIR_NOW)
# RECENT, many matches: take the paper's newest `walk` on-air pieces from ix_pieces_paper_air (in
# answer order, ties by id), ask FTS5 only for matches inside their span of ids (FTS5 seeks rowid
# ranges), and keep the candidates that match. Pieces go on air soon after filing, so that span
# is narrow and the work is small however common the terms are.
_NEWEST_ON_AIR = text("""
    SELECT id FROM pieces WHERE paper_id = :paper AND {on_air}
    ORDER BY on_air_at DESC, id DESC LIMIT :walk""".format(**_ON_AIR)).bindparams(visibility.AIR_NOW)
_MATCHES_BETWEEN = text("""
    SELECT rowid FROM pieces_fts WHERE pieces_fts MATCH :match AND rowid BETWEEN :low AND :high""")
# WHOLE, the fallback: materialise the match list once, then walk ix_pieces_paper_air newest
# first checking membership (the `+` keeps SQLite from turning the IN list into rowid lookups
# followed by a sort of every match).
_WHOLE = text("""
    SELECT p.id FROM pieces AS p
    WHERE p.paper_id = :paper AND {on_air_p}
      AND +p.id IN (SELECT rowid FROM pieces_fts WHERE pieces_fts MATCH :match)
    ORDER BY p.on_air_at DESC, p.id DESC LIMIT :limit""".format(**_ON_AIR)).bindparams(visibility.AIR_NOW)
# How many of the paper's newest-filed matches there are (capped) and how far back in ids they
# reach: the density of matches among recent pieces, without counting every match of a common
# term. The highest id of all papers is a constant of the database, not of the query.
_SAMPLE = text("""
    SELECT count(*), min(rowid), (SELECT max(id) FROM pieces) FROM (
      SELECT rowid FROM pieces_fts WHERE pieces_fts MATCH :match ORDER BY rowid DESC LIMIT :cap)""")


def _search_sqlite(paper: Paper, terms: list[str], limit: int, now: datetime) -> list[Piece]:
    params = {"match": fts5_query(terms, paper.id), "paper": paper.id, "limit": limit, **visibility.at(now)}
    sampled, lowest_id, highest_id = db.session.execute(
        _SAMPLE, {"match": params["match"], "cap": SMALL_MATCH_SET + 1}).one()
    if not sampled:
        return []
    ids = None
    if sampled <= SMALL_MATCH_SET:
        ids = list(db.session.scalars(_SPARSE, params))
    else:
        # Spread like the sample, `limit` matches sit among about limit / density pieces.
        density = sampled / (highest_id - lowest_id + 1)
        ids = _recent_matches(params, min(MAX_WALK, max(4 * limit, int(3 * limit / density))))
    if ids is None:
        ids = list(db.session.scalars(_WHOLE, params))
    if not ids:
        return []
    position = {piece_id: i for i, piece_id in enumerate(ids)}
    pieces = db.session.scalars(_rows().where(Piece.id.in_(ids))).unique()
    return sorted(pieces, key=lambda piece: position[piece.id])


def _recent_matches(params: dict, walk: int) -> list[int] | None:
    """The RECENT plan: the answer's ids, or None when it cannot tell (too few matches among the
    newest `walk` pieces, or their ids too spread out to be worth it)."""
    candidates = list(db.session.scalars(_NEWEST_ON_AIR, {"paper": params["paper"], "walk": walk,
                                                          "air_now": params["air_now"]}))
    if not candidates:
        return []
    low, high = min(candidates), max(candidates)
    if high - low + 1 > MAX_SPAN_FACTOR * walk:
        return None
    matching = set(db.session.scalars(_MATCHES_BETWEEN,
                                      {"match": params["match"], "low": low, "high": high}))
    ids = [piece_id for piece_id in candidates if piece_id in matching][: params["limit"]]
    # Complete when `limit` were found among the newest pieces, or when the walk saw them all.
    return ids if len(ids) == params["limit"] or len(candidates) < walk else None
