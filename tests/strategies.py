"""Hypothesis strategies for tests/test_properties.py: what outside input looks like, valid and
not (query values, path segments, JSON and form bodies, URLs). Kept apart so the tests read as
properties."""
from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from urllib.parse import quote_from_bytes

from hypothesis import strategies as st

SECTIONS = ["World", "Business", "Science"]
PERSONAS = ["Ada Quill", "Rex Ledger"]


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


REFS = st.one_of(
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=250),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=2**31 - 2, max_value=10**30).map(str),  # past the 32-bit ids
    st.sampled_from(["rates-rise-again-0", "rates-rise-again-1", "secret-draft", "world", "ada-quill",
                     "Ada Quill", "World", "1", "2", "3", "4", "0", "²", "%00", "a/b", ".", ".."]),
)


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


FORM_FIELDS = st.dictionaries(st.sampled_from(["email", "cadence", "sections", "cast", "x"]),
                              st.one_of(EMAILISH, st.sampled_from(SECTIONS + ["weekly", "on"]), TEXT),
                              max_size=5)


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


HOSTS = st.sampled_from(["127.0.0.1", "10.0.0.8", "192.168.1.1", "169.254.169.254", "[::1]", "[fe80::1]",
                         "[::ffff:127.0.0.1]", "0.0.0.0", "localhost", "8.8.8.8", "93.184.216.34",
                         "[2001:4860:4860::8888]", "hooks.example.invalid", "user:pw@8.8.8.8", "", "[::1"])
PORTS = st.sampled_from(["", ":443", ":8443", ":0", ":65536", ":abc", ":"])


@st.composite
def webhook_urls(draw) -> str:
    scheme = draw(st.sampled_from(["https", "https", "http", "ftp", "file", "javascript", "HTTPS", ""]))
    path = draw(st.sampled_from(["/hook", "", "/a?b=c", "/%00"]))
    return f"{scheme}://{draw(HOSTS)}{draw(PORTS)}{path}"
