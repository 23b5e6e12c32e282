"""The OpenAPI document states what the server enforces, through HTTP (docs/API.md "the document"):

- the body limit: every JSON request body carries `x-max-body-bytes` (config MAX_CONTENT_LENGTH),
  a body over it is a 413, and every string a body takes fits it at its `maxLength` (a
  schema-valid 100 KB transcript was once a 413: schemathesis found it);
- the paper's own section names: each paper's `/api/v1/openapi.json` lists its active sections
  as the enum of the `sections` a subscribe or a reader's preferences take, so a body valid
  against the document it serves is accepted; `flask openapi` (no paper) has no such enum.
"""
from __future__ import annotations

import json
import re

from tests.fixtures.keys import auth

LIMIT = 64 * 1024


def json_bodies(doc):
    """(method, path, schema, example) of every JSON request body, one per schema of a `oneOf`."""
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            media = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
            if media is None:
                continue
            for ref in media["schema"].get("oneOf", [media["schema"]]):
                schema = doc["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
                yield method, path, operation, schema, media["example"]


def longest(prop: dict):
    """The longest value of a string property, or of a list of strings, as plain ASCII; None
    for a property with no length bound."""
    if "maxLength" in prop:
        return "a" * prop["maxLength"]
    items = prop.get("items", {})
    if "maxLength" in items and "maxItems" in prop:
        return ["a" * items["maxLength"]] * prop["maxItems"]
    return None


def test_every_string_a_body_takes_fits_the_body_limit_at_its_max_length(client, desk):
    desk.paper("demo")
    doc = client.get("/api/v1/openapi.json").get_json()
    assert "65,536" in doc["info"]["description"]
    tried = []
    for method, path, operation, schema, example in json_bodies(doc):
        url = re.sub(r"\{[^}]+\}", "1", path)
        assert operation["requestBody"]["x-max-body-bytes"] == LIMIT, (method, path)
        # The failure case first: a body one byte over the limit is refused before it is read.
        over = json.dumps({**example, "pad": "x" * LIMIT})
        answer = client.open(url, method=method.upper(), data=over, content_type="application/json")
        assert answer.status_code == 413, (method, path, answer.status_code)
        for name, prop in schema["properties"].items():
            value = longest(prop)
            if value is None:
                continue
            body = json.dumps({**example, name: value})
            assert len(body.encode()) <= LIMIT, (method, path, name, len(body.encode()))
            answer = client.open(url, method=method.upper(), data=body, content_type="application/json")
            assert answer.status_code != 413, (method, path, name)
            tried.append((path, name))
    assert ("/api/v1/cast", "transcript") in tried and ("/api/v1/stories", "prose") in tried


def enum_of(doc, schema_name: str) -> list[str] | None:
    return doc["components"]["schemas"][schema_name]["properties"]["sections"]["items"].get("enum")


def test_each_paper_serves_its_own_section_names_and_a_schema_valid_subscribe_is_accepted(client, desk, runner):
    desk.paper("demo", sections=("World", "Business", "Science"))
    gazette = desk.paper("gazette", sections=("Harbour", "Town Hall"))
    demo_doc = client.get("/api/v1/openapi.json").get_json()
    gazette_doc = client.get("/api/v1/openapi.json", base_url="http://gazette.localhost").get_json()
    for name in ("SubscribeIn", "SubscribeBatchIn", "PreferencesPatch"):
        assert enum_of(demo_doc, name) == ["World", "Business", "Science"], name
        assert enum_of(gazette_doc, name) == ["Harbour", "Town Hall"], name
    # Examples stay valid against the enum they sit beside.
    subscribe = gazette_doc["paths"]["/api/v1/subscribers"]["post"]["requestBody"]["content"]["application/json"]
    assert set(subscribe["example"]["sections"]) <= {"Harbour", "Town Hall"}
    patch = gazette_doc["components"]["schemas"]["PreferencesPatch"]["properties"]["sections"]["example"]
    assert patch and set(patch) <= {"Harbour", "Town Hall"}

    # What the enum allows is accepted, on the paper that served it; a name it leaves out is a 422.
    accepted = client.post("/api/v1/subscribers", base_url="http://gazette.localhost",
                           json={"email": "reader@example.org", "sections": enum_of(gazette_doc, "SubscribeIn")})
    assert accepted.status_code == 202, accepted.get_json()
    refused = client.post("/api/v1/subscribers", base_url="http://gazette.localhost",
                          json={"email": "reader2@example.org", "sections": ["World"]})
    assert refused.status_code == 422 and "sections" in refused.get_json()["errors"]

    # A new section is in the next document at once (a new ETag, not a 304).
    etag = client.get("/api/v1/openapi.json", base_url="http://gazette.localhost").headers["ETag"]
    made = client.post("/api/v1/sections", base_url="http://gazette.localhost", json={"name": "Tides"},
                       headers=auth(desk.key(gazette, "admin")))
    assert made.status_code == 201, made.get_json()
    again = client.get("/api/v1/openapi.json", base_url="http://gazette.localhost", headers={"If-None-Match": etag})
    assert again.status_code == 200 and enum_of(again.get_json(), "SubscribeIn") == ["Harbour", "Town Hall", "Tides"]

    # A paper without an active section: no `sections` list is valid, in the document or on the server.
    desk.paper("bare", sections=())
    bare = client.get("/api/v1/openapi.json", base_url="http://bare.localhost").get_json()
    assert enum_of(bare, "SubscribeIn") == [] and "example" not in \
        bare["components"]["schemas"]["PreferencesPatch"]["properties"]["sections"]
    assert client.post("/api/v1/subscribers", base_url="http://bare.localhost",
                       json={"email": "r@example.org", "sections": ["World"]}).status_code == 422

    # `flask openapi` speaks for no paper: no enum, its generic examples.
    generic = json.loads(runner.invoke(args=["openapi"]).stdout)
    assert enum_of(generic, "SubscribeIn") is None and enum_of(generic, "PreferencesPatch") is None
