"""The demo newsroom's text corpus: sections, personas and story kits that `demo.seed`
turns into invented, realistic-sounding news (docs/API.md "demo data").

Every place, company, team and person here is fictional, so no demo piece can be mistaken for
a claim about the real world. The story kits live in `demo.kits`.

The pieces of one paper share one world (`World`): Valmora is the paper's home country and every
city belongs to one country; an office (a central bank governor, a company's chief executive)
has one holder; a standing figure (the Bank of Valmora's rate, a city's unemployment, a
country's debt) has one value, derived from its subject, wherever it is cited; each person
appears in one story only, unless they hold an office; and a story's subject (`once`: one rate
decision, one election per country) runs once. So no two pieces repeat a headline or contradict
each other's numbers. `compose(rng, section, world)` is deterministic: the same `random.Random`
state and world give the same piece, so `flask seed-demo` writes the same text on every run.
"""
from __future__ import annotations

import hashlib
import random

from demo.kits import KITS
from services.newsroom import figures
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

# Valmora is the paper's home country (its league, its central bank); each city is in one country.
HOME = "Valmora"
GEOGRAPHY = {
    "Valmora": ["Port Ardent", "Kestrel Bay", "Aldermoor", "Brightwater", "Carrow", "Lindenhall",
                "Wexmouth"],
    "Estrenia": ["Fenwick Cross", "Saltmere"],
    "Karsland": ["Dunhollow", "Isterby"],
    "Norvaine": ["Vell", "Skerra"],
    "Tavisca": ["Corrabay", "Menlo Reach"],
    "Marovia": ["Ambridge"],
    "Quellen": ["Oster"],
    "Ostmark Isles": ["Halm"],
}
COUNTRIES = list(GEOGRAPHY)
CITIES = [city for cities in GEOGRAPHY.values() for city in cities]
COUNTRY_OF = {city: country for country, cities in GEOGRAPHY.items() for city in cities}
COMPANIES = ["Halcyon Freight", "Northwind Grid", "Brasswell Foods", "Orrery Labs",
             "Tidewater Rail", "Quillon Pharma", "Silverline Telecom", "Cobalt & Finch"]
FIRST = ["Lena", "Tomas", "Priya", "Odile", "Marcus", "Ines", "Kwame", "Sofia", "Henrik", "Amara",
         "Dario", "Yuki", "Elif", "Rowan", "Nadia", "Casimir", "Mireille", "Joss", "Talia", "Anselm"]
LAST = ["Castell", "Oyelaran", "Brandt", "Moreau", "Vasquez", "Lindqvist", "Achterberg",
        "Nakamura", "Okafor", "Reyes", "Halloran", "Strand", "Devereux", "Marsh", "Kowalczyk",
        "Abara", "Solberg", "Quint", "Ferreira", "Hale"]
# The league's clubs, each from a home city (the team's name starts with it).
TEAMS = ["Port Ardent Mariners", "Kestrel Bay Rovers", "Aldermoor Athletic", "Brightwater Comets",
         "Carrow Town", "Lindenhall Harriers", "Wexmouth United"]
INSTITUTES = ["the Aldermoor Institute of Technology", "Kestrel Bay University",
              "the Norvaine Polar Survey", "the Valmora Space Agency", "the Estrenian Marine Lab"]
VENUES = ["the Carrow Playhouse", "the Brightwater Festival", "the Lindenhall Gallery",
          "the Port Ardent Film Week", "the Wexmouth Book Fair"]
# What a citizens' assembly may be asked about, and what a survey may find.
TOPICS = ["the harbour front", "night buses", "school meals", "the old town's future", "flood defences",
          "street trees"]
CREATURES = ["sea slug", "shrimp", "sponge", "lanternfish", "sea star", "soft coral"]
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]

ATTRIBUTIONS = [", according to {source}", ", {source} said", ", figures from {source} show",
                ", {source} reported"]
REPEAT_ATTRIBUTIONS = ["", ", it added", ", the same release shows"]

CLOSERS = [
    "The desk will update this piece as new figures are published.",
    "Further details are expected in the coming days.",
    "Officials said a fuller statement would follow.",
]
# How many times `compose` draws again when a story's subject has run already.
DRAWS = 24


def standing(name: str, subject: str, low: float, high: float, places: int = 1) -> str:
    """A standing figure of the world: `name` (e.g. "jobless") of `subject` (e.g. a city), a
    number in [low, high] with `places` decimals, the same on every call (derived from the
    SHA-256 of name and subject, not from any seed)."""
    digest = int(hashlib.sha256(f"{name}|{subject}".encode()).hexdigest()[:12], 16)
    value = low + (high - low) * digest / 16 ** 12
    return f"{value:.{places}f}"


class World:
    """What one paper's pieces have said so far: subjects that ran (`once` keys), people named,
    and who holds each office. `compose` reads and extends it, so a paper's pieces agree."""

    def __init__(self):
        self.subjects: set[str] = set()
        self.people: set[str] = set()
        # Headlines and deks already printed: no two pieces of a paper share either.
        self.headlines: set[str] = set()
        self.deks: set[str] = set()
        self.offices: dict[str, str] = {}
        # Sections whose subjects ran out (the bulk path): draw once there, not DRAWS times.
        self.exhausted: set[str] = set()

    def new_person(self, rng: random.Random, taken: set[str] = frozenset()) -> str:
        """A name nobody in this world has yet (any name once most of the 400 are used)."""
        tries = 50 if len(self.people) < len(FIRST) * len(LAST) * 3 // 4 else 0
        for _ in range(tries):
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            if name not in self.people and name not in taken:
                return name
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"

    def holder(self, office: str, rng: random.Random, taken: set[str]) -> str:
        """The one holder of `office` ("governor", "ceo/Halcyon Freight"), named on first use."""
        if office not in self.offices:
            self.offices[office] = self.new_person(rng, taken)
        return self.offices[office]


def _int(low: int, high: int):
    return lambda s, rng: str(rng.randint(low, high))


def _dec(low: float, high: float):
    return lambda s, rng: f"{rng.uniform(low, high):.1f}"


def _money(s, rng: random.Random) -> str:
    if rng.random() < 0.6:
        return f"${rng.randint(12, 980) / 10:.1f}m"
    return f"${rng.randint(11, 95) / 10:.1f}bn"


def _score(s, rng: random.Random) -> str:
    goals = rng.randint(1, 4)
    return f"{goals}-{rng.randint(0, goals - 1)}"


def _city_in(country: str, rng: random.Random) -> str:
    return rng.choice(GEOGRAPHY[country])


def _country(s, rng):
    # A city named first decides the country; otherwise any country, then a city in it.
    return COUNTRY_OF[s["city"]] if "city" in s else rng.choice(COUNTRIES)


def _city(s, rng):
    return _city_in(s["country"], rng)


def _team_city(s, rng):
    return next(city for city in GEOGRAPHY[HOME] if s["team"].startswith(city))


# Offices: slot -> (office, the slot naming whose office it is, or None for a national one).
OFFICES = {
    "r_governor": ("governor of the Bank of Valmora", None),
    "r_hauliers": ("hauliers' association chair", "city"),
    "r_civil": ("civil protection chief", "country"),
    "r_negotiator": ("fisheries negotiator", "country"),
    "r_transport": ("transport lead", "home_city"),
    "r_planning": ("planning councillor", "home_city"),
    "r_housing": ("housing minister", "country"),
    "r_ceo": ("chief executive", "company"),
    "r_chair": ("chair", "company"),
    "r_project": ("project scientist", "institute"),
    "r_glaciologist": ("glaciologist", "country"),
    "r_director": ("director", "venue"),
    "r_archivist": ("film archivist", None),
    "r_museum": ("museum director", "home_city"),
    "r_captain": ("captain", "team"),
    "r_bid": ("regional games bid lead", None),
}

# How each `{slot}` is drawn, from the piece's slots `s` and its `rng`; a slot may depend on
# others (country2 differs from country). Standing figures depend on their subject only.
SLOT_MAKERS = {
    # entities
    "country": _country,
    "country2": lambda s, rng: rng.choice([c for c in COUNTRIES if c != s["country"]]),
    "city": _city,
    "home_city": lambda s, rng: rng.choice(GEOGRAPHY[HOME]),
    "abroad_country": lambda s, rng: rng.choice([c for c in COUNTRIES if c != HOME]),
    "abroad_city": lambda s, rng: _city_in(s["abroad_country"], rng),
    "company": lambda s, rng: rng.choice(COMPANIES),
    "company2": lambda s, rng: rng.choice([c for c in COMPANIES if c != s["company"]]),
    "team": lambda s, rng: rng.choice(TEAMS),
    "team2": lambda s, rng: rng.choice([t for t in TEAMS if t != s["team"]]),
    "team_city": _team_city,
    "institute": lambda s, rng: rng.choice(INSTITUTES),
    "venue": lambda s, rng: rng.choice(VENUES),
    "topic": lambda s, rng: rng.choice(TOPICS),
    "creature": lambda s, rng: rng.choice(CREATURES),
    # standing figures: one value per subject in the whole world
    "rate": lambda s, rng: f"{int(standing('rate', HOME, 12, 19, 0)) / 4:.2f}",
    "cpi": lambda s, rng: standing("cpi", HOME, 2.1, 4.2),
    "wages": lambda s, rng: standing("wages", HOME, 4.3, 6.0),
    "debt": lambda s, rng: standing("debt", s["abroad_country"], 38.0, 96.0),
    "rents": lambda s, rng: standing("rents", s["city"], 2.0, 9.5),
    "jobless": lambda s, rng: standing("jobless", s["home_city"], 3.1, 9.8),
    "port_growth": lambda s, rng: standing("port", s["home_city"], 1.2, 8.5),
    "ocean_temp": lambda s, rng: standing("ocean", s["country"], 0.3, 1.1),
    "summer_temp": lambda s, rng: standing("summer", s["country"], 1.1, 2.6),
    "record_mins": lambda s, rng: str(int(standing("marathon", HOME, 8, 11, 0))),
    "last_place": lambda s, rng: ORDINALS[TEAMS.index(s["team"]) % len(ORDINALS)],
    # per-story numbers
    "n": _int(3, 40), "n3": _int(7, 12),
    "n2": lambda s, rng: str(rng.randint(int(s["n3"]) // 2 + 1, int(s["n3"]) - 1)),  # a majority
    "big": lambda s, rng: f"{rng.randint(2_000, 95_999):,}",
    "big_small": _int(120, 900), "cents": _int(4, 95), "hours": _int(9, 31),
    "months": _int(3, 18), "depth": _int(60, 240), "alt": _int(480, 820),
    "mins": lambda s, rng: str(rng.randint(4, int(s["record_mins"]) - 1)),  # under the record
    "entries": _int(140, 620), "runtime": _int(71, 128), "votes_for": _int(21, 40),
    "votes_against": lambda s, rng: str(rng.randint(5, int(s["votes_for"]) - 3)),
    "pct": _dec(1.2, 18.0), "pct2": _dec(1.1, 9.0), "small_pct": _dec(0.5, 6.0),
    "share": _dec(51.0, 68.0), "turnout": _dec(48.0, 81.0),
    "money": _money, "money_small": lambda s, rng: f"${rng.randint(10, 90) * 1000:,}",
    "score": _score,
}


class _Slots(dict):
    """One piece's slot values, drawn on first use (a kit uses a handful of the slots), then
    fixed, so a piece's headline, prose and footnotes name the same places, people and numbers.
    People come from the `world`: a new name per story (`person`, `person2`), the office's one
    holder for `r_...` slots."""

    def __init__(self, rng: random.Random, world: World):
        super().__init__()
        self.rng = rng
        self.world = world

    def __missing__(self, name: str) -> str:
        named = {v for k, v in self.items() if k.startswith(("person", "r_"))}
        if name in ("person", "person2"):
            value = self.world.new_person(self.rng, named)
        elif name in OFFICES:
            office, whose = OFFICES[name]
            value = self.world.holder(f"{office}/{self[whose]}" if whose else office, self.rng, named)
        else:
            value = SLOT_MAKERS[name](self, self.rng)
        self[name] = value
        return value


def _cite(statement: str, source: str, n: int, rng: random.Random, *, repeat: bool) -> str:
    """A prose sentence carrying fact `n`'s statement, attributed (briefly when the previous
    fact had the same source), with its `[^n]` marker."""
    body = statement.rstrip(".")
    attribution = rng.choice(REPEAT_ATTRIBUTIONS if repeat else ATTRIBUTIONS).format(source=source)
    return f"{body}{attribution}[^{n}]."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def claim_key(source: str, key: str, slots: dict) -> str:
    """`{source slug}/{key with its slots filled, each segment slugged}`: the claim's subject."""
    segments = [slugify(part.format_map(slots), 60) for part in key.split("/")]
    return "/".join([slugify(source.removeprefix("the "), 40), *segments])


def _wording(rng: random.Random, kit: dict, slots: _Slots, world: World) -> tuple[str, str] | None:
    """A headline and a dek for this kit and its slots, each one of the kit's ways of saying it
    (`headlines`, `deks`, tried in a random order) that this world has not printed yet and whose
    figures the kit's facts state; None when every way is taken."""
    headlines = [_capital(h.format_map(slots)) for h in rng.sample(kit["headlines"], len(kit["headlines"]))]
    deks = [_capital(d.format_map(slots)) for d in rng.sample(kit["deks"], len(kit["deks"]))]
    # A wording whose figures the kit's facts do not state would contradict the piece's own
    # footnotes ("retreats 32 metres" over a fact of 157): never chosen.
    facts = [{"statement": fact[0].format_map(slots)} for fact in kit["facts"]]
    headline = next((h for h in headlines if h not in world.headlines
                     and not figures.unsupported({"headline": h}, facts)), None)
    dek = next((d for d in deks if d not in world.deks and not figures.unsupported({"dek": d}, facts)), None)
    return None if headline is None or dek is None else (headline, dek)


def _draw(rng: random.Random, section: str, world: World, first: int) -> tuple[dict, _Slots, str, tuple[str, str]]:
    """A kit and its slots for a subject that has not run, with a headline and dek not yet
    printed; after DRAWS tries, any (the bulk path: a paper of 100,000 pieces runs out of
    subjects, and may then repeat)."""
    kits = KITS[section]
    for attempt in range(1 if section in world.exhausted else DRAWS):
        kit = kits[(first + attempt) % len(kits)] if attempt < len(kits) else rng.choice(kits)
        slots = _Slots(rng, world)
        subject = f"{section}/{kit['once'].format_map(slots)}"
        if subject in world.subjects:
            continue
        wording = _wording(rng, kit, slots, world)
        if wording is not None:
            return kit, slots, subject, wording
    world.exhausted.add(section)
    facts = [{"statement": fact[0].format_map(slots)} for fact in kit["facts"]]

    def told(ways: list[str], field: str) -> str:
        # Repeats allowed now, contradictions still not (when the kit has a way without one).
        said = [_capital(way.format_map(slots)) for way in ways]
        fitting = [text for text in said if not figures.unsupported({field: text}, facts)]
        return rng.choice(fitting or said)

    return kit, slots, subject, (told(kit["headlines"], "headline"), told(kit["deks"], "dek"))


def compose(rng: random.Random, section: str, world: World | None = None, turn: int = 0) -> dict:
    """One invented piece for `section`: {headline, dek, prose, cited_facts}, consistent with
    the pieces already composed in `world` (a fresh world when None), which it then extends.

    `turn` (the piece's place in its section) picks which kit is tried first, so a section
    rotates through its kinds of story. `prose` is 3-4 Markdown paragraphs; facts are numbered
    1..k (k = 2-4) in the order the prose cites them, and every `[^n]` marker in it points at
    fact n. Deterministic given `rng` and `world`.
    """
    world = world if world is not None else World()
    kit, slots, subject, (headline, dek) = _draw(rng, section, world, turn)
    k = rng.randint(2, len(kit["facts"]))
    # Every figure of the headline and dek is a figure a cited fact states: cite as many of the
    # kit's facts as that takes (services/newsroom/figures.py; tests/test_demo_paper.py).
    wording = {"headline": headline, "dek": dek}
    while k < len(kit["facts"]) and figures.unsupported(
            wording, [{"statement": f[0].format_map(slots)} for f in kit["facts"][:k]]):
        k += 1
    facts = []
    for statement, source, instrument, key in kit["facts"][:k]:
        source_text = source.format_map(slots)
        facts.append({"statement": statement.format_map(slots), "source": source_text,
                      "instrument": instrument.format_map(slots),
                      "claim_key": claim_key(source_text, key, slots)})
    cites = [_cite(f["statement"], f["source"], n, rng,
                   repeat=n > 1 and f["source"] == facts[n - 2]["source"])
             for n, f in enumerate(facts, start=1)]
    colour = [c.format_map(slots) for c in kit["colour"]]
    quote = (f"\u201c{kit['quote'].format_map(slots)},\u201d "
             f"said {kit['speaker'].format_map(slots)}.")
    paragraphs = [f"{cites[0]} {colour[0]}", f"{cites[1]} {quote}", " ".join([*cites[2:], colour[1]])]
    if k < 4 or rng.random() < 0.5:
        paragraphs.append(rng.choice(CLOSERS))
    piece = {
        "headline": headline,
        "dek": dek,
        "prose": "\n\n".join(_capital(p) for p in paragraphs),
        "cited_facts": [{**f, "statement": _capital(f["statement"])} for f in facts],
    }
    world.subjects.add(subject)
    world.headlines.add(headline)
    world.deks.add(dek)
    world.people.update(v for name, v in slots.items() if name.startswith(("person", "r_")))
    return piece
