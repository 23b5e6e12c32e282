"""Call every operation of the Paper Desk API through the generated Python client.

Run by scripts/clients/build.py with the clients venv's Python (openapi-python-client's own
pins), against a real server on loopback that serves the demo paper:

    python scripts/clients/smoke.py BASE_URL ADMIN_KEY READ_KEY CLIENT_DIR DOCUMENT PREFERENCES_TOKEN

Each call must answer 2xx and parse into the model the document names for it (a JSON answer),
or into text (the embed card's HTML). Public routes are called with a plain `Client` (no key),
keyed routes with an `AuthenticatedClient` holding the admin key (the subscriber counts with the
read key as well); a reader's preferences with PREFERENCES_TOKEN (the token of an alert's manage
link, made by build.py). Every operation of DOCUMENT must be called: an operation added to the API
that is a GET without required parameters is called as it is (its module found by its
operationId); any other must get a line in `calls` below, or this script fails naming it.
Prints one line per call, then "N passed, N failed"; exits 1 on any failure.
"""
from __future__ import annotations

import datetime
import importlib
import json
import re
import sys
import uuid
from pathlib import Path


def snake(name: str) -> str:
    """The module name openapi-python-client gives an operationId: `listStories` -> `list_stories`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def main(base: str, admin_key: str, read_key: str, client_dir: str, document: str, token: str) -> int:
    sys.path.insert(0, client_dir)
    pkg = "paper_desk_client"
    client_mod = importlib.import_module(f"{pkg}.client")
    models = importlib.import_module(f"{pkg}.models")
    doc = json.loads(Path(document).read_text(encoding="utf-8"))
    public = client_mod.Client(base_url=base, raise_on_unexpected_status=True, timeout=30)
    admin = client_mod.AuthenticatedClient(base_url=base, token=admin_key, timeout=30,
                                           raise_on_unexpected_status=True)
    reader = client_mod.AuthenticatedClient(base_url=base, token=read_key, timeout=30,
                                            raise_on_unexpected_status=True)

    modules = {}
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            tag = operation["tags"][0]
            modules[operation["operationId"]] = (tag, method, path, operation)

    def op(operation_id: str):
        tag = modules[operation_id][0]
        return importlib.import_module(f"{pkg}.api.{snake(tag)}.{snake(operation_id)}")

    called: set[str] = set()
    results: list[tuple[str, bool, str]] = []

    def call(operation_id: str, client, expect=None, **kwargs):
        """Call `operation_id`; check a 2xx status and a parsed `expect` (a model class, or str)."""
        called.add(operation_id)
        who = "admin" if client is admin else "read" if client is reader else "public"
        try:
            response = op(operation_id).sync_detailed(client=client, **kwargs)
            ok = 200 <= int(response.status_code) < 300
            parsed = response.parsed
            if ok and expect is not None and not isinstance(parsed, expect):
                ok = False
            note = f"{int(response.status_code)} {type(parsed).__name__}"
            if not ok:
                note += f" {response.content[:300]!r}"
        except Exception as exc:  # noqa: BLE001  (a client that cannot call or parse is what this finds)
            ok, parsed, note = False, None, f"{type(exc).__name__}: {exc}"
        results.append((f"{operation_id} ({who})", ok, note))
        print(f"{'ok  ' if ok else 'FAIL'}  {operation_id:<20} {who:<6} {note}", flush=True)
        return parsed

    # --- public lane: no key --------------------------------------------------------------
    call("paperIndex", public, models.PaperIndexOut)
    call("openapiDocument", public)
    call("receiptKeys", public, models.ReceiptKeysOut)
    listed = call("listStories", public, models.StoryListOut, limit=5)
    first = listed.stories[0] if listed and listed.stories else None
    story_id = str(first.id) if first else "1"
    story = call("getStory", public, models.StoryOut, id=story_id)
    call("logIndex", public, models.LogOut)
    call("storyLogProof", public, None, id=story_id)
    history = call("listRevisions", public, models.RevisionListOut, id=story_id)
    revs = history.revisions if history is not None else []
    call("getRevision", public, models.RevisionTextOut, id=story_id, rev=revs[-1].rev if revs else 1)
    call("listSections", public, models.SectionListOut)
    call("getMasthead", public, models.MastheadOut)
    call("listCast", public, models.CastOut)
    days = call("listDays", public, models.DayListOut)
    day = days.days[0].day if days and days.days else datetime.date.today()
    call("getDay", public, models.DayStoriesOut, day=day)
    call("getFront", public, models.FrontOut)
    word = (first.headline.split()[0] if first else "news").strip(".,:;!?'\"") or "news"
    call("searchStories", public, models.SearchOut, q=word)
    call("listPosts", public, models.PostListOut, limit=5)
    page = story.url if story is not None and hasattr(story, "url") else f"{base}/stories/{story_id}"
    call("getOembed", public, models.OEmbedOut, url_query=page)
    call("getEmbedCard", public, str, id=story_id)
    tag = uuid.uuid4().hex[:8]
    call("subscribe", public, models.SubscribeAcceptedOut,
         body=models.SubscribeIn(email=f"reader-{tag}@example.org", cast=False))
    call("createSubscribers", public, models.SubscribeAcceptedOut,
         body=models.SubscribeIn(email=f"reader2-{tag}@example.org"))

    # --- keyed lane: an admin key, and a read key where the level differs ----------------
    call("agentCheck", admin, models.AgentOut)
    call("readConfig", admin, models.ConfigOut)
    call("readConfig", reader, models.ConfigOut)
    call("updateConfig", admin, models.ConfigOut, body=models.ConfigPatch(motto="Filed by declared AI."))
    call("listStories", admin, models.StoryListOut, limit=5)
    section = call("createSection", admin, models.SectionOut,
                   body=models.SectionIn(name=f"Clients {tag}", description="Made by the client smoke test."))
    if section is not None:
        call("updateSection", admin, models.SectionOut, slug=section.slug,
             body=models.SectionPatch(description="Changed by the client smoke test."))
    persona = call("createPersona", admin, models.PersonaOut,
                   body=models.PersonaIn(name=f"Client Probe {tag}", beat="Generated clients",
                                         bio="A declared AI persona the client smoke test made."))
    if persona is not None:
        call("updatePersona", admin, models.PersonaOut, slug=persona.slug,
             body=models.PersonaPatch(beat="Generated clients, checked"))
    section_name = section.name if section is not None else "World"
    byline = persona.name if persona is not None else "Ada Quill"
    filed = call("fileStory", admin, models.FiledStoryOut, body=models.StoryIn(
        headline=f"Clients call every route {tag}", section=section_name, byline=byline,
        dek="A piece filed through the generated Python client.",
        prose="The generated client filed this piece through the API."))
    filed_id = str(filed.id) if filed is not None else story_id
    call("reviseStory", admin, models.FiledStoryOut, id=filed_id,
         body=models.StoryPatch(dek="Revised through the generated Python client."))
    call("storyProof", admin, models.ProofOut, id=filed_id)
    call("airStory", admin, models.StoryOut, id=filed_id)
    call("unairStory", admin, models.StoryOut, id=filed_id)
    edition_day = datetime.date(2001, 1, 1) + datetime.timedelta(days=int(tag, 16) % 3000)
    call("publishCast", admin, models.EditionOut, body=models.CastIn(
        day=edition_day, title="The client smoke edition", video_url="https://video.example.org/e.mp4",
        poster_url="https://video.example.org/e.jpg", duration_seconds=60, length_bytes=1000))
    call("listSubscribers", reader, models.SubscribersOut)
    call("listSubscribers", admin, models.SubscribersOut)
    call("getPreferences", public, models.PreferencesOut, token=token)
    call("updatePreferences", public, models.PreferencesOut, token=token,
         body=models.PreferencesPatch.from_dict({"cadence": "weekly", "cast": True}))

    # Content webhooks: a loopback endpoint (the server allows private targets here); nothing
    # listens on port 9, so deliveries only queue, which is all these routes report.
    hook = call("createWebhook", admin, models.WebhookCreatedOut, body=models.WebhookIn.from_dict(
        {"url": "http://127.0.0.1:9/hooks", "events": ["piece.aired", "edition.published"]}))
    hook_id = hook.id if hook is not None else "wh_missing"
    call("getWebhook", admin, models.WebhookOut, id=hook_id)
    ping = call("pingWebhook", admin, models.AcceptedDeliveryOut, id=hook_id)
    call("listDeliveries", admin, models.DeliveriesOut, id=hook_id)
    call("redeliver", admin, models.AcceptedDeliveryOut, id=hook_id,
         delivery_id=ping.id if ping is not None else "dlv_missing")
    call("deleteWebhook", admin, None, id=hook_id)

    # --- whatever the document has that the lines above do not call ------------------------
    for operation_id, (_, method, path, operation) in sorted(modules.items()):
        if operation_id in called:
            continue
        required = [p for p in operation.get("parameters", []) if p.get("required")]
        if method == "get" and not required and "requestBody" not in operation:
            keyed = all(requirement for requirement in operation.get("security", [{}]))
            call(operation_id, admin if keyed else public)
        else:
            results.append((operation_id, False, "not called"))
            print(f"FAIL  {operation_id:<20} {method.upper()} {path}: not called; add it to "
                  "scripts/clients/smoke.py", flush=True)

    failed = [name for name, ok, _ in results if not ok]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
