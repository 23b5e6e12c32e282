"""The reader's search page, `/search?q=`, through HTTP: the API's rules and index (the same
matches in the same order as `GET /api/v1/search`), the form alone for no query, a 400 page for a
query the API refuses, a page saying so when nothing matches, paging that walks every match once.
"""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

import lxml.html
import pytest

from tests.fixtures.newsroom import T0


def search(client, q: str | None, page: int | None = None, **kwargs):
    query = [] if q is None else ["q=" + quote(q, safe="")]
    if page is not None:
        query.append(f"page={page}")
    return client.get("/search" + ("?" + "&".join(query) if query else ""), **kwargs)


def tree_of(response, status: int = 200):
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    assert response.mimetype == "text/html"
    return lxml.html.fromstring(response.data)


def results(tree) -> list[str]:
    return [" ".join(h.text_content().split()) for h in tree.xpath("//section[@class='search-results']//article//h3")]


@pytest.fixture
def paper(desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Harbour reopens after the storm", dek="Ferries resume.", on_air_at=T0)
    desk.piece(paper, "Harbour fees rise", section="Business", on_air_at=T0 + timedelta(hours=1))
    desk.piece(paper, "Museum opens a new wing", dek="A narwhal tusk is shown.", on_air_at=T0 + timedelta(hours=2))
    desk.piece(paper, "Harbour plans kept secret", on_air_at=None)
    return paper


@pytest.mark.parametrize("q", [None, "", "   "])
def test_no_query_shows_the_form_alone(client, paper, q):
    tree = tree_of(search(client, q))
    [form] = tree.xpath("//main//form[@role='search']")
    assert form.get("action") == "/search" and form.get("method") == "get"
    [field] = form.xpath(".//input[@name='q']")
    assert form.xpath(f".//label[@for='{field.get('id')}']/text()") == ["Search words"]
    assert field.get("value") in ("", None)
    assert not tree.xpath("//section[contains(@class, 'search-')]")
    # The page's own form replaces the header's box: one search landmark.
    assert len(tree.xpath("//form[@role='search']")) == 1
    assert tree.xpath("//meta[@name='robots']/@content") == ["noindex"]


def test_results_are_the_apis_matches_in_the_apis_order(client, paper):
    tree = tree_of(search(client, "harbour"))
    api = client.get("/api/v1/search?q=harbour").get_json()["stories"]
    assert results(tree) == [row["headline"] for row in api] == ["Harbour fees rise", "Harbour reopens after the storm"]
    assert tree.xpath("//section[@class='search-results']//article//h3/a/@href") == [
        "/stories/harbour-fees-rise", "/stories/harbour-reopens-after-the-storm"]
    assert "Secret" not in tree.text_content() and "secret" not in tree.text_content()
    assert tree.xpath("//input[@name='q']/@value") == ["harbour"]
    assert "Results for “harbour”" in tree.text_content()
    # Every byline says what it is; every result names its section.
    articles = tree.xpath("//section[@class='search-results']//article")
    assert all("AI persona" in a.text_content() for a in articles)
    assert [a.xpath("string(.//p[@class='kicker'])") for a in articles] == ["Business", "World"]


def test_terms_match_as_the_api_matches_them(client, paper):
    assert results(tree_of(search(client, "  NARWHAL  "))) == ["Museum opens a new wing"]
    assert results(tree_of(search(client, "harbour storm"))) == ["Harbour reopens after the storm"]
    assert results(tree_of(search(client, "harbours"))) == ["Harbour fees rise", "Harbour reopens after the storm"]


@pytest.mark.parametrize("q", ["platypus", "harbour platypus", "*** ---"])
def test_no_match_is_a_clear_empty_state(client, paper, q):
    tree = tree_of(search(client, q))
    [state] = tree.xpath("//section[@class='search-state']")
    assert "No results for" in state.text_content()
    assert "/days" in state.xpath(".//a/@href")
    assert results(tree) == []
    assert client.get("/api/v1/search?q=" + quote(q, safe="")).get_json()["count"] == 0


@pytest.mark.parametrize("q,why", [("one two three four five", "has 5 words"),
                                   ("x" * 121, "121 characters long")])
def test_a_query_the_api_refuses_is_a_400_page_that_says_why(client, paper, q, why):
    response = search(client, q)
    tree = tree_of(response, 400)
    assert client.get("/api/v1/search?q=" + quote(q, safe="")).status_code == 400
    [state] = tree.xpath("//section[contains(@class, 'search-state')]")
    assert "cannot be run" in state.text_content() and why in state.text_content()
    [field] = tree.xpath("//input[@name='q']")
    assert field.get("value") == q and field.get("aria-invalid") == "true"
    assert state.get("id") in field.get("aria-describedby").split()


def test_the_query_is_shown_as_text(client, paper):
    body = search(client, "<script>alert(1)</script>").get_data(as_text=True)
    assert "<script>alert" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_paging_walks_every_match_once(client, desk):
    paper = desk.paper("demo")
    for n in range(45):
        desk.piece(paper, f"Harbour story {n}", facts=1, on_air_at=T0 + timedelta(minutes=n))
    desk.piece(paper, "Nothing to see", on_air_at=T0)
    seen, pages, url = [], [], "/search?q=harbour"
    while url:
        tree = tree_of(client.get(url))
        pages.append(url)
        seen += results(tree)
        if len(pages) > 1:
            assert tree.xpath("//a[@rel='prev']/@href") == [pages[-2]]
        nexts = tree.xpath("//a[@rel='next']/@href")
        url = nexts[0] if nexts else None
    assert seen == [f"Harbour story {n}" for n in range(44, -1, -1)]
    assert pages == ["/search?q=harbour", "/search?q=harbour&page=2", "/search?q=harbour&page=3"]
    assert search(client, "harbour", page=4).status_code == 404
    assert search(client, "harbour", page="x").status_code == 400


def test_pages_stop_at_the_tenth(client, desk):
    paper = desk.paper("demo")
    desk.piece(paper, "Harbour")
    response = search(client, "harbour", page=11)
    assert response.status_code == 404 and "add a word" in response.get_data(as_text=True)


def test_each_query_is_its_own_answer_in_the_response_cache(desk, make_app):
    paper = desk.paper("demo")
    desk.piece(paper, "Alpha news")
    desk.piece(paper, "Beta news")
    cached = make_app().test_client()
    for _ in range(2):
        assert results(tree_of(search(cached, "alpha"))) == ["Alpha news"]
        assert results(tree_of(search(cached, "beta"))) == ["Beta news"]
        assert tree_of(search(cached, "")).xpath("//section") == []


def test_the_header_box_leads_here(client, paper):
    home = tree_of(client.get("/"))
    [form] = home.xpath("//header//form[@role='search']")
    name = form.xpath(".//input/@name")[0]
    assert results(tree_of(client.get(form.get("action") + "?" + name + "=harbour"))) == [
        "Harbour fees rise", "Harbour reopens after the storm"]
