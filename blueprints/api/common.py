"""Helpers shared by the `/api/v1` blueprints: the blueprint factory, the JSON-body check, 404s.

Who may call what is blueprints/api/permissions.py; the commit point is web/commit.py.
"""
from __future__ import annotations

import functools
import json
from datetime import date, datetime

from flask import abort, request
from flask_smorest import Blueprint
from marshmallow import Schema, fields
from webargs.core import is_json
from webargs.flaskparser import FlaskParser

from services.errors import BadRequest, NotFound

API_PREFIX = "/api/v1"
SECURITY = [{"bearer": []}, {"deskKey": []}]
OPTIONAL_SECURITY = [{}, *SECURITY]
# Slugs are at most 120 characters (services/newsroom/desk.py makes them); a longer one names nothing.
MAX_SLUG = 120


# Fields whose load runs code the parser cannot see into (`DeskParser._loads_query_alone`).
_OWN_CODE = (fields.Function, fields.Method, fields.Nested)


class DeskParser(FlaskParser):
    """webargs' Flask parser, answering every JSON body the parser cannot read with a 400.

    webargs turns only a syntax error into its 400; Python's `json` also raises a plain
    ValueError for an integer literal over `sys.get_int_max_str_digits()` (4300) digits and a
    RecursionError for nesting deeper than the stack, which would otherwise be 500s.
    """

    # A query's arguments, parsed, by (schema, `unknown`, raw query string): a public list is
    # read again and again with the same few query strings, and webargs' pass through
    # marshmallow was a twentieth of a cold list of 15 (docs/PERFORMANCE.md). Kept only for a
    # schema whose load is a function of the query alone (`_query_only`) and a result of
    # immutable values; each caller gets its own dict. A query that fails is parsed (and
    # refused) every time.
    QUERIES_KEPT = 512
    _KEEPABLE = (str, int, float, bool, type(None), bytes, datetime, date)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._queries: dict[tuple, dict] = {}
        self._query_only: dict[Schema, bool] = {}

    def parse(self, argmap, req=None, *, location=None, validate=None, **kwargs):
        """webargs' `parse`; a query string this parser has parsed for the same schema before
        gives the same arguments without parsing it again (a new dict, equal to the first)."""
        if (location not in ("query", "querystring") or validate is not None
                or not isinstance(argmap, Schema) or not self._loads_query_alone(argmap)):
            return super().parse(argmap, req, location=location, validate=validate, **kwargs)
        req = req if req is not None else self.get_default_request()
        key = (argmap, kwargs.get("unknown", "default"), req.query_string)
        kept = self._queries.get(key)
        if kept is not None:
            return dict(kept)
        parsed = super().parse(argmap, req, location=location, validate=validate, **kwargs)
        if isinstance(parsed, dict) and all(type(value) in self._KEEPABLE for value in parsed.values()):
            if len(self._queries) >= self.QUERIES_KEPT:  # clients choose query strings
                self._queries.clear()
            self._queries[key] = dict(parsed)
        return parsed

    def _loads_query_alone(self, schema: Schema) -> bool:
        # No pre/post-load or schema validation hook, no default made at load time (a callable
        # `load_default`, such as a clock), no field that loads through code of its own (a
        # Function or Method field's callable, a Nested schema's hooks): the load is then a
        # function of the query's values.
        alone = self._query_only.get(schema)
        if alone is None:
            alone = self._query_only[schema] = not any(schema._hooks.values()) and not any(
                callable(field.load_default) or isinstance(field, _OWN_CODE)
                for field in schema.fields.values())
        return alone

    def _raw_load_json(self, req):
        try:
            return super()._raw_load_json(req)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise  # webargs' own 400 "Invalid JSON body."
        except RecursionError:
            raise BadRequest("The JSON body is nested too deeply.") from None
        except ValueError:
            raise BadRequest("The request body is not valid JSON: a number in the body is too long.") from None


class DeskBlueprint(Blueprint):
    """flask-smorest's Blueprint parsing its arguments with `DeskParser`."""

    ARGUMENTS_PARSER = DeskParser()


def api_blueprint(name: str, import_name: str, description: str) -> Blueprint:
    """A flask-smorest blueprint mounted under `/api/v1`; its name becomes an OpenAPI tag."""
    return DeskBlueprint(name, import_name, url_prefix=API_PREFIX, description=description)


def json_body(bp: Blueprint):
    """Decorator: 415 unless the body is JSON (`application/json` or `*/*+json`); checked after
    the key and before the schema. A body the parser cannot read (not JSON, nested too deeply,
    a number too long) is then DeskParser's 400, never a 500. Documents both answers on `bp`."""

    def decorator(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            if not is_json(request.mimetype):
                abort(415, description="The request body must be JSON (Content-Type: application/json).")
            return view(*args, **kwargs)

        documented = bp.alt_response(415, description="The body is not JSON.")(wrapper)
        return bp.alt_response(400, description="The body is not well-formed JSON.")(documented)

    return decorator


def not_found(what: str = "piece") -> NotFound:
    """The 404 naming what was not found on this paper: `raise not_found("section")`."""
    return NotFound(f"No such {what} on this paper.")


def checked_slug(slug: str, what: str) -> str:
    """`slug` as given, or raise NotFound when it cannot name a row: longer than MAX_SLUG, or
    holding a NUL (which would reach PostgreSQL as a query parameter and fail there)."""
    if len(slug) > MAX_SLUG or "\x00" in slug:
        raise not_found(what)
    return slug
