"""flask-smorest's `Api` as Paper Desk uses it: errors documented the way web/errors.py answers
them, an `operationId` on every operation, `fields.Constant` as JSON Schema `const`.

`api` is the one instance; app.py initialises it and registers the API blueprints on it.
"""
from __future__ import annotations

import http
import re

from apispec import BasePlugin
from flask_smorest import Api
from flask_smorest.utils import prepare_response
from marshmallow import fields

from schemas import openapi as openapi_doc
from schemas.common import AnyOf, ProblemSchema
from web import errors
from web.errors import PROBLEM_MIME


class DeskApi(Api):
    """flask-smorest's Api with errors documented the way web/errors.py answers them.

    Error *handling* is ours (web/errors.py), so the stock JSON error handler is not installed, and
    `document()` finishes apispec's output into the document `/api/v1/openapi.json` serves.
    """

    ERROR_SCHEMA = ProblemSchema
    DEFAULT_ERROR_RESPONSE_NAME = "Problem"

    def _register_error_handlers(self):
        pass

    def _init_spec(self, **kwargs):
        super()._init_spec(**kwargs)
        self.ma_plugin.converter.add_attribute_function(constant_attributes)
        self.ma_plugin.converter.add_attribute_function(any_of_attributes)
        operation_ids = OperationIds()
        operation_ids.init_spec(self.spec)
        self.spec.plugins.append(operation_ids)

    def _register_responses(self):
        # flask-smorest registers one response per status as application/json and the default
        # one as DEFAULT_ERROR; ours are problem+json and the default is named "Problem".
        for status in http.HTTPStatus:
            response = {"description": status.phrase}
            if status >= 400:
                response["schema"] = self.ERROR_SCHEMA
            prepare_response(response, self.spec, PROBLEM_MIME)
            self.spec.components.response(status.name, response, lazy=True)
        response = {"description": "A problem (RFC 9457).", "schema": self.ERROR_SCHEMA}
        prepare_response(response, self.spec, PROBLEM_MIME)
        self.spec.components.response(self.DEFAULT_ERROR_RESPONSE_NAME, response, lazy=True)

    def document(self) -> dict:
        """The finished OpenAPI 3.1 document (without `servers`): apispec's output with every
        error answer the app can give documented with its real status and content type, and the
        body limit (config MAX_CONTENT_LENGTH) on every request body."""
        app = self._app

        def for_programs(path: str) -> bool:
            # `/api/v1/stories/{id}` -> `/api/v1/stories/0`: a path the route would match.
            return errors.is_problem_path(app, re.sub(r"\{[^}]*\}", "0", path))

        return openapi_doc.finish(self.spec.to_dict(), for_programs, app.config["MAX_CONTENT_LENGTH"])


class OperationIds(BasePlugin):
    """apispec plugin: an `operationId` on every operation, from the Flask endpoint that serves it
    (schemas/openapi.py `operation_id`: `stories.list_stories` -> `listStories`), unless the view
    set one (`@bp.doc(operationId=...)`). Generated clients name their functions after it, so it
    never changes while the endpoint keeps its name; a clash is settled by the blueprint's name
    (the later route gets `blueprintView`), and the test suite holds every id unique."""

    def init_spec(self, spec) -> None:
        super().init_spec(spec)
        self.taken: set[str] = set()

    def operation_helper(self, path=None, operations=None, **kwargs) -> None:
        rule = kwargs.get("rule")
        if rule is None or not operations:
            return
        blueprint, _, endpoint = rule.endpoint.rpartition(".")
        several = len([m for m in operations if m in openapi_doc.HTTP_METHODS]) > 1
        for method, operation in operations.items():
            if method not in openapi_doc.HTTP_METHODS:
                continue
            if "operationId" not in operation:
                operation["operationId"] = openapi_doc.operation_id(
                    blueprint, endpoint, method if several else None, self.taken)
            self.taken.add(operation["operationId"])


def any_of_attributes(self, field, ret, **kwargs) -> dict:
    """apispec attribute function: a schemas.common.AnyOf field is documented as `anyOf` the
    references of its schemas."""
    if not isinstance(field, AnyOf):
        return {}
    # apispec documented it as the Nested it is (a `$ref` to the first schema): the union replaces that.
    for key in ("$ref", "allOf"):
        ret.pop(key, None)
    return {"anyOf": [self.resolve_nested_schema(schema) for schema in field.schemas]}


def constant_attributes(self, field, ret, **kwargs) -> dict:
    """apispec attribute function: a `fields.Constant` is documented as JSON Schema `const` with
    its type (apispec gives it only a `default`, which promises nothing about the value)."""
    if not isinstance(field, fields.Constant):
        return {}
    types = {bool: "boolean", int: "integer", float: "number", str: "string"}
    attributes = {"const": field.constant}
    if "type" not in ret and type(field.constant) in types:
        attributes["type"] = types[type(field.constant)]
    return attributes


api = DeskApi()
