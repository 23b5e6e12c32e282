"""Figures that match their facts (docs/CORRECTIONS.md "Figures"): every number with a unit or a
percent sign in a piece's headline, dek and prose should be a number some cited fact states.

    unsupported(draft_fields) -> [{"field", "start", "end", "figure"}]

A figure is a number (digits, with thousands grouped by `,` or by a space, a no-break, thin or
narrow no-break space, and a `.` decimal part) with a unit after it
(`32 metres`, `4.5%`, `1.2 per cent`, `12 km`, `3 tonnes`, `20°C`, `5 million`) or a currency
sign before it (`$40,000`, `€3.5bn`). It is supported when its value appears as a number in
the statement of one of the piece's cited facts (`1,200`, `1 200` and `1200` are one value). Numbers
without a unit (dates, counts, scores, `[^N]` markers) are not judged: the check is for the
measures readers quote, and is a help to the desk, not a proof.
"""
from __future__ import annotations

import re
from functools import lru_cache

UNITS = (
    r"%|per\s?cent|percent|percentage points?|points?|"
    r"metres?|meters?|kilometres?|kilometers?|centimetres?|millimetres?|km²|km2|km|cm|mm|m|miles?|feet|ft|"
    r"square (?:kilo)?metres?|hectares?|ha|acres?|"
    r"tonnes?|tons?|kilograms?|kg|grams?|g|litres?|liters?|cubic metres?|"
    r"°C|°F|degrees?(?: Celsius| Fahrenheit)?|"
    r"kWh|MWh|GWh|MW|GW|kW|km/h|mph|knots?|"
    r"million|billion|trillion|bn|m(?=\b)|"
    r"minutes?|hours?|days?|weeks?|months?|years?|seconds?"
)
# Thousands grouped by a space as typography groups them: a space, a no-break space, a thin
# space or a narrow no-break space (SI style, `12 500`).
GROUP_SPACES = " \u00a0\u2009\u202f"
NUMBER = (rf"\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d{{1,3}}(?:[{GROUP_SPACES}]\d{{3}})+(?![\d,])(?:\.\d+)?"
          r"|\d+(?:\.\d+)?")
FIGURE = re.compile(
    rf"(?P<currency>[$€£¥])\s?(?P<cnum>{NUMBER})(?:\s?(?:million|billion|trillion|bn|m)\b)?"
    rf"|(?<![\w^.,])(?P<num>{NUMBER})\s?(?P<unit>{UNITS})(?![\w²])",
    re.IGNORECASE,
)
ANY_NUMBER = re.compile(NUMBER)
DIGIT = re.compile(r"\d")
FIELDS = ("headline", "dek", "prose")


def value(text: str) -> float:
    """The numeric value of a number as written: '1,200' and '1 200' (any GROUP_SPACES)
    -> 1200.0, '4.50' -> 4.5."""
    return float(re.sub(f"[,{GROUP_SPACES}]", "", text))


def stated(facts: list[dict]) -> set[float]:
    """Every number the facts' statements state: a space-grouped one (`12 500`) as one number,
    and as its groups too (a statement may set two numbers side by side: `in 19 120 died`)."""
    found: set[float] = set()
    for fact in facts:
        found |= _numbers(str(fact.get("statement", "")))
    return found


# Short texts (statements, headlines, deks) are read once and remembered: a writer checks one
# set of facts against several wordings in a row (demo/content.py tries each way of saying a
# headline, and cites one fact more until its figures are stated), so the same statements are
# read again and again. Longer texts (prose) are read each time, so the memo stays small.
MEMO_CHARS = 400


def _numbers(statement: str) -> frozenset[float]:
    return _numbers_memo(statement) if len(statement) <= MEMO_CHARS else _read_numbers(statement)


def _read_numbers(statement: str) -> frozenset[float]:
    found = set()
    for number in ANY_NUMBER.findall(statement):
        found.add(value(number))
        found.update(value(part) for part in re.split(f"[{GROUP_SPACES}]", number))
    return frozenset(found)


def _figures_in(text: str) -> tuple[tuple[int, int, str, float], ...]:
    """(start, end, figure as written, its value) of each figure in `text`, in order."""
    return _figures_memo(text) if len(text) <= MEMO_CHARS else _read_figures(text)


def _read_figures(text: str) -> tuple[tuple[int, int, str, float], ...]:
    if not DIGIT.search(text):  # every figure has a digit (most headlines and deks have none)
        return ()
    return tuple((match.start(), match.end(), match.group(0), value(match["num"] or match["cnum"]))
                 for match in FIGURE.finditer(text))


_numbers_memo = lru_cache(maxsize=4096)(_read_numbers)
_figures_memo = lru_cache(maxsize=4096)(_read_figures)


def figures(text: str) -> list[re.Match]:
    """The figures (numbers with a unit or a currency sign) in `text`, in order."""
    return list(FIGURE.finditer(text))


def unsupported(fields: dict, facts: list[dict]) -> list[dict]:
    """The figures of `fields` (headline, dek, prose) that no fact's statement states, in
    field order: `{"field", "start", "end" (character offsets in the field), "figure" (as
    written)}`."""
    known = stated(facts)
    found = []
    for name in FIELDS:
        for start, end, figure, number in _figures_in(str(fields.get(name) or "")):
            if number not in known:
                found.append({"field": name, "start": start, "end": end, "figure": figure})
    return found
