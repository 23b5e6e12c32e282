"""The reader's front page and its lists through HTTP: the lead (the editor's `lead_story`, written
with `PATCH /api/v1/config`, else the newest piece on air), the top stories, rails that repeat
neither, the same lead in `GET /api/v1/front`; paging of section, day and persona pages; persona
pages; the cast and the search box in every page's header."""
from __future__ import annotations

import re
from datetime import timedelta

import lxml.html
import pytest
import time_machine

from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0
from tests.fixtures.statements import statements

SECTIONS = ("World", "Business", "Science")


def page(response):
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    assert response.mimetype == "text/html"
    return lxml.html.fromstring(response.data)


def texts(tree, xpath):
    return [" ".join(node.text_content().split()) for node in tree.xpath(xpath)]


def lead_of(tree) -> list[str]:
    return texts(tree, "//section[@class='front-top']/article[contains(@class, 'lead-story')]//h3")


def front_links(tree) -> list[str]:
    """Every story link of the front's main area, in order (the lead's art link left out)."""
    return [a.get("href") for a in tree.xpath("//main//h3/a") if a.get("href").startswith("/stories/")]


def set_lead(client, key, value, **kwargs):
    return client.patch("/api/v1/config", json={"lead_story": value, **kwargs}, headers=auth(key))


@pytest.fixture
def paper(desk):
    """Twelve pieces over three sections, an hour apart (Piece 11 the newest), one with art, and a draft."""
    paper = desk.paper("demo", sections=SECTIONS)
    for n in range(12):
        desk.piece(paper, f"Piece {n}", section=SECTIONS[n % 3], byline=("Ada Quill", "Rex Ledger")[n % 2],
                   on_air_at=T0 + timedelta(hours=n), image="https://cdn.example.com/3.jpg" if n == 3 else None)
    desk.piece(paper, "A draft", on_air_at=None)
    return paper


# --- the lead and the top stories --------------------------------------------------------------

def test_the_newest_piece_leads_with_its_share_card_and_the_next_four_are_top_stories(client, paper):
    tree = page(client.get("/"))
    assert lead_of(tree) == ["Piece 11"]
    lead = tree.xpath("//article[contains(@class, 'lead-story')]")[0]
    # No art of its own: the share card this host draws for every piece.
    [art] = lead.xpath(".//img/@src")
    assert re.fullmatch(r"http://localhost/cards/piece-11/1-[0-9a-f]{8}\.png", art)
    assert client.get(art).status_code == 200
    assert "AI persona" in lead.text_content()
    assert texts(tree, "//div[@class='top-stories']//h3") == ["Piece 10", "Piece 9", "Piece 8", "Piece 7"]
    # Each top story names its section (kicker); the lead too.
    kickers = texts(tree, "//div[@class='top-stories']//p[@class='kicker']")
    assert kickers == ["Business", "World", "Science", "Business"]
    front = client.get("/api/v1/front").get_json()
    assert front["lead"]["slug"] == "piece-11" and front["lead_chosen"] is False
    assert [row["slug"] for row in front["top_stories"]] == ["piece-10", "piece-9", "piece-8", "piece-7"]
    # The API's rails are as they were: the newest pieces of each section, the lead included.
    assert front["rails"][2]["stories"][0]["slug"] == "piece-11"


def test_the_lead_is_first_in_the_page_source(client, paper):
    body = client.get("/").get_data(as_text=True)
    main = body[body.index("<main"):]
    assert main.index("Piece 11") < main.index("Piece 10") < main.index('class="rails"')


def test_the_front_repeats_no_piece(client, paper):
    links = front_links(page(client.get("/")))
    assert len(links) == len(set(links)) == 12
    assert "/stories/a-draft" not in links


def test_the_editors_lead_comes_first_and_the_rails_skip_it(client, desk, paper):
    admin = desk.key(paper, "admin")
    answer = set_lead(client, admin, "piece-2")
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["config"]["lead_story"] == "piece-2"
    tree = page(client.get("/"))
    assert lead_of(tree) == ["Piece 2"]
    # The newest four follow; nothing is shown twice.
    assert texts(tree, "//div[@class='top-stories']//h3") == ["Piece 11", "Piece 10", "Piece 9", "Piece 8"]
    assert tree.xpath("//article[contains(@class, 'lead-story')]/@class") == ["lead-story chosen"]
    links = front_links(tree)
    assert len(links) == len(set(links)) == 12
    front = client.get("/api/v1/front").get_json()
    assert front["lead"]["slug"] == "piece-2" and front["lead_chosen"] is True
    assert front["lead"]["url"] == "http://localhost/stories/piece-2"
    assert [row["slug"] for row in front["top_stories"]] == ["piece-11", "piece-10", "piece-9", "piece-8"]
    assert client.get("/front.json").get_json() == front


def test_a_lead_may_be_named_by_id_and_its_own_art_is_shown(client, desk, paper):
    admin = desk.key(paper, "admin")
    piece_id = client.get("/api/v1/stories/piece-3").get_json()["id"]
    assert set_lead(client, admin, piece_id).status_code == 200
    tree = page(client.get("/"))
    assert lead_of(tree) == ["Piece 3"]
    assert tree.xpath("//article[contains(@class, 'lead-story')]//img/@src") == ["https://cdn.example.com/3.jpg"]


def test_a_revised_story_item_shows_at_once_where_it_was_rendered_before(client, desk, paper):
    """Story items' HTML is kept per item (blueprints/pages.py `kept_story_item`): a revision is
    a new item, so the front page's top stories and rails and a story page's related rail show
    it on the next read, and never the text they showed before."""
    admin = desk.key(paper, "admin")
    before = page(client.get("/")).text_content()
    assert "Piece 9" in before and "Piece 1" in before  # a top story, and a rail's piece
    # Piece 3 is in the related rail of Piece 0 (both World).
    assert "Piece 3" in page(client.get("/stories/piece-0")).text_content()
    for slug, headline in (("piece-9", "Ninth, corrected"), ("piece-1", "First, corrected"),
                           ("piece-3", "Third, corrected")):
        answer = client.patch(f"/api/v1/stories/{slug}", json={"headline": headline}, headers=auth(admin))
        assert answer.status_code == 200, answer.get_json()
    tree = page(client.get("/"))
    assert "Ninth, corrected" in texts(tree, "//div[@class='top-stories']//h3")
    assert "First, corrected" in texts(tree, "//div[@class='rails']//h3")
    assert not {"Piece 9", "Piece 1", "Piece 3"} & set(texts(tree, "//main//h3"))
    related = page(client.get("/stories/piece-0"))
    assert "Third, corrected" in related.text_content() and "Piece 3<" not in client.get(
        "/stories/piece-0").get_data(as_text=True)


def test_a_lead_taken_off_air_falls_back_to_the_newest(client, desk, paper):
    admin = desk.key(paper, "admin")
    assert set_lead(client, admin, "piece-5").status_code == 200
    assert lead_of(page(client.get("/"))) == ["Piece 5"]
    assert client.delete("/api/v1/stories/piece-5/air", headers=auth(admin)).status_code == 200
    tree = page(client.get("/"))
    assert lead_of(tree) == ["Piece 11"]
    assert "Piece 5" not in tree.text_content()
    assert client.get("/api/v1/front").get_json()["lead_chosen"] is False
    # The choice stays: aired again, it leads again.
    assert client.put("/api/v1/stories/piece-5/air", headers=auth(admin)).status_code == 200
    assert lead_of(page(client.get("/"))) == ["Piece 5"]


def test_a_draft_may_be_chosen_and_leads_once_it_airs(client, desk, paper):
    admin = desk.key(paper, "admin")
    assert set_lead(client, admin, "a-draft").status_code == 200
    tree = page(client.get("/"))
    assert lead_of(tree) == ["Piece 11"] and "A draft" not in tree.text_content()
    # Aired a day before everything else: not the newest, the lead all the same.
    with time_machine.travel(T0 - timedelta(days=1), tick=False):
        assert client.put("/api/v1/stories/a-draft/air", headers=auth(admin)).status_code == 200
    assert lead_of(page(client.get("/"))) == ["A draft"]


def test_null_removes_the_choice(client, desk, paper):
    admin = desk.key(paper, "admin")
    assert set_lead(client, admin, "piece-2").status_code == 200
    answer = set_lead(client, admin, None)
    assert answer.status_code == 200 and "lead_story" not in answer.get_json()["config"]
    assert lead_of(page(client.get("/"))) == ["Piece 11"]


@pytest.mark.parametrize("value", ["no-such-piece", "999999", "99999999999", "x" * 201, "", 7, True, ["piece-2"]])
def test_a_lead_that_names_no_piece_of_this_paper_is_refused(client, desk, paper, value):
    admin = desk.key(paper, "admin")
    answer = set_lead(client, admin, value)
    assert answer.status_code == 422, answer.get_json()
    assert answer.mimetype == "application/problem+json"
    assert "lead_story" in answer.get_json()["errors"]
    assert "lead_story" not in client.get("/api/v1/config", headers=auth(admin)).get_json()["config"]


def test_another_papers_piece_is_not_a_lead(client, desk, paper):
    other = desk.paper("other")
    desk.piece(other, "Elsewhere")
    admin = desk.key(paper, "admin")
    assert set_lead(client, admin, "elsewhere").status_code == 422
    # The same name on its own paper is fine.
    other_admin = desk.key(other, "admin")
    answer = client.patch("/api/v1/config", json={"lead_story": "elsewhere"}, headers=auth(other_admin),
                          base_url="http://other.localhost")
    assert answer.status_code == 200


def test_the_config_key_is_checked_like_the_field(client, desk, paper):
    admin = desk.key(paper, "admin")
    bad = client.patch("/api/v1/config", json={"config": {"lead_story": "nope"}}, headers=auth(admin))
    assert bad.status_code == 422 and "lead_story" in bad.get_json()["errors"]
    both = client.patch("/api/v1/config", json={"lead_story": "piece-1", "config": {"lead_story": "piece-2"}},
                        headers=auth(admin))
    assert both.status_code == 422
    good = client.patch("/api/v1/config", json={"config": {"lead_story": "piece-1", "timezone": "UTC"}},
                        headers=auth(admin))
    assert good.status_code == 200
    assert lead_of(page(client.get("/"))) == ["Piece 1"]


def test_only_an_admin_key_chooses_the_lead(client, desk, paper):
    read = desk.key(paper, "read")
    assert set_lead(client, read, "piece-2").status_code == 403
    assert client.patch("/api/v1/config", json={"lead_story": "piece-2"}).status_code == 401
    assert lead_of(page(client.get("/"))) == ["Piece 11"]


def test_a_front_with_nothing_on_air_has_no_lead(client, desk):
    desk.paper("demo")
    tree = page(client.get("/"))
    assert not tree.xpath("//section[@class='front-top']")
    assert "Nothing on air in World yet" in tree.text_content()
    front = client.get("/api/v1/front").get_json()
    assert front["lead"] is None and front["top_stories"] == [] and front["lead_chosen"] is False


def test_a_section_whose_pieces_all_sit_above_says_so(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Only science", section="Science")
    tree = page(client.get("/"))
    assert lead_of(tree) == ["Only science"]
    assert "The newest from Science is in the top stories above" in tree.text_content()


# --- paging ------------------------------------------------------------------------------------

def walk(client, path: str) -> tuple[list[str], list[str]]:
    """Follow "Older" (rel=next) from `path` to the end: (every story link seen, every page URL);
    on the way, each page's "Newer" (rel=prev) must lead back to the page before it."""
    seen, pages, url = [], [], path
    while url:
        tree = page(client.get(url))
        pages.append(url)
        seen += [a.get("href") for a in tree.xpath("//main//article//h2/a | //main//article//h3/a")]
        previous = tree.xpath("//nav[@class='pager']//a[@rel='prev']/@href")
        if len(pages) > 1:
            assert previous == [pages[-2]], (url, previous)
        nexts = tree.xpath("//nav[@class='pager']//a[@rel='next']/@href")
        assert len(nexts) <= 1
        url = nexts[0] if nexts else None
    return seen, pages


@pytest.fixture
def archive(desk):
    """105 pieces on air on 1 November (World and Science in turn, Ada and Rex in turn), a draft."""
    paper = desk.paper("demo")
    for n in range(105):
        desk.piece(paper, f"Story {n}", section=("World", "Science")[n % 2], byline=("Ada Quill", "Rex Ledger")[n % 2],
                   facts=1, on_air_at=T0 + timedelta(minutes=n))
    desk.piece(paper, "A draft", section="World", on_air_at=None)
    return paper


def test_paging_walks_every_piece_once(client, archive):
    api = client.get("/api/v1/stories?limit=200").get_json()["stories"]
    newest = ["/stories/" + row["slug"] for row in api]
    world = [link for link, row in zip(newest, api, strict=True) if row["section"] == "World"]
    ada = [link for link, row in zip(newest, api, strict=True) if row["byline"] == "Ada Quill"]

    seen, pages = walk(client, "/sections/world")
    assert seen == world and len(pages) == 2
    assert pages[1] == "/sections/world?page=2"

    seen, pages = walk(client, "/masthead/ada-quill")
    assert seen == ada and len(pages) == 2

    # A day's pages are each grouped by section, so compare as sets (and count repeats).
    seen, pages = walk(client, "/days/2026-11-01")
    assert len(seen) == len(set(seen)) == 105 and set(seen) == set(newest)
    assert len(pages) == 3


def test_a_day_with_pages_puts_rel_on_its_pages_and_not_on_the_neighbour_days(client, desk, archive):
    desk.piece(archive, "The day after", on_air_at=T0 + timedelta(days=1))
    tree = page(client.get("/days/2026-11-01?page=2"))
    assert tree.xpath("//a[@rel='prev']/@href") == ["/days/2026-11-01"]
    assert tree.xpath("//a[@rel='next']/@href") == ["/days/2026-11-01?page=3"]
    assert "/days/2026-11-02" in tree.xpath("//nav[@aria-label='Other issues']//a/@href")
    # A day of one page keeps rel on the neighbour days.
    single = page(client.get("/days/2026-11-02"))
    assert single.xpath("//a[@rel='prev']/@href") == ["/days/2026-11-01"]


def test_page_one_has_one_address_and_names_its_canonical(client, archive):
    first = page(client.get("/sections/world?page=1"))
    assert first.xpath("//link[@rel='canonical']/@href") == ["http://localhost/sections/world"]
    second = page(client.get("/sections/world?page=2"))
    assert second.xpath("//link[@rel='canonical']/@href") == ["http://localhost/sections/world?page=2"]
    assert "page 2" in second.findtext(".//title")


@pytest.mark.parametrize("path", ["/sections/world", "/days/2026-11-01", "/masthead/ada-quill"])
@pytest.mark.parametrize("bad", ["0", "-1", "x", "01", "2.0", "1e3", "٣", "9" * 7])
def test_a_page_that_is_not_a_number_is_a_400_page(client, desk, path, bad):
    paper = desk.paper("demo")
    desk.piece(paper, "One")
    response = client.get(f"{path}?page={bad}")
    assert response.status_code == 400 and response.mimetype == "text/html"
    assert "not a page number" in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/sections/world", "/days/2026-11-01", "/masthead/ada-quill"])
def test_a_page_past_the_last_is_a_404_and_an_empty_first_page_is_not(client, desk, path):
    paper = desk.paper("demo")
    desk.piece(paper, "One", on_air_at=T0)
    assert client.get(f"{path}?page=2").status_code == 404
    assert client.get(f"{path}?page=100000").status_code == 404
    tree = page(client.get(path))
    assert not tree.xpath("//a[@rel='next' or @rel='prev']")
    assert page(client.get("/sections/business")).xpath("//p[@class='empty']")


# --- persona pages -----------------------------------------------------------------------------

def test_a_persona_page_lists_their_pieces_on_air_only(client, desk):
    paper = desk.paper("demo", personas=("Ada Quill", "Rex Ledger"))
    desk.piece(paper, "Ada's first", byline="Ada Quill", on_air_at=T0)
    desk.piece(paper, "Ada's second", byline="Ada Quill", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Rex's piece", byline="Rex Ledger")
    desk.piece(paper, "Ada's draft", byline="Ada Quill", on_air_at=None)
    tree = page(client.get("/masthead/ada-quill"))
    assert tree.findtext(".//h1").strip() == "Ada Quill"
    assert "declared AI persona" in tree.text_content()
    assert texts(tree, "//main//article//h3") == ["Ada's second", "Ada's first"]
    assert "Ada's draft" not in tree.text_content() and "Rex's piece" not in tree.text_content()
    assert tree.xpath("//main//img[@class='avatar']/@src") == ["http://localhost/masthead/ada-quill/avatar.svg"]
    empty = page(client.get("/masthead/rex-ledger"))
    assert texts(empty, "//main//article//h3") == ["Rex's piece"]


def test_the_masthead_and_the_bylines_link_to_persona_pages(client, desk):
    paper = desk.paper("demo", personas=("Ada Quill", "Rex Ledger"))
    desk.piece(paper, "Rates rise again", byline="Rex Ledger")
    masthead = page(client.get("/masthead"))
    hrefs = masthead.xpath("//li[@class='persona']//a/@href")
    assert "/masthead/ada-quill" in hrefs and "/masthead/rex-ledger" in hrefs
    story = page(client.get("/stories/rates-rise-again"))
    assert story.xpath("//span[@class='byline']/a/@href") == ["/masthead/rex-ledger"]


def test_a_retired_persona_keeps_a_page_and_an_unknown_one_is_a_404(client, desk):
    paper = desk.paper("demo", personas=("Ada Quill", "Rex Ledger"))
    desk.piece(paper, "Old news", byline="Rex Ledger")
    admin = desk.key(paper, "admin")
    assert client.patch("/api/v1/personas/rex-ledger", json={"active": False}, headers=auth(admin)).status_code == 200
    tree = page(client.get("/masthead/rex-ledger"))
    assert "no longer on the masthead" in tree.text_content()
    assert texts(tree, "//main//article//h3") == ["Old news"]
    for unknown in ("/masthead/nobody", "/masthead/" + "x" * 200):
        response = client.get(unknown)
        assert response.status_code == 404 and response.mimetype == "text/html"


# --- every page's header -----------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/sections/world", "/days", "/days/2026-11-01", "/masthead",
                                  "/masthead/ada-quill", "/cast", "/stories/piece-0"])
def test_every_page_has_the_cast_in_the_nav_and_a_search_box(client, paper, path):
    tree = page(client.get(path))
    assert "/cast" in tree.xpath("//nav[@aria-label='Sections']//a/@href")
    [form] = tree.xpath("//header//form[@role='search']")
    assert form.get("action") == "/search" and form.get("method") == "get"
    [field] = form.xpath(".//input[@name='q']")
    assert form.xpath(f".//label[@for='{field.get('id')}']")
    assert field.get("maxlength") == "120"
    assert not tree.xpath("//script[not(@type='application/ld+json')]")


def test_the_cast_page_marks_its_nav_link(client, paper):
    tree = page(client.get("/cast"))
    assert tree.xpath("//nav//a[@aria-current='page']/@href") == ["/cast"]


@pytest.mark.parametrize("path", ["/", "/api/v1/front"])
def test_a_chosen_lead_costs_one_statement_whatever_the_papers_size(app, client, desk, path):
    paper = desk.paper("demo", sections=SECTIONS)
    admin = desk.key(paper, "admin")
    counts = []
    for total in (3, 30):
        for n in range(len(counts) and 3, total):
            desk.piece(paper, f"Story {n}", section=SECTIONS[n % 3], facts=1, on_air_at=T0 + timedelta(minutes=n))
        if not counts:
            assert set_lead(client, admin, "story-0").status_code == 200
        with statements(app) as seen:
            assert client.get(path).status_code == 200
        counts.append(len(seen))
    # The paper, the sections, the rails, the newsroom counts, and the chosen lead.
    assert counts[0] == counts[1] <= 5, counts
