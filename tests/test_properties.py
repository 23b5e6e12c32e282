"""Property-based tests (hypothesis) of every parser of outside input (issue 7 item 2): `q`, `day`,
`since`, `limit`, ids and slugs, subscriber bodies, filing bodies, oEmbed `url` and sizes, and
webhook URLs. Every input gets a 2xx or a 4xx (a problem+json on machine routes, an HTML page on
reader pages), never a 5xx, and a 4xx writes nothing: a snapshot of every table's row count and
of the papers' versions (which every write moves) is taken before and after each example.
Where the contract says exactly which inputs are valid, that is checked too.

The examples run through the Flask test client against one newsroom built per test (the
`world` fixture). Hypothesis warns about function-scoped fixtures because they are not reset
between examples; here that is intended: examples only read, or their writes are expected and
checked, so the health check is suppressed in the "ci" profile. Profiles: `ci` (the default;
derandomized, so a CI failure reproduces) and `thorough` (HYPOTHESIS_PROFILE=thorough, random,
many more examples).
"""
from __future__ import annotations

import ipaddress
import json
import os
import string
from datetime import date, datetime, timedelta, timezone
from urllib.parse import quote, quote_from_bytes, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from extensions import db
from tests.factories import T0

settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile(
    "thorough", parent=settings.get_profile("ci"), max_examples=1000, derandomize=False)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PROBLEM_FIELDS = {"type", "title", "status", "detail"}
SECTIONS = ["World", "Business", "Science"]
PERSONAS = ["Ada Quill", "Rex Ledger"]


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


# ----------------------------------------------------------------------------- strategies

TEXT = st.text(st.characters(codec="utf-8"), max_size=140)
# Raw bytes, percent-encoded: what a client can put in a URL that is not UTF-8 at all.
RAW = st.binary(max_size=40).map(lambda b: quote_from_bytes(b, safe=""))
WORD = st.text(st.characters(codec="utf-8", exclude_categories=["Zs", "Zl", "Zp", "Cc"]),
               min_size=1, max_size=12)
SPACE = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u3000", "\x1c"])


@st.composite
def search_queries(draw) -> str:
    terms = draw(st.lists(st.one_of(WORD, st.sampled_from(["rates", "rise", "again", "OR", "*", '"',
                                                              "NEAR", "-x", "a:b", "(", "é"])),
                          max_size=6))
    out = draw(st.sampled_from(["", " "]))
    for term in terms:
        out += term + draw(SPACE)
    return out if draw(st.booleans()) else out.strip()


DAYS = st.one_of(
    st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)).map(date.isoformat),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}\Z"),
    st.sampled_from(["2026-11-01", "2026-02-30", "2026-1-1", "20261101", "2026-11-01\n",
                     "today", "0000-01-01", "2026-11-01T00:00:00Z", "..", "."]),
    st.text(max_size=24),
)
AWARE = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                     timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)),
                                                timezone(timedelta(hours=-8))]))
SINCE = st.one_of(
    AWARE.map(lambda d: d.isoformat()),
    st.datetimes().map(lambda d: d.isoformat()),  # naive: read as UTC
    AWARE.map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?)?(Z|[+-][0-9]{2}:[0-9]{2})?\Z"),
    st.sampled_from(["2026-11-01T12:00:60Z", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+01:00",
                     "2026-13-01", "yesterday", "", "2026-11-01T25:00:00Z"]),
    TEXT,
)
LIMITS = st.one_of(st.integers(min_value=-10**30, max_value=10**30).map(str),
                   st.integers(min_value=-5, max_value=250).map(str),
                   st.sampled_from(["", " 5", "5 ", "+5", "1e2", "0x10", "5.0", "٣", "NaN", "-0"]),
                   st.text(max_size=8))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12)


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

REFS = st.one_of(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=250),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=2**31 - 2, max_value=10**30).map(str),  # past the 32-bit ids
    st.sampled_from(["rates-rise-again-0", "rates-rise-again-1", "secret-draft", "world", "ada-quill",
                     "Ada Quill", "World", "1", "2", "3", "4", "0", "²", "%00", "a/b", ".", ".."]),
)


@PROFILE
@given(ref=REFS)
def test_ids_and_slugs_everywhere(client, world, ref):
    before = snapshot()
    seg = segment(ref)
    read, admin = {"X-Desk-Key": world["read"]}, {"X-Desk-Key": world["admin"]}
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
    for page in (f"/stories/{seg}", f"/sections/{seg}", f"/masthead/{seg}/avatar.svg", f"/cards/{seg}.png"):
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

EMAILISH = st.one_of(st.emails(), st.text(max_size=40),
                     st.from_regex(r"\A[a-z0-9.+]{1,12}@[a-z]{1,8}\.(com|org|example)\Z"),
                     st.sampled_from(["", " ", "a@b", "@example.com", "x@example.com\n", "a@@b.com",
                                      "a" * 321, "ÿ@example.com", "a@[127.0.0.1]"]))
SUBSCRIBE_BODIES = st.one_of(
    st.fixed_dictionaries({}, optional={
        "email": st.one_of(EMAILISH, JSON),
        "cadence": st.one_of(st.sampled_from(["instant", "daily", "weekly", "hourly", "DAILY", ""]), JSON),
        "sections": st.one_of(st.lists(st.sampled_from(SECTIONS + ["Sport", "", "world"]), max_size=5), JSON),
        "cast": st.one_of(st.booleans(), JSON),
        "emails": st.lists(EMAILISH, max_size=3),
        "webhook": st.just("https://hooks.example.com/x"),
        "extra": JSON,
    }),
    JSON,
)


@PROFILE
@given(body=SUBSCRIBE_BODIES)
def test_public_subscribe_bodies(client, world, body):
    before = snapshot()
    response = client.post("/api/v1/subscribers", json=body)
    status = check(response)
    assert status in (202, 400, 415, 422), status
    if status == 202:
        assert response.get_json()["status"] == "accepted"
        assert isinstance(body, dict) and set(body) <= {"email", "cadence", "sections", "cast"}
    else:
        assert snapshot() == before


FORM_FIELDS = st.dictionaries(st.sampled_from(["email", "cadence", "sections", "cast", "x"]),
                              st.one_of(EMAILISH, st.sampled_from(SECTIONS + ["weekly", "on"]), TEXT),
                              max_size=5)


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

FACT = st.fixed_dictionaries(
    {"statement": st.one_of(st.just("A fact."), TEXT), "source": st.one_of(st.just("Office"), TEXT),
     "instrument": st.one_of(st.just("Bulletin"), TEXT), "claim_key": st.one_of(st.just("k-1"), TEXT)},
    optional={"n": st.one_of(st.integers(min_value=-2, max_value=25), JSON), "extra": JSON})
PROSE = st.one_of(st.just("Rates rose[^1] again."), st.just("No markers."), TEXT,
                  st.lists(st.sampled_from(["word ", "[^1]", "[^2]", "[^0]", "[^99]", "[^", "\x00"]),
                           max_size=8).map("".join))
FILING = st.fixed_dictionaries({}, optional={
    "headline": st.one_of(st.just("A new headline"), TEXT, st.text(min_size=290, max_size=310)),
    "dek": st.one_of(st.just(""), TEXT, JSON),
    "prose": PROSE,
    "section": st.one_of(st.sampled_from(SECTIONS + ["Sport", ""]), JSON),
    "byline": st.one_of(st.sampled_from(PERSONAS + ["Nobody"]), JSON),
    "cited_facts": st.one_of(st.lists(FACT, max_size=3), JSON),
    "image": st.one_of(st.none(), st.just("https://cdn.example.com/x.jpg"), TEXT),
    "unknown": JSON,
})
VALID_FILING = st.fixed_dictionaries({
    "headline": st.just("A new headline"), "prose": st.just("Rates rose[^1] again."),
    "section": st.sampled_from(SECTIONS), "byline": st.sampled_from(PERSONAS),
    "cited_facts": st.lists(FACT, min_size=1, max_size=2)})


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
            headers = {"Content-Type": "application/json"}
            if key:
                headers["X-Desk-Key"] = world[key]
            assert check(client.open(path, method=method, data=body, headers=headers)) in (400, 413, 422)


# ----------------------------------------------------------------------------- oEmbed


@st.composite
def oembed_urls(draw) -> str:
    slug_or_id = draw(st.sampled_from(["rates-rise-again-0", "1", "secret-draft", "4", "nope", ""]))
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp", "javascript", ""]))
    host = draw(st.sampled_from(["localhost", "LOCALHOST", "localhost:80", "other.localhost", "[::1",
                                 "evil.example", ""]))
    path = draw(st.sampled_from(["/stories/", "/stories/", "/embed/", "/", "/stories//"]))
    tail = draw(st.sampled_from(["", "/", "?x=1", "#top", "/extra", "%2F"]))
    return f"{scheme}://{host}{path}{slug_or_id}{tail}"


SIZES = st.one_of(st.none(), st.integers(min_value=-10, max_value=10_000).map(str),
                  st.sampled_from(["220", "640", "219", "641", "200", "199", "abc", "", "1e3", "300.0"]),
                  st.text(max_size=6))


@PROFILE
@given(url=st.one_of(oembed_urls(), TEXT, st.text(min_size=2040, max_size=2060)),
       maxwidth=SIZES, maxheight=SIZES, format=st.one_of(st.none(), st.sampled_from(["json", "xml", "XML", "yaml", ""])))
def test_oembed_url_and_sizes(client, world, url, maxwidth, maxheight, format):
    query = {"url": url, "maxwidth": maxwidth, "maxheight": maxheight, "format": format}
    response = client.get("/oembed", query_string={k: v for k, v in query.items() if v is not None})
    status = check(response)
    assert status in (200, 400, 404), status

    def integer(v):
        return int(v) if v is not None and v.isascii() and v.lstrip("-").isdigit() else None

    if maxwidth is not None and (integer(maxwidth) is None or not 220 <= integer(maxwidth) <= 640):
        assert status == 400
    if maxheight is not None and (integer(maxheight) is None or integer(maxheight) < 200):
        assert status == 400
    if format is not None and format not in ("json", "xml"):
        assert status == 400
    if status == 200 and response.mimetype == "application/json":
        record = response.get_json()
        assert record["type"] == "rich" and record["width"] <= (integer(maxwidth) or 640)
        if maxheight is not None:
            assert record["height"] <= integer(maxheight)


# ----------------------------------------------------------------------------- webhook URLs

HOSTS = st.sampled_from(["127.0.0.1", "10.0.0.8", "192.168.1.1", "169.254.169.254", "[::1]", "[fe80::1]",
                         "[::ffff:127.0.0.1]", "0.0.0.0", "localhost", "8.8.8.8", "93.184.216.34",
                         "[2001:4860:4860::8888]", "hooks.example.invalid", "user:pw@8.8.8.8", "", "[::1"])
PORTS = st.sampled_from(["", ":443", ":8443", ":0", ":65536", ":abc", ":"])


@st.composite
def webhook_urls(draw) -> str:
    scheme = draw(st.sampled_from(["https", "https", "http", "ftp", "file", "javascript", "HTTPS", ""]))
    path = draw(st.sampled_from(["/hook", "", "/a?b=c", "/%00"]))
    return f"{scheme}://{draw(HOSTS)}{draw(PORTS)}{path}"


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
