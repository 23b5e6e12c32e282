"""HTTP Signatures as the fediverse signs server-to-server requests: draft-cavage-http-signatures
(version 12) with `rsa-sha256` (RSASSA-PKCS1-v1_5 over SHA-256), plus the `Digest` header of
RFC 3230 (`SHA-256=<base64>`).

Our own small implementation, on `cryptography` for the RSA work: the maintained library
`http-message-signatures` implements RFC 9421 only, and the draft Mastodon speaks is a dozen lines.
The tests check both directions against `apsig` (an independent implementation from PyPI).

A signature covers `headers` in order, each a line `name: value` of the signing string, with
`(request-target)` = `<method lower> <path?query>`; header names lower-cased, values as sent
(trimmed). Outgoing POSTs sign `(request-target) host date digest`; an incoming one must cover at
least `(request-target) host date`, and `digest` (or `content-digest`) too when it has a body.

Incoming signatures are checked in two steps, cheap before costly (docs/FEDERATION.md): `read`
checks everything that needs no key (the covered headers, the digest against the body, the
`Date` within MAX_SKEW) and returns a `Claim` naming the keyId; only then is the key fetched,
and `Claim.verify(pem)` does the RSA work. services/delivery/federation/messagesig.py reads RFC
9421 signatures into the same `Claim`.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime, parsedate_to_datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

SIGNED = ("(request-target)", "host", "date", "digest")
REQUIRED = ("(request-target)", "host", "date")
MAX_SKEW = timedelta(minutes=5)  # Mastodon refuses a Date further off than 12 hours; we are stricter
_PARAM = re.compile(r'\s*([a-zA-Z]+)\s*=\s*"([^"]*)"\s*(?:,|$)')


class SignatureError(ValueError):
    """Why a request's signature is refused (the reason is safe to show the sender)."""


@dataclass(frozen=True)
class Claim:
    """A request's signature, checked as far as it goes without the key: `key_id` names the
    key to fetch, `standard` is "draft-cavage" or "RFC 9421", and `verify(pem)` checks the
    signature under that key's PEM (returns None; raises SignatureError)."""

    key_id: str
    standard: str
    check: Callable[[str], None]

    def verify(self, pem: str) -> None:
        """Check the signature under `pem` (an RSA key, or Ed25519 for RFC 9421). Raises
        SignatureError."""
        self.check(pem)


def skew_problem(sent: datetime | None, now: datetime, what: str, given: str = "") -> str | None:
    """None when `sent` is within MAX_SKEW of `now`, else the refusal, with both instants
    (`given`, the value as sent, stands for an instant past what a datetime holds: None)."""
    if sent is not None and abs(now - sent) <= MAX_SKEW:
        return None
    return (f"{what} is {sent.isoformat() if sent is not None else given}, our clock says "
            f"{now.astimezone(timezone.utc).isoformat()}: "
            f"a signature must be made within {MAX_SKEW.seconds // 60} minutes of it either way.")


def public_key(pem: str):
    """The public key in `pem` (a SubjectPublicKeyInfo PEM, as actors publish it in
    `publicKeyPem`): the one loader of both signature standards' checks. Raises
    SignatureError when it is not one."""
    try:
        return serialization.load_pem_public_key(pem.encode("ascii"))
    except (ValueError, TypeError, UnicodeEncodeError):
        raise SignatureError("The sender's key is not a PEM public key.") from None


def content_digest_matches(value: str, body: bytes) -> bool:
    """Whether an RFC 9530 `Content-Digest` value (`sha-256=:<base64>:`, or sha-512, one or
    more members) holds the body's digest for every member it gives."""
    members = [part.strip() for part in value.split(",") if part.strip()]
    hashers = {"sha-256": hashlib.sha256, "sha-512": hashlib.sha512}
    if not members:
        return False
    for member in members:
        name, _, raw = member.partition("=")
        raw = raw.strip()
        if name.strip().lower() not in hashers or not (raw.startswith(":") and raw.endswith(":")):
            return False
        try:
            given = base64.b64decode(raw[1:-1], validate=True)
        except ValueError:
            return False
        if not hmac.compare_digest(given, hashers[name.strip().lower()](body).digest()):
            return False
    return True


def digest(body: bytes) -> str:
    """The `Digest` header value of `body`: `SHA-256=<standard base64 of its SHA-256>`."""
    return "SHA-256=" + base64.b64encode(hashlib.sha256(body).digest()).decode("ascii")


def http_date(at: datetime) -> str:
    """`at` (aware) as an IMF-fixdate: `Fri, 27 Nov 2026 02:00:00 GMT`."""
    return format_datetime(at.astimezone(timezone.utc), usegmt=True)


def signing_string(method: str, target: str, headers: Mapping[str, str], names: list[str] | tuple) -> str:
    """The draft's signing string of `names` for a request `method target` (`target`: path and
    query) with `headers` (looked up case-insensitively). Raises SignatureError naming a header
    the request lacks."""
    lowered = {k.lower(): v for k, v in headers.items()}
    lines = []
    for name in names:
        if name == "(request-target)":
            lines.append(f"(request-target): {method.lower()} {target}")
        elif name in lowered:
            lines.append(f"{name}: {lowered[name].strip()}")
        else:
            raise SignatureError(f"The signature covers `{name}`, which the request does not carry.")
    return "\n".join(lines)


def sign(private_key: rsa.RSAPrivateKey, key_id: str, method: str, target: str, headers: dict) -> str:
    """The `Signature` header value for a request carrying `headers` (which must hold `Host`,
    `Date` and, for a body, `Digest`): `keyId="...",algorithm="rsa-sha256",headers="...",
    signature="<base64>"`, covering SIGNED (less `digest` when there is none)."""
    names = [n for n in SIGNED if n != "digest" or any(k.lower() == "digest" for k in headers)]
    text = signing_string(method, target, headers, names)
    signature = private_key.sign(text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA256())
    return (f'keyId="{key_id}",algorithm="rsa-sha256",headers="{" ".join(names)}",'
            f'signature="{base64.b64encode(signature).decode("ascii")}"')


def parse(header: str) -> dict[str, str]:
    """The parameters of a `Signature` header (`keyId`, `algorithm`, `headers`, `signature`).
    Raises SignatureError when it is missing, malformed or lacks `keyId` or `signature`."""
    if not header:
        raise SignatureError("The request carries no Signature header.")
    params, pos = {}, 0
    while pos < len(header):
        match = _PARAM.match(header, pos)
        if match is None:
            raise SignatureError("The Signature header is malformed.")
        params[match.group(1)] = match.group(2)
        pos = match.end()
    if not params.get("keyId") or not params.get("signature"):
        raise SignatureError("The Signature header needs keyId and signature.")
    return params


def read(method: str, target: str, headers: Mapping[str, str], body: bytes, now: datetime) -> Claim:
    """Read the draft-cavage `Signature` header of the request `method target` (`target`: path
    and query) with `headers` and `body` at `now`, checking what needs no key: algorithm
    rsa-sha256 or hs2019 (an RSA key either way), REQUIRED headers covered, a digest covered and
    equal to the body's when there is a body (`Digest: SHA-256=...` or `Content-Digest`), a
    `Date` within MAX_SKEW of `now`. Returns the Claim; raises SignatureError with the reason."""
    lowered = {k.lower(): v for k, v in headers.items()}
    params = parse(lowered.get("signature", ""))
    algorithm = params.get("algorithm", "hs2019").lower()
    if algorithm not in ("rsa-sha256", "hs2019"):
        raise SignatureError(f"Unsupported signature algorithm {algorithm!r}; use rsa-sha256.")
    names = params.get("headers", "date").lower().split()
    missing = [n for n in REQUIRED if n not in names]
    digests = [n for n in ("digest", "content-digest") if n in names]
    if body and not digests:
        missing.append("digest")
    if missing:
        raise SignatureError(f"The signature must cover {', '.join(missing)}.")
    if "digest" in digests:
        given = lowered.get("digest", "")
        if not any(part.strip() == digest(body) for part in given.split(",")):
            raise SignatureError("The Digest header does not match the body (SHA-256 expected).")
    if "content-digest" in digests and not content_digest_matches(lowered.get("content-digest", ""), body):
        raise SignatureError("The Content-Digest header does not match the body.")
    try:
        sent = parsedate_to_datetime(lowered.get("date", ""))
    except (TypeError, ValueError, OverflowError):  # a year past 9999, or past a C long
        raise SignatureError("The Date header is missing or malformed.") from None
    if sent.tzinfo is None:
        raise SignatureError("The Date header has no time zone (IMF-fixdate in GMT expected).")
    problem = skew_problem(sent, now, "The Date header")
    if problem:
        raise SignatureError(problem)
    text = signing_string(method, target, headers, names).encode("utf-8")

    def check(public_pem: str) -> None:
        key = public_key(public_pem)
        if not isinstance(key, rsa.RSAPublicKey):
            raise SignatureError("The sender's key is not an RSA key.")
        try:
            key.verify(base64.b64decode(params["signature"], validate=True), text, padding.PKCS1v15(),
                       hashes.SHA256())
        except (InvalidSignature, ValueError, TypeError):
            raise SignatureError("The signature does not verify under the sender's key.") from None

    return Claim(params["keyId"], "draft-cavage", check)
