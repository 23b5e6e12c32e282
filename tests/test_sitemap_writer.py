"""The sitemap's urlset writer joins strings; lxml's incremental writer, which it replaced for
speed, is the oracle: for any URL text (quotes, ampersands, angle brackets, carriage returns,
characters XML cannot carry, any Unicode) and any aware instant, the bytes are the same, and
they parse back to the same locations and lastmods."""
from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from models.clock import rfc3339
from services.rendering import sitemaps
from services.rendering.xmltext import xml_safe

NS = sitemaps.SITEMAP_NS


def lxml_urlset(entries: list[sitemaps.Entry]) -> bytes:
    """The writer as it was: lxml's xmlfile, element by element."""
    out = io.BytesIO()
    with etree.xmlfile(out, encoding="UTF-8") as xf:
        xf.write_declaration()
        with xf.element(f"{{{NS}}}urlset", nsmap={None: NS}):
            for entry in entries:
                with xf.element(f"{{{NS}}}url"):
                    with xf.element(f"{{{NS}}}loc"):
                        xf.write(xml_safe(entry.loc))
                    if entry.lastmod is not None:
                        with xf.element(f"{{{NS}}}lastmod"):
                            xf.write(rfc3339(entry.lastmod))
    return out.getvalue()


instants = st.one_of(st.none(), st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)),
                               timezone(timedelta(hours=-8))])))
entries = st.lists(st.builds(sitemaps.Entry, st.text(), instants), max_size=8)


@settings(max_examples=300, deadline=None)
@given(entries)
def test_the_urlset_is_lxmls_byte_for_byte(found):
    assert sitemaps._urlset(found) == lxml_urlset(found)


def test_the_urlset_parses_back_to_its_entries():
    found = [sitemaps.Entry("https://demo.example/stories/a&b<c>\r\"quoted\" 'é' \x01", None),
             sitemaps.Entry("https://demo.example/stories/plain",
                            datetime(2026, 11, 29, 12, 0, 0, 250, tzinfo=timezone.utc))]
    root = etree.fromstring(sitemaps._urlset(found))
    locs = [el.text for el in root.iter(f"{{{NS}}}loc")]
    assert locs == ["https://demo.example/stories/a&b<c>\r\"quoted\" 'é' ", "https://demo.example/stories/plain"]
    assert [el.text for el in root.iter(f"{{{NS}}}lastmod")] == ["2026-11-29T12:00:00.000250Z"]
    assert sitemaps._urlset([]) == lxml_urlset([])
