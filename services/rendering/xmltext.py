"""Text made fit for XML 1.0, for every XML answer: the feeds, the sitemaps, oEmbed's XML form.

XML 1.0 forbids most C0 control characters, lone surrogates and U+FFFE/U+FFFF even as
character references, so an escaping serialiser cannot carry them: lxml raises, ElementTree
writes a document no parser accepts. Untrusted text passes through `xml_safe` first.
"""
from __future__ import annotations

import re

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_safe(text: str | None) -> str:
    """`text` without the characters XML 1.0 cannot carry ('' for None).
    `'a\\x01b\\x0bc'` -> `'abc'`; tab, newline and carriage return are kept."""
    return _NOT_XML.sub("", text or "")
