"""The paper and its AI personas in the fediverse (docs/FEDERATION.md), through HTTP and `flask
drain-outbox --once`, against a follower server of ours on loopback.

Outside code checks our cryptography: `apsig` (PyPI; its own draft-cavage code and its own
FEP-8b32 `eddsa-jcs-2022` verifier on `jcs` and `multiformats`) signs the follower's inbox POSTs,
verifies the HTTP signatures of what the worker posts, and verifies the Articles' proofs against
the Multikey each actor publishes. `pyld` expands the documents as JSON-LD with the standard
contexts from tests/data/jsonld/ (no network).
"""
from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
import time_machine
from apsig import ProofVerifier
from apsig.draft.sign import Signer
from apsig.draft.verify import Verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlalchemy import select

from extensions import db
from models import ApDelivery, ApFollower, ApKey
from models.clock import utcnow
from services.delivery.federation import remote
from services.newsroom import filing
from tests.fixtures import jsonld
from tests.fixtures.keys import auth

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
AP = "application/activity+json"
PUBLIC = "https://www.w3.org/ns/activitystreams#Public"


class Follower:
    """A fediverse server of ours on loopback: one actor, `alice`, with an RSA key, an inbox
    and a shared inbox; records every POST; answers `status` to them."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.pem = self.key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
        self.posts: list[dict] = []
        self.fetches: list[str] = []
        self.status = 202
        self.gone = False
        self.lists_apart_key = False  # whether the actor lists /keys/alice besides #main-key
        follower = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                follower.fetches.append(self.path)
                if follower.gone:
                    self.send_response(410)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == "/keys/alice":  # a key published apart from its actor
                    body = json.dumps({"id": follower.origin + "/keys/alice", "owner": follower.actor_id,
                                       "publicKeyPem": follower.pem}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if self.path != "/users/alice":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps(follower.actor()).encode()
                self.send_response(200)
                self.send_header("Content-Type", AP)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                follower.posts.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(follower.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.actor_id = self.origin + "/users/alice"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def actor(self) -> dict:
        keys = [{"id": self.actor_id + "#main-key", "owner": self.actor_id, "publicKeyPem": self.pem}]
        if self.lists_apart_key:
            keys.append({"id": self.origin + "/keys/alice", "owner": self.actor_id, "publicKeyPem": self.pem})
        return {"@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
                "id": self.actor_id, "type": "Person", "preferredUsername": "alice",
                "inbox": self.actor_id + "/inbox", "endpoints": {"sharedInbox": self.origin + "/inbox"},
                "publicKey": keys if self.lists_apart_key else keys[0]}

    def signed(self, url: str, activity: dict, *, key=None, key_id=None) -> tuple[bytes, dict]:
        """The body and headers of a POST of `activity` to `url`, signed by apsig."""
        body = json.dumps(activity).encode()
        headers = Signer(headers={"Content-Type": AP}, private_key=key or self.key, method="POST", url=url,
                         key_id=key_id or self.actor_id + "#main-key", body=body).sign()
        # apsig adds `Authorization: Signature ...` too, as some servers do: the routes read no desk keys.
        return body, headers

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def follower():
    remote.forget_all()
    server = Follower()
    yield server
    server.stop()
    remote.forget_all()


@pytest.fixture
def paper(desk):
    return desk.paper("demo")


@pytest.fixture
def admin(desk, paper):
    return desk.key(paper, "admin")


def drain(runner):
    result = runner.invoke(args=["drain-outbox", "--once"])
    assert result.exit_code == 0, result.output
    return result.output


def get_ap(client, path, **kwargs):
    response = client.get(path, headers={"Accept": AP}, **kwargs)
    assert response.status_code == 200, (path, response.status_code, response.get_data(as_text=True))
    assert response.mimetype == AP
    return response.get_json()


def follow(client, follower, target_actor, inbox_path, follow_id="/follows/1"):
    activity = {"@context": "https://www.w3.org/ns/activitystreams", "id": follower.origin + follow_id,
                "type": "Follow", "actor": follower.actor_id, "object": target_actor}
    body, headers = follower.signed("http://localhost" + inbox_path, activity)
    return client.post(inbox_path, data=body, headers=headers), activity


def proven(multikey, document):
    """apsig's verdict on an object's proof: the verification method, or None. (It pops
    `proofValue` from the dict it is given, so it gets a copy.)"""
    return ProofVerifier(multikey).verify(json.loads(json.dumps(document)), raise_on_fail=True)


def verify_post(post, public_pem):
    """apsig's verdict on one POST the worker made: the keyId it names, or an exception."""
    return Verifier(public_pem=public_pem, method="POST", url="http://x" + post["path"],
                    headers=post["headers"], body=post["body"]).verify(raise_on_fail=True)


# ----------------------------------------------------------------------------- discovery


def test_webfinger_names_the_paper_and_each_persona(client, paper):
    answer = client.get("/.well-known/webfinger?resource=acct:demo@localhost")
    assert answer.status_code == 200 and answer.mimetype == "application/jrd+json"
    jrd = answer.get_json()
    assert jrd["subject"] == "acct:demo@localhost"
    assert {"rel": "self", "type": AP, "href": "http://localhost/ap/paper"} in jrd["links"]
    persona = client.get("/.well-known/webfinger?resource=acct:ada-quill@localhost").get_json()
    assert {"rel": "self", "type": AP, "href": "http://localhost/ap/personas/ada-quill"} in persona["links"]
    by_url = client.get("/.well-known/webfinger?resource=http://localhost/ap/personas/ada-quill").get_json()
    assert by_url["subject"] == "acct:ada-quill@localhost"
    for resource, status in [("acct:nobody@localhost", 404), ("acct:demo@elsewhere.example", 404), ("", 400),
                             ("mailto:x@localhost", 404)]:
        answer = client.get(f"/.well-known/webfinger?resource={resource}")
        assert answer.status_code == status, resource
        assert answer.mimetype == "application/problem+json"


def test_nodeinfo_2_0_and_2_1(client, desk, paper):
    """Both versions, listed in the index: Takahe reads 2.0 only, most servers 2.1."""
    desk.piece(paper, "One")
    index = client.get("/.well-known/nodeinfo").get_json()
    assert [(link["rel"], link["href"]) for link in index["links"]] == [
        ("http://nodeinfo.diaspora.software/ns/schema/2.0", "http://localhost/nodeinfo/2.0"),
        ("http://nodeinfo.diaspora.software/ns/schema/2.1", "http://localhost/nodeinfo/2.1")]
    for version in ("2.0", "2.1"):
        response = client.get(f"/nodeinfo/{version}")
        assert response.status_code == 200
        assert response.headers["Content-Type"] == (
            f'application/json; profile="http://nodeinfo.diaspora.software/ns/schema/{version}#"')
        info = response.get_json()
        assert info["version"] == version and info["protocols"] == ["activitypub"]
        assert info["openRegistrations"] is False
        assert info["usage"]["users"]["total"] == 3 and info["usage"]["localPosts"] == 1
        assert info["software"]["name"] == "paperdesk"
        # 2.0's schema allows only name and version under software (additionalProperties false).
        assert ("homepage" in info["software"]) == (version == "2.1")
    assert client.get("/nodeinfo/2.2").status_code == 404


def test_story_pages_name_their_fediverse_creator(client, app, desk, paper):
    """`<meta name="fediverse:creator">` names the persona's account, so Mastodon credits a
    shared link to it; not when the paper does not federate."""
    piece = desk.piece(paper, "Credited")
    page = client.get(f"/stories/{piece.slug}").get_data(as_text=True)
    assert '<meta name="fediverse:creator" content="@ada-quill@localhost">' in page
    jrd = client.get("/.well-known/webfinger?resource=acct:ada-quill@localhost").get_json()
    assert jrd["subject"] == "acct:ada-quill@localhost"  # the handle resolves
    app.config["ACTIVITYPUB_ENABLED"] = False
    try:
        assert "fediverse:creator" not in client.get(f"/stories/{piece.slug}").get_data(as_text=True)
    finally:
        app.config["ACTIVITYPUB_ENABLED"] = True


def test_pages_point_at_their_activitypub_documents(client, desk, paper):
    piece = desk.piece(paper, "Linked")
    tag = '<link rel="alternate" type="application/activity+json" href="{}"'
    assert tag.format("/ap/paper") in client.get("/").get_data(as_text=True)
    assert tag.format(f"/ap/stories/{piece.id}") in client.get(f"/stories/{piece.slug}").get_data(as_text=True)
    assert tag.format("/ap/personas/ada-quill") in client.get("/masthead/ada-quill").get_data(as_text=True)


# ----------------------------------------------------------------------------- actors and objects


def test_actors_are_services_with_both_keys(client, paper):
    actor = get_ap(client, "/ap/paper")
    assert actor["type"] == "Service" and actor["id"] == "http://localhost/ap/paper"
    assert actor["preferredUsername"] == "demo" and actor["name"] == "The Demo Times"
    for name in ("inbox", "outbox", "followers"):
        assert actor[name] == f"http://localhost/ap/paper/{name}"
    assert actor["endpoints"]["sharedInbox"] == "http://localhost/ap/inbox"
    assert actor["publicKey"]["id"] == "http://localhost/ap/paper#main-key"
    key = serialization.load_pem_public_key(actor["publicKey"]["publicKeyPem"].encode())
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048
    [method] = actor["assertionMethod"]
    assert method["type"] == "Multikey" and method["publicKeyMultibase"].startswith("z6Mk")
    assert "AI persona" in actor["summary"]
    persona = get_ap(client, "/ap/personas/ada-quill")
    assert persona["type"] == "Service" and persona["name"] == "Ada Quill (AI persona)"
    assert "declared AI persona" in persona["summary"]
    assert persona["attributionDomains"] == ["localhost"]
    # PNG icons (many servers refuse SVG), served as what they say they are.
    assert persona["icon"] == {"type": "Image", "mediaType": "image/png",
                               "url": "http://localhost/masthead/ada-quill/avatar.png"}
    for icon in (actor["icon"], persona["icon"]):
        assert icon["mediaType"] == "image/png"
        response = client.get(icon["url"].removeprefix("http://localhost"))
        assert response.status_code == 200 and response.mimetype == "image/png"
        assert response.data.startswith(b"\x89PNG\r\n\x1a\n")
        response.close()
    # One RSA key per paper, the same on every actor, and made once.
    assert persona["publicKey"]["publicKeyPem"] == actor["publicKey"]["publicKeyPem"]
    assert get_ap(client, "/ap/paper")["publicKey"] == actor["publicKey"]
    assert persona["assertionMethod"][0]["publicKeyMultibase"] == method["publicKeyMultibase"]
    # The Multikey is the paper's receipt key (docs/PROOFS.md).
    receipt = client.get("/api/v1/receipt-keys").get_json()
    assert receipt  # published there as base64; the proof test below ties the two together
    assert client.get("/ap/personas/nobody").status_code == 404


def test_the_rsa_key_is_sealed_at_rest(client, paper):
    pem = get_ap(client, "/ap/paper")["publicKey"]["publicKeyPem"]
    stored = db.session.execute(db.text("SELECT private_key FROM ap_keys")).scalar_one()
    db.session.rollback()
    assert stored.startswith("v1:") and "PRIVATE" not in stored and pem not in stored


def test_rotate_secret_reseals_the_rsa_key_and_the_actor_keeps_it(client, desk, paper, make_app):
    from services.delivery.federation import keys as ap_keys

    pem = get_ap(client, "/ap/paper")["publicKey"]["publicKeyPem"]
    old_secret = desk.app.config["SECRET_KEY"]
    moved = make_app(SECRET_KEY="another secret of enough length for the instance")
    with moved.app_context():
        row = db.session.get(ApKey, paper.id)
        with pytest.raises(ap_keys.KeyLocked):
            ap_keys.private_key(row, moved.config["SECRET_KEY"])
        db.session.rollback()
        result = moved.test_cli_runner().invoke(args=["rotate-secret", "--old-secret", old_secret])
        assert result.exit_code == 0, result.output
        assert f"resealed the ActivityPub key of paper {paper.id}" in result.output
        row = db.session.get(ApKey, paper.id, populate_existing=True)
        opened = ap_keys.private_key(row, moved.config["SECRET_KEY"])
        db.session.rollback()
    assert get_ap(moved.test_client(), "/ap/paper")["publicKey"]["publicKeyPem"] == pem
    public = opened.public_key().public_bytes(serialization.Encoding.PEM,
                                              serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    assert public == pem  # the same key, now sealed under the new secret
    # Run again, nothing is left to reseal.
    with moved.app_context():
        again = moved.test_cli_runner().invoke(args=["rotate-secret", "--old-secret", old_secret])
    assert again.exit_code == 0 and "ActivityPub key" not in again.output


def test_article_has_a_proof_that_apsig_verifies(client, desk, paper):
    piece = desk.piece(paper, "Rates rise again", facts=2, image="https://cdn.example.com/a.jpg")
    article = get_ap(client, f"/ap/stories/{piece.id}")
    assert article["type"] == "Article" and article["id"] == f"http://localhost/ap/stories/{piece.id}"
    assert article["name"] == "Rates rise again"
    assert article["attributedTo"] == "http://localhost/ap/personas/ada-quill"
    assert "AI persona" in article["summary"] and "The standfirst." in article["summary"]
    assert 'id="fact-1"' in article["content"] and "<ol" in article["content"]
    assert article["url"] == f"http://localhost/stories/{piece.slug}"
    assert article["digitalSourceType"].endswith("trainedAlgorithmicMedia")
    assert article["preview"]["type"] == "Note" and article["image"]["url"] == "https://cdn.example.com/a.jpg"
    assert article["tag"][0]["type"] == "Hashtag" and article["context"] == "http://localhost/sections/world"
    proof = article["proof"]
    assert proof["type"] == "DataIntegrityProof" and proof["cryptosuite"] == "eddsa-jcs-2022"
    assert proof["verificationMethod"] == "http://localhost/ap/personas/ada-quill#ed25519-key"
    multikey = get_ap(client, "/ap/personas/ada-quill")["assertionMethod"][0]["publicKeyMultibase"]
    assert ProofVerifier(multikey).verify(json.loads(json.dumps(article)), raise_on_fail=True) == \
        proof["verificationMethod"]
    tampered = json.loads(json.dumps(article))
    tampered["name"] = "Rates fall"
    assert ProofVerifier(multikey).verify(tampered) is None
    # The same bytes every time (a deterministic proof): the response cache may keep it.
    assert get_ap(client, f"/ap/stories/{piece.id}") == article


def served_context(client) -> dict[str, dict]:
    """The paper's own JSON-LD context, as the app serves it, by its URL."""
    response = client.get("/ap/context.jsonld")
    assert response.status_code == 200 and response.mimetype == "application/ld+json"
    return {"http://localhost/ap/context.jsonld": response.get_json()}


def untranslated(compact: dict, expanded: dict) -> set[str]:
    """The keys of a compact node that expansion dropped (a term no context defines): every
    key but @context becomes one expanded key (`id` -> @id, `type` -> @type, a term -> its IRI)."""
    keys = [key for key in compact if key != "@context"]
    return set(keys) if len(keys) != len(expanded) else set()


@pytest.mark.parametrize("path", ["/ap/paper", "/ap/personas/ada-quill"])
def test_actors_expand_as_json_ld_with_their_multikey(client, paper, path):
    """pyld, with the standard contexts from tests/data/jsonld/, finds every term of an actor,
    the Ed25519 Multikey under sec:assertionMethod above all (lost before the paper's context
    defined `assertionMethod`: a JSON-LD consumer such as Fedify saw no key)."""
    actor = get_ap(client, path)
    node = jsonld.expand(actor, served_context(client))
    assert untranslated(actor, node) == set()
    [method] = node[jsonld.SEC + "assertionMethod"]
    assert method["@id"] == actor["id"] + "#ed25519-key"
    assert method["@type"] == [jsonld.SEC + "Multikey"]
    assert method[jsonld.SEC + "controller"] == [{"@id": actor["id"]}]
    [multibase] = method[jsonld.SEC + "publicKeyMultibase"]
    assert multibase["@value"] == actor["assertionMethod"][0]["publicKeyMultibase"]
    [key] = node[jsonld.SEC + "publicKey"]
    assert key[jsonld.SEC + "publicKeyPem"][0]["@value"].startswith("-----BEGIN PUBLIC KEY-----")
    assert node[jsonld.AS + "manuallyApprovesFollowers"] == [{"@value": False}]
    assert node["http://joinmastodon.org/ns#discoverable"] == [{"@value": True}]
    assert node["http://joinmastodon.org/ns#indexable"] == [{"@value": True}]
    # Mastodon's own definition (an @id: a bare domain name is a relative IRI), kept for its readers.
    assert node["http://joinmastodon.org/ns#attributionDomains"][0]["@id"].endswith("localhost")


def test_article_is_json_ld_and_its_proof_still_verifies(client, desk, paper):
    piece = desk.piece(paper, "Expandable", facts=1, image="https://cdn.example.com/a.jpg")
    article = get_ap(client, f"/ap/stories/{piece.id}")
    node = jsonld.expand({k: v for k, v in article.items() if k != "proof"}, served_context(client))
    assert untranslated({k: v for k, v in article.items() if k != "proof"}, node) == set()
    assert node["@type"] == [jsonld.AS + "Article"]
    assert node["http://schema.org/digitalSourceType"][0]["@id"].endswith("trainedAlgorithmicMedia")
    proof = jsonld.expand(article, served_context(client))[jsonld.SEC + "proof"][0]["@graph"][0]
    assert proof[jsonld.SEC + "cryptosuite"][0]["@value"] == "eddsa-jcs-2022"
    multikey = get_ap(client, "/ap/personas/ada-quill")["assertionMethod"][0]["publicKeyMultibase"]
    assert proven(multikey, article) == article["proof"]["verificationMethod"]


BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
ACTIVITYPUB_CLIENTS = [{"Accept": AP}, {"Accept": 'application/ld+json; profile="https://www.w3.org/ns/activitystreams"'},
                       {"Accept": "application/activity+json, application/ld+json"}, {"Accept": "*/*"}, {}]


def test_an_articles_id_sends_a_browser_to_the_story_page(make_app, desk, paper):
    """Peers hand an Article's `id` to their readers as its link: a browser (Accept: text/html)
    is sent to the story page (303), an ActivityPub client (or one that names no type) gets the
    Article. Both say `Vary: Accept`, and the response cache and the replay keep them apart
    (a production-like app, caches on): whichever asked first, each gets its own."""
    piece = desk.piece(paper, "Negotiated")
    path = f"/ap/stories/{piece.id}"
    for first in ("browser", "server"):
        app = make_app()
        client = app.test_client()
        for _ in range(3):  # a miss, a stored answer, a replay
            order = [BROWSER, *ACTIVITYPUB_CLIENTS] if first == "browser" else [*ACTIVITYPUB_CLIENTS, BROWSER]
            for headers in order:
                response = client.get(path, headers=headers)
                assert "Accept" in {v.strip() for v in response.headers["Vary"].split(",")}, headers
                if headers is BROWSER:
                    assert response.status_code == 303, (first, response.status_code)
                    assert response.headers["Location"] == f"http://localhost/stories/{piece.slug}"
                else:
                    assert response.status_code == 200 and response.mimetype == AP, (first, headers)
                    assert response.get_json()["id"] == f"http://localhost{path}"
        # A browser holding the Article's ETag still goes to the page, never a 304 of JSON.
        etag = client.get(path, headers={"Accept": AP}).headers["ETag"]
        assert client.get(path, headers={**BROWSER, "If-None-Match": etag}).status_code == 303
        assert client.get(path, headers={"Accept": AP, "If-None-Match": etag}).status_code == 304
        assert app.extensions["paperdesk.replay.stats"]["replayed"] > 0  # the replay answered some


def test_drafts_scheduled_and_pulled_pieces_are_not_objects(client, desk, paper, admin):
    draft = desk.piece(paper, "Draft", on_air_at=None)
    with time_machine.travel(T, tick=False):
        scheduled = desk.piece(paper, "Later", on_air_at=T + timedelta(hours=1))
        assert client.get(f"/ap/stories/{draft.id}").status_code == 404
        assert client.get(f"/ap/stories/{scheduled.id}").status_code == 404
        assert client.get("/ap/stories/99999999999").status_code == 404
    aired = desk.piece(paper, "Aired")
    assert client.get(f"/ap/stories/{aired.id}").status_code == 200
    assert client.delete(f"/api/v1/stories/{aired.id}/air", headers=auth(admin)).status_code in (200, 204)
    gone = client.get(f"/ap/stories/{aired.id}")
    assert gone.status_code == 410 and gone.mimetype == AP
    assert gone.get_json()["type"] == "Tombstone" and gone.get_json()["formerType"] == "Article"


def test_private_paper_and_unknown_host_are_404_everywhere(client, desk, follower):
    private = desk.paper("hidden", public=False)
    piece = desk.piece(private, "Secret")
    key = desk.key(private, "admin")
    host = {"base_url": "http://hidden.localhost"}
    paths = ["/.well-known/webfinger?resource=acct:hidden@hidden.localhost", "/.well-known/nodeinfo",
             "/nodeinfo/2.1", "/ap/paper", "/ap/personas/ada-quill", f"/ap/stories/{piece.id}",
             "/ap/paper/outbox", "/ap/paper/followers", "/ap/context.jsonld"]
    for path in paths:
        assert client.get(path, **host).status_code == 404, path
        assert client.get(path, headers=auth(key), **host).status_code == 404, path  # even with its key
        assert client.get(path, base_url="http://nowhere.localhost").status_code == 404, path
    body, headers = follower.signed("http://hidden.localhost/ap/inbox", {"type": "Follow", "actor": follower.actor_id,
                                                                         "object": "http://hidden.localhost/ap/paper"})
    assert client.post("/ap/inbox", data=body, headers=headers, **host).status_code == 404
    assert db.session.scalars(select(ApFollower)).all() == []


def test_refusals_are_the_apps_own_problems(client, paper, follower):
    """These routes' policy says `problems` (web/policy.py), so every refusal, a service's or
    an abort's (tenancy's 404, the body limit's 413, routing's 405), is the app's own
    problem+json (web/errors.py), worded as on the API: a server reading it sees one format."""
    def problem(answer, status):
        assert answer.status_code == status and answer.mimetype == "application/problem+json", answer.status_code
        assert answer.headers["Cache-Control"] == "no-store"
        body = answer.get_json()
        assert body["status"] == status and body["type"] == "about:blank"
        return body

    too_large = client.post("/ap/inbox", data=b"x" * 70_000, headers={"Content-Type": AP})
    api_too_large = client.post("/api/v1/subscribers", data=b"x" * 70_000, content_type="application/json")
    assert problem(too_large, 413) == problem(api_too_large, 413)
    assert problem(too_large, 413)["detail"] == "The request body is larger than 64 KiB."
    not_allowed = client.delete("/ap/paper")
    assert problem(not_allowed, 405)["detail"] == "This method is not allowed on this path."
    assert set(not_allowed.headers["Allow"].split(", ")) == {"GET", "HEAD", "OPTIONS"}
    unknown = client.get("/ap/paper", base_url="http://nowhere.localhost")
    assert problem(unknown, 404)["detail"] == "No paper is served on this host."
    assert problem(client.get("/ap/stories/99999"), 404)["detail"] == "There is no such story on air."
    assert problem(client.get("/ap/paper/outbox?page=x"), 400)["detail"].startswith("`page` is a whole number")
    assert problem(client.post("/ap/inbox", data=b"{}"), 401)


# ----------------------------------------------------------------------------- the inbox


def test_follow_records_the_follower_and_queues_a_signed_accept(client, runner, paper, follower):
    with time_machine.travel(T, tick=False):
        answer, activity = follow(client, follower, "http://localhost/ap/personas/ada-quill",
                                  "/ap/personas/ada-quill/inbox")
        assert answer.status_code == 202, answer.get_json()
        assert follower.fetches == ["/users/alice"]  # the key, fetched once, during the POST
        assert follower.posts == []  # nothing leaves on the request path
        count = get_ap(client, "/ap/personas/ada-quill/followers")
        assert count["type"] == "OrderedCollection" and count["totalItems"] == 1 and "orderedItems" not in count
        assert get_ap(client, "/ap/paper/followers")["totalItems"] == 0
        output = drain(runner)
    assert "activitypub: delivered 1" in output
    [post] = follower.posts
    assert post["path"] == "/users/alice/inbox"  # an Accept goes to the follower's own inbox
    accept = json.loads(post["body"])
    assert accept["type"] == "Accept" and accept["actor"] == "http://localhost/ap/personas/ada-quill"
    assert accept["object"]["id"] == activity["id"] and accept["object"]["type"] == "Follow"
    pem = get_ap(client, "/ap/personas/ada-quill")["publicKey"]["publicKeyPem"]
    with time_machine.travel(T, tick=False):
        assert verify_post(post, pem) == "http://localhost/ap/personas/ada-quill#main-key"
    assert post["headers"]["Content-Type"] == AP
    assert post["headers"]["Digest"].startswith("SHA-256=")


def test_a_key_published_apart_from_its_actor(client, runner, paper, follower):
    """As Mastodon binds them: a key document apart from the actor counts only when the actor
    it names as owner lists that key too (issue 31)."""
    activity = {"id": follower.origin + "/follows/k", "type": "Follow", "actor": follower.actor_id,
                "object": "http://localhost/ap/paper"}
    with time_machine.travel(T, tick=False):
        body, headers = follower.signed("http://localhost/ap/inbox", activity, key_id=follower.origin + "/keys/alice")
        refused = client.post("/ap/inbox", data=body, headers=headers)
        assert refused.status_code == 401 and "does not list that key" in refused.get_json()["detail"]
        assert follower.fetches == ["/keys/alice", "/users/alice"]
        follower.fetches.clear()
        follower.lists_apart_key = True
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 202 and answer.get_json()["status"] == "followed"
        assert follower.fetches == ["/keys/alice", "/users/alice"]  # the key, then its owner, which lists it
        drain(runner)
    assert [p["path"] for p in follower.posts] == ["/users/alice/inbox"]


def test_admin_sees_who_follows(client, desk, paper, admin, follower):
    with time_machine.travel(T, tick=False):
        follow(client, follower, "http://localhost/ap/paper", "/ap/inbox")
    answer = client.get("/ap/paper/followers", headers=auth(admin)).get_json()
    assert answer["totalItems"] == 1 and answer["orderedItems"] == [follower.actor_id]
    read = client.get("/ap/paper/followers", headers=auth(desk.key(paper, "read"))).get_json()
    assert "orderedItems" not in read


def test_unsigned_and_badly_signed_posts_change_nothing(client, runner, paper, follower):
    activity = {"id": follower.origin + "/follows/x", "type": "Follow", "actor": follower.actor_id,
                "object": "http://localhost/ap/paper"}
    with time_machine.travel(T, tick=False):
        unsigned = client.post("/ap/inbox", json=activity, headers={"Content-Type": AP})
        assert unsigned.status_code == 401 and unsigned.mimetype == "application/problem+json"
        assert unsigned.headers["WWW-Authenticate"].startswith("Signature")
        # Signed, then the body changed: the Digest no longer matches.
        body, headers = follower.signed("http://localhost/ap/inbox", activity)
        tampered = body.replace(b"/ap/paper", b"/ap/personas/ada-quill")
        assert client.post("/ap/inbox", data=tampered, headers=headers).status_code == 401
        # Signed by another key than the one the actor publishes.
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        body, headers = follower.signed("http://localhost/ap/inbox", activity, key=other)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401
        # Signed for another path (the request target is covered).
        body, headers = follower.signed("http://localhost/ap/paper/inbox", activity)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401
        # A well-signed activity claiming another actor.
        forged = {**activity, "actor": "https://mastodon.example/users/bob"}
        body, headers = follower.signed("http://localhost/ap/inbox", forged)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401
        # Garbage in the header.
        assert client.post("/ap/inbox", data=b"{}", headers={"Signature": "nonsense"}).status_code == 401
    # An old Date: refused too.
    with time_machine.travel(T - timedelta(hours=1), tick=False):
        body, headers = follower.signed("http://localhost/ap/inbox", activity)
    with time_machine.travel(T, tick=False):
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401
    assert db.session.scalars(select(ApFollower)).all() == []
    assert db.session.scalars(select(ApDelivery)).all() == []
    assert "activitypub" not in drain(runner)


def test_signed_but_not_json_is_400_and_other_activities_202(client, paper, follower):
    with time_machine.travel(T, tick=False):
        body, headers = follower.signed("http://localhost/ap/inbox", {"x": 1})
        answer = client.post("/ap/inbox", data=b"not json", headers={**headers})
        assert answer.status_code in (400, 401)  # the digest no longer matches either
        like = {"id": follower.origin + "/likes/1", "type": "Like", "actor": follower.actor_id,
                "object": "http://localhost/ap/stories/1"}
        body, headers = follower.signed("http://localhost/ap/inbox", like)
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 202 and answer.get_json()["status"] == "ignored"
    assert db.session.scalars(select(ApFollower)).all() == []


def test_undo_and_delete_end_a_follow(client, paper, follower):
    with time_machine.travel(T, tick=False):
        _, first = follow(client, follower, "http://localhost/ap/paper", "/ap/paper/inbox")
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox", "/follows/2")
        assert get_ap(client, "/ap/paper/followers")["totalItems"] == 1
        undo = {"id": follower.origin + "/undo/1", "type": "Undo", "actor": follower.actor_id, "object": first}
        body, headers = follower.signed("http://localhost/ap/paper/inbox", undo)
        answer = client.post("/ap/paper/inbox", data=body, headers=headers)
        assert answer.status_code == 202 and answer.get_json()["status"] == "unfollowed"
        assert get_ap(client, "/ap/paper/followers")["totalItems"] == 0
        assert get_ap(client, "/ap/personas/ada-quill/followers")["totalItems"] == 1
        gone = {"id": follower.origin + "/delete/1", "type": "Delete", "actor": follower.actor_id,
                "object": follower.actor_id}
        body, headers = follower.signed("http://localhost/ap/inbox", gone)
        assert client.post("/ap/inbox", data=body, headers=headers).get_json()["status"] == "deleted"
        assert get_ap(client, "/ap/personas/ada-quill/followers")["totalItems"] == 0


def test_a_deleted_actor_whose_key_is_gone_stops_following(client, paper, follower):
    with time_machine.travel(T, tick=False):
        follow(client, follower, "http://localhost/ap/paper", "/ap/inbox")
        remote.forget_all()  # another worker, or ten minutes later: the key is fetched again
        follower.gone = True
        gone = {"id": follower.origin + "/delete/2", "type": "Delete", "actor": follower.actor_id,
                "object": follower.actor_id}
        body, headers = follower.signed("http://localhost/ap/inbox", gone)
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 202 and answer.get_json()["status"] == "deleted"
        assert get_ap(client, "/ap/paper/followers")["totalItems"] == 0
        # Anything else signed by a key that is gone is refused.
        like = {"id": follower.origin + "/likes/2", "type": "Like", "actor": follower.actor_id, "object": "x"}
        body, headers = follower.signed("http://localhost/ap/inbox", like)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401


def test_key_fetch_follows_the_webhook_ssrf_rules(client, app, paper, follower):
    app.config["WEBHOOK_ALLOW_PRIVATE"] = False
    try:
        with time_machine.travel(T, tick=False):
            answer, _ = follow(client, follower, "http://localhost/ap/paper", "/ap/inbox")
        assert answer.status_code == 401
        assert follower.fetches == []  # refused before any connection
    finally:
        app.config["WEBHOOK_ALLOW_PRIVATE"] = True
    assert db.session.scalars(select(ApFollower)).all() == []


def test_hostile_input_is_never_a_500(client, paper):
    """Malformed signatures, key ids that are no URL, a body nested past the parser's depth,
    odd ids and lookups: 4xx every time, nothing recorded."""
    sigs = ['keyId="file:///etc/passwd",signature="AA=="', 'keyId="http://[::1/x",signature="AA=="',
            'keyId="' + "h" * 5000 + '",signature="x"',
            'keyId="http://127.0.0.1:1/x",algorithm="rsa-sha256",headers="(request-target) host date digest",'
            'signature="!!!"',
            "garbage", "", 'keyId=",signature="', 'keyId="a",signature="b",headers="x y z"']
    bodies = [b"{}", b"[" * 50000, b"\xff\xfe", b"null",
              json.dumps({"type": "Follow", "actor": ["x"], "object": {"id": 5}}).encode()]
    for sig in sigs:
        for body in bodies:
            for path in ("/ap/inbox", "/ap/paper/inbox", "/ap/personas/ada-quill/inbox", "/ap/personas/%00/inbox"):
                answer = client.post(path, data=body, headers={"Signature": sig, "Date": "garbage", "Digest": "x",
                                                               "Content-Type": "application/activity+json"})
                assert answer.status_code < 500, (sig[:40], body[:20], path, answer.status_code)
    for query in ["resource=acct:%00@localhost", "resource=acct:", "resource=acct:@", "resource=" + "a" * 5000,
                  "resource=http://localhost/ap/personas/%2e%2e"]:
        assert client.get("/.well-known/webfinger?" + query).status_code < 500, query
    for path in ["/ap/stories/0", "/ap/stories/-1", "/ap/stories/99999999999999999999", "/ap/paper/outbox?page=1e3",
                 "/ap/personas/%C0/outbox", "/x/x/x.txt", "/%00.txt"]:
        assert client.get(path).status_code < 500, path
    assert db.session.scalars(select(ApFollower)).all() == []


# ----------------------------------------------------------------------------- activities


def test_airing_revising_and_pulling_reach_followers_signed(client, runner, desk, paper, admin, follower):
    with time_machine.travel(T, tick=False) as clock:
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox")
        follow(client, follower, "http://localhost/ap/paper", "/ap/inbox", "/follows/2")
        drain(runner)  # the two Accepts
        follower.posts.clear()
        piece = desk.piece(paper, "Signed news", on_air_at=None)
        clock.shift(timedelta(minutes=1))
        assert client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(admin)).status_code == 200
        clock.shift(timedelta(seconds=5))
        output = drain(runner)
        assert "activitypub: delivered 2" in output, output
        kinds = {json.loads(p["body"])["type"]: p for p in follower.posts}
        assert set(kinds) == {"Create", "Announce"}
        assert {p["path"] for p in follower.posts} == {"/inbox"}  # the shared inbox, once per activity
        create = json.loads(kinds["Create"]["body"])
        announce = json.loads(kinds["Announce"]["body"])
        pem = get_ap(client, "/ap/paper")["publicKey"]["publicKeyPem"]
        multikey = get_ap(client, "/ap/personas/ada-quill")["assertionMethod"][0]["publicKeyMultibase"]
        assert verify_post(kinds["Create"], pem) == "http://localhost/ap/personas/ada-quill#main-key"
        assert verify_post(kinds["Announce"], pem) == "http://localhost/ap/paper#main-key"
        assert create["actor"] == "http://localhost/ap/personas/ada-quill" and PUBLIC in create["to"]
        assert proven(multikey, create["object"])
        assert create["object"] == get_ap(client, f"/ap/stories/{piece.id}")  # the object is served at its id
        assert announce["actor"] == "http://localhost/ap/paper" and announce["object"] == create["object"]["id"]

        follower.posts.clear()
        clock.shift(timedelta(minutes=1))
        assert client.patch(f"/api/v1/stories/{piece.id}", headers=auth(admin), json={
            "dek": "A new standfirst.", "kind": "correction", "note": "The standfirst named the wrong bank."
        }).status_code == 200
        clock.shift(timedelta(seconds=5))
        drain(runner)
        [post] = follower.posts  # one Update to the shared inbox, for both follows
        update = json.loads(post["body"])
        assert update["type"] == "Update" and "A new standfirst." in update["object"]["summary"]
        # The correction's note: the activity's summary, and a line atop the Article's content.
        assert update["summary"] == "Correction: The standfirst named the wrong bank."
        assert "The standfirst named the wrong bank." in update["object"]["content"]
        assert update["object"]["updated"]
        assert verify_post(post, pem)
        assert proven(multikey, update["object"])

        follower.posts.clear()
        clock.shift(timedelta(minutes=1))
        client.delete(f"/api/v1/stories/{piece.id}/air", headers=auth(admin))
        clock.shift(timedelta(seconds=5))
        drain(runner)
        [post] = follower.posts
        delete = json.loads(post["body"])
        assert delete["type"] == "Delete" and delete["object"]["type"] == "Tombstone"
        assert delete["object"]["id"] == create["object"]["id"]
        assert client.get(f"/ap/stories/{piece.id}").status_code == 410
        assert verify_post(post, pem) == "http://localhost/ap/personas/ada-quill#main-key"
        follower.posts.clear()
        assert "activitypub" not in drain(runner)  # each change once
        assert follower.posts == []


def test_a_scheduled_piece_federates_at_its_instant(client, runner, desk, paper, follower):
    with time_machine.travel(T, tick=False) as clock:
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox")
        drain(runner)
        follower.posts.clear()
        desk.piece(paper, "Later", on_air_at=T + timedelta(hours=1))
        drain(runner)
        assert follower.posts == []
        clock.move_to(T + timedelta(hours=1, seconds=1))
        drain(runner)
        assert [json.loads(p["body"])["type"] for p in follower.posts] == ["Create"]


def test_failed_deliveries_are_retried_with_backoff_and_given_up(client, runner, app, desk, paper, follower):
    with time_machine.travel(T, tick=False) as clock:
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox")
        follower.status = 503
        assert "activitypub: delivered 0, failed 1, pending 1" in drain(runner)
        assert "activitypub" not in drain(runner)  # not due yet: backing off
        clock.shift(timedelta(minutes=1, seconds=1))
        assert "failed 1" in drain(runner)
        clock.shift(timedelta(minutes=2, seconds=1))
        follower.status = 202
        assert "activitypub: delivered 1, failed 0, pending 0" in drain(runner)
        assert len(follower.posts) == 3
        # A 4xx (the inbox refuses the activity) is given up at once.
        desk.piece(paper, "Refused", on_air_at=T + timedelta(minutes=4))
        clock.shift(timedelta(minutes=1))
        follower.status = 400
        assert "activitypub: delivered 0, failed 1, pending 0" in drain(runner)
    row = db.session.scalars(select(ApDelivery).where(ApDelivery.kind == "Create")).one()
    assert row.failed_at is not None and row.last_status == 400


def test_one_activity_at_a_time_per_inbox_in_order(client, runner, desk, paper, admin, follower):
    with time_machine.travel(T, tick=False) as clock:
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox")
        drain(runner)
        follower.posts.clear()
        follower.status = 503
        piece = desk.piece(paper, "In order", on_air_at=None)
        clock.shift(timedelta(minutes=1))
        client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(admin))
        clock.shift(timedelta(minutes=1))
        client.patch(f"/api/v1/stories/{piece.id}", json={"dek": "Later."}, headers=auth(admin))
        clock.shift(timedelta(seconds=5))
        drain(runner)  # the Create fails; the Update waits behind it
        assert [json.loads(p["body"])["type"] for p in follower.posts] == ["Create"]
        follower.status = 202
        clock.shift(timedelta(minutes=1, seconds=1))
        drain(runner)
    assert [json.loads(p["body"])["type"] for p in follower.posts] == ["Create", "Create", "Update"]


def test_private_targets_refused_at_delivery(client, runner, app, desk, paper, follower):
    with time_machine.travel(T, tick=False):
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox")
        app.config["WEBHOOK_ALLOW_PRIVATE"] = False
        try:
            assert "activitypub: delivered 0, failed 1" in drain(runner)
        finally:
            app.config["WEBHOOK_ALLOW_PRIVATE"] = True
    assert follower.posts == []


# ----------------------------------------------------------------------------- outbox


def test_outboxes_are_paged_ordered_collections_newest_first(client, desk, paper):
    first = desk.piece(paper, "First", on_air_at=T)
    second = desk.piece(paper, "Second", on_air_at=T + timedelta(hours=1))
    desk.piece(paper, "By Rex", byline="Rex Ledger", on_air_at=T + timedelta(hours=2))
    outbox = get_ap(client, "/ap/personas/ada-quill/outbox")
    assert outbox["type"] == "OrderedCollection" and outbox["totalItems"] == 2
    page = get_ap(client, outbox["first"].removeprefix("http://localhost"))
    assert page["type"] == "OrderedCollectionPage" and "next" not in page
    assert [item["type"] for item in page["orderedItems"]] == ["Create", "Create"]
    assert [item["object"]["id"].rsplit("/", 1)[1] for item in page["orderedItems"]] == [str(second.id), str(first.id)]
    paper_outbox = get_ap(client, "/ap/paper/outbox")
    assert paper_outbox["totalItems"] == 3
    items = get_ap(client, "/ap/paper/outbox?page=1")["orderedItems"]
    assert [item["type"] for item in items] == ["Announce"] * 3
    for bad in ("0", "x", "-1", "99999999"):
        assert client.get(f"/ap/paper/outbox?page={bad}").status_code == 400


def test_a_new_follower_is_not_sent_the_back_catalogue(client, runner, desk, paper, follower):
    # The worker has not run since these pieces aired (its cursor is at the feed's start).
    desk.piece(paper, "Old news", on_air_at=T - timedelta(days=1))
    desk.piece(paper, "Older news", on_air_at=T - timedelta(days=2))
    with time_machine.travel(T, tick=False):
        follow(client, follower, "http://localhost/ap/paper", "/ap/inbox")
        follow(client, follower, "http://localhost/ap/personas/ada-quill", "/ap/inbox", "/follows/2")
        drain(runner)
    assert sorted(json.loads(p["body"])["type"] for p in follower.posts) == ["Accept", "Accept"]


# ----------------------------------------------------------------------------- WebSub and IndexNow


@pytest.fixture
def pings_on(app, receiver):
    app.config.update(WEBSUB_HUB=receiver.url + "/hub", INDEXNOW_ENDPOINT=receiver.url + "/indexnow")
    yield receiver
    app.config.update(WEBSUB_HUB="", INDEXNOW_ENDPOINT="")


def test_feeds_name_the_websub_hub(client, app, paper, pings_on):
    import feedparser

    rss = client.get("/rss.xml").get_data()
    links = feedparser.parse(rss).feed.links
    assert {"rel": "hub", "href": pings_on.url + "/hub"} in [{"rel": x["rel"], "href": x["href"]} for x in links]
    assert any(x["rel"] == "self" and x["href"].endswith("/rss.xml") for x in links)
    assert client.get("/feed.json").get_json()["hubs"] == [{"type": "WebSub", "url": pings_on.url + "/hub"}]


def test_airing_pings_the_hub_and_indexnow(client, runner, app, desk, paper, admin, pings_on):
    with time_machine.travel(T, tick=False) as clock:
        piece = desk.piece(paper, "Pinged news", on_air_at=None)
        assert client.put(f"/api/v1/stories/{piece.id}/air", headers=auth(admin)).status_code == 200
        clock.shift(timedelta(seconds=5))
        assert "pings: delivered 3" in drain(runner)
    hub = sorted(r["body"].decode() for r in pings_on.requests if r["path"] == "/hub")
    assert hub == ["hub.mode=publish&hub.url=http%3A%2F%2Flocalhost%2Ffeed.json",
                   "hub.mode=publish&hub.url=http%3A%2F%2Flocalhost%2Frss.xml"]
    [indexnow] = [json.loads(r["body"]) for r in pings_on.requests if r["path"] == "/indexnow"]
    assert indexnow["host"] == "localhost" and indexnow["urlList"] == [f"http://localhost/stories/{piece.slug}"]
    key_file = client.get(f"/{indexnow['key']}.txt")
    assert key_file.status_code == 200 and key_file.get_data(as_text=True) == indexnow["key"]
    assert indexnow["keyLocation"] == f"http://localhost/{indexnow['key']}.txt"
    assert client.get(f"/{'0' * 32}.txt").status_code == 404
    assert client.get("/robots.txt").status_code == 200


def test_pings_are_off_by_default(client, runner, desk, paper, receiver):
    desk.piece(paper, "Quiet news", on_air_at=T)
    assert "pings: " not in drain(runner)
    assert "hubs" not in client.get("/feed.json").get_json()
    assert b'rel="hub"' not in client.get("/rss.xml").get_data()


# ----------------------------------------------------------------------------- over real HTTP


@pytest.mark.slow
def test_discover_follow_and_receive_over_real_http(app, live, runner, desk, paper, follower):
    """The whole path through a real WSGI server: WebFinger, the actor, a signed Follow whose
    `Host` carries the port, the Accept and a Create, each checked by apsig."""
    desk.piece(paper, "Before the follow", on_air_at=T)
    app.config["PUBLIC_BASE_URL"] = live  # the worker's URLs name the host followers use
    try:
        host = live.removeprefix("http://")
        jrd = httpx.get(f"{live}/.well-known/webfinger", params={"resource": f"acct:ada-quill@{host}"}).json()
        actor_url = next(x["href"] for x in jrd["links"] if x["rel"] == "self")
        assert actor_url == f"{live}/ap/personas/ada-quill"
        actor = httpx.get(actor_url, headers={"Accept": AP}).json()
        activity = {"id": follower.origin + "/follows/live", "type": "Follow", "actor": follower.actor_id,
                    "object": actor["id"]}
        body, headers = follower.signed(actor["inbox"], activity)
        assert httpx.post(actor["inbox"], content=body, headers=headers).status_code == 202
        assert httpx.post(actor["inbox"], content=body, headers={"Content-Type": AP}).status_code == 401
        drain(runner)
        piece = desk.piece(paper, "After the follow", on_air_at=None)
        filing.put_on_air(paper, piece, utcnow())
        db.session.commit()
        drain(runner)
        fetched = httpx.get(json.loads(follower.posts[1]["body"])["object"]["id"]).json()
    finally:
        app.config["PUBLIC_BASE_URL"] = ""
    kinds = [json.loads(p["body"])["type"] for p in follower.posts]
    assert kinds == ["Accept", "Create"]
    for post in follower.posts:
        assert verify_post(post, actor["publicKey"]["publicKeyPem"]) == actor["publicKey"]["id"]
    create = json.loads(follower.posts[1]["body"])
    assert proven(actor["assertionMethod"][0]["publicKeyMultibase"], create["object"])
    assert create["object"] == fetched  # ids on the paper's canonical origin (PUBLIC_BASE_URL), asked or sent
