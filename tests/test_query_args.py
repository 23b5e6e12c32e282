"""Query arguments parsed once per query string (blueprints/api/common.py `DeskParser.parse`):
the same query gives the same arguments as a fresh parse, in a dict of the caller's own; a
schema whose load is not a function of the query alone, and a query that fails, are parsed
every time."""
from __future__ import annotations

import itertools

import pytest
from marshmallow import Schema, fields, post_load
from werkzeug.exceptions import UnprocessableEntity

from blueprints.api.common import DeskBlueprint, DeskParser
from schemas.story import StoriesQuery


def parse(app, parser, schema, query: str):
    with app.test_request_context(f"/?{query}"):
        return parser.parse(schema, location="query")


def test_a_query_parsed_again_gives_equal_arguments_in_a_new_dict(app):
    parser, schema = DeskParser(), StoriesQuery()
    first = parse(app, parser, schema, "limit=15&section=World")
    assert first == {"limit": 15, "section": "World", "full": False}
    first["limit"] = 99  # a view's own dict: changing it changes nothing kept
    again = parse(app, parser, schema, "limit=15&section=World")
    assert again == {"limit": 15, "section": "World", "full": False} and again is not first
    assert len(parser._queries) == 1
    # Another query string, or another schema, is its own entry.
    assert parse(app, parser, schema, "limit=16") == {"limit": 16, "full": False}
    assert parse(app, parser, StoriesQuery(), "limit=15&section=World")["limit"] == 15
    assert len(parser._queries) == 3


def test_a_query_that_fails_is_refused_every_time_and_never_kept(app):
    parser, schema = DeskParser(), StoriesQuery()
    for _ in range(2):
        with pytest.raises(UnprocessableEntity):
            parse(app, parser, schema, "limit=many")
    assert parser._queries == {}


def test_a_schema_whose_load_is_not_the_querys_alone_is_parsed_every_time(app):
    counter = itertools.count()

    class Clocked(Schema):
        at = fields.Integer(load_default=lambda: next(counter))

    class Hooked(Schema):
        n = fields.Integer()

        @post_load
        def stamp(self, data, **_kwargs):
            return {**data, "seen": next(counter)}

    class Functional(Schema):
        n = fields.Integer()
        seen = fields.Function(deserialize=lambda _value: next(counter), data_key="n2")

    parser = DeskParser()
    for schema, field in ((Clocked(), "at"), (Hooked(), "seen"), (Functional(), "seen")):
        values = {parse(app, parser, schema, "n=1&n2=x")[field] for _ in range(3)}
        assert len(values) == 3, schema
    assert parser._queries == {}


def test_the_api_answers_a_kept_query_as_a_fresh_one(client, newsroom):
    parser = DeskBlueprint.ARGUMENTS_PARSER
    parser._queries.clear()
    first = client.get("/api/v1/stories?limit=2")
    assert client.get("/api/v1/stories?limit=two").status_code == 400  # the API's answer to a bad query
    again = client.get("/api/v1/stories?limit=2")
    assert first.status_code == again.status_code == 200
    assert again.get_json() == first.get_json()
    assert [key[2] for key in parser._queries] == [b"limit=2"]
