"""The cheaper forms of the cold path give exactly what the forms they replace gave (docs/PERFORMANCE.md
"The cold story's instructions"): `headers.put` what one werkzeug set per header then one pop per
name do, `PaperDeskResponse.get_wsgi_response` what werkzeug's does, `UTCDateTime` the datetime
`replace(tzinfo=utc)` made, `rfc3339` the same text remembered as computed."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from flask import Response
from hypothesis import given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import Headers
from werkzeug.test import EnvironBuilder

from app import PaperDeskResponse
from models.clock import rfc3339
from models.types import UTCDateTime
from web.headers import put

NAMES = ("Vary", "vary", "ETag", "Content-Length", "Retry-After", "X-RateLimit-Limit", "x-ratelimit-limit",
         "X-RateLimit-Remaining", "Location", "Content-Type")
header_lists = st.lists(st.tuples(st.sampled_from(NAMES), st.text("abc 12", max_size=4)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(before=header_lists,
       pairs=st.lists(st.tuples(st.sampled_from(NAMES), st.text("xyz", max_size=3)), max_size=4,
                      unique_by=lambda pair: pair[0].lower()),
       drop=st.lists(st.sampled_from(NAMES), max_size=2, unique_by=str.lower))
def test_put_is_one_set_per_pair_then_one_pop_per_name(before, pairs, drop):
    expected, got = Headers(before), Headers(before)
    for name, value in pairs:
        expected[name] = value
    for name in drop:
        expected.pop(name, None)
    put(got, pairs, tuple(drop))
    assert got.to_wsgi_list() == expected.to_wsgi_list()


def _sent(response_class, status: int, headers: list, body: bytes | None, method: str = "GET"):
    environ = EnvironBuilder(path="/a/b", method=method, base_url="http://localhost").get_environ()
    response = response_class(body, status=status, headers=headers)
    app_iter, status_line, sent = response.get_wsgi_response(environ)
    return status_line, sent, b"".join(app_iter)


@settings(max_examples=300, deadline=None)
@given(status=st.sampled_from([200, 201, 204, 301, 302, 304, 101, 404, 500]),
       headers=st.lists(st.tuples(st.sampled_from(["Location", "Content-Location", "content-length", "ETag",
                                                   "Vary", "Content-Type"]),
                                  st.sampled_from(["/x", "ü/y", "12", "0", "a"])), max_size=4),
       body=st.one_of(st.none(), st.binary(max_size=5)), method=st.sampled_from(["GET", "HEAD"]))
def test_an_answer_is_sent_as_werkzeug_sends_it(status, headers, body, method):
    assert _sent(PaperDeskResponse, status, headers, body, method) == _sent(Response, status, headers, body, method)


def test_an_answer_with_nothing_to_fix_is_sent_from_its_own_headers():
    response = PaperDeskResponse(b"{}", status=200, headers=[("ETag", '"a"')], mimetype="application/json")
    environ = EnvironBuilder(path="/").get_environ()
    _, _, sent = response.get_wsgi_response(environ)
    assert sent == list(response.headers) == [("ETag", '"a"'), ("Content-Type", "application/json"),
                                              ("Content-Length", "2")]


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)), st.sampled_from([0, 1]))
def test_a_time_read_is_the_aware_utc_datetime_replace_made(value, fold):
    value = value.replace(fold=fold)
    read, expected = UTCDateTime().process_result_value(value, None), value.replace(tzinfo=timezone.utc)
    assert (read, read.fold, read.tzinfo, type(read), repr(read)) == \
        (expected, expected.fold, expected.tzinfo, type(expected), repr(expected))


def test_rfc3339_remembered_per_instant_whatever_its_zone():
    moment = datetime(2026, 11, 1, 12, 0, 0, 250000, tzinfo=timezone.utc)
    elsewhere = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert rfc3339(moment) == rfc3339(elsewhere) == "2026-11-01T12:00:00.250000Z"
    assert rfc3339(elsewhere + timedelta(seconds=1)) == "2026-11-01T12:00:01.250000Z"
    for _ in range(2):  # a naive datetime raises every time (never remembered)
        try:
            rfc3339(datetime(2026, 11, 1))
        except ValueError:
            pass
        else:
            raise AssertionError("a naive datetime gave RFC 3339 text")
