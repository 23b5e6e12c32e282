"""RFC 9421 HTTP Message Signatures, both ways, on the maintained PyPI library
`http-message-signatures` (pyauth; pinned in requirements.lock).

Incoming: a request carrying `Signature-Input` is read here instead of as draft-cavage
(services/delivery/federation/httpsig.py), into the same `httpsig.Claim`. What needs no key is
checked first: one signature (one label), covering `@method`, `@target-uri` and, with a body,
`content-digest` (checked against the body), with a `keyid` and a `created` within
httpsig.MAX_SKEW of our clock, an `alg` (when given) of `rsa-v1_5-sha256` or `ed25519`. The key
then decides the algorithm (an RSA key: rsa-v1_5-sha256; an Ed25519 key: ed25519), and the
library does the rest (the signature base, the cryptography).

Outgoing: `sign` adds `Content-Digest`, `Signature-Input` and `Signature` over `@method`,
`@target-uri` and `content-digest` with `created`, rsa-v1_5-sha256, label `sig1`: what the
delivery sender retries with when a peer answers 401 to draft-cavage
(services/delivery/federation/deliveries.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import http_sf
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from http_message_signatures import (
    HTTPMessageSigner,
    HTTPMessageVerifier,
    HTTPSignatureKeyResolver,
    InvalidSignature,
    algorithms,
)
from http_message_signatures.exceptions import HTTPMessageSignaturesException

from services.delivery.federation import httpsig
from services.delivery.federation.httpsig import SignatureError

REQUIRED = ("@method", "@target-uri")
LABEL = "sig1"
ALGORITHMS = {"rsa-v1_5-sha256": algorithms.RSA_V1_5_SHA256, "ed25519": algorithms.ED25519}


@dataclass
class _Message:
    """A request as the library reads one: upper-case `method`, absolute `url`, `headers`."""

    method: str
    url: str
    headers: dict = field(default_factory=dict)


class _OneKey(HTTPSignatureKeyResolver):
    """The one key a signature was checked to name (fetched and bound by its keyId already)."""

    def __init__(self, key):
        self.key = key

    def resolve_public_key(self, key_id: str):
        return self.key

    def resolve_private_key(self, key_id: str):
        return self.key


class _Verifier(HTTPMessageVerifier):
    max_clock_skew = httpsig.MAX_SKEW


def read(method: str, url: str, headers: dict, body: bytes, now: datetime) -> httpsig.Claim:
    """Read the RFC 9421 signature of the request `method url` (`url` absolute, as the sender
    addressed it) with `headers` and `body` at `now`, checking what needs no key (see the
    module). Returns the Claim; raises SignatureError with the reason."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        inputs = http_sf.parse(lowered.get("signature-input", "").encode("latin-1"), tltype="dictionary")
    except (ValueError, TypeError, UnicodeEncodeError):
        raise SignatureError("The Signature-Input header is malformed (RFC 9421).") from None
    if not isinstance(inputs, dict) or len(inputs) != 1:
        raise SignatureError("Send exactly one signature (one label in Signature-Input).")
    [(components, params)] = inputs.values()
    if not isinstance(components, list) or not isinstance(params, dict):
        raise SignatureError("The Signature-Input member must be an inner list of components.")
    names = [c[0] for c in components if isinstance(c, tuple) and isinstance(c[0], str)]
    missing = [n for n in REQUIRED if n not in names]
    if body and "content-digest" not in names:
        missing.append("content-digest")
    if missing:
        raise SignatureError(f"The signature must cover {', '.join(missing)}.")
    key_id, created, alg = params.get("keyid"), params.get("created"), params.get("alg")
    if not isinstance(key_id, str) or not key_id:
        raise SignatureError("The signature needs a keyid.")
    if alg is not None and alg not in ALGORITHMS:
        raise SignatureError(f"Unsupported signature algorithm {alg!r}; use rsa-v1_5-sha256 or ed25519.")
    if "content-digest" in names and not httpsig.content_digest_matches(lowered.get("content-digest", ""), body):
        raise SignatureError("The Content-Digest header does not match the body.")
    if type(created) is not int:
        raise SignatureError("The signature needs `created` (seconds since 1970).")
    try:
        sent = datetime.fromtimestamp(created, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):  # past year 9999 (or before year 1)
        sent = None
    problem = httpsig.skew_problem(sent, now, "Its `created`", given=f"{created} seconds since 1970")
    if problem:
        raise SignatureError(problem)
    message = _Message(method.upper(), url, dict(headers))

    def check(public_pem: str) -> None:
        key = httpsig.public_key(public_pem)
        kind = ("rsa-v1_5-sha256" if isinstance(key, rsa.RSAPublicKey)
                else "ed25519" if isinstance(key, ed25519.Ed25519PublicKey) else None)
        if kind is None or (alg is not None and alg != kind):
            raise SignatureError("The sender's key does not fit the signature's algorithm.")
        verifier = _Verifier(signature_algorithm=ALGORITHMS[kind], key_resolver=_OneKey(key))
        try:
            verifier.verify(message, max_age=httpsig.MAX_SKEW, require_components=REQUIRED, body=body)
        except (InvalidSignature, HTTPMessageSignaturesException):
            raise SignatureError("The signature does not verify under the sender's key.") from None

    return httpsig.Claim(key_id, "RFC 9421", check)


def sign(private_key: rsa.RSAPrivateKey, key_id: str, method: str, url: str, headers: dict, body: bytes,
         at: datetime) -> dict:
    """`headers` plus `Content-Digest`, `Signature-Input` and `Signature`: an RFC 9421
    rsa-v1_5-sha256 signature of the request `method url` with `body`, created `at` (see the
    module). Any `Digest` or draft-cavage `Signature` among `headers` is left out."""
    kept = {k: v for k, v in headers.items() if k.lower() not in ("signature", "digest", "content-digest")}
    message = _Message(method.upper(), url, kept)
    signer = HTTPMessageSigner(signature_algorithm=algorithms.RSA_V1_5_SHA256, key_resolver=_OneKey(private_key))
    signer.sign(message, key_id=key_id, created=at, label=LABEL, covered_component_ids=REQUIRED, body=body)
    return message.headers
