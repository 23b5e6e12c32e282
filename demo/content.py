"""The demo newsroom's text corpus: sections, personas and story kits that `demo.seed`
turns into invented, realistic-sounding news (docs/API.md "demo data").

Every place, company, team and person here is fictional, so no demo piece can be mistaken for
a claim about the real world. The story kits live in `demo.kits`.
`compose(rng, section)` is pure: the same `random.Random` state gives the same piece, so
`flask seed-demo` writes the same text on every run.
"""
from __future__ import annotations

import random

from demo.kits import KITS
from services.newsroom.filing import slugify

# (name, description), in the paper's order.
SECTIONS = [
    ("World", "Capitals, borders and the people between them."),
    ("Politics", "Parliaments, councils and the budgets they fight over."),
    ("Business", "Markets, companies and the money behind the headlines."),
    ("Science", "Labs, expeditions and what the data says."),
    ("Culture", "Stages, screens, galleries and books."),
    ("Sport", "Fixtures, results and the seasons that make them."),
]

# Every byline is a declared AI persona, and its bio says so; `sections` decides who files where.
PERSONAS = [
    {"name": "Ada Quill", "title": "Foreign Correspondent", "beat": "World affairs and diplomacy",
     "sections": ["World"],
     "bio": "Ada Quill is an AI persona of the desk. She reads treaties, trade figures and "
            "embassy statements so readers do not have to, and cites every number she uses."},
    {"name": "Mira Vance", "title": "Political Editor", "beat": "Parliaments, councils and budgets",
     "sections": ["Politics"],
     "bio": "Mira Vance is an AI persona of the desk covering votes, budgets and the rules "
            "behind them. Every claim she files links to the record it came from."},
    {"name": "Rex Ledger", "title": "Economics Correspondent", "beat": "Markets and companies",
     "sections": ["Business"],
     "bio": "Rex Ledger is an AI persona of the desk. He covers earnings, prices and jobs, "
            "and shows his working in numbered footnotes."},
    {"name": "Theo Lumen", "title": "Science Writer", "beat": "Research, climate and space",
     "sections": ["Science"],
     "bio": "Theo Lumen is an AI persona of the desk who reports on studies and expeditions, "
            "citing the paper or dataset behind each finding."},
    {"name": "Juno Reel", "title": "Culture and Sport Writer", "beat": "Arts, screens and sport",
     "sections": ["Culture", "Sport"],
     "bio": "Juno Reel is an AI persona of the desk covering premieres, prizes and the results "
            "table, with every figure footnoted."},
]

COUNTRIES = ["Valmora", "Estrenia", "Karsland", "Norvaine", "Tavisca", "Marovia", "Quellen",
             "Ostmark Isles"]
CITIES = ["Port Ardent", "Kestrel Bay", "Aldermoor", "Brightwater", "Carrow", "Lindenhall",
          "Wexmouth", "Fenwick Cross"]
COMPANIES = ["Halcyon Freight", "Northwind Grid", "Brasswell Foods", "Orrery Labs",
             "Tidewater Rail", "Quillon Pharma", "Silverline Telecom", "Cobalt & Finch"]
FIRST = ["Lena", "Tomas", "Priya", "Odile", "Marcus", "Ines", "Kwame", "Sofia", "Henrik", "Amara",
         "Dario", "Yuki"]
LAST = ["Castell", "Oyelaran", "Brandt", "Moreau", "Vasquez", "Lindqvist", "Achterberg",
        "Nakamura", "Okafor", "Reyes", "Halloran", "Strand"]
TEAMS = ["Port Ardent Mariners", "Kestrel Bay Rovers", "Aldermoor Athletic", "Brightwater Comets",
         "Carrow Town", "Lindenhall Harriers", "Wexmouth United", "Fenwick Cross Wanderers"]
INSTITUTES = ["the Aldermoor Institute of Technology", "Kestrel Bay University",
              "the Norvaine Polar Survey", "the Valmora Space Agency", "the Estrenian Marine Lab"]
VENUES = ["the Carrow Playhouse", "the Brightwater Festival", "the Lindenhall Gallery",
          "the Port Ardent Film Week", "the Wexmouth Book Fair"]
QUARTERS = ["first", "second", "third", "fourth"]

ATTRIBUTIONS = [", according to {source}", ", {source} said", ", figures from {source} show",
                ", {source} reported"]
REPEAT_ATTRIBUTIONS = ["", ", it added", ", the same release shows"]

CLOSERS = [
    "The desk will update this piece as new figures are published.",
    "Further details are expected in the coming days.",
    "Officials said a fuller statement would follow.",
]


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _other(pool: list[str], taken: str, rng: random.Random) -> str:
    return rng.choice([item for item in pool if item != taken])


def _another_person(taken: str, rng: random.Random) -> str:
    while (name := _person(rng)) == taken:
        pass
    return name


def _int(low: int, high: int):
    return lambda slots, rng: str(rng.randint(low, high))


def _dec(low: float, high: float):
    return lambda slots, rng: f"{rng.uniform(low, high):.1f}"


def _money(slots, rng: random.Random) -> str:
    if rng.random() < 0.6:
        return f"${rng.randint(12, 980) / 10:.1f}m"
    return f"${rng.randint(11, 95) / 10:.1f}bn"


def _score(slots, rng: random.Random) -> str:
    goals = rng.randint(1, 4)
    return f"{goals}-{rng.randint(0, goals - 1)}"


# How each `{slot}` is drawn; a slot may depend on others (country2 differs from country).
SLOT_MAKERS = {
    "country": lambda s, rng: rng.choice(COUNTRIES),
    "country2": lambda s, rng: _other(COUNTRIES, s["country"], rng),
    "city": lambda s, rng: rng.choice(CITIES),
    "city2": lambda s, rng: _other(CITIES, s["city"], rng),
    "company": lambda s, rng: rng.choice(COMPANIES),
    "company2": lambda s, rng: _other(COMPANIES, s["company"], rng),
    "team": lambda s, rng: rng.choice(TEAMS),
    "team2": lambda s, rng: _other(TEAMS, s["team"], rng),
    "person": lambda s, rng: _person(rng),
    "person2": lambda s, rng: _another_person(s["person"], rng),
    "institute": lambda s, rng: rng.choice(INSTITUTES),
    "venue": lambda s, rng: rng.choice(VENUES),
    "quarter": lambda s, rng: rng.choice(QUARTERS),
    "place": lambda s, rng: rng.choice(["second", "third", "fourth", "fifth", "sixth", "ninth"]),
    "n": _int(3, 40), "n3": _int(7, 12),
    "n2": lambda s, rng: str(rng.randint(int(s["n3"]) // 2 + 1, int(s["n3"]) - 1)),  # a majority
    "big": lambda s, rng: f"{rng.randint(2_000, 95_999):,}",
    "big_small": _int(120, 900), "cents": _int(4, 95), "hours": _int(9, 31),
    "months": _int(3, 18), "depth": _int(60, 240), "alt": _int(480, 820),
    "mins": _int(4, 9), "mins2": _int(10, 14), "entries": _int(140, 620),
    "runtime": _int(71, 128), "votes_for": _int(21, 40),
    "votes_against": lambda s, rng: str(rng.randint(5, int(s["votes_for"]) - 3)),
    "pct": _dec(1.2, 18.0), "pct2": _dec(1.1, 9.0), "small_pct": _dec(0.5, 6.0),
    "share": _dec(51.0, 68.0), "turnout": _dec(48.0, 81.0), "temp": _dec(0.3, 2.4),
    "rate": lambda s, rng: f"{rng.randint(4, 22) / 4:.2f}",
    "money": _money, "money_small": lambda s, rng: f"${rng.randint(10, 90) * 1000:,}",
    "score": _score,
}


class _Slots(dict):
    """One piece's slot values, drawn on first use (a kit uses a handful of the slots), then
    fixed, so a piece's headline, prose and footnotes name the same places and numbers."""

    def __init__(self, rng: random.Random):
        super().__init__()
        self.rng = rng

    def __missing__(self, name: str) -> str:
        value = self[name] = SLOT_MAKERS[name](self, self.rng)
        return value


def _cite(statement: str, source: str, n: int, rng: random.Random, *, repeat: bool) -> str:
    """A prose sentence carrying fact `n`'s statement, attributed (briefly when the previous
    fact had the same source), with its `[^n]` marker."""
    body = statement.rstrip(".")
    attribution = rng.choice(REPEAT_ATTRIBUTIONS if repeat else ATTRIBUTIONS).format(source=source)
    return f"{body}{attribution}[^{n}]."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def compose(rng: random.Random, section: str) -> dict:
    """One invented piece for `section`: {headline, dek, prose, cited_facts}.

    `prose` is 2-4 Markdown paragraphs; facts are numbered 1..k (k = 2-4) in the order the prose
    cites them, and every `[^n]` marker in it points at fact n. Deterministic given `rng`.
    """
    kit = rng.choice(KITS[section])
    slots = _Slots(rng)
    k = rng.randint(2, len(kit["facts"]))
    facts = []
    for statement, source, instrument, key in kit["facts"][:k]:
        source_text = source.format_map(slots)
        facts.append({"statement": statement.format_map(slots), "source": source_text,
                      "instrument": instrument.format_map(slots),
                      "claim_key": f"{slugify(source_text.removeprefix('the '), 40)}/{key}"})
    cites = [_cite(f["statement"], f["source"], n, rng,
                   repeat=n > 1 and f["source"] == facts[n - 2]["source"])
             for n, f in enumerate(facts, start=1)]
    colour = [c.format_map(slots) for c in kit["colour"]]
    quote = (f"\u201c{kit['quote'].format_map(slots)},\u201d "
             f"said {kit['speaker'].format_map(slots)}.")
    paragraphs = [f"{cites[0]} {colour[0]}", f"{cites[1]} {quote}"]
    if k >= 3:
        paragraphs.append(" ".join([*cites[2:], colour[1]]))
    if k < 4 or rng.random() < 0.5:
        paragraphs.append(rng.choice(CLOSERS))
    return {
        "headline": _capital(kit["headline"].format_map(slots)),
        "dek": kit["dek"].format_map(slots),
        "prose": "\n\n".join(_capital(p) for p in paragraphs),
        "cited_facts": [{**f, "statement": _capital(f["statement"])} for f in facts],
    }
