"""Finishing touches on the OpenAPI 3.1 document apispec builds from the schemas.

flask-smorest documents what the decorators say; the app answers more than that, the same way on
every route (web/errors.py, web/tenancy.py, services/newsroom/keys.py). `finish` writes those answers into every
operation, so the document promises exactly what a client gets (schemathesis checks it):

- every error answer on a machine route is `application/problem+json` with the Problem schema;
  on reader routes (`/embed/{id}`) it is an HTML page;
- 400 where query values are parsed (webargs failures on query and path values are 400, not 422:
  web/errors.py), 404 everywhere (no paper on this host; no such piece where the path names one),
  401/403 where a key may be sent, 413/415/422 where a JSON body is read, 429 everywhere, and
  414 (gunicorn's HTML page) for a request line over its limit;
- on every keyed write (POST, PUT, PATCH or DELETE that takes a desk key: web/commit.py's commit
  point, web/idempotency.py), the `Idempotency-Key` header parameter, the `Idempotent-Replayed`
  header on its successes, and the answers the key brings: 400 (malformed key), 409 (the same key
  in flight), 422 (the key reused for another request) and 503 (database away, or the commit's
  outcome unknown).

It also makes the document one that client generators and linters take as it is (docs/API.md
"Generated clients"; CI's `make clients` generates and lints from it):

- every operation has an `operationId` (extensions.py `OperationIds`: from the endpoint, e.g.
  `listStories`), a one-line `summary` (the view docstring's first paragraph) and a
  `description` (the rest of the docstring);
- every operation states its `security`. A route that needs a key lists the two schemes; every
  other route takes a key optionally (a private paper answers only to its keys, and a key sent
  anywhere is checked: web/tenancy.py): the views declare `[{}, {"bearer": []}, {"deskKey": []}]`,
  served as `security: []` with the two schemes in `x-optional-security` (`_optional_key`), so
  every generator makes it callable without a key;
- every JSON request body and 2xx answer carries an `example` at its media type, built from the
  schema (`example_of`): a field's own `metadata={"example": ...}` first, then FIELD_EXAMPLES by
  field name, then its const, enum, default or format;
- every JSON request body states the size limit the server enforces (`x-max-body-bytes` and its
  description; config MAX_CONTENT_LENGTH, 64 KiB): a JSON Schema bounds each string
  (`maxLength`, which always fits the limit on its own), not the bytes of the whole body;
- property names are the wire's, with no client-side renaming extension: `cast` (the spec's
  field) is also `typing.cast` inside openapi-python-client 0.29's model code, which `make clients`
  handles with its generator's template option (scripts/clients/build.py), not in the document.

A paper serves the finished document with its own section names (`with_sections`): the enum of
every `sections` a request body takes, so a schema-valid subscribe names sections that exist.
`flask openapi`, for no paper, keeps the generic document.
"""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable

from web.errors import PROBLEM_MIME

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

DESCRIPTIONS = {
    "400": "A query or path value is malformed (`errors` names each field).",
    "401": "A desk key is required here, or the key sent is malformed, unknown or revoked.",
    "403": "The key belongs to another paper, or is below the level this route needs.",
    "404": "No paper is served on this host (or a private paper without its key).",
    "404-path": "No paper on this host, or nothing by that name on this paper.",
    "413": ("The request body is larger than 64 KiB (65,536 bytes), whatever its fields allow (a long "
            "`transcript` or `prose`): refused before it is read, nothing written."),
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


OPTIONAL_SECURITY = [{}, {"bearer": []}, {"deskKey": []}]
INFO_DESCRIPTION = (
    "Paper Desk publishes a news paper as data. Every paper serves this route tree on its own "
    "host. Errors are RFC 9457 problem+json.\n\n"
    "Auth: the public lane needs no credential; the keyed lane takes a desk key as "
    "`Authorization: Bearer desk_...` or `X-Desk-Key: desk_...`. Every operation states its "
    "`security`: routes that need a key list the two schemes; every other route has `security: []` "
    "(callable without a credential) and lists the two schemes in `x-optional-security`: a key "
    "may still be sent (a private paper answers only to its own keys, and drafts show only with "
    "one). A key that is sent is always checked: a malformed, unknown or revoked one is a 401, "
    "another paper's a 403.\n\n"
    "Bodies: a JSON request body is at most `x-max-body-bytes` (65,536) bytes as sent; a longer "
    "one is a 413, refused before it is read. Each string's `maxLength` fits within that on its "
    "own; a body with every field at its longest may not.")


def operation_id(blueprint: str, endpoint: str, method: str | None, taken: set[str]) -> str:
    """The `operationId` of a route's operation: the endpoint's name in camelCase
    (`list_stories` -> `listStories`), the method first when one endpoint serves several
    (`getThing`, `putThing`), and the blueprint first when that id is `taken` already
    (`subscribersSubscribe`). Raises ValueError when even that is taken (set one by hand with
    `@bp.doc(operationId=...)`)."""
    words = [method] if method else []
    words += [endpoint]
    first = camel_case("_".join(words))
    if first not in taken:
        return first
    second = camel_case("_".join([blueprint, *words]))
    if second not in taken:
        return second
    raise ValueError(f"operationId {first!r} and {second!r} are both taken: set one with "
                     "@bp.doc(operationId=...)")


def camel_case(name: str) -> str:
    """`list_stories` -> `listStories`; anything not a letter or digit separates words."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    return words[0].lower() + "".join(w[:1].upper() + w[1:] for w in words[1:]) if words else name


def finish(spec: dict, for_programs: Callable[[str], bool], body_limit: int) -> dict:
    """A finished copy of apispec's `spec.to_dict()` (the input is left untouched).
    `for_programs(path)`: the OpenAPI path (`/api/v1/stories/{id}`) answers errors as
    problem+json (web/errors.py), not as the reader's HTML error page. `body_limit`: the most
    bytes a request body may have (config MAX_CONTENT_LENGTH), stated on every request body."""
    doc = copy.deepcopy(spec)
    doc["info"].setdefault("description", INFO_DESCRIPTION)
    components = doc.setdefault("components", {})
    for response in components.get("responses", {}).values():
        if response.get("content"):  # only error statuses carry a body
            _problem_content(response)
    for path, item in doc.get("paths", {}).items():
        _drop_shadowed_parameters(item)
        machine = for_programs(path)
        path_params = [p for p in item.get("parameters", []) if p.get("in") == "path"]
        for method, operation in item.items():
            if method in HTTP_METHODS:
                _describe(operation)
                operation.setdefault("security", copy.deepcopy(OPTIONAL_SECURITY))
                _examples(operation, components)
                _body_limit(operation, body_limit)
                if keyed_write(method, operation):
                    _idempotent(operation)
                _finish_operation(operation, machine, components,
                                  has_path_params=bool(path_params) or any(
                                      p.get("in") == "path" for p in operation.get("parameters", [])))
                _optional_key(operation)
    _drop_unused_components(doc)
    return doc


def _body_limit(operation: dict, limit: int) -> None:
    """State on a request body the size the server allows (web/security.py refuses a longer
    one with 413 before reading it): `x-max-body-bytes`, and in words in its description."""
    body = operation.get("requestBody")
    if not body or "$ref" in body:
        return
    body["x-max-body-bytes"] = limit
    said = (f"At most {limit:,} bytes as sent (`x-max-body-bytes`): a longer body is a 413. Each "
            "string's `maxLength` fits within that on its own; every field at its longest together may not.")
    body["description"] = f"{body['description'].rstrip()} {said}" if body.get("description") else said


# Request-body properties whose values must name active sections of the paper (checked against
# the database: services/delivery/subscriptions.check_sections answers 422 otherwise).
SECTION_LISTS = ("sections",)


def with_sections(doc: dict, names: list[str]) -> dict:
    """`doc` as a paper serves it: the paper's active section `names` (in its order) as the
    `enum` of each item of every `sections` list a request body takes, and those lists'
    examples drawn from `names`. `doc` is shared (the finished document, built once per
    process) and left untouched: only what changes is copied. With no active section the enum
    is empty: no `sections` list is valid, as on the server."""
    doc = {**doc, "paths": dict(doc["paths"]),
           "components": {**doc["components"], "schemas": dict(doc["components"]["schemas"])}}
    schemas = doc["components"]["schemas"]
    bodies = set()
    for path, item in list(doc["paths"].items()):
        for method, operation in item.items():
            media = ((operation.get("requestBody") or {}).get("content") or {}).get("application/json") \
                if method in HTTP_METHODS else None
            if media is None:
                continue
            schema = media["schema"]
            bodies |= {ref["$ref"].rsplit("/", 1)[1] for ref in [schema, *schema.get("oneOf", [])] if "$ref" in ref}
            example = media.get("example")
            if isinstance(example, dict) and any(key in example for key in SECTION_LISTS):
                example = {key: (_sections_example(value, names) if key in SECTION_LISTS else value)
                           for key, value in example.items() if key not in SECTION_LISTS or names}
                body = operation["requestBody"]
                content = {**body["content"], "application/json": {**media, "example": example}}
                doc["paths"][path] = {**doc["paths"][path],
                                      method: {**operation, "requestBody": {**body, "content": content}}}
    for name in sorted(bodies):
        schema = schemas.get(name, {})
        properties = schema.get("properties", {})
        changed = {key: _enumerated(properties[key], names)
                   for key in SECTION_LISTS if "items" in properties.get(key, {})}
        if changed:
            schemas[name] = {**schema, "properties": {**properties, **changed}}
    return doc


def _enumerated(prop: dict, names: list[str]) -> dict:
    """A copy of the list property `prop` whose items are one of `names`, its example (if any)
    drawn from them, or gone when there are none to draw."""
    prop = {**prop, "items": {**prop["items"], "enum": list(names)}}
    if "example" in prop:
        prop["example"] = _sections_example(prop["example"], names)
        if not names:
            del prop["example"]
    return prop


def _sections_example(example, names: list[str]):
    """An example list of sections in `names`: the example's own names where the paper has
    them, else the paper's first ones, as many as the example had (at least one). An example
    that is no list (null: every section) stays as it is."""
    if not isinstance(example, list):
        return example
    kept = [name for name in example if name in names]
    return kept if kept else list(names[:max(1, len(example))])


def _optional_key(operation: dict) -> None:
    """A route whose key is optional (`security` lists the anonymous requirement `{}`) is
    written `security: []`, which every tool reads as "callable without a credential" (the
    stock openapi-python-client reads any non-empty list as "a key is required" and ignores
    `{}`), with the schemes a key may still be sent by in `x-optional-security`. Runs after
    the operation is finished, so its 401/403 answers and, on writes, `Idempotency-Key` are
    documented as for any route that takes a key."""
    security = operation.get("security", [])
    if {} in security:
        operation["security"] = []
        operation["x-optional-security"] = [requirement for requirement in security if requirement]


def _drop_unused_components(doc: dict) -> None:
    """Drop component schemas and responses nothing refers to (flask-smorest registers a
    response per HTTP status and its pagination schema whether used or not): linters warn about
    them, and generators would make models of them."""
    components = doc.get("components", {})
    while True:
        text = json.dumps({k: v for k, v in doc.items()}, separators=(",", ":"))
        unused = [(kind, name) for kind in ("schemas", "responses")
                  for name in components.get(kind, {})
                  if f'"#/components/{kind}/{name}"' not in text]
        if not unused:
            return
        for kind, name in unused:
            del components[kind][name]


def _describe(operation: dict) -> None:
    """One-line `summary` (docstrings wrap theirs), without a closing period; the `description`
    stays the docstring's body. A view without a body gets none here: tests/test_openapi.py
    asks for one."""
    summary = " ".join(operation.get("summary", "").split()).rstrip(".")
    if summary:
        operation["summary"] = summary
    if operation.get("description"):
        operation["description"] = operation["description"].strip()


def _examples(operation: dict, components: dict) -> None:
    """An `example` on the request body and every 2xx answer that lacks one (`example_of`)."""
    bodies = [operation.get("requestBody") or {}]
    bodies += [r for code, r in operation.get("responses", {}).items() if str(code)[0] == "2"]
    for body in bodies:
        for mime, media in (body.get("content") or {}).items():
            if "example" in media or "examples" in media or "schema" not in media:
                continue
            if mime.endswith("json"):
                media["example"] = example_of(media["schema"], components)
            elif mime.startswith("text/") and "example" in media["schema"]:
                media["example"] = media["schema"]["example"]


# Examples by field name, for fields whose schema has none of its own (a field's
# `metadata={"example": ...}` always wins). One paper throughout: the demo's.
FIELD_EXAMPLES = {
    "access": "admin",
    "action": "File a draft under any active persona",
    "active": True,
    "alg": "Ed25519",
    "author_name": "Ada Quill",
    "beat": "Markets and companies",
    "bio": "Rex Ledger is an AI persona of the desk. He covers earnings, prices and jobs.",
    "byline": "Ada Quill",
    "cadence": "daily",
    "capability": ["file"],
    "capabilities": ["file"],
    "category": "Business",
    "claim_key": "rate-decision",
    "confirmed": 12,
    "content_hash": "sha256:5d41402abc4b2a76b9719d911017c592ae0ba6dd0f8e6c1c4c3c2b5f4c3a1b2e",
    "prev_hash": "sha256:0c8b1f6f0e7f5f0f0b6d3c4a2e1d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d",
    "count": 1,
    "day": "2026-11-24",
    "declared_ai": True,
    "detail": "No such piece on this paper.",
    "dek": "The central bank lifts its policy rate by a quarter point, the third rise this year.",
    "description": "Markets, companies and the money behind the headlines.",
    "disclaimer": "Written by a declared AI persona.",
    "email": "reader@example.org",
    "emails": ["reader@example.org"],
    "encoding": "utf-8",
    "filer": "admin key desk_3f9a",
    "headline": "Central bank holds main rate at 3.75%",
    "help_desk": "mailto:desk@demo.example.org",
    "host": "demo.example.org",
    'html': '<iframe src="https://demo.example.org/embed/42" width="480" height="360"></iframe>',
    "id": 42,
    "index_style": "open",
    "is_public": True,
    "kid": "k1",
    "kind": "admin",
    "label": "newsroom laptop",
    "language": "en",
    "method": "GET",
    "mime_type": "video/mp4",
    "motto": "Cited, signed and on air.",
    "n": 1,
    "name": "Business",
    "nameplate": "The Demo Desk",
    "note": "A signature proves who filed a piece; it never proves that a claim is true.",
    "on_air": True,
    "paper": "demo",
    "persona": "Ada Quill",
    "position": 1,
    "prefix": "desk_3f9a",
    "prose": "The central bank raised its policy rate by 0.25 points on Tuesday.[^1]",
    "provider_name": "The Demo Desk",
    "q": "city council",
    "rev": 1,
    "section": "Business",
    "sections": ["World", "Business"],
    "slug": "central-bank-holds-main-rate-at-3-75",
    "source": "https://example.org/central-bank/decision",
    "statement": "The policy rate rises to 4.25%.",
    "status": 404,
    "summary": "Rates rise a quarter point.",
    "text": "Rates rise again: the third rise this year. https://demo.example.org/stories/central-bank-holds-main-rate-at-3-75",
    "timezone": "Europe/London",
    "title": "Not Found",
    "total": 1,
    "type": "about:blank",
    "version": "1.0",
    "webhook": "https://hooks.example.org/paper-desk",
    "webhook_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "public_key": "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=",
    "signed_string": "paper-desk-receipt/1 demo 42 1 sha256:5d41...",
    "url": "https://demo.example.org/stories/central-bank-holds-main-rate-at-3-75",
    "width": 480,
    "height": 360,
    "duration_seconds": 95,
    "length_bytes": 10485760,
    "page": 1,
    "total_pages": 1,
    "cache_age": 3600,
    "bounces": 0,
    "instrument": "bank-rate",
}
FORMAT_EXAMPLES = {
    "date-time": "2026-11-24T09:30:00Z",
    "date": "2026-11-24",
    "email": "reader@example.org",
    "uri": "https://demo.example.org/",
    "url": "https://demo.example.org/",
    "uuid": "8e03978e-40d5-43e8-bc93-6894a57f9324",
}


# String fields named like these (mostly the index's and the feeds' URLs) get these examples
# rather than their name in words: the demo paper's real addresses, on a production host.
_SITE = "https://demo.example.org"
STRING_EXAMPLES = {
    **{name: f"{_SITE}/api/v1/{path}" for name, path in (
        ("stories", "stories"), ("story", "stories/{id}"), ("sections", "sections"), ("days", "days"),
        ("search", "search?q="), ("front", "front"), ("cast", "cast"), ("posts", "posts"),
        ("masthead", "masthead"), ("openapi", "openapi.json"), ("receipt_keys", "receipt-keys"),
        ("keys_url", "receipt-keys"), ("index", ""), ("path", "stories/{id}"), ("log", "log"))},
    "subscribe": f"POST {_SITE}/api/v1/subscribers",
    **{name: f"{_SITE}/{path}" for name, path in (
        ("rss", "rss.xml"), ("podcast", "podcast.xml"), ("front_json", "front.json"), ("llms", "llms.txt"),
        ("sitemap", "sitemap.xml"), ("home", ""), ("landing", "subscribe"), ("playground", "api"),
        ("guide", "api"), ("provider_url", ""), ("link", "stories/central-bank-holds-main-rate-at-3-75"),
        ("avatar", "masthead/rex-ledger/avatar.svg"), ("image", "media/3f1c9a0b6d2e4f5a8b7c6d5e4f3a2b1c.jpg"),
        ("thumbnail_url", "cards/central-bank-holds-main-rate-at-3-75/1-5f2a9c1e.png"),
        ("podcast_image", "media/9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d.jpg"))},
    "public": "No key: on-air pieces, sections, days, search, front, cast, posts, masthead, feeds.",
    "read": "A read key: drafts too, subscriber counts, the config as read, proofs.",
    "admin": "An admin key: every write, subscriber rows, the full config.",
    "auth": "Authorization: Bearer desk_... (or X-Desk-Key: desk_...)",
    "contact_email": "desk@demo.example.org",
    "search_help": "mailto:desk@demo.example.org",
    "disclosure": "Rex Ledger is an AI persona of The Demo Desk's masthead, declared as such; this piece was "
                  "written by an AI system, not by a human reporter.",
    "hash_basis": "SHA-256 of the RFC 8785 canonical JSON of the basis",
    "receipt": "3q1vW2x8Qm0f7sJk9Yp4Lr6Tn5Hc2Ba1Zd8Xe3Wf0Vg7Uh6Ti5Sj4Rk3Ql2Pm1On0Ko9Ip8Hq7Gr6Fs5Et4Du3Cv2Bw==",
    "id": "42",
    "status": "accepted",
    "subscribe_path": "subscribers",
    "suppressed_reason": "550 5.1.1 <reader@example.org>: no such user",
}


def example_of(schema: dict, components: dict, name: str | None = None, _seen: frozenset = frozenset()):
    """An example value for `schema` (a JSON Schema from the document, `$ref`s into
    `components` followed): its `example`, `examples`, `const`, first `enum` value or `default`;
    else FIELD_EXAMPLES[name] when it fits the type; else one built from its type and format.
    Objects get every property, arrays one item; a `$ref` already being expanded gives None."""
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref in _seen:
            return None
        target = components.get("schemas", {}).get(ref.rsplit("/", 1)[-1], {})
        return example_of(target, components, name, _seen | {ref})
    for key in ("example", "const"):
        if key in schema:
            return schema[key]
    if schema.get("examples"):
        return schema["examples"][0]
    if [v for v in schema.get("enum", []) if v is not None]:
        return [v for v in schema["enum"] if v is not None][0]
    for combined in ("allOf", "anyOf", "oneOf"):
        if schema.get(combined):
            options = [s for s in schema[combined] if s.get("type") != "null"] or schema[combined]
            return example_of(options[0], components, name, _seen)
    types = schema.get("type", "object" if "properties" in schema else None)
    types = [types] if isinstance(types, str) or types is None else types
    kind = next((t for t in types if t != "null"), None)
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    named = FIELD_EXAMPLES.get(name) if name else None
    if named is not None and _fits(named, kind) and (kind != "array" or _scalar_items(schema, components)):
        return named
    if kind == "object":
        return {prop: example_of(sub, components, prop, _seen)
                for prop, sub in schema.get("properties", {}).items()}
    if kind == "array":
        item = example_of(schema.get("items", {}), components, name, _seen)
        return [] if item is None or schema.get("maxItems") == 0 else [item]
    if kind == "string":
        if schema.get("format") in FORMAT_EXAMPLES and not (name in STRING_EXAMPLES and name in ("avatar", "image")):
            return FORMAT_EXAMPLES[schema["format"]]
        if name in STRING_EXAMPLES and _fits_length(STRING_EXAMPLES[name], schema):
            return STRING_EXAMPLES[name]
        # The field's name in words, cut to maxLength and padded to minLength: a pattern the
        # name does not match shows up in tests/test_openapi.py, and gets a FIELD_EXAMPLES entry.
        words = (name or "text").replace("_", " ")[:schema.get("maxLength", 200)]
        return words.ljust(schema.get("minLength", 0), ".")
    if kind == "integer":
        low, high = schema.get("minimum", 1), schema.get("maximum")
        return low if high is None or low <= high else high
    if kind == "number":
        return float(max(1, schema.get("minimum", 1)))
    if kind == "boolean":
        return True
    if kind is None and "null" in types:
        return None
    return None


def _fits_length(value: str, schema: dict) -> bool:
    return schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)) and "enum" not in schema


def _scalar_items(schema: dict, components: dict) -> bool:
    items = schema.get("items", {})
    if "$ref" in items:
        items = components.get("schemas", {}).get(items["$ref"].rsplit("/", 1)[-1], {})
    kinds = items.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds or []
    return bool(kinds) and not {"object", "array"} & set(kinds)


def _fits(value, kind: str | None) -> bool:
    checks = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
              "array": list, "object": dict}
    if kind not in checks:
        return False
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, checks[kind])


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
        # flask-smorest documents 422 for every @arguments; web/errors.py answers bad query and path
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
    # Reader routes answer errors with an HTML page of the same status (web/errors.py), and so does
    # gunicorn for what it refuses itself.
    if "$ref" in response:
        name = response["$ref"].rsplit("/", 1)[-1]
        response = {"description": components.get("responses", {}).get(name, {}).get(
            "description", "An error page.")}
    page = {"description": response.get("description") or "An error page.",
            "content": {"text/html": {"schema": {"type": "string"}}}}
    if code in HEADERS and code not in SERVER_PAGES:
        page["headers"] = copy.deepcopy(HEADERS[code])  # web/errors.py keeps them on its pages too
    return page


def _problem_content(response: dict) -> dict:
    """Document `response` as problem+json: error bodies documented as application/json (the
    flask-smorest default) or not at all become the Problem schema under its real media type."""
    content = response.get("content") or {}
    schema = (content.get("application/json") or {}).get("schema") or content.get(
        PROBLEM_MIME, {}).get("schema") or PROBLEM_REF
    if not content or set(content) <= {"application/json", PROBLEM_MIME}:
        response["content"] = {PROBLEM_MIME: {"schema": schema}}
    return response
