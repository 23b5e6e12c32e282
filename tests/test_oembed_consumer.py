"""`/oembed` as an oEmbed consumer library sees it: micawber, given our provider pattern for the
live server, fetches a story's record over real HTTP and turns the story's address in a text into
the card's iframe."""
from __future__ import annotations

import re

import pytest

from tests.fixtures.newsroom import LEAD

micawber = pytest.importorskip("micawber", reason="the micawber package is not installed")


def registry_for(base: str):
    """A micawber registry that knows one provider: this paper's story pages -> its /oembed."""
    providers = micawber.ProviderRegistry()
    providers.register(re.escape(base) + r"/stories/\S+", micawber.Provider(base + "/oembed"))
    return providers


def test_micawber_fetches_a_rich_record_with_its_iframe(live, newsroom):
    story = f"{live}/stories/{LEAD}"
    record = registry_for(live).request(story, maxwidth=320)
    assert record["type"] == "rich" and record["version"] == "1.0"
    assert record["width"] == 320 and record["height"] > 0
    assert record["html"].startswith(f'<iframe src="{live}/embed/{LEAD}" width="320"')
    assert record["title"] == "Rates rise again as the central bank tightens"
    assert record["provider_name"] == "The Demo Times" and record["provider_url"] == live + "/"
    assert record["author_name"] == "Ada Quill"
    assert re.fullmatch(rf"{re.escape(live)}/cards/{LEAD}/1-[0-9a-f]{{8}}\.png", record["thumbnail_url"])
    # micawber fills `url` with the address it was asked about when the record has none.
    assert record["url"] == story


def test_micawber_turns_a_story_address_in_text_into_the_card(live, newsroom):
    story = f"{live}/stories/{LEAD}"
    html = registry_for(live).parse_text(f"Worth reading:\n\n{story}\n\nMore soon.", maxwidth=480)
    assert f'<iframe src="{live}/embed/{LEAD}" width="480"' in html
    assert "Worth reading:" in html and "More soon." in html


def test_micawber_reports_an_address_that_is_not_a_story(live, newsroom):
    from micawber.exceptions import ProviderHTTPException

    with pytest.raises(ProviderHTTPException) as raised:
        registry_for(live).request(f"{live}/stories/no-such-story")
    assert raised.value.status == 404
    raised.value.__cause__.close()  # micawber keeps urllib's HTTPError (and its socket) open


def test_micawber_asking_for_a_wide_card_gets_the_widest_with_the_disclosure(live, newsroom):
    from services.rendering.prose import DIGITAL_SOURCE_TYPE

    story = f"{live}/stories/{LEAD}"
    record = registry_for(live).request(story, maxwidth=1200, maxheight=2000)
    assert record["width"] == 640 and 0 < record["height"] <= 2000
    assert record["html"].startswith(f'<iframe src="{live}/embed/{LEAD}" width="640"')
    assert record["digital_source_type"] == DIGITAL_SOURCE_TYPE
    assert record["disclosure"].startswith("Ada Quill is an AI persona of The Demo Times")


def test_micawber_hears_501_for_a_format_we_do_not_speak(live, newsroom):
    from micawber.exceptions import ProviderHTTPException

    provider = micawber.Provider(live + "/oembed")
    with pytest.raises(ProviderHTTPException) as raised:
        provider.request(f"{live}/stories/{LEAD}", format="yaml")
    assert raised.value.status == 501
    raised.value.__cause__.close()
