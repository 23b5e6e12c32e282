"""Finishing touches on the OpenAPI 3.1 document apispec builds from the schemas.

flask-smorest documents what the decorators say; the app answers more than that, the same way on
every route (errors.py, tenancy.py, services/newsroom/keys.py). `finish` writes those answers into every
operation, so the document promises exactly what a client gets (schemathesis checks it):

- every error answer on a machine route is `application/problem+json` with the Problem schema;
  on reader routes (`/embed/{id}`) it is an HTML page;
- 400 where query values are parsed (webargs failures on query and path values are 400, not 422:
  errors.py), 404 everywhere (no paper on this host; no such piece where the path names one),
  401/403 where a key may be sent, 413/415/422 where a JSON body is read, 429 everywhere, and
  414 (gunicorn's HTML page) for a request line over its limit;
- on every keyed write (POST, PUT, PATCH or DELETE that takes a desk key: transaction.py's commit
  point, idempotency.py), the `Idempotency-Key` header parameter, the `Idempotent-Replayed`
  header on its successes, and the answers the key brings: 400 (malformed key), 409 (the same key
  in flight), 422 (the key reused for another request) and 503 (database away, or the commit's
  outcome unknown).
"""
from __future__ import annotations

import copy

from errors import MACHINE_PREFIXES, PROBLEM_MIME

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

DESCRIPTIONS = {
    "400": "A query or path value is malformed (`errors` names each field).",
    "401": "A desk key is required here, or the key sent is malformed, unknown or revoked.",
    "403": "The key belongs to another paper, or is below the level this route needs.",
    "404": "No paper is served on this host (or a private paper without its key).",
    "404-path": "No paper on this host, or nothing by that name on this paper.",
    "413": "The request body is larger than 64 KiB.",
    "415": "The request body is not JSON (send Content-Type: application/json).",
    "414": ("The request line is longer than 8190 bytes: refused by the HTTP server in front of "
            "the app (gunicorn.conf.py), with its own HTML page."),
    "422": "The JSON body failed validation (`errors` names each field).",
    "429": "Too many requests from this client; retry after `Retry-After` seconds.",
}
# Answered by gunicorn before the app runs, so never problem+json.
SERVER_PAGES = {"414"}
WRITE_METHODS = {"post", "put", "patch", "delete"}
IDEMPOTENCY_PARAMETER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": (
        "Makes a retry of this write safe (draft-ietf-httpapi-idempotency-key-header): a unique "
        "key per write, as a structured-field string (`\"...\"`; a bare token is accepted too), "
        "1-255 printable ASCII characters. The same key with the same request (method, path, "
        "body bytes) within 24 hours gets the first answer again, with `Idempotent-Replayed: "
        "true`, and writes nothing; with another request, a 422; while the first is still being "
        "processed, a 409. Scoped to this paper and to the desk key sent; only successful "
        "answers are kept, so after a 4xx the key may be sent again. Ignored on requests "
        "without a desk key (the public subscribe). After a 503, retry with the same key: the "
        "write may have landed (outcome unknown)."),
    "schema": {"type": "string", "maxLength": 512,
               "pattern": r'^(?:"(?:[ !#-\[\]-~]|\\["\\]){1,255}"|[!#-~][!-~]{0,254})$'},
    "example": '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
}
IDEMPOTENCY_ANSWERS = {
    "400": "The `Idempotency-Key` header is malformed.",
    "409": "A request with the same `Idempotency-Key` is still being processed; retry once it has finished.",
    "422": "The `Idempotency-Key` was first used for a different request (method, path or body).",
    "503": ("The database is briefly away, or the connection was lost while committing (outcome "
            "unknown: the write may or may not have landed). Retry after `Retry-After` seconds "
            "with the same `Idempotency-Key`."),
}
REPLAYED_HEADER = {"Idempotent-Replayed": {
    "description": "`true` when this is the stored answer to an earlier request with the same "
                   "`Idempotency-Key` (nothing was written this time); absent otherwise.",
    "schema": {"type": "string", "enum": ["true"]}}}
HEADERS = {
    "401": {"WWW-Authenticate": {"description": 'Always `Bearer realm="desk"`.', "required": True,
                                 "schema": {"type": "string"}}},
    "429": {"Retry-After": {"description": "Seconds to wait before retrying.", "required": True,
                            "schema": {"type": "string"}}},
    "503": {"Retry-After": {"description": "Seconds to wait before retrying.", "required": True,
                            "schema": {"type": "string"}}},
}


def finish(spec: dict) -> dict:
    """A finished copy of apispec's `spec.to_dict()` (the input is left untouched)."""
    doc = copy.deepcopy(spec)
    doc["info"].setdefault("description", (
        "Paper Desk publishes a news paper as data. Every paper serves this route tree on its "
        "own host. Errors are RFC 9457 problem+json. The public lane needs no credential; the "
        "keyed lane takes a desk key as `Authorization: Bearer desk_...` or `X-Desk-Key`."))
    components = doc.setdefault("components", {})
    for response in components.get("responses", {}).values():
        if response.get("content"):  # only error statuses carry a body
            _problem_content(response)
    for path, item in doc.get("paths", {}).items():
        _drop_shadowed_parameters(item)
        machine = path.startswith(MACHINE_PREFIXES)
        path_params = [p for p in item.get("parameters", []) if p.get("in") == "path"]
        for method, operation in item.items():
            if method in HTTP_METHODS:
                if keyed_write(method, operation):
                    _idempotent(operation)
                _finish_operation(operation, machine, components,
                                  has_path_params=bool(path_params) or any(
                                      p.get("in") == "path" for p in operation.get("parameters", [])))
    return doc


def _drop_shadowed_parameters(item: dict) -> None:
    """Drop path-item parameters that every operation redefines. flask-smorest documents each URL
    converter (`{day}`: any string) beside the view's own, stricter, schema (`{day}`: a date);
    the operation's wins in OpenAPI, and keeping both only misleads readers and tools."""
    operations = [op for method, op in item.items() if method in HTTP_METHODS]
    kept = []
    for parameter in item.get("parameters", []):
        key = (parameter.get("name"), parameter.get("in"))
        if not operations or not all(
                key in {(p.get("name"), p.get("in")) for p in op.get("parameters", [])}
                for op in operations):
            kept.append(parameter)
    if "parameters" in item:
        if kept:
            item["parameters"] = kept
        else:
            del item["parameters"]


def keyed_write(method: str, operation: dict) -> bool:
    """True for a write (POST, PUT, PATCH, DELETE) that takes a desk key (its `security` names
    a scheme): where the commit point honours `Idempotency-Key`."""
    return method in WRITE_METHODS and any(requirement for requirement in operation.get("security", []))


def _idempotent(operation: dict) -> None:
    """Document `Idempotency-Key` on a keyed write: the header parameter, `Idempotent-Replayed`
    on its successes, and its 400/409/422/503 answers (joined to what the view documents)."""
    operation.setdefault("parameters", []).append(copy.deepcopy(IDEMPOTENCY_PARAMETER))
    responses = operation.setdefault("responses", {})
    for code, response in list(responses.items()):
        if str(code)[0] == "2" and isinstance(response, dict) and "$ref" not in response:
            response.setdefault("headers", {}).update(copy.deepcopy(REPLAYED_HEADER))
    operation["x-idempotency-answers"] = dict(IDEMPOTENCY_ANSWERS)


def _needed(operation: dict, has_path_params: bool) -> dict[str, str]:
    """Status -> description of every error answer this operation can give besides the default."""
    has_body = "requestBody" in operation
    has_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
    # flask-smorest documents 422 for each @arguments: there, query/path/header values are parsed.
    parses_values = "422" in operation["responses"] and not has_body
    needed = {"404": DESCRIPTIONS["404-path" if has_path_params else "404"],
              "414": DESCRIPTIONS["414"], "429": DESCRIPTIONS["429"]}
    if has_query or parses_values:
        needed["400"] = DESCRIPTIONS["400"]
    if any(requirement for requirement in operation.get("security", [])):
        needed["401"] = DESCRIPTIONS["401"]
        needed["403"] = DESCRIPTIONS["403"]
    if has_body:
        needed.update({code: DESCRIPTIONS[code] for code in ("413", "415", "422")})
        needed["400"] = (DESCRIPTIONS["400"] + " Or the body is not valid JSON." if "400" in needed
                         else "The request body is not valid JSON.")
    return needed


def _finish_operation(operation: dict, machine: bool, components: dict, *, has_path_params: bool):
    responses = operation["responses"] = {str(code): response for code, response
                                          in operation.get("responses", {}).items()}
    needed = _needed(operation, has_path_params)
    if "requestBody" not in operation:
        # flask-smorest documents 422 for every @arguments; errors.py answers bad query and path
        # values 400 instead (docs/API.md "status codes"), and only a JSON body can get 422.
        responses.pop("422", None)
    for code, description in needed.items():
        responses.setdefault(code, {"description": description})
    for code, description in operation.pop("x-idempotency-answers", {}).items():
        # Joined to what the route already says (a 409 for a taken name, a 422 for the body).
        current = responses.get(code)
        if current is None or "$ref" in current:
            responses[code] = {"description": description}
        elif description not in current.get("description", ""):
            current["description"] = f"{current.get('description', '').rstrip()} Or: {description}".strip()
    for code in list(responses):
        if code == "default" or code[0] in "45":
            responses[code] = _error_response(responses[code], code, machine, components)
    # Statuses in order, the catch-all last: easier to read in any viewer.
    operation["responses"] = dict(sorted(responses.items(), key=lambda kv: (kv[0] == "default", kv[0])))


def _error_response(response: dict, code: str, machine: bool, components: dict) -> dict:
    if machine and code not in SERVER_PAGES:
        if "$ref" not in response:
            response = _problem_content(response)
            if code in HEADERS:
                response.setdefault("headers", {}).update(copy.deepcopy(HEADERS[code]))
        return response
    # Reader routes answer errors with an HTML page of the same status (errors.py), and so does
    # gunicorn for what it refuses itself.
    if "$ref" in response:
        name = response["$ref"].rsplit("/", 1)[-1]
        response = {"description": components.get("responses", {}).get(name, {}).get(
            "description", "An error page.")}
    return {"description": response.get("description") or "An error page.",
            "content": {"text/html": {"schema": {"type": "string"}}}}


def _problem_content(response: dict) -> dict:
    """Document `response` as problem+json: error bodies documented as application/json (the
    flask-smorest default) or not at all become the Problem schema under its real media type."""
    content = response.get("content") or {}
    schema = (content.get("application/json") or {}).get("schema") or content.get(
        PROBLEM_MIME, {}).get("schema") or PROBLEM_REF
    if not content or set(content) <= {"application/json", PROBLEM_MIME}:
        response["content"] = {PROBLEM_MIME: {"schema": schema}}
    return response
