"""Proofs, receipt keys, rotation, `flask verify-proof` and the agent cockpit, through HTTP and
the CLI (docs/API.md "proof").

Verification here uses the `cryptography` package and `rfc8785` + hashlib directly: nothing from
the app's own provenance code (PyNaCl), so the proof is checked the way any client would."""
from __future__ import annotations

import base64
import copy
import hashlib
import json

import pytest
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from tests.fixtures.keys import auth
from tests.fixtures.newsroom import T0


def published_keys(client) -> dict[str, dict]:
    response = client.get("/api/v1/receipt-keys")
    assert response.status_code == 200
    return {k["kid"]: k for k in response.get_json()["keys"]}


def recompute(basis: dict) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(basis)).hexdigest()


def signature_ok(public_key_b64: str, message: str, receipt_b64: str) -> bool:
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key_b64))
    try:
        key.verify(base64.b64decode(receipt_b64), message.encode("utf-8"))
    except InvalidSignature:
        return False
    return True


def holds(proof: dict, keys: dict[str, dict]) -> bool:
    """The offline recipe of docs/PROOFS.md: hash the basis, find the hash in the signed string,
    verify the receipt under the published key named by kid."""
    verify = proof["receipt_verify"]
    digest = recompute(proof["basis"])
    return (digest == proof["content_hash"]
            and f"\ncontent_hash={digest}\n" in verify["signed_string"]
            and verify["kid"] in keys
            and signature_ok(keys[verify["kid"]]["public_key"], verify["signed_string"], proof["receipt"]))


@pytest.fixture
def newsroom(desk):
    paper = desk.paper("demo")
    return {"paper": paper, "read": desk.key(paper, "read"), "admin": desk.key(paper, "admin")}


def fetch_proof(client, key: str, piece_id) -> dict:
    response = client.get(f"/api/v1/stories/{piece_id}/proof", headers=auth(key))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def test_a_proof_verifies_with_any_ed25519_library(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], "Rates rise again", facts=3, image="https://cdn.example.com/r.jpg")
    proof = fetch_proof(client, newsroom["read"], piece.id)
    keys = published_keys(client)
    assert holds(proof, keys)
    assert proof["id"] == str(piece.id) and proof["rev"] == 1
    assert proof["receipt_verify"]["alg"] == "Ed25519"
    assert proof["receipt_verify"]["public_key"] == keys[proof["receipt_verify"]["kid"]]["public_key"]
    assert proof["receipt_verify"]["keys_url"] == "http://localhost/api/v1/receipt-keys"
    assert "RFC 8785" in proof["hash_basis"] and "sha256" in proof["hash_basis"].lower()
    assert "never" in proof["disclaimer"] and "true" in proof["disclaimer"]
    # The basis holds every published field of the story as served.
    story = client.get(f"/api/v1/stories/{piece.id}").get_json()
    basis = proof["basis"]
    for name in ("headline", "dek", "prose", "section", "byline", "image", "slug", "rev"):
        assert basis[name] == story[name], name
    assert basis["cited_facts"] == [{k: f[k] for k in ("n", "statement", "source", "instrument", "claim_key")}
                                    for f in story["cited_facts"]]
    assert basis["paper"] == "demo" and basis["piece"] == story["id"]
    assert story["content_hash"] == proof["content_hash"]
    # The signed string binds paper, piece, rev, hash, filing time and filer.
    lines = proof["receipt_verify"]["signed_string"].split("\n")
    assert lines[1:5] == ["paper=demo", f"piece={piece.id}", "rev=1", f"content_hash={proof['content_hash']}"]
    assert any(line.startswith("filed_at=") and line.endswith("Z") for line in lines)
    assert any(line.startswith("filer=") for line in lines)


def test_changing_any_published_field_breaks_verification(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], facts=2)
    proof = fetch_proof(client, newsroom["read"], piece.id)
    keys = published_keys(client)
    assert holds(proof, keys)
    for name, value in proof["basis"].items():
        forged = copy.deepcopy(proof)
        if name == "cited_facts":
            forged["basis"][name][0]["statement"] += " (amended)"
        elif isinstance(value, int):
            forged["basis"][name] = value + 1
        else:
            forged["basis"][name] = (value or "") + " (edited)"
        assert not holds(forged, keys), name
        # Re-hashing the forged basis and putting the new hash in the signed string does not
        # help: the receipt was signed over the original string.
        digest = recompute(forged["basis"])
        forged["content_hash"] = digest
        forged["receipt_verify"]["signed_string"] = proof["receipt_verify"]["signed_string"].replace(
            proof["content_hash"], digest)
        assert not holds(forged, keys), name


def test_a_revision_extends_the_chain(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], facts=2)
    first = fetch_proof(client, newsroom["read"], piece.id)
    for headline in ("Rates rise once more", "Rates rise, third time"):
        response = client.patch(f"/api/v1/stories/{piece.id}", json={"headline": headline},
                                headers=auth(newsroom["admin"]))
        assert response.status_code == 200
    proof = fetch_proof(client, newsroom["read"], piece.id)
    keys = published_keys(client)
    assert holds(proof, keys) and proof["rev"] == 3
    chain = proof["generations"]
    assert [g["rev"] for g in chain] == [1, 2, 3]
    assert chain[0]["prev_hash"] is None and chain[0]["content_hash"] == first["content_hash"]
    assert chain[1]["prev_hash"] == chain[0]["content_hash"]
    assert chain[2]["prev_hash"] == chain[1]["content_hash"] == proof["generations"][1]["content_hash"]
    assert chain[2]["content_hash"] == proof["content_hash"]
    assert f"prev_hash={chain[1]['content_hash']}" in proof["receipt_verify"]["signed_string"]
    for generation in chain:
        assert signature_ok(keys[generation["kid"]]["public_key"], generation["signed_string"],
                            generation["receipt"])
        assert generation["filed_at"].endswith("Z") and generation["filer"]
    assert chain[1]["filer"].startswith("admin key ")


def test_rotation_keeps_old_receipts_verifiable(client, runner, desk, newsroom):
    old_piece = desk.piece(newsroom["paper"], "Before the rotation")
    old_proof = fetch_proof(client, newsroom["read"], old_piece.id)
    old_kid = old_proof["receipt_verify"]["kid"]
    etag = client.get("/api/v1/receipt-keys").headers["ETag"]

    result = runner.invoke(args=["rotate-receipt-key", "--paper", "demo"])
    assert result.exit_code == 0, result.output
    assert f"retired {old_kid}" in result.output

    response = client.get("/api/v1/receipt-keys", headers={"If-None-Match": etag})
    assert response.status_code == 200
    keys = {k["kid"]: k for k in response.get_json()["keys"]}
    assert len(keys) == 2 and keys[old_kid]["retired_at"] is not None
    (new_kid,) = [kid for kid, k in keys.items() if k["retired_at"] is None]
    assert new_kid in result.output

    assert holds(fetch_proof(client, newsroom["read"], old_piece.id), keys)
    filed = client.post("/api/v1/stories", headers=auth(newsroom["admin"]), json={
        "headline": "After the rotation", "prose": "New key.", "section": "World", "byline": "Ada Quill"})
    new_proof = fetch_proof(client, newsroom["read"], filed.get_json()["id"])
    assert new_proof["receipt_verify"]["kid"] == new_kid and holds(new_proof, keys)
    # A revision of the old piece is signed with the new key; its first generation keeps the old one.
    client.patch(f"/api/v1/stories/{old_piece.id}", json={"dek": "Revised."}, headers=auth(newsroom["admin"]))
    revised = fetch_proof(client, newsroom["read"], old_piece.id)
    assert [g["kid"] for g in revised["generations"]] == [old_kid, new_kid] and holds(revised, keys)


def test_proofs_cover_drafts_and_never_leak_the_signing_key(client, desk, newsroom):
    from extensions import db
    from models import SigningKey

    draft = desk.piece(newsroom["paper"], on_air_at=None)
    response = client.get(f"/api/v1/stories/{draft.id}/proof", headers=auth(newsroom["read"]))
    assert response.status_code == 200 and holds(response.get_json(), published_keys(client))
    seed = db.session.query(SigningKey).one().private_seed
    for text in (response.get_data(as_text=True), client.get("/api/v1/receipt-keys").get_data(as_text=True),
                 client.get("/api/v1/config", headers=auth(newsroom["admin"])).get_data(as_text=True)):
        assert seed not in text and "private" not in text
    missing = client.get("/api/v1/stories/999999/proof", headers=auth(newsroom["read"]))
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"


# ----------------------------------------------------------------------------- flask verify-proof


def test_verify_proof_cli_from_a_file_and_from_the_database(client, runner, desk, newsroom, tmp_path):
    piece = desk.piece(newsroom["paper"], facts=2)
    proof = fetch_proof(client, newsroom["read"], piece.id)
    proof_file, keys_file = tmp_path / "proof.json", tmp_path / "keys.json"
    proof_file.write_text(json.dumps(proof), encoding="utf-8")
    keys_file.write_text(client.get("/api/v1/receipt-keys").get_data(as_text=True), encoding="utf-8")

    ok = runner.invoke(args=["verify-proof", str(proof_file), "--keys", str(keys_file)])
    assert ok.exit_code == 0, ok.output
    assert ok.output.startswith("OK:") and "never proves" in ok.output

    from_db = runner.invoke(args=["verify-proof", "--paper", "demo", "--piece", str(piece.id)])
    assert from_db.exit_code == 0, from_db.output

    embedded = runner.invoke(args=["verify-proof", str(proof_file)])
    assert embedded.exit_code == 0 and "pass --keys" in embedded.output

    forged = copy.deepcopy(proof)
    forged["basis"]["headline"] = "Something else"
    proof_file.write_text(json.dumps(forged), encoding="utf-8")
    bad = runner.invoke(args=["verify-proof", str(proof_file), "--keys", str(keys_file)])
    assert bad.exit_code == 1
    assert "FAILED" in bad.output and "content hash mismatch" in bad.output

    assert runner.invoke(args=["verify-proof"]).exit_code != 0
    assert runner.invoke(args=["verify-proof", "--paper", "demo", "--piece", "999999"]).exit_code != 0


def test_every_seeded_piece_has_a_valid_receipt(client, runner, desk):
    result = runner.invoke(args=["seed-demo", "--pieces", "12", "--subscribers", "0"])
    assert result.exit_code == 0, result.output
    from extensions import db
    from models import Paper, Piece

    papers = {p.id: p.slug for p in db.session.query(Paper)}
    pieces = [(papers[p.paper_id], p.id) for p in db.session.query(Piece)]
    db.session.rollback()
    assert len(pieces) >= 12
    for slug, piece_id in pieces:
        checked = runner.invoke(args=["verify-proof", "--paper", slug, "--piece", str(piece_id)])
        assert checked.exit_code == 0, checked.output


# ----------------------------------------------------------------------------- GET /api/v1/agent


def test_agent_check_for_an_agent_key(client, desk, newsroom):
    paper = newsroom["paper"]
    key = desk.key(paper, "agent", persona=desk.persona(paper, "Ada Quill"), capabilities=["file"],
                   label="night desk bot")
    body = client.get("/api/v1/agent", headers=auth(key, "X-Desk-Key")).get_json()
    assert body["key"] == {"active": True, "kind": "agent", "prefix": key[5:17],
                           "label": "night desk bot", "paper": "demo"}
    assert body["avatar"] == "http://localhost/masthead/ada-quill/avatar.svg"
    assert body["persona"] == {"name": "Ada Quill", "slug": "ada-quill", "declared_ai": True}
    assert body["capability"] == ["file"]
    may = {(m["method"], m["url"]) for m in body["may"]}
    assert ("POST", "http://localhost/api/v1/stories") in may
    assert ("PUT", "http://localhost/api/v1/stories/{id}/air") not in may
    assert all(m["action"] for m in body["may"])
    assert body["guide"] == "http://localhost/api"
    assert body["search_help"] == "mailto:desk@demo.localhost"


@pytest.mark.parametrize("kind", ["read", "admin"])
def test_agent_check_for_read_and_admin_keys(client, newsroom, kind):
    body = client.get("/api/v1/agent", headers=auth(newsroom[kind])).get_json()
    assert body["key"]["kind"] == kind and body["key"]["active"] is True
    assert body["avatar"] is None and body["persona"] is None
    assert body["capability"] == [kind]
    may = {(m["method"], m["url"].removeprefix("http://localhost")) for m in body["may"]}
    assert ("GET", "/api/v1/stories/{id}/proof") in may
    assert (("PUT", "/api/v1/stories/{id}/air") in may) is (kind == "admin")
    assert body["search_help"].startswith("mailto:desk@")


def test_agent_check_on_a_custom_host(client, desk):
    paper = desk.paper("harbour", host="news.harbour.test")
    key = desk.key(paper, "read")
    body = client.get("/api/v1/agent", base_url="http://news.harbour.test", headers=auth(key)).get_json()
    assert body["search_help"] == "mailto:desk@news.harbour.test"
    assert body["guide"] == "http://news.harbour.test/api"


def test_seeded_times_are_rfc3339(client, desk, newsroom):
    piece = desk.piece(newsroom["paper"], on_air_at=T0)
    proof = fetch_proof(client, newsroom["read"], piece.id)
    assert proof["generations"][0]["filed_at"] == "2026-11-01T07:55:00Z"


# ----------------------------------------------------------------------------- seeds at rest

OTHER_SECRET = "another-instance-secret-0123456789abcdef"
FILING = {"headline": "Harbour reopens", "dek": "Ships return.", "prose": "The harbour reopened[^1].",
          "section": "World", "byline": "Ada Quill",
          "cited_facts": [{"statement": "It reopened", "source": "Port authority",
                           "instrument": "Notice", "claim_key": "port-1"}]}


def _seed_row():
    from extensions import db
    from models import SigningKey

    row = db.session.query(SigningKey).one()
    db.session.expunge(row)
    db.session.rollback()
    return row


def test_signing_seeds_are_sealed_at_rest_and_receipts_still_verify(client, newsroom, app):
    import nacl.secret

    from services.newsroom import seeds

    stored = _seed_row().private_seed
    assert stored.startswith("v1:")
    box = base64.b64decode(stored[3:])
    assert len(box) == nacl.secret.SecretBox.NONCE_SIZE + 32 + nacl.secret.SecretBox.MACBYTES
    # The key is derived from this instance's secret, personalised: the secret alone opens it.
    assert len(seeds.open_seed(stored, app.config["SECRET_KEY"])) == 32
    response = client.post("/api/v1/stories", json=FILING, headers=auth(newsroom["admin"]))
    assert response.status_code == 201
    assert holds(fetch_proof(client, newsroom["read"], response.get_json()["id"]), published_keys(client))


def test_a_seed_stored_in_the_clear_before_0009_still_signs(client, newsroom, app):
    from extensions import db
    from models import SigningKey
    from services.newsroom import seeds

    row = db.session.query(SigningKey).one()
    row.private_seed = base64.b64encode(seeds.open_seed(row.private_seed, app.config["SECRET_KEY"])).decode()
    db.session.commit()
    response = client.post("/api/v1/stories", json=FILING, headers=auth(newsroom["admin"]))
    assert response.status_code == 201
    assert holds(fetch_proof(client, newsroom["read"], response.get_json()["id"]), published_keys(client))


def test_another_secret_never_signs_nor_makes_a_new_key_and_init_db_says_why(client, newsroom, make_app):
    from extensions import db
    from models import Piece, SigningKey

    other = make_app(SECRET_KEY=OTHER_SECRET)
    before = (_seed_row().private_seed, published_keys(client))
    response = other.test_client().post("/api/v1/stories", json=FILING, headers=auth(newsroom["admin"]))
    assert response.status_code == 500 and response.mimetype == "application/problem+json"
    assert "SECRET_KEY" in response.get_json()["detail"]
    assert "rotate-secret" in response.get_json()["detail"]
    with other.app_context():
        assert db.session.query(Piece).count() == 0 and db.session.query(SigningKey).count() == 1
    assert (_seed_row().private_seed, published_keys(client)) == before
    with other.app_context():  # the CLI runs in the app whose context is current
        result = other.test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 1
    assert "do not open with this SECRET_KEY" in result.output and before[0] not in result.output
    assert newsroom["paper"].slug + "-" in result.output  # the kid is named


def test_rotate_secret_reseals_every_seed_under_the_new_secret(client, newsroom, app, make_app, tmp_path):
    old_kid_keys = published_keys(client)
    new = make_app(SECRET_KEY=OTHER_SECRET)

    def cli(*args):
        with new.app_context():  # the CLI runs in the app whose context is current
            return new.test_cli_runner().invoke(args=list(args))

    wrong = tmp_path / "wrong"
    wrong.write_text("not-the-old-secret-at-all-0123456789\n")
    refused = cli("rotate-secret", "--old-secret-file", str(wrong))
    assert refused.exit_code == 1 and "Nothing was changed" in refused.output
    assert cli("rotate-secret").exit_code == 2  # the old secret is required
    old_file = tmp_path / "old"
    old_file.write_text(app.config["SECRET_KEY"] + "\n")
    result = cli("rotate-secret", "--old-secret-file", str(old_file))
    assert result.exit_code == 0, result.output
    assert "1 seed(s) resealed" in result.output
    # Idempotent: a second run keeps what opens already.
    again = cli("rotate-secret", "--old-secret-file", str(old_file))
    assert again.exit_code == 0 and "0 seed(s) resealed" in again.output
    assert cli("init-db").exit_code == 0
    new_client = new.test_client()
    response = new_client.post("/api/v1/stories", json=FILING, headers=auth(newsroom["admin"]))
    assert response.status_code == 201
    # Same receipt key (kid and public key): verifiers notice nothing.
    assert published_keys(new_client) == old_kid_keys
    assert holds(fetch_proof(new_client, newsroom["read"], response.get_json()["id"]), old_kid_keys)
    # The old secret no longer opens it.
    assert client.post("/api/v1/stories", json=FILING, headers=auth(newsroom["admin"])).status_code == 500


def test_with_the_old_secret_lost_a_new_receipt_key_takes_over(client, newsroom, make_app):
    old_keys = published_keys(client)
    new = make_app(SECRET_KEY=OTHER_SECRET)

    def cli(*args):
        with new.app_context():
            return new.test_cli_runner().invoke(args=list(args))

    assert cli("init-db").exit_code == 1
    assert cli("rotate-receipt-key", "--paper", "demo").exit_code == 0
    assert cli("init-db").exit_code == 0  # the retired, unreadable seed signs nothing
    lost = cli("rotate-secret", "--old-secret", "not-the-old-secret-either-0123456789")
    assert lost.exit_code == 0 and "retired, and sealed under neither secret" in lost.output
    new_client = new.test_client()
    response = new_client.post("/api/v1/stories", json=FILING, headers=auth(newsroom["admin"]))
    assert response.status_code == 201
    keys = published_keys(new_client)
    (old_kid,) = old_keys
    assert keys[old_kid]["retired_at"] is not None and len(keys) == 2
    assert holds(fetch_proof(new_client, newsroom["read"], response.get_json()["id"]), keys)


def test_the_content_hash_is_rfc8785_whatever_the_characters(client, desk, newsroom):
    # The content hash is over RFC 8785's bytes for any text (the rfc8785 package, the one
    # canonicaliser): quotes, backslashes, control characters, line and paragraph separators,
    # non-BMP characters, a BOM, DEL; the proof verifies with a recomputation of our own.
    text = 'Q\u201cuote\u201d "x" \\ back\tslash\u2028line\u2029para \U0001f600 \ufeff\x7f \x01\x1f caf\u00e9 </script>'
    piece = desk.piece(newsroom["paper"], f"Odd {text}", dek=text, prose=f"{text}[^1]", facts=1,
                       image="https://cdn.example.com/\u00e9.jpg")
    proof = fetch_proof(client, newsroom["read"], piece.id)
    assert proof["basis"]["dek"] == text
    assert holds(proof, published_keys(client))
