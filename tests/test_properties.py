"""Property-based tests (hypothesis) of every parser of outside input: `q`, `day`, `since`, `limit`,
ids and slugs, subscriber bodies, filing bodies, oEmbed `url` and sizes, and webhook URLs. Every
input gets a 2xx or a 4xx (a problem+json on machine routes, an HTML page on reader pages), never a
5xx, and a 4xx writes nothing: a snapshot of every table's row count and of the papers' versions
(which every write moves) is taken before and after each example. Where the contract says exactly
which inputs are valid, that is checked too. The strategies (what outside input looks like) are in
tests/strategies.py.

The examples run through the Flask test client against one newsroom built per test (the
`world` fixture). Hypothesis warns about function-scoped fixtures because they are not reset
between examples; here that is intended: examples only read, or their writes are expected and
checked, so the health check is suppressed in the "ci" profile. Profiles: `ci` (the default;
derandomized, so a CI failure reproduces) and `thorough` (HYPOTHESIS_PROFILE=thorough, random,
many more examples).
"""
from __future__ import annotations

import ipaddress
import os
from datetime import date, timedelta
from urllib.parse import quote, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from extensions import db
from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.strategies import (
    DAYS,
    FILING,
    FORM_FIELDS,
    JSON,
    LIMITS,
    PERSONAS,
    RAW,
    REFS,
    SECTIONS,
    SINCE,
    SIZES,
    SUBSCRIBE_BODIES,
    TEXT,
    VALID_FILING,
    oembed_urls,
    search_queries,
    webhook_urls,
)

settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile(
    "thorough", parent=settings.get_profile("ci"), max_examples=1000, derandomize=False)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PROBLEM_FIELDS = {"type", "title", "status", "detail"}

pytestmark = pytest.mark.slow  # dozens of examples per test


# ----------------------------------------------------------------------------- the newsroom


@pytest.fixture
def world(client, desk):
    """Paper `demo` on the bare host: three pieces on air on three days, a draft, an edition,
    a read and an admin key, one subscriber."""
    paper = desk.paper("demo", sections=SECTIONS, personas=PERSONAS)
    aired = [desk.piece(paper, f"Rates rise again {i}", section=SECTIONS[i], facts=2,
                        on_air_at=T0 + timedelta(days=i, hours=i)) for i in range(3)]
    draft = desk.piece(paper, "Secret draft", on_air_at=None)
    desk.edition(paper, T0.date())
    assert client.post("/api/v1/subscribers", json={"email": "reader@example.com"}).status_code == 202
    return {
        "paper": paper,
        "aired": {str(p.id): p.slug for p in aired},
        "aired_at": {str(p.id): p.on_air_at for p in aired},
        "draft": (str(draft.id), draft.slug),
        "read": desk.key(paper, "read"),
        "admin": desk.key(paper, "admin"),
    }


def snapshot() -> tuple:
    """Row counts of every table and the sum of the papers' versions, in one statement."""
    tables = [t.name for t in db.metadata.sorted_tables]
    columns = [f"(SELECT count(*) FROM {name})" for name in tables]
    columns.append("(SELECT coalesce(sum(version), 0) FROM papers)")
    with db.engine.connect() as conn:
        return tuple(conn.execute(text("SELECT " + ", ".join(columns))).one())


def check(response, *, machine: bool = True) -> int:
    """Assert a 2xx/3xx, or a 4xx in the right shape; return the status."""
    status = response.status_code
    assert status < 500, (status, response.get_data(as_text=True)[:500])
    if status >= 400:
        if machine:
            assert response.mimetype == "application/problem+json", (status, response.mimetype)
            body = response.get_json()
            assert PROBLEM_FIELDS <= set(body) and body["status"] == status
        else:
            assert response.mimetype == "text/html", (status, response.mimetype)
    return status


def segment(value: str) -> str:
    """A path segment carrying `value` (every reserved character percent-encoded)."""
    return quote(value, safe="")


# ----------------------------------------------------------------------------- q, day, since, limit


@PROFILE
@given(q=st.one_of(search_queries(), TEXT, st.text(min_size=115, max_size=130)))
def test_search_q(client, world, q):
    response = client.get("/api/v1/search", query_string={"q": q})
    status = check(response)
    # The contract: 1-120 characters holding 1-4 whitespace-separated terms, else 400.
    assert status == (200 if 1 <= len(q) <= 120 and 1 <= len(q.split()) <= 4 else 400), repr(q)
    if status == 200:
        body = response.get_json()
        assert body["q"] == q.strip() and len(body["stories"]) <= 30
        assert {row["id"] for row in body["stories"]} <= set(world["aired"])
    else:
        assert "q" in response.get_json()["errors"]


@PROFILE
@given(q=RAW)
def test_search_q_as_raw_bytes(client, world, q):
    check(client.get(f"/api/v1/search?q={q}"))


@PROFILE
@given(day=DAYS)
def test_day_in_the_api_and_on_the_pages(client, world, day):
    before = snapshot()
    response = client.get(f"/api/v1/days/{segment(day)}")
    status = check(response)
    try:
        real = date.fromisoformat(day) if len(day) == 10 and day[4] == day[7] == "-" else None
    except ValueError:
        real = None
    if real is not None and day.isascii() and day.replace("-", "").isdigit():
        assert status == 200, day
        body = response.get_json()
        on_day = {i for i, at in world["aired_at"].items() if at.date() == real}
        assert {row["id"] for row in body["stories"]} == on_day
    elif day not in (".", "..") and "/" not in day:  # those make another path (see below)
        assert status in (400, 404), (day, status)
    for page in (f"/days/{segment(day)}", f"/cast/{segment(day)}"):
        check(client.get(page), machine=False)
    assert snapshot() == before


def plain_integer(value: str) -> int | None:
    """`value` as an integer when written the way the document's `integer` is (ASCII digits, an
    optional leading minus), else None."""
    body = value[1:] if value.startswith("-") else value
    return int(value) if body.isascii() and body.isdigit() else None


def loose_integer(value: str) -> int | None:
    """What Python's int() also takes (and so marshmallow, hence the API): surrounding
    whitespace, a '+', '_' separators, non-ASCII digits. Accepting those is lenient, not
    unsafe; anything int() refuses must be a 400."""
    try:
        return int(value)
    except ValueError:
        return None


@PROFILE
@given(since=SINCE, limit=st.one_of(st.none(), LIMITS))
def test_since_and_limit_on_posts(client, world, since, limit):
    query = {"since": since, **({} if limit is None else {"limit": limit})}
    response = client.get("/api/v1/posts", query_string=query)
    status = check(response)
    if limit is not None and loose_integer(limit) is None:
        assert status == 400, limit
    if limit is not None and plain_integer(limit) is not None and not 1 <= int(limit) <= 100:
        assert status == 400, limit
    if status == 200:
        posts = response.get_json()["posts"]
        wanted = 20 if limit is None else loose_integer(limit)
        assert 1 <= wanted <= 100 and len(posts) <= wanted
        assert {p["id"] for p in posts} <= set(world["aired"])


@PROFILE
@given(limit=LIMITS)
def test_limit_on_stories_clamps_integers_and_refuses_the_rest(client, world, limit):
    response = client.get("/api/v1/stories", query_string={"limit": limit})
    status = check(response)
    if plain_integer(limit) is not None:
        assert status == 200, limit
        number = plain_integer(limit)
        assert len(response.get_json()["stories"]) == min(max(number, 1), 200, len(world["aired"]))
    elif loose_integer(limit) is None:
        assert status == 400, limit


# ----------------------------------------------------------------------------- ids and slugs


@PROFILE
@given(ref=REFS)
def test_ids_and_slugs_everywhere(client, world, ref):
    before = snapshot()
    seg = segment(ref)
    read, admin = auth(world["read"], "X-Desk-Key"), auth(world["admin"], "X-Desk-Key")
    draft_id, draft_slug = world["draft"]
    aired = ref in world["aired"] or ref in world["aired"].values()
    # A client resolves dot segments before sending, and a "/" (sent as %2F, which the server
    # decodes) makes another path, which may redirect (308) to a merged-slash one.
    resolved = ref not in (".", "..") and "/" not in ref

    story = check(client.get(f"/api/v1/stories/{seg}"))
    if resolved:
        assert story == (200 if aired else 404), ref
    proof = check(client.get(f"/api/v1/stories/{seg}/proof", headers=read))
    if resolved:
        assert proof == (200 if aired or ref in (draft_id, draft_slug) else 404), ref
    card = check(client.get(f"/embed/{seg}"), machine=False)
    if resolved:
        assert card == (200 if aired else 404), ref
    for page in (f"/stories/{seg}", f"/sections/{seg}", f"/masthead/{seg}/avatar.svg", f"/cards/{seg}.png",
                 f"/cards/{seg}/{seg}.png"):
        check(client.get(page), machine=False)
    sitemap = check(client.get(f"/sitemap-{seg}.xml"))  # a page number where the ref is digits
    if ref.isascii() and ref.isdigit() and int(ref) > 1:
        assert sitemap == 404, ref  # a paper this small has one page
    assert snapshot() == before

    # Writes by slug: an unknown slug is a 404 problem and changes nothing.
    for path, body, known in ((f"/api/v1/sections/{seg}", {"description": "Changed"},
                               ref in ("world", "business", "science")),
                              (f"/api/v1/personas/{seg}", {"beat": "Changed"},
                               ref in ("ada-quill", "rex-ledger"))):
        before = snapshot()
        status = check(client.patch(path, json=body, headers=admin))
        if resolved:
            assert status == (200 if known else 404), (path, status)
        if status >= 400:
            assert snapshot() == before


# ----------------------------------------------------------------------------- subscriber bodies


@PROFILE
@given(body=SUBSCRIBE_BODIES)
def test_public_subscribe_bodies(client, world, body):
    before = snapshot()
    response = client.post("/api/v1/subscribers", json=body)
    status = check(response)
    # 401: the admin batch's `emails` or `webhook` without a key (they need an admin key).
    assert status in (202, 400, 401, 415, 422), status
    if status == 401:
        assert isinstance(body, dict) and {"emails", "webhook"} & set(body)
    if status == 202:
        assert response.get_json()["status"] == "accepted"
        assert isinstance(body, dict) and set(body) <= {"email", "cadence", "sections", "cast"}
    else:
        assert snapshot() == before


@PROFILE
@given(form=FORM_FIELDS)
def test_subscribe_form_fields(client, world, form):
    before = snapshot()
    response = client.post("/subscribe", data=form)
    status = check(response, machine=False)
    assert status in (200, 422), status
    if status == 422:
        assert snapshot() == before


# ----------------------------------------------------------------------------- filing bodies


@PROFILE
@given(body=st.one_of(FILING, VALID_FILING, JSON))
def test_filing_bodies(client, world, body):
    before = snapshot()
    response = client.post("/api/v1/stories", json=body, headers={"X-Desk-Key": world["admin"]})
    status = check(response)
    assert status in (201, 400, 422) or (status == 415 and body is None), status
    after = snapshot()
    if status == 201:
        story = response.get_json()
        assert story["rev"] == 1 and story["on_air"] is False
        assert response.headers["Location"].endswith(f"/api/v1/stories/{story['id']}")
    else:
        assert after == before


@PROFILE
@given(body=st.one_of(FILING, JSON))
def test_revision_bodies(client, world, body):
    piece_id = next(iter(world["aired"]))
    before = snapshot()
    response = client.patch(f"/api/v1/stories/{piece_id}", json=body, headers={"X-Desk-Key": world["admin"]})
    status = check(response)
    assert status in (200, 400, 422) or (status == 415 and body is None), status
    if status != 200:
        assert snapshot() == before


def test_bodies_nested_too_deeply_are_refused_not_crashed(app, client, world):
    deep = b"[" * 100_000 + b"]" * 100_000
    for path, key in (("/api/v1/stories", "admin"), ("/api/v1/subscribers", None),
                      ("/api/v1/config", "admin"), ("/api/v1/sections", "admin")):
        method = "PATCH" if path.endswith("config") else "POST"
        for body in (deep[:60_000], b'{"a":' * 10_000 + b"1" + b"}" * 10_000):
            headers = {"Content-Type": "application/json", **auth(world[key] if key else None, "X-Desk-Key")}
            assert check(client.open(path, method=method, data=body, headers=headers)) in (400, 413, 422)


def test_numbers_too_long_for_the_parser_are_a_400_and_write_nothing(client, world):
    big = "9" * 5000  # over Python's 4300-digit limit on int(str)
    for path, key, body in (
            ("/api/v1/subscribers", None, f'{{"email": "a@example.com", "cast": {big}}}'),
            ("/api/v1/subscribe", None, f'{{"email": "a@example.com", "cadence": {big}}}'),
            ("/api/v1/subscribers", "admin", f'{{"emails": ["a@example.com"], "cast": {big}}}'),
            ("/api/v1/stories", "admin", f'{{"headline": {big}}}'),
            ("/api/v1/config", "admin", f'{{"config": {{"n": {big}}}}}'),
            ("/api/v1/sections", "admin", f'{{"name": "x", "position": {big}}}')):
        method = "PATCH" if path.endswith("config") else "POST"
        before = snapshot()
        headers = {"Content-Type": "application/json", **auth(world[key] if key else None, "X-Desk-Key")}
        response = client.open(path, method=method, data=body, headers=headers)
        assert response.status_code == 400, (path, response.status_code)
        assert response.mimetype == "application/problem+json"
        assert "number in the body is too long" in response.get_json()["detail"]
        assert snapshot() == before


# ----------------------------------------------------------------------------- oEmbed


@PROFILE
@given(url=st.one_of(oembed_urls(), TEXT, st.text(min_size=2040, max_size=2060)),
       maxwidth=SIZES, maxheight=SIZES,
       format=st.one_of(st.none(), st.sampled_from(["json", "xml", "XML", "yaml", ""])))
def test_oembed_url_and_sizes(client, world, url, maxwidth, maxheight, format):
    query = {"url": url, "maxwidth": maxwidth, "maxheight": maxheight, "format": format}
    response = client.get("/oembed", query_string={k: v for k, v in query.items() if v is not None})
    unsupported = format is not None and format not in ("json", "xml", "")  # empty: the default, json
    if response.status_code == 501:
        # oEmbed 1.0's answer for a format the provider lacks, once the query is well-formed.
        assert unsupported and response.mimetype == "application/problem+json"
        return
    status = check(response)
    assert status in (200, 400, 404), status

    def integer(v):
        return int(v) if v is not None and v.isascii() and v.lstrip("-").isdigit() else None

    # A maxwidth above 640 is an upper bound the 640-pixel card meets; a positive one below 220
    # gets the 220-pixel card (and a maxheight below 200 the 200-pixel one); not positive: 400.
    if maxwidth is not None and (integer(maxwidth) is None or integer(maxwidth) < 1):
        assert status == 400
    if maxheight is not None and (integer(maxheight) is None or integer(maxheight) < 1):
        assert status == 400
    if unsupported:
        assert status == 400  # a malformed value is reported before the format
    if status == 200 and response.mimetype == "application/json":
        record = response.get_json()
        assert record["type"] == "rich" and record["width"] <= min(max(integer(maxwidth) or 640, 220), 640)
        if maxheight is not None:
            assert record["height"] <= max(integer(maxheight), 200)


# ----------------------------------------------------------------------------- webhook URLs


@PROFILE
@given(url=st.one_of(webhook_urls(), TEXT, st.text(min_size=1995, max_size=2005)))
def test_webhook_urls_as_in_production(app, client, world, url):
    """With WEBHOOK_ALLOW_PRIVATE off (production): only https to a public address is kept."""
    before = snapshot()
    app.config["WEBHOOK_ALLOW_PRIVATE"] = False
    try:
        response = client.post("/api/v1/subscribers", headers={"X-Desk-Key": world["admin"]},
                               json={"emails": ["hook@example.com"], "webhook": url})
    finally:
        app.config["WEBHOOK_ALLOW_PRIVATE"] = True
    status = check(response)
    assert status in (202, 422), status
    if status == 202:
        parts = urlsplit(url)
        assert parts.scheme == "https" and not parts.username, url
        address = ipaddress.ip_address(parts.hostname)  # names do not resolve here: only literals pass
        assert address.is_global, url
        assert response.get_json()["subscribers"][0]["webhook_secret"].startswith("whsec_")
    else:
        assert "webhook" in response.get_json()["errors"] or "emails" in response.get_json()["errors"]
        assert snapshot() == before
