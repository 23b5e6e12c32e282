"""Absolute URLs: `Links` (services/links.py), the request's Links (links.py) and
each paper's canonical origin for `send-alerts` (`PaperOrigins`), which must name a paper
exactly as a request on that origin names it (the alerts' links are the pages' own)."""
from __future__ import annotations

import re
from datetime import date
from types import SimpleNamespace

import pytest
from flask import Flask, request

from services.links import Links, PaperOrigins, host_name
from web import links


def test_a_share_cards_url_names_its_revision_and_everything_else_it_draws():
    links = Links("https://demo.example.com:8443")

    def card(rev=3, nameplate="The Demo Times", section="World", byline="Ada Quill") -> str:
        piece = SimpleNamespace(slug="a-b", rev=rev, section=SimpleNamespace(name=section),
                                persona=SimpleNamespace(name=byline))
        return links.share_card(piece, nameplate)

    assert re.fullmatch(r"https://demo\.example\.com:8443/cards/a-b/3-[0-9a-f]{8}\.png", card())
    assert card() == card()
    others = [card(rev=4), card(nameplate="The Demo Post"), card(section="Sport"), card(byline="Rex Ledger")]
    assert len({card(), *others}) == 5
    assert card(rev=4).rsplit("-", 1)[1] == card().rsplit("-", 1)[1]  # the same frame, the next revision


def test_links_build_every_page_under_the_origin():
    links = Links("https://demo.example.com:8443")
    assert links.host == "demo.example.com:8443" and links.host_name == "demo.example.com"
    assert links.home() == "https://demo.example.com:8443/"
    assert links.story_page("a-b") == "https://demo.example.com:8443/stories/a-b"
    assert links.section_page("sport") == "https://demo.example.com:8443/sections/sport"
    assert links.day_page(date(2026, 11, 1)) == "https://demo.example.com:8443/days/2026-11-01"
    assert links.edition_embed(date(2026, 11, 1)) == "https://demo.example.com:8443/cast/2026-11-01?embed=1"
    assert links.embed("7") == "https://demo.example.com:8443/embed/7"
    assert links.avatar("ada") == "https://demo.example.com:8443/masthead/ada/avatar.svg"
    assert links.api() == "https://demo.example.com:8443/api/v1"
    assert links.api("/stories") == "https://demo.example.com:8443/api/v1/stories"


@pytest.mark.parametrize("raw, name", [("Demo.Example.com:5000", "demo.example.com"),
                                       ("[::1]:5000", "[::1]"), ("[::1]", "[::1]"), ("localhost", "localhost")])
def test_host_name_drops_the_port(raw, name):
    assert host_name(raw) == name


@pytest.mark.parametrize("scheme, port", [("http", ""), ("http", "5000"), ("http", "80"), ("https", "443"),
                                          ("https", "80"), ("https", "8443"), ("http", "08080")])
@pytest.mark.parametrize("slug, host", [("demo", None), ("gazette", None), ("gazette", "News.Example.ORG"),
                                        ("gazette", "bücher.example")])
def test_a_paper_origin_is_what_a_request_on_it_reports(scheme, port, slug, host):
    # What send-alerts did before it took an origin: a request context on the paper's base URL.
    origins = PaperOrigins(scheme=scheme, domain="papers.test", default_paper="demo", port=port)
    base_host = host or ("papers.test" if slug == "demo" else f"{slug}.papers.test")
    base_url = f"{scheme}://{base_host}{':' + port if port else ''}"
    with Flask(__name__).test_request_context("/", base_url=base_url):
        expected = f"{scheme}://{request.host}"
    assert origins.origin(SimpleNamespace(slug=slug, host=host)) == expected


def test_paper_origins_read_the_configuration():
    config = {"PUBLIC_URL_SCHEME": "https", "PAPER_DOMAIN": "papers.test", "DEFAULT_PAPER": "demo",
              "PUBLIC_PORT": 8443}
    links = PaperOrigins.from_config(config).links(SimpleNamespace(slug="gazette", host=None))
    assert links == Links("https://gazette.papers.test:8443")


def test_the_request_links_follow_the_host_and_are_made_once_per_request():
    app = Flask(__name__)
    app.config["PUBLIC_URL_SCHEME"] = "https"
    with app.app_context():
        with app.test_request_context("/", base_url="http://demo.localhost:5000"):
            first = links.links()
            assert first.origin == "https://demo.localhost:5000"
            assert links.links() is first
        # One app context across requests (as a test holding it open has): a new host is seen.
        with app.test_request_context("/", base_url="http://other.localhost"):
            assert links.links().story_page("x") == "https://other.localhost/stories/x"
    with pytest.raises(RuntimeError):
        links.links()
