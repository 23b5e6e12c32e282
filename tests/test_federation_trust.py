"""Federation real servers can trust (issue 31, docs/FEDERATION.md "What a peer must send"):
nobody speaks for another actor, the inbox costs nothing before it knows who is asking, floods
are bounded, one origin per paper, and RFC 9421 both ways.

The peers are servers of ours on loopback (`Peer`): actors with RSA (and Ed25519) keys that
count every request they get, an attacker's server among them, a tarpit that never answers.
Outside code signs and verifies: `apsig` (draft-cavage) and `http-message-signatures` (RFC
9421, the library our messagesig.py is built on, driven here from its own public API).
"""
from __future__ import annotations

import json
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import httpx
import pytest
import time_machine
from apsig.draft.sign import Signer
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from http_message_signatures import HTTPMessageSigner, HTTPMessageVerifier, HTTPSignatureKeyResolver, algorithms
from sqlalchemy import func, select

from extensions import db
from models import ApDelivery, ApFollower
from services.delivery.federation import deliveries, remote
from services.newsroom import filing
from tests.fixtures.keys import auth
from tests.fixtures.servers import gunicorn

T = datetime(2026, 11, 20, 8, 0, tzinfo=timezone.utc)
AP = "application/activity+json"


def _pem(public_key) -> str:
    return public_key.public_bytes(serialization.Encoding.PEM,
                                   serialization.PublicFormat.SubjectPublicKeyInfo).decode()


class Peer:
    """A fediverse server of ours on loopback. Actors `/users/<name>` (`add`), each with an
    RSA `#main-key` (and an Ed25519 `#ed-key`), its own inbox and, unless `shared=False`, the
    shared inbox `/inbox`; `documents` overrides what a path answers. Counts every request
    (`fetches`, `posts`). `tarpit`: GETs are held until the server stops (`slow`: GETs of
    those paths only); `statuses`: paths answered with that status and no body;
    `refuse_cavage`: POSTs signed without RFC 9421 get 401."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ed_key = ed25519.Ed25519PrivateKey.generate()
        self.fetches: list[str] = []
        self.posts: list[dict] = []
        self.documents: dict[str, dict] = {}
        self.actors: dict[str, bool] = {}
        self.tarpit = False
        self.slow: set[str] = set()
        self.statuses: dict[str, int] = {}
        self.refuse_cavage = False
        self.released = threading.Event()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status, body=b""):
                self.send_response(status)
                self.send_header("Content-Type", AP)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                peer.fetches.append(self.path)
                if peer.tarpit or self.path in peer.slow:
                    peer.released.wait(30)
                    return
                if self.path in peer.statuses:
                    return self._send(peer.statuses[self.path])
                document = peer.documents.get(self.path) or peer.actor_document(self.path)
                self._send(200, json.dumps(document).encode()) if document else self._send(404)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                peer.posts.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self._send(401 if peer.refuse_cavage and "Signature-Input" not in self.headers else 202)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, name: str, *, shared: bool = True) -> str:
        self.actors[name] = shared
        return self.actor_id(name)

    def actor_id(self, name: str) -> str:
        return f"{self.origin}/users/{name}"

    def actor_document(self, path: str) -> dict | None:
        name = path.removeprefix("/users/")
        if not path.startswith("/users/") or name not in self.actors:
            return None
        me = self.actor_id(name)
        document = {"@context": ["https://www.w3.org/ns/activitystreams", "https://w3id.org/security/v1"],
                    "id": me, "type": "Person", "preferredUsername": name, "inbox": me + "/inbox",
                    "publicKey": [{"id": me + "#main-key", "owner": me, "publicKeyPem": _pem(self.key.public_key())},
                                  {"id": me + "#ed-key", "owner": me, "publicKeyPem": _pem(self.ed_key.public_key())}]}
        if self.actors[name]:
            document["endpoints"] = {"sharedInbox": self.origin + "/inbox"}
        return document

    def stop(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def peers():
    """`peers()` makes a Peer; all are stopped, and the process's key, failure and RFC 9421
    memories emptied, after the test."""
    remote.forget_all()
    deliveries.knocked.clear()  # the per-host memory of the double knock
    made = []

    def make():
        made.append(Peer())
        return made[-1]

    yield make
    for peer in made:
        peer.stop()
    remote.forget_all()
    deliveries.knocked.clear()


@pytest.fixture
def paper(desk):
    return desk.paper("demo")


def cavage(url: str, activity: dict, key, key_id: str, **changes) -> tuple[bytes, dict]:
    """A POST of `activity` to `url`, signed draft-cavage by apsig."""
    body = json.dumps(activity).encode()
    headers = Signer(headers={"Content-Type": AP}, private_key=key, method="POST", url=url, key_id=key_id,
                     body=body).sign()
    headers.pop("Authorization", None)
    return body, {**headers, **changes}


class _Key(HTTPSignatureKeyResolver):
    def __init__(self, key):
        self.key = key

    def resolve_private_key(self, key_id):
        return self.key

    def resolve_public_key(self, key_id):
        return self.key


def rfc9421(url: str, activity: dict, key, key_id: str, algorithm=algorithms.RSA_V1_5_SHA256,
            created: datetime = T) -> tuple[bytes, dict]:
    """A POST of `activity` to `url` signed RFC 9421 by http-message-signatures."""
    body = json.dumps(activity).encode()
    message = SimpleNamespace(method="POST", url=url, headers={"Content-Type": AP})
    HTTPMessageSigner(signature_algorithm=algorithm, key_resolver=_Key(key)).sign(
        message, key_id=key_id, created=created, label="sig1", covered_component_ids=("@method", "@target-uri"),
        body=body)
    return body, message.headers


def follow_of(peer: Peer, name: str, target: str = "http://localhost/ap/paper", n: int = 1) -> dict:
    return {"id": f"{peer.actor_id(name)}/follows/{n}", "type": "Follow", "actor": peer.actor_id(name),
            "object": target}


def followers() -> list[str]:
    db.session.rollback()
    return list(db.session.scalars(select(ApFollower.actor_uri).order_by(ApFollower.id)))


def drain(runner):
    result = runner.invoke(args=["drain-outbox", "--once"])
    assert result.exit_code == 0, result.output
    return result.output


def air_and_drain(runner, desk, paper):
    """Put a new piece on air five minutes after T (the followers of T get its activities) and
    drain the outbox."""
    with time_machine.travel(T + timedelta(minutes=5), tick=False):
        piece = desk.piece(paper, "A piece for every follower", on_air_at=None)
        filing.put_on_air(paper, piece, T + timedelta(minutes=5))
        db.session.commit()
        drain(runner)


# ----------------------------------------------------------------------------- who speaks


def test_a_key_on_another_origin_cannot_speak_for_an_actor(client, paper, peers):
    """The impersonation of issue 31: the attacker's server publishes, at its own keyId, a
    document naming alice's actor as the key's owner, and signs as alice. 401, and neither the
    attacker's server nor alice's is asked anything."""
    home, evil = peers(), peers()
    alice = home.add("alice")
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, alice + "#main-key")
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        home.fetches.clear()
        key_id = evil.origin + "/keys/k#k"
        evil.documents["/keys/k"] = {"id": alice, "inbox": evil.origin + "/inbox",
                                     "publicKey": {"id": key_id, "owner": alice,
                                                   "publicKeyPem": _pem(evil.key.public_key())}}
        forged = [follow_of(home, "alice", n=2),
                  {"id": evil.origin + "/u", "type": "Undo", "actor": alice, "object": follow_of(home, "alice")},
                  {"id": evil.origin + "/d", "type": "Delete", "actor": alice, "object": alice},
                  {**follow_of(home, "alice", n=3), "actor": "https://famous.example/users/someone"}]
        for activity in forged:
            body, headers = cavage("http://localhost/ap/inbox", activity, evil.key, key_id)
            answer = client.post("/ap/inbox", data=body, headers=headers)
            assert answer.status_code == 401, (activity["type"], answer.get_json())
            assert answer.mimetype == "application/problem+json"
        assert "not on the actor's origin" in answer.get_json()["detail"]
    assert evil.fetches == [] and home.fetches == []
    assert followers() == [alice]
    assert db.session.scalar(select(ApFollower.inbox)) == alice + "/inbox"  # still alice's own


def test_a_key_document_that_is_another_actor_is_refused(client, paper, peers):
    """Same origin, but the keyId's document is bob (who lists the key), while the activity
    claims alice: 401."""
    home = peers()
    alice, bob = home.add("alice"), home.add("bob")
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, bob + "#main-key")
        answer = client.post("/ap/inbox", data=body, headers=headers)
    assert answer.status_code == 401 and "another actor" in answer.get_json()["detail"]
    assert followers() == [] and alice


def test_a_cached_key_speaks_only_for_its_own_actor_and_costs_no_fetch(client, paper, peers):
    """Alice's key, fetched and bound to alice by her Follow, is cached; an activity claiming
    bob (same origin) signed under alice's keyId is refused from the cache: 401, and alice's
    server is not asked again (forged senders cannot make us fetch a cached key over and
    over)."""
    home = peers()
    alice, bob = home.add("alice"), home.add("bob")
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, alice + "#main-key")
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        assert home.fetches == ["/users/alice"]
        for n in range(3):
            body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "bob", n=n), home.key,
                                   alice + "#main-key")
            answer = client.post("/ap/inbox", data=body, headers=headers)
            assert answer.status_code == 401 and "another actor" in answer.get_json()["detail"], answer.get_json()
    assert home.fetches == ["/users/alice"]  # today: one more fetch of alice per forged POST
    assert followers() == [alice] and bob


def test_an_actor_document_counts_only_fetched_from_the_actors_own_id(client, paper, peers):
    """A document elsewhere on alice's origin (an upload, another path) that says it is alice,
    with the attacker's key and inbox in it, is not alice's document: the key must be listed by
    the document alice's own id answers. A server that answers a separate key URL with a stub
    of the actor (as GoToSocial does) still works: the actor is fetched from its id, lists the
    key, and the inbox is the actor's own."""
    home, evil = peers(), peers()
    alice, carol = home.add("alice"), home.add("carol")
    key_id = home.origin + "/media/upload.json#key"
    home.documents["/media/upload.json"] = {
        "id": alice, "type": "Person", "inbox": evil.origin + "/inbox",
        "publicKey": {"id": key_id, "owner": alice, "publicKeyPem": _pem(evil.key.public_key())}}
    stub = carol + "/main-key"
    home.documents["/users/carol/main-key"] = {
        "id": carol, "type": "Person", "publicKey": {"id": stub, "owner": carol,
                                                     "publicKeyPem": _pem(home.key.public_key())}}
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), evil.key, key_id)
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 401, answer.get_json()  # today: 202, following the attacker's inbox
        assert "does not list that key" in answer.get_json()["detail"]
        home.actors["carol"] = False  # carol's actor lists #main-key and #ed-key only
        home.documents["/users/carol"] = {**home.actor_document("/users/carol"),
                                          "publicKey": [{"id": stub, "owner": carol,
                                                         "publicKeyPem": _pem(home.key.public_key())}]}
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "carol"), home.key, stub)
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 202, answer.get_json()
    assert followers() == [carol] and evil.posts == []
    assert db.session.scalar(select(ApFollower.inbox)) == carol + "/inbox"
    assert home.fetches == ["/media/upload.json", "/users/alice", "/users/carol/main-key", "/users/carol"]


def test_an_undo_of_another_actors_follow_is_refused(client, paper, peers):
    home = peers()
    alice, bob = home.add("alice"), home.add("bob")
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, alice + "#main-key")
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        undo = {"id": bob + "/undo", "type": "Undo", "actor": bob, "object": follow_of(home, "alice")}
        body, headers = cavage("http://localhost/ap/inbox", undo, home.key, bob + "#main-key")
        answer = client.post("/ap/inbox", data=body, headers=headers)
    assert answer.status_code == 403 and "only from that actor" in answer.get_json()["detail"]
    assert followers() == [alice]


# ----------------------------------------------------------------------------- cheap before costly


def test_stale_date_wrong_digest_and_thin_signatures_cost_no_fetch(client, paper, peers):
    home = peers()
    alice = home.add("alice")
    url, key_id = "http://localhost/ap/inbox", alice + "#main-key"
    with time_machine.travel(T - timedelta(minutes=6), tick=False):
        stale = cavage(url, follow_of(home, "alice"), home.key, key_id)
    with time_machine.travel(T + timedelta(minutes=6), tick=False):
        ahead = cavage(url, follow_of(home, "alice"), home.key, key_id)
    with time_machine.travel(T, tick=False):
        body, headers = cavage(url, follow_of(home, "alice"), home.key, key_id)
        tampered = (body.replace(b"/ap/paper", b"/ap/personas/ada-quill"), headers)
        thin = (body, {**headers, "Signature": re.sub(r'headers="[^"]*"', 'headers="(request-target) host date"',
                                                       headers["Signature"])})
        late = rfc9421(url, follow_of(home, "alice"), home.key, key_id, created=T - timedelta(minutes=6))
        cases = {"stale": stale, "ahead": ahead, "digest": tampered, "thin": thin, "rfc9421-late": late}
        answers = {name: client.post("/ap/inbox", data=b, headers=h) for name, (b, h) in cases.items()}
    for name, answer in answers.items():
        assert answer.status_code == 401, name
    assert "within 5 minutes" in answers["stale"].get_json()["detail"]
    assert "within 5 minutes" in answers["ahead"].get_json()["detail"]
    assert "within 5 minutes" in answers["rfc9421-late"].get_json()["detail"]
    assert "Digest" in answers["digest"].get_json()["detail"]
    assert "must cover digest" in answers["thin"].get_json()["detail"]
    assert home.fetches == []  # nothing asked before the refusal
    assert followers() == []


@pytest.mark.parametrize("when", ["Fri, 31 Dec 9999 23:59:59 GMT", "Sat, 01 Jan 10000 00:00:00 GMT",
                                  "Mon, 01 Jan 99999999999999999999 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 -2359",
                                  "Mon, 01 Jan 0001 00:00:00 +2359", 253402300799, 253402300800, 2**39, 2**40 - 1,
                                  999_999_999_999_999, 1])
def test_instants_out_of_range_are_401_problems_without_a_fetch(client, paper, peers, when):
    """A `Date` (draft-cavage) or `created` (RFC 9421) in year 9999, past it, or a huge number:
    401 problem+json saying the 5 minutes, never a 500, and nothing fetched."""
    home = peers()
    alice = home.add("alice")
    url, key_id = "http://localhost/ap/inbox", alice + "#main-key"
    with time_machine.travel(T, tick=False):
        if isinstance(when, str):
            body, headers = cavage(url, follow_of(home, "alice"), home.key, key_id)
            headers = {**{k: v for k, v in headers.items() if k.lower() != "date"}, "Date": when}
        else:
            body, headers = rfc9421(url, follow_of(home, "alice"), home.key, key_id)
            headers["Signature-Input"] = re.sub(r"created=\d+", f"created={when}", headers["Signature-Input"])
        answer = client.post("/ap/inbox", data=body, headers=headers)
    assert answer.status_code == 401 and answer.mimetype == "application/problem+json", answer.get_data(as_text=True)
    detail = answer.get_json()["detail"]
    assert "within 5 minutes" in detail or "The Date header is missing or malformed" in detail, detail
    assert home.fetches == []


def test_a_key_is_fetched_once_and_refetched_once_on_rotation(client, paper, peers):
    home = peers()
    alice = home.add("alice")
    url, key_id = "http://localhost/ap/inbox", alice + "#main-key"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with time_machine.travel(T, tick=False):
        body, headers = cavage(url, follow_of(home, "alice"), home.key, key_id)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        assert home.fetches == ["/users/alice"]  # cached
        # A key the server does not publish, under a key fetched less than a minute ago: 401
        # without asking alice's server again (bad signatures cannot make us hammer it).
        body, headers = cavage(url, follow_of(home, "alice", n=2), other, key_id)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401
        assert home.fetches == ["/users/alice"]
    with time_machine.travel(T + timedelta(minutes=2), tick=False):
        # Rotated: the server now publishes the new key; the cached old one fails, one refetch.
        home.key = other
        body, headers = cavage(url, follow_of(home, "alice", n=3), other, key_id)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        assert home.fetches == ["/users/alice"] * 2
        # A key fetched for this request that fails is not fetched again.
        remote.forget_all()
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        body, headers = cavage(url, follow_of(home, "alice", n=4), stranger, key_id)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 401
        assert home.fetches == ["/users/alice"] * 3


@pytest.fixture
def silent_resolver(monkeypatch):
    """Names under `.silent.test` never resolve (the lookup blocks until the test ends);
    every other name resolves as usual. Nothing leaves the machine."""
    release = threading.Event()
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".silent.test"):
            release.wait(30)
            raise socket.gaierror("released")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    release.set()


def test_an_unauthenticated_post_is_answered_within_the_budget(app, client, paper, peers, silent_resolver):
    """A tarpit keyId server and a resolver that never answers: each POST is a 401 within
    ACTIVITYPUB_KEY_FETCH_SECONDS (3 s) and a little, DNS included; after that the origin is in
    the negative cache: 503 with Retry-After at once, without a connection."""
    tarpit = peers()
    tarpit.tarpit = True
    mallory = tarpit.add("mallory")
    for actor in (mallory, "http://a.silent.test/users/mallory"):
        with time_machine.travel(T, tick=True):
            activity = {"id": actor + "/f", "type": "Follow", "actor": actor, "object": "http://localhost/ap/paper"}
            body, headers = cavage("http://localhost/ap/inbox", activity, tarpit.key, actor + "#main-key")
            started = time.monotonic()
            answer = client.post("/ap/inbox", data=body, headers=headers)
            took = time.monotonic() - started
            assert answer.status_code == 401 and took < 3.5, (actor, took, answer.get_json())
            assert took > 2.5  # the budget was spent waiting, not refused for another reason
            started = time.monotonic()
            again = client.post("/ap/inbox", data=body, headers=headers)
            assert again.status_code == 503 and time.monotonic() - started < 0.5, (actor, again.get_json())
            assert "not asked again" in again.get_json()["detail"] and int(again.headers["Retry-After"]) <= 61
    assert tarpit.fetches == ["/users/mallory"]
    assert followers() == []


def test_strangers_cannot_put_a_legitimate_origin_in_the_negative_cache(client, paper, peers):
    """The negative cache keeps a failing origin from costing a fetch per POST, but strangers
    choose the URLs we fetch: forged POSTs for alice whose keyIds name paths of her server that
    answer 500, time out, or do not exist are refused (401), and alice's own Follow right after
    is fetched and accepted (202), not answered 503 for a minute. The URL that failed is what is
    not asked again; a whole origin only when it takes no connection at all."""
    home = peers()
    alice = home.add("alice")
    home.statuses["/broken"] = 500
    home.slow.add("/slow")
    with time_machine.travel(T, tick=True):
        for path in ("/broken", "/slow", "/nothing-here"):
            body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key,
                                   f"{home.origin}{path}#main-key")
            answer = client.post("/ap/inbox", data=body, headers=headers)
            assert answer.status_code == 401, (path, answer.get_json())
        # The same failing URL again: not asked (the negative cache still works for it).
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key,
                               f"{home.origin}/broken#main-key")
        again = client.post("/ap/inbox", data=body, headers=headers)
        assert again.status_code == 503 and "not asked again" in again.get_json()["detail"]
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, alice + "#main-key")
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 202, answer.get_json()  # today: 503 "did not answer lately"
    assert home.fetches == ["/broken", "/slow", "/nothing-here", "/users/alice"]
    assert followers() == [alice]


def test_an_origin_that_takes_no_connection_is_not_asked_again(client, paper, peers):
    """A server that is down (nothing listens on its port) costs one attempt: the next POST
    naming any path of that origin is 503 with Retry-After at once."""
    gone = peers()
    gone.stop()
    mallory = gone.actor_id("mallory")
    with time_machine.travel(T, tick=True):
        answers = []
        for key_id in (mallory + "#main-key", f"{gone.origin}/other#k"):
            body, headers = cavage("http://localhost/ap/inbox", {**follow_of(gone, "mallory")}, gone.key, key_id)
            answers.append(client.post("/ap/inbox", data=body, headers=headers))
    assert [a.status_code for a in answers] == [401, 503], [a.get_json() for a in answers]
    assert "not asked again" in answers[1].get_json()["detail"]


def test_attacker_posts_do_not_slow_desk_writes(app, desk, paper, peers):
    """As production runs it (gunicorn, 3 sync workers, ACTIVITYPUB_FETCH_SLOTS 1): 20
    unauthenticated POSTs at once, keyId on a tarpit, while the desk writes sections. Every
    write lands, each well within the key fetch's 3 s budget (2 s: a write that waited behind
    an inbox holding SQLite's write lock, or for a worker held by the tarpit, takes the whole
    budget; a bound relative to writes without the attack failed on a machine busy with other
    work): one worker at most waits on the tarpit, the others refuse at once. (The old inbox
    held SQLite's write lock while it waited: desk writes 503.)"""
    admin = desk.key(paper, "admin")
    tarpit = peers()
    tarpit.tarpit = True
    env = {"DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"].replace("postgresql+psycopg://", "postgresql://"),
           "INSTANCE_PATH": app.instance_path, "SECRET_KEY": app.config["SECRET_KEY"], "RATELIMIT_ENABLED": "0",
           "LOG_REQUESTS": "0", "WEBHOOK_ALLOW_PRIVATE": "1", "ACTIVITYPUB_FETCH_SLOTS": "1"}
    with gunicorn(env, workers=3) as (base, _):
        def write(i: int) -> float:
            started = time.monotonic()
            answer = httpx.post(f"{base}/api/v1/sections", json={"name": f"Desk {i}"}, headers=auth(admin),
                                timeout=30)
            assert answer.status_code == 201, answer.text
            return time.monotonic() - started

        def attack(i: int) -> tuple[int, float]:
            actor = tarpit.add(f"m{i}")
            activity = {"id": actor + "/f", "type": "Follow", "actor": actor, "object": f"{base}/ap/paper"}
            body, headers = cavage(f"{base}/ap/inbox", activity, tarpit.key, actor + "#main-key")
            started = time.monotonic()
            code = httpx.post(f"{base}/ap/inbox", content=body, headers=headers, timeout=30).status_code
            return code, time.monotonic() - started

        for i in range(3):
            write(i)  # each worker's first request pays for its imports
        with ThreadPoolExecutor(max_workers=20) as pool:
            attacks = [pool.submit(attack, i) for i in range(20)]
            time.sleep(0.2)  # the attack under way
            busy = [write(100 + i) for i in range(8)]
            answers = [a.result() for a in attacks]
    assert {code for code, _ in answers} <= {401, 503}
    assert max(took for _, took in answers) < 3.5 + 1.0  # a queue in gunicorn's backlog at most
    assert max(busy) < 2.0, busy
    assert 1 <= len(tarpit.fetches) <= 3  # one slot on the machine; one fetch per worker at most
    assert followers() == []


# ----------------------------------------------------------------------------- floods


def test_followers_per_origin_are_capped(app, client, paper, peers):
    home = peers()
    app.config["ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN"] = 2
    try:
        with time_machine.travel(T, tick=False):
            answers = []
            for name in ("alice", "bob", "carol"):
                actor = home.add(name)
                body, headers = cavage("http://localhost/ap/inbox", follow_of(home, name), home.key,
                                       actor + "#main-key")
                answers.append(client.post("/ap/inbox", data=body, headers=headers))
            # An actor already following may follow again (a persona too): the cap counts new actors.
            body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice", "http://localhost/ap/personas/ada-quill"),
                                   home.key, home.actor_id("alice") + "#main-key")
            assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
    finally:
        app.config["ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN"] = 1000
    assert [a.status_code for a in answers] == [202, 202, 403]
    refusal = answers[2]
    assert refusal.mimetype == "application/problem+json"
    assert "ACTIVITYPUB_MAX_FOLLOWERS_PER_ORIGIN" in refusal.get_json()["detail"]
    assert home.origin in refusal.get_json()["detail"]
    assert len(followers()) == 3  # alice twice (paper, persona), bob


def test_the_same_follow_five_times_is_accepted_once(client, runner, paper, peers):
    home = peers()
    alice = home.add("alice")
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, alice + "#main-key")
        for _ in range(5):
            assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        assert db.session.scalar(select(func.count()).select_from(ApDelivery)) == 1
        drain(runner)
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        drain(runner)
        # A new Follow (the peer lost our Accept) once the first is delivered: one more Accept.
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice", n=2), home.key,
                               alice + "#main-key")
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        drain(runner)
    assert [json.loads(p["body"])["type"] for p in home.posts] == ["Accept", "Accept"]
    assert followers() == [alice]


def test_one_delivery_per_host_with_a_shared_inbox(client, runner, desk, paper, peers):
    """Three followers on one host, only one naming the shared inbox, each its own inbox: an
    Announce reaches the host once, at its shared inbox; a host without one gets each inbox."""
    home, plain = peers(), peers()
    with time_machine.travel(T, tick=False):
        for peer, name, shared in ((home, "alice", True), (home, "bob", False), (home, "carol", False),
                                   (plain, "dan", False), (plain, "eve", False)):
            actor = peer.add(name, shared=shared)
            body, headers = cavage("http://localhost/ap/inbox", follow_of(peer, name), peer.key, actor + "#main-key")
            assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        drain(runner)
        home.posts.clear()
        plain.posts.clear()
    air_and_drain(runner, desk, paper)
    assert [p["path"] for p in home.posts] == ["/inbox"]
    assert sorted(p["path"] for p in plain.posts) == ["/users/dan/inbox", "/users/eve/inbox"]


# ----------------------------------------------------------------------------- one origin


def test_an_alias_host_answers_with_the_canonical_ids(client, runner, paper, peers):
    """The default paper is `localhost` (its canonical origin) and answers on `demo.localhost`
    too: a Follow sent there names the canonical actor, and the Accept it queues, the keyId the
    worker signs with and the actor document read on the alias all name `http://localhost`."""
    home = peers()
    alice = home.add("alice")
    alias = "http://demo.localhost"
    with time_machine.travel(T, tick=False):
        actor = client.get("/ap/paper", base_url=alias).get_json()
        assert actor["id"] == "http://localhost/ap/paper"
        assert actor["publicKey"]["id"] == "http://localhost/ap/paper#main-key"
        assert actor["inbox"] == "http://localhost/ap/paper/inbox"
        body, headers = cavage(alias + "/ap/paper/inbox", follow_of(home, "alice", actor["id"]), home.key,
                               alice + "#main-key")
        answer = client.post("/ap/paper/inbox", data=body, headers=headers, base_url=alias)
        assert answer.status_code == 202 and answer.get_json()["status"] == "followed"
        drain(runner)
    [post] = home.posts
    assert json.loads(post["body"])["actor"] == "http://localhost/ap/paper"
    assert 'keyId="http://localhost/ap/paper#main-key"' in post["headers"]["Signature"]
    jrd = client.get("/.well-known/webfinger?resource=acct:demo@demo.localhost", base_url=alias).get_json()
    assert jrd["subject"] == "acct:demo@localhost"
    assert [x["href"] for x in jrd["links"] if x["rel"] == "self"] == ["http://localhost/ap/paper"]


# ----------------------------------------------------------------------------- RFC 9421


@pytest.mark.parametrize("algorithm", ["rsa-v1_5-sha256", "ed25519"])
def test_rfc9421_signatures_are_accepted(client, paper, peers, algorithm):
    home = peers()
    alice = home.add("alice")
    key, key_id, signer = ((home.key, alice + "#main-key", algorithms.RSA_V1_5_SHA256) if algorithm == "rsa-v1_5-sha256"
                           else (home.ed_key, alice + "#ed-key", algorithms.ED25519))
    with time_machine.travel(T, tick=False):
        body, headers = rfc9421("http://localhost/ap/inbox", follow_of(home, "alice"), key, key_id, signer)
        assert "Signature-Input" in headers and "Content-Digest" in headers
        answer = client.post("/ap/inbox", data=body, headers=headers)
        assert answer.status_code == 202 and answer.get_json()["status"] == "followed", answer.get_json()
        # Signed for another URL, or the body changed: 401.
        body2, headers2 = rfc9421("http://localhost/ap/paper/inbox", follow_of(home, "alice", n=2), key, key_id, signer)
        assert client.post("/ap/inbox", data=body2, headers=headers2).status_code == 401
        assert client.post("/ap/inbox", data=body.replace(b"follows/1", b"follows/9"),
                           headers=headers).status_code == 401
    assert followers() == [alice]


def test_outgoing_double_knock_retries_a_401_with_rfc9421_and_remembers(client, runner, desk, paper, peers):
    """A peer that refuses draft-cavage (401) gets the same activity again signed RFC 9421,
    which http-message-signatures verifies under the actor's key; the next activity goes to
    it signed RFC 9421 first."""
    home = peers()
    alice = home.add("alice")
    home.refuse_cavage = True
    with time_machine.travel(T, tick=False):
        body, headers = cavage("http://localhost/ap/inbox", follow_of(home, "alice"), home.key, alice + "#main-key")
        assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
        assert "activitypub: delivered 1" in drain(runner)
        pem = client.get("/ap/paper").get_json()["publicKey"]["publicKeyPem"]
        public = serialization.load_pem_public_key(pem.encode())
        first, second = home.posts
        assert "Signature-Input" not in first["headers"] and "Signature-Input" in second["headers"]
        assert first["body"] == second["body"]
        message = SimpleNamespace(method="POST", url=home.origin + second["path"], headers=second["headers"])
        [result] = HTTPMessageVerifier(signature_algorithm=algorithms.RSA_V1_5_SHA256,
                                       key_resolver=_Key(public)).verify(message, body=second["body"])
        assert result.parameters["keyid"] == "http://localhost/ap/paper#main-key"
        assert {'"@method"', '"@target-uri"', '"content-digest"'} <= set(result.covered_components)
        home.posts.clear()
    air_and_drain(runner, desk, paper)
    [announce] = home.posts
    assert "Signature-Input" in announce["headers"]  # remembered: no second knock



def test_the_double_knock_memory_keeps_the_hosts_used_last(app, client, runner, desk, paper, peers, monkeypatch):
    """The memory of hosts that take RFC 9421 only is bounded (deliveries.KNOCK_MEMORY hosts,
    here 2): of three such hosts answered in turn, the one used least recently is forgotten.
    Its next activity goes draft-cavage first (it now takes it: one POST), the two remembered
    get RFC 9421 first. (An unbounded memory sent the forgotten one RFC 9421 too.)"""
    monkeypatch.setattr(deliveries, "KNOCK_MEMORY", 2)
    app.config["ACTIVITYPUB_CONCURRENCY"] = 1  # one at a time: the order the hosts are used in is known
    hosts = [peers() for _ in range(3)]
    try:
        with time_machine.travel(T, tick=False):
            for peer in hosts:
                peer.refuse_cavage = True
                actor = peer.add("alice")
                body, headers = cavage("http://localhost/ap/inbox", follow_of(peer, "alice"), peer.key,
                                       actor + "#main-key")
                assert client.post("/ap/inbox", data=body, headers=headers).status_code == 202
                drain(runner)  # its Accept: 401 to draft-cavage, 202 to RFC 9421; remembered
                assert [("Signature-Input" in p["headers"]) for p in peer.posts] == [False, True]
                peer.posts.clear()
        assert len(deliveries.knocked) == 2
        hosts[0].refuse_cavage = False
        air_and_drain(runner, desk, paper)
    finally:
        app.config.pop("ACTIVITYPUB_CONCURRENCY", None)
    knocks = [["Signature-Input" in p["headers"] for p in peer.posts] for peer in hosts]
    assert knocks == [[False], [True], [True]], knocks
