"""A demo paper that reads as real, through the CLI (`seed-demo`) and HTTP: at 300 pieces no
headline or dek repeats, no kind of story dominates and no figure contradicts the piece's own
cited facts; the front's section rails open with art."""
from __future__ import annotations

import re
from collections import Counter

import lxml.html

from services.newsroom import figures


def _all_stories(client) -> list[dict]:
    rows, cursor = [], None
    while True:
        answer = client.get("/api/v1/stories?limit=200&full=true" + (f"&cursor={cursor}" if cursor else "")).get_json()
        rows += answer["stories"]
        cursor = answer["next_cursor"]
        if cursor is None:
            return rows


def test_three_hundred_demo_pieces_repeat_no_headline_or_dek(client, runner):
    result = runner.invoke(args=["seed-demo", "--pieces", "300", "--subscribers", "0"])
    assert result.exit_code == 0, result.output
    rows = _all_stories(client)
    assert len(rows) == 300
    headlines = Counter(row["headline"] for row in rows)
    deks = Counter(row["dek"] for row in rows)
    assert [h for h, n in headlines.items() if n > 1] == []
    assert [d for d, n in deks.items() if n > 1] == []
    # Composed, not filled in: with the names and numbers taken out, no one shape of headline
    # is more than a twentieth of the paper, and there are many shapes.
    shapes = Counter(re.sub(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*|\d[\d.,%$-]*", "X", h) for h in headlines)
    assert len(shapes) >= 80 and shapes.most_common(1)[0][1] <= 15, shapes.most_common(5)
    # Every figure with a unit in headline, dek and prose is one its cited facts state (it read
    # "Ice front in Estrenia retreats 32 metres" over a fact of 157 m).
    unsupported = [(row["headline"], found["field"], found["figure"]) for row in rows
                   for found in figures.unsupported(row, row["cited_facts"])]
    assert unsupported == []


def test_the_fronts_rails_open_with_art(client, runner):
    assert runner.invoke(args=["seed-demo", "--subscribers", "0"]).exit_code == 0
    tree = lxml.html.fromstring(client.get("/").data)
    rails = tree.xpath("//section[@class='rail']")
    assert len(rails) == 6
    with_art = [rail for rail in rails if rail.xpath(".//article[1]//img")]
    assert len(with_art) == len(rails)
    for rail in rails:
        [src] = rail.xpath(".//article[1]//img/@src")
        assert client.get(src).status_code == 200 and client.get(src).content_type == "image/jpeg"
        assert rail.xpath(".//article[2]//img") == []  # art opens a rail; the rest are text
