"""The demo paper's own pictures, posters, artwork and captions (issue 16, item 3), and demo copy
that neither repeats nor contradicts itself, through the CLI (`seed-demo`) and HTTP.

After seeding, every image, video and captions URL in the API's answers, the reader's pages,
the feeds and oEmbed is on the paper's own host and answers 200 with the right content type.
"""
from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from urllib.parse import urljoin, urlsplit
from urllib.request import urlopen

import lxml.html
import pytest
from lxml import etree
from PIL import Image
from sqlalchemy import select

from extensions import db
from models import Paper
from tests.fixtures.browser import hosts, watch
from tests.fixtures.keys import auth

HOST = "http://localhost"
ITUNES = "{http://www.itunes.com/dtds/podcast-1.0.dtd}"
NUMBER = re.compile(r"\d[\d,.]*\d|\d")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/svg+xml")


@pytest.fixture
def demo(runner):
    result = runner.invoke(args=["seed-demo", "--subscribers", "0"])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _page_media(client, path: str) -> dict[str, str]:
    """The picture, video and captions URLs a reader's page loads or advertises: {url: kind}."""
    response = client.get(path)
    assert response.status_code == 200, path
    tree = lxml.html.fromstring(response.data)
    base = HOST + path
    found: dict[str, str] = {}
    for xpath, kind in (("//img/@src", "image"), ("//video/@poster", "image"),
                        ("//source/@src", "video"), ("//track/@src", "captions"),
                        ("//meta[@property='og:image']/@content", "image"),
                        ("//meta[@name='twitter:image']/@content", "image"),
                        ("//meta[@property='og:video']/@content", "video")):
        for url in tree.xpath(xpath):
            found[urljoin(base, url)] = kind
    for script in tree.xpath("//script[@type='application/ld+json']/text()"):
        data = json.loads(script)
        for url in [*_as_list(data.get("image")), *_as_list(data.get("thumbnailUrl"))]:
            found[url] = "image"
        if data.get("contentUrl"):
            found[data["contentUrl"]] = "video"
    return found


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value] if value else []


def _check(client, urls: dict[str, str]) -> None:
    """Each URL is on the paper's host and answers 200 with a content type of its kind."""
    for url, kind in urls.items():
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == HOST, url
        response = client.get(url)
        assert response.status_code == 200, url
        expected = {"image": IMAGE_TYPES, "video": ("video/",), "captions": ("text/vtt",)}[kind]
        assert response.content_type.startswith(expected), (url, response.content_type)


def test_every_demo_picture_video_and_caption_is_on_the_papers_host(client, demo):
    urls: dict[str, str] = {}
    stories = client.get("/api/v1/stories?limit=200").get_json()["stories"]
    for row in stories:
        story = client.get(f"/api/v1/stories/{row['id']}").get_json()
        assert story["image"], story["slug"]  # every demo piece has its art
        urls[story["image"]] = "image"
        urls[story["persona"]["avatar"]] = "image"
    for post in client.get("/api/v1/posts?limit=100").get_json()["posts"]:
        urls[post["image"]] = "image"
    editions = client.get("/api/v1/cast").get_json()["editions"]
    assert len(editions) >= 3
    for edition in editions:
        urls[edition["poster_url"]] = "image"
        urls[edition["captions"]] = "captions"
        if edition["video_url"]:
            urls[edition["video_url"]] = "video"
        assert edition["transcript"].startswith("Good evening.")

    pages = ["/", "/cast", "/masthead", *(f"/stories/{row['slug']}" for row in stories[:8]),
             *(f"/cast/{e['day']}" for e in editions), f"/cast/{editions[0]['day']}?embed=1",
             f"/sections/{stories[0]['section'].lower()}", f"/embed/{stories[0]['id']}"]
    for page in pages:
        urls.update(_page_media(client, page))

    podcast = etree.fromstring(client.get("/podcast.xml").data)
    for image in podcast.iter(f"{ITUNES}image"):
        urls[image.get("href")] = "image"
    for enclosure in podcast.iter("enclosure"):
        urls[enclosure.get("url")] = "video"
    rss = etree.fromstring(client.get("/rss.xml").data)
    for enclosure in rss.iter("enclosure"):
        urls[enclosure.get("url")] = "image"
    for row in stories[:5]:
        record = client.get("/oembed", query_string={"url": f"{HOST}/stories/{row['slug']}"}).get_json()
        urls[record["thumbnail_url"]] = "image"
        for src in re.findall(r'src="([^"]+)"', record["html"]):
            assert src.startswith(HOST + "/"), src

    assert sum(1 for url in urls if "/media/" in url) >= 10
    _check(client, urls)


def test_media_files_are_immutable_and_unknown_names_are_404(client, demo):
    story = client.get("/api/v1/stories?limit=1").get_json()["stories"][0]
    image = client.get(f"/api/v1/stories/{story['id']}").get_json()["image"]
    path = urlsplit(image).path
    assert re.fullmatch(r"/media/[0-9a-f]{32}\.jpg", path)
    response = client.get(path)
    assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    with Image.open(io.BytesIO(response.data)) as picture:
        assert picture.format == "JPEG" and picture.size == (1200, 630)
    again = client.get(path, headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304
    for bad in ("/media/nope.jpg", "/media/" + "0" * 32 + ".jpg", "/media/..%2Fsecret_key",
                "/media/" + path.rsplit("/", 1)[1].replace(".jpg", ".exe")):
        assert client.get(bad).status_code == 404, bad


def test_section_art_differs_by_section_and_piece(client, demo):
    stories = client.get("/api/v1/stories?limit=200").get_json()["stories"]
    images = {s["id"]: client.get(f"/api/v1/stories/{s['id']}").get_json()["image"] for s in stories}
    # The demo paper's 60 pieces: 10 a section, each with a composition of its own.
    assert len(set(images.values())) == len(images)


def test_podcast_artwork_is_square_and_large_and_explicit_is_false(client, demo):
    feed = client.get("/podcast.xml")
    channel = etree.fromstring(feed.data).find("channel")
    assert channel.findtext(f"{ITUNES}explicit") == "false"
    assert all(item.findtext(f"{ITUNES}explicit") == "false" for item in channel.iter("item"))
    artwork = channel.find(f"{ITUNES}image").get("href")
    assert artwork.startswith(f"{HOST}/media/") and artwork.endswith(".jpg")
    response = client.get(artwork)
    assert response.content_type == "image/jpeg"
    with Image.open(io.BytesIO(response.data)) as picture:
        assert picture.format == "JPEG" and picture.mode == "RGB"
        width, height = picture.size
        assert width == height and 1400 <= width <= 3000


def test_every_demo_edition_has_a_real_video_the_podcast_encloses(client, demo):
    """A short H.264 video made at seed time (demo/video.py), captions in step with it; the
    podcast lists every edition with a playable enclosure (read back by podcastparser and
    measured by the ffmpeg that made it)."""
    import imageio_ffmpeg
    import podcastparser

    editions = client.get("/api/v1/cast").get_json()["editions"]
    assert len(editions) == 4
    feed = client.get("/podcast.xml")
    parsed = podcastparser.parse(f"{HOST}/podcast.xml", io.BytesIO(feed.data))
    enclosures = {e["enclosures"][0]["url"]: e["enclosures"][0] for e in parsed["episodes"]}
    assert set(enclosures) == {edition["video_url"] for edition in editions}
    for edition in editions:
        video = client.get(edition["video_url"])
        assert video.status_code == 200 and video.content_type == "video/mp4"
        assert video.data[4:8] == b"ftyp" and b"avc1" in video.data[:4096]
        assert enclosures[edition["video_url"]]["file_size"] == len(video.data) == edition["length_bytes"]
        assert enclosures[edition["video_url"]]["mime_type"] == "video/mp4"
        cues = client.get(edition["captions"]).get_data(as_text=True).count(" --> ")
        assert edition["duration_seconds"] == cues * 4  # one cue each 4 s, the video as long
        path = f"{demo_instance(client)}/media/{edition['video_url'].rsplit('/', 1)[1]}"
        frames, seconds = imageio_ffmpeg.count_frames_and_secs(path)
        assert seconds == edition["duration_seconds"] and frames == seconds  # one still a second

    edition = editions[0]
    tree = lxml.html.fromstring(client.get(f"/cast/{edition['day']}").data)
    [video] = tree.xpath("//video")
    assert video.get("crossorigin") == "anonymous" and urljoin(HOST, video.get("poster")) == edition["poster_url"]
    assert [urljoin(HOST, src) for src in video.xpath("source/@src")] == [edition["video_url"]]
    transcript = tree.xpath("//section[@class='transcript']//p/text()")
    assert transcript[0].startswith("Good evening.") and len(transcript) >= 4
    (ld,) = [json.loads(s) for s in tree.xpath("//script[@type='application/ld+json']/text()")]
    assert ld["@type"] == "VideoObject" and ld["contentUrl"] == edition["video_url"]
    assert ld["duration"].startswith("PT") and ld["transcript"] == edition["transcript"]
    captions = client.get(edition["captions"])
    assert captions.content_type == "text/vtt; charset=utf-8"
    assert captions.data.startswith(b"WEBVTT\n\n1\n00:00:00.000 --> 00:00:04.000\nGood evening.")


def demo_instance(client) -> str:
    return client.application.instance_path


def test_demo_headlines_are_unique_and_figures_agree(client, desk, demo):
    private = db.session.scalar(select(Paper).where(Paper.slug == "demo-private"))
    papers = [("http://localhost", None), ("http://demo-private.localhost", auth(desk.key(private, "read")))]
    for base, headers in papers:
        rows = client.get("/api/v1/stories?limit=200", base_url=base, headers=headers).get_json()["stories"]
        headlines = [row["headline"] for row in rows]
        assert len(headlines) == len(set(headlines)), sorted(headlines)
        figures: dict[str, set] = defaultdict(set)
        for row in rows:
            story = client.get(f"/api/v1/stories/{row['id']}", base_url=base, headers=headers).get_json()
            assert len(story["prose"].split("\n\n")) >= 3
            for fact in story["cited_facts"]:
                # One claim key is one claim: wherever it is cited, its numbers are the same.
                figures[fact["claim_key"]].add(tuple(NUMBER.findall(fact["statement"])))
        assert {k: v for k, v in figures.items() if len(v) > 1} == {}
        rates = {f for k, v in figures.items() if k.endswith("/policy/rate") for f in v}
        assert len(rates) <= 1


def test_captions_and_transcript_through_the_keyed_edition_write(client, desk):
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    body = {"day": "2026-11-20", "title": "The cast, 20 November", "summary": "Two minutes.",
            "video_url": "https://cdn.example.com/2026-11-20.mp4",
            "poster_url": "https://cdn.example.com/2026-11-20.jpg", "length_bytes": 1234,
            "duration_seconds": 125, "captions": "https://cdn.example.com/2026-11-20.vtt",
            "transcript": "Good evening.\n\nRates held & talks resumed <today>."}
    for bad in ({**body, "captions": "not a url"}, {**body, "captions": "ftp://x.example/a.vtt"},
                {**body, "transcript": 42}, {**body, "transcript": "a\x00b"}):
        refused = client.post("/api/v1/cast", json=bad, headers=auth(admin))
        assert refused.status_code == 422, bad
        assert refused.mimetype == "application/problem+json"
    response = client.post("/api/v1/cast", json=body, headers=auth(admin))
    assert response.status_code == 201, response.get_json()
    made = response.get_json()
    assert made["captions"] == body["captions"] and made["transcript"] == body["transcript"]
    listed = client.get("/api/v1/cast").get_json()["editions"][0]
    assert (listed["captions"], listed["transcript"]) == (body["captions"], body["transcript"])

    tree = lxml.html.fromstring(client.get("/cast/2026-11-20").data)
    (track,) = tree.xpath("//track")
    assert (track.get("kind"), track.get("srclang"), track.get("src")) == ("captions", "en", body["captions"])
    assert tree.xpath("//section[@class='transcript']//p/text()") == [
        "Good evening.", "Rates held & talks resumed <today>."]
    (ld,) = [json.loads(s) for s in tree.xpath("//script[@type='application/ld+json']/text()")]
    assert ld["contentUrl"] == body["video_url"] and ld["duration"] == "PT2M5S"
    assert ld["embedUrl"] == "http://localhost/cast/2026-11-20?embed=1"
    assert ld["transcript"] == body["transcript"] and ld["thumbnailUrl"] == [body["poster_url"]]

    # Without captions or transcript: null and empty, and no <track> or transcript section.
    plain = {k: v for k, v in body.items() if k not in ("captions", "transcript")}
    second = client.post("/api/v1/cast", json={**plain, "day": "2026-11-21"}, headers=auth(admin))
    assert second.status_code == 201
    assert second.get_json()["captions"] is None and second.get_json()["transcript"] == ""
    tree = lxml.html.fromstring(client.get("/cast/2026-11-21").data)
    assert tree.xpath("//track") == [] and tree.xpath("//section[@class='transcript']") == []
    assert tree.xpath("//video/source/@src") == [body["video_url"]]


@pytest.mark.browser
def test_demo_pages_in_a_browser_load_only_from_the_papers_host(browser, live, runner, client):
    """Every page kind of the seeded demo in Chromium with every request off the paper's host
    aborted: no request leaves the host, none fails, and every picture decodes."""
    result = runner.invoke(args=["seed-demo", "--subscribers", "0"])
    assert result.exit_code == 0, result.output
    stories = client.get("/api/v1/stories?limit=200").get_json()["stories"]
    day = client.get("/api/v1/cast").get_json()["editions"][0]["day"]
    own = urlsplit(live).netloc
    context = browser.new_context()
    page = context.new_page()
    seen = watch(page)
    failed: list[str] = []
    # A request cut short by the next navigation (the favicon of a page left at once) is
    # ERR_ABORTED; anything refused or broken (off-host requests are aborted as ERR_FAILED) counts.
    page.on("requestfailed", lambda request: None if request.failure == "net::ERR_ABORTED"
            else failed.append(request.url))
    page.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).netloc == own
               else route.abort())
    for path in ("/", f"/stories/{stories[0]['slug']}", f"/sections/{stories[1]['section'].lower()}",
                 "/cast", f"/cast/{day}", f"/cast/{day}?embed=1", f"/embed/{stories[2]['id']}", "/masthead"):
        response = page.goto(live + path, wait_until="load")
        assert response.status == 200, path
        # Lazy pictures below the fold load too: each is made eager and must decode.
        broken = page.evaluate("""async () => {
            const images = [...document.images];
            images.forEach(i => { i.loading = "eager"; });
            const ok = await Promise.all(images.map(i => i.decode().then(() => i.naturalWidth > 0, () => false)));
            return images.filter((i, n) => !ok[n]).map(i => i.src);
        }""")
        assert broken == [], (path, broken)
    assert hosts(seen["requests"]) == {own}
    assert failed == [] and seen["errors"] == []
    context.close()


@pytest.mark.browser
def test_chromium_plays_every_demo_edition_with_its_captions(browser, live, runner):
    """Each demo edition's page in Chromium: the `<video>` loads its metadata (a duration as long
    as the captions), decodes its first frame, and the captions track has its cues."""
    assert runner.invoke(args=["seed-demo", "--subscribers", "0"]).exit_code == 0
    editions = json.loads(urlopen(f"{live}/api/v1/cast").read())["editions"]
    context = browser.new_context()
    page = context.new_page()
    seen = watch(page)
    for edition in editions:
        page.goto(f"{live}/cast/{edition['day']}")
        state = page.evaluate("""() => new Promise((done, fail) => {
            const video = document.querySelector('video');
            const track = video.textTracks[0];
            track.mode = 'hidden';
            const finish = () => done({duration: video.duration, width: video.videoWidth,
                                       cues: track.cues ? track.cues.length : 0,
                                       error: video.error && video.error.code});
            video.addEventListener('error', () => fail(new Error('video error ' + video.error.code)));
            video.preload = 'auto';
            video.addEventListener('loadeddata', () => setTimeout(finish, 300), {once: true});
            video.load();
        })""")
        cues = urlopen(edition["captions"]).read().decode().count(" --> ")
        assert state["error"] is None and state["width"] == 640
        assert round(state["duration"]) == edition["duration_seconds"] == cues * 4
        assert state["cues"] == cues
    assert hosts(seen["requests"]) == hosts([live]) and seen["errors"] == []
    context.close()
