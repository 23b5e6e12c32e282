"""`/api/v1/openapi.json` and `flask openapi`: a valid OpenAPI 3.1 document that declares every
route the app serves under `/api/v1`, `/embed/` and `/oembed`, with every error it can answer
(docs/API.md "the document", "errors", "status codes")."""
from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from schemas.openapi import IDEMPOTENCY_PARAMETER, with_sections
from tests.fixtures.keys import auth
from web import idempotency
from web.errors import PROBLEM_MIME

DOCUMENTED_PREFIXES = ("/api/v1", "/embed/", "/oembed")
IGNORED_METHODS = {"HEAD", "OPTIONS"}
PROBLEM_REF = "#/components/schemas/Problem"


@pytest.fixture
def demo(desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Rates rise again")
    return paper


@pytest.fixture
def doc(client, demo):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()


def openapi_path(rule: str) -> str:
    """werkzeug rule -> OpenAPI path: `/stories/<string:id>` -> `/stories/{id}`."""
    return re.sub(r"<(?:[^<>]*:)?([^<>:]+)>", r"{\1}", rule)


def documented_rules(app) -> list[tuple[str, set[str], str]]:
    """(OpenAPI path, methods, endpoint) of every route under the documented prefixes."""
    return [(openapi_path(rule.rule), set(rule.methods) - IGNORED_METHODS, rule.endpoint)
            for rule in app.url_map.iter_rules()
            if rule.rule == "/api/v1" or rule.rule.startswith(DOCUMENTED_PREFIXES)]


def operations(doc):
    for path, item in doc["paths"].items():
        shared = item.get("parameters", [])
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, operation, shared + operation.get("parameters", [])


def resolve(doc, node: dict) -> dict:
    while "$ref" in node:
        target = doc
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_document_is_valid_openapi_31(doc):
    validate(doc, cls=OpenAPIV31SpecValidator)
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["title"] and doc["info"]["version"] == "1"
    # 3.1 is JSON Schema: `nullable` (3.0) must not appear; allow_none becomes a "null" type.
    assert not [node for node in walk(doc["components"]["schemas"])
                if "nullable" in node or "x-nullable" in node]
    # fields.Constant is documented as a JSON Schema `const`: `declared_ai` is always true.
    declared = [schema["properties"]["declared_ai"] for schema in doc["components"]["schemas"].values()
                if "declared_ai" in schema.get("properties", {})]
    assert declared and all(p.get("const", p.get("enum") == [True]) is True
                            and p["type"] == "boolean" for p in declared)
    problem = doc["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail"}


def test_servers_is_the_request_host(client, desk):
    desk.paper("demo")
    for base in ("http://localhost", "http://demo.localhost:8080"):
        body = client.get("/api/v1/openapi.json", base_url=base).get_json()
        assert body["servers"][0]["url"] == base
    # The per-host copy never leaks into the cached document.
    assert client.get("/api/v1/openapi.json").get_json()["servers"][0]["url"] == "http://localhost"


def test_both_security_schemes(doc):
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    assert schemes["deskKey"] == {**schemes["deskKey"], "type": "apiKey", "in": "header",
                                  "name": "X-Desk-Key"}


def test_every_route_and_method_is_documented(app, doc):
    rules = documented_rules(app)
    assert any(path == "/api/v1/stories/{id}" for path, _, _ in rules)
    missing = [(path, method) for path, methods, _ in rules for method in sorted(methods)
               if method.lower() not in doc["paths"].get(path, {})]
    assert missing == []
    served = {(path, method.lower()) for path, methods, _ in rules for method in methods}
    phantom = [(path, method) for path, method, _, _ in operations(doc) if (path, method) not in served]
    assert phantom == []


def test_every_operation_has_a_summary_a_success_and_a_problem_default(doc):
    for path, method, operation, _ in operations(doc):
        label = f"{method.upper()} {path}"
        assert operation.get("summary", "").strip(), label
        responses = operation["responses"]
        assert any(code[0] in "23" for code in responses), label
        assert "default" in responses, label


def test_every_error_is_documented_with_its_real_media_type(doc):
    for path, method, operation, _ in operations(doc):
        machine = not path.startswith("/embed/")
        for code, response in operation["responses"].items():
            if code != "default" and code[0] not in "45":
                continue
            content = resolve(doc, response)["content"]
            label = f"{method.upper()} {path} {code}"
            if machine and code != "414":  # 414: gunicorn's own page, before the app runs
                assert list(content) == [PROBLEM_MIME], label
                assert content[PROBLEM_MIME]["schema"] == {"$ref": PROBLEM_REF}, label
            else:
                assert list(content) == ["text/html"], label


def test_each_route_documents_the_errors_it_can_give(app, doc):
    keyed_paths = {(path, method.lower())
                   for path, methods, endpoint in documented_rules(app) for method in methods
                   if getattr(app.view_functions[endpoint], "access", "public") != "public"}
    for path, method, operation, parameters in operations(doc):
        label = f"{method.upper()} {path}"
        codes = set(operation["responses"])
        locations = {p["in"] for p in parameters}
        assert {"404", "414", "429"} <= codes, label  # no paper on this host; limits
        if "query" in locations:
            assert "400" in codes, label
        if "path" in locations:
            assert "404" in codes, label
        if "requestBody" in operation:
            assert {"400", "413", "415", "422"} <= codes, label
        elif not any(p["name"] == "Idempotency-Key" for p in parameters):
            assert "422" not in codes, label  # bad query/path values are 400s (web/errors.py)
        security = operation.get("security", []) or operation.get("x-optional-security", [])
        if any(security):
            assert {"401", "403"} <= codes, label
            headers = operation["responses"]["401"]["headers"]
            assert headers["WWW-Authenticate"]["required"] is True
        if (path, method) in keyed_paths:
            assert {} not in security and {"bearer": []} in security and {"deskKey": []} in security, label


def test_documented_errors_match_real_answers(client, doc):
    bad = client.get("/api/v1/stories?limit=abc")
    assert bad.status_code == 400 and bad.mimetype == PROBLEM_MIME
    assert "400" in doc["paths"]["/api/v1/stories"]["get"]["responses"]
    missing = client.get("/api/v1/stories/no-such-piece")
    assert missing.status_code == 404 and missing.mimetype == PROBLEM_MIME
    assert "404" in doc["paths"]["/api/v1/stories/{id}"]["get"]["responses"]
    nowhere = client.get("/api/v1/openapi.json", base_url="http://nowhere.localhost")
    assert nowhere.status_code == 404 and nowhere.mimetype == PROBLEM_MIME


def test_cli_writes_the_same_document(runner, client, doc, tmp_path):
    """`flask openapi` writes the generic document (no paper): the served one is it with the
    paper's own section names (tests/test_openapi_served.py), nothing else differs."""
    out = tmp_path / "openapi.json"
    result = runner.invoke(args=["openapi", "--output", str(out), "--server", "http://localhost"])
    assert result.exit_code == 0, result.output
    generic = json.loads(out.read_text(encoding="utf-8"))
    sections = generic["components"]["schemas"]["SubscribeIn"]["properties"]["sections"]
    assert generic != doc and "enum" not in sections["items"]
    assert with_sections(generic, ["World", "Business", "Science"]) == doc
    to_stdout = runner.invoke(args=["openapi", "--server", "http://example.test"])
    assert json.loads(to_stdout.stdout)["servers"][0]["url"] == "http://example.test"


def test_every_json_body_refuses_what_is_not_json_as_documented(client, desk, demo, doc):
    headers = auth(desk.key(demo, 'admin'))
    bodies = [(path, method) for path, method, operation, _ in operations(doc)
              if "requestBody" in operation and not path.startswith("/embed/")]
    for path, method in bodies:
        url = re.sub(r"\{[^}]+\}", "1", path)
        for data, content_type, status in [("{not json", "application/json", 400),
                                           ("plain words", "text/plain", 415)]:
            response = client.open(url, method=method.upper(), data=data, headers=headers,
                                   content_type=content_type)
            label = f"{method.upper()} {path} {content_type}"
            assert response.status_code == status, label
            assert response.mimetype == PROBLEM_MIME, label
            assert str(status) in doc["paths"][path][method]["responses"], label


WRITE_METHODS = {"post", "put", "patch", "delete"}


def test_every_keyed_write_declares_the_idempotency_key(app, doc):
    keyed_writes = [(path, method, operation, parameters)
                    for path, method, operation, parameters in operations(doc)
                    if method in WRITE_METHODS
                    and any(operation.get("security", []) or operation.get("x-optional-security", []))]
    labels = {f"{method.upper()} {path}" for path, method, _, _ in keyed_writes}
    assert {"POST /api/v1/stories", "PATCH /api/v1/stories/{id}", "PUT /api/v1/stories/{id}/air",
            "DELETE /api/v1/stories/{id}/air", "POST /api/v1/sections", "PATCH /api/v1/sections/{slug}",
            "POST /api/v1/personas", "PATCH /api/v1/personas/{slug}", "POST /api/v1/cast",
            "PATCH /api/v1/config", "POST /api/v1/subscribers", "POST /api/v1/subscribe"} <= labels
    for path, method, operation, parameters in keyed_writes:
        label = f"{method.upper()} {path}"
        declared = [p for p in parameters if p["name"] == "Idempotency-Key"]
        assert len(declared) == 1, label
        header = declared[0]
        assert header["in"] == "header" and header["required"] is False, label
        assert "Idempotent-Replayed" in header["description"] and header["example"], label
        assert idempotency.parse_key([header["example"]]), label
        responses = operation["responses"]
        assert {"400", "409", "422", "503"} <= set(responses), label
        assert "Idempotency-Key" in resolve(doc, responses["409"])["description"], label
        assert "outcome unknown" in resolve(doc, responses["503"])["description"], label
        assert responses["503"]["headers"]["Retry-After"]["required"] is True, label
        for code, response in responses.items():
            if code[0] == "2":
                assert "Idempotent-Replayed" in resolve(doc, response)["headers"], label
    # Nothing else declares it, and every write the app serves goes through the commit point that
    # honours it.
    others = [f"{method.upper()} {path}" for path, method, operation, parameters in operations(doc)
              if f"{method.upper()} {path}" not in labels
              and any(p["name"] == "Idempotency-Key" for p in parameters)]
    assert others == []
    for path, methods, endpoint in documented_rules(app):
        if methods & {m.upper() for m in WRITE_METHODS}:
            assert getattr(app.view_functions[endpoint], "transactional", False), (path, endpoint)


@settings(max_examples=300, deadline=None)
@given(value=st.from_regex(IDEMPOTENCY_PARAMETER["schema"]["pattern"], fullmatch=True))
def test_every_key_the_documented_pattern_allows_is_accepted(value):
    assert 1 <= len(idempotency.parse_key([value])) <= 255


# --- client-grade: what generators and linters need (docs/API.md "Generated clients") ---------

OPERATION_ID = re.compile(r"^[a-z][A-Za-z0-9]*$")


def test_every_operation_has_a_unique_operation_id_a_summary_and_a_description(doc):
    """Routes added later are held to it too: the ids come from the endpoint names
    (extensions.OperationIds), the summary and description from the view's docstring."""
    seen = {}
    for path, method, operation, _ in operations(doc):
        label = f"{method.upper()} {path}"
        op_id = operation.get("operationId", "")
        assert OPERATION_ID.match(op_id), f"{label}: operationId {op_id!r} (camelCase)"
        assert op_id not in seen, f"{label}: operationId {op_id!r} also on {seen[op_id]}"
        seen[op_id] = label
        summary = operation.get("summary", "")
        assert summary.strip() and "\n" not in summary and not summary.endswith("."), (
            f"{label}: one-line summary (the docstring's first line)")
        assert operation.get("description", "").strip(), (
            f"{label}: a description (the docstring's paragraphs after the first line)")
    assert {"listStories", "getStory", "fileStory", "subscribe", "createSubscribers"} <= set(seen)


def test_operation_ids_are_stable_across_builds(app, doc):
    from schemas.apidoc import api
    rebuilt = {(p, m): o["operationId"] for p, m, o, _ in operations(api.document())}
    assert rebuilt == {(p, m): o["operationId"] for p, m, o, _ in operations(doc)}


def test_every_public_operation_states_its_security_with_the_key_optional(app, doc):
    keyed = {(path, method.lower()) for path, methods, endpoint in documented_rules(app)
             for method in methods
             if getattr(app.view_functions[endpoint], "access", "public") != "public"}
    for path, method, operation, _ in operations(doc):
        label = f"{method.upper()} {path}"
        assert "security" in operation, label
        if (path, method) in keyed:
            assert operation["security"] == [{"bearer": []}, {"deskKey": []}], label
        else:
            # No credential required, as every generator reads it (the stock
            # openapi-python-client reads a non-empty list as "a key is required"); the schemes a
            # key may still be sent by are named beside it.
            assert operation["security"] == [], label
            assert operation["x-optional-security"] == [{"bearer": []}, {"deskKey": []}], label


def _media(doc, body):
    return resolve(doc, body).get("content", {}).items()


def test_every_request_body_and_success_has_a_valid_example(doc):
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    registry = Registry().with_resource("urn:doc", Resource.from_contents(
        {**doc, "$schema": "https://json-schema.org/draft/2020-12/schema"}))
    missing, invalid = [], []
    for path, method, operation, _ in operations(doc):
        bodies = [("request", operation["requestBody"])] if "requestBody" in operation else []
        bodies += [(code, r) for code, r in operation["responses"].items() if code[0] == "2"]
        for what, body in bodies:
            for mime, media in _media(doc, body):
                label = f"{method.upper()} {path} {what} {mime}"
                if "example" not in media and "examples" not in media:
                    missing.append(label)
                    continue
                if not mime.endswith("json") or "example" not in media:
                    continue
                schema = json.loads(json.dumps(media["schema"]).replace('"#/', '"urn:doc#/'))
                validator = Draft202012Validator(schema, registry=registry,
                                                 format_checker=Draft202012Validator.FORMAT_CHECKER)
                errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                          for e in validator.iter_errors(media["example"])]
                if errors:
                    invalid.append((label, errors[:3]))
    assert missing == []
    assert invalid == []


# Names the Python client's model modules bind themselves (openapi-python-client 0.29's
# templates): a property of the same name would shadow them inside `to_dict`/`from_dict`.
GENERATED_MODEL_NAMES = {"cast", "d", "src_dict", "field_dict", "cls", "self", "isoparse", "UNSET",
                         "Unset", "File", "BytesIO", "Any", "TypeVar", "T", "TYPE_CHECKING",
                         "additional_properties", "additional_keys", "to_dict", "from_dict"}
# The ones `make clients` handles: `cast` (the spec's field) through scripts/clients/templates,
# whose model code calls typing's cast under a name no property takes.
HANDLED_MODEL_NAMES = {"cast"}


def test_field_names_that_shadow_generated_code_are_handled_and_named_as_on_the_wire(doc):
    """A new field named like one of GENERATED_MODEL_NAMES, other than `cast`, breaks the Python
    client's models (scripts/clients/templates covers typing's `cast` only); the document names
    properties only as the wire does (no client-side renaming extension)."""
    names = {prop for schema in doc["components"]["schemas"].values()
             for prop in schema.get("properties", {})}
    assert names & GENERATED_MODEL_NAMES <= HANDLED_MODEL_NAMES
    assert "cast" in names, "the subscriber schemas have `cast`"
    assert "x-python-name" not in json.dumps(doc)


def test_the_document_passes_the_client_generators_constraints(doc):
    """What the linters (CI `make clients`) would flag first, checked here without Node."""
    for name in doc["components"]["securitySchemes"]:
        assert doc["components"]["securitySchemes"][name].get("description"), name
    tags = {tag["name"] for tag in doc.get("tags", [])}
    for path, method, operation, _ in operations(doc):
        assert set(operation["tags"]) <= tags and len(operation["tags"]) == 1, (method, path)
