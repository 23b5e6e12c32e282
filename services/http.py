"""The one HTTP client for every call Paper Desk makes to the outside: webhooks (subscriber and
content), ActivityPub deliveries and key fetches, WebSub and IndexNow pings, CDN purges and
transparency-log witnesses.

Bounded every way: one deadline covers the whole call (the name's resolution, connecting, TLS,
sending and the whole answer, not each read), the answer is read to at most `max_bytes`, and
redirects are never followed. Targets are checked (`check_url`) against the addresses the name
resolves to *at the call*, and the connection goes to the checked address (no DNS rebinding);
only globally routable addresses are accepted unless `allow_private` (a deployment's own
receivers, or a test's on loopback).
"""
from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from services.errors import Invalid

TIMEOUT_SECONDS = 5.0
MAX_BYTES = 256 * 1024
USER_AGENT = "PaperDesk/1"


class TargetError(Invalid):
    """The URL is not an acceptable target (scheme, host or resolved address): a 422 on the
    `webhook` field when a request names it. `str()` is the reason alone, which a delivery
    attempt records as its error."""

    def __init__(self, reason: str):
        super().__init__(errors={"webhook": [reason]})
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class FetchError(Exception):
    """A call got no usable answer (refused target, network trouble, out of time, or, for the
    callers that say so, an answer they cannot read); `str()` is the reason (no secrets in
    it), `status` the HTTP status when there was an answer (410: the actor is gone),
    `connected` whether a connection to the target was made (TLS included) before it failed:
    False means the host took no connection at all, whatever the request was."""

    def __init__(self, reason: str, status: int | None = None, *, connected: bool = False):
        super().__init__(reason)
        self.status = status
        self.connected = connected


# IPv6 forms that carry an IPv4 address a translator or tunnel relays to: NAT64 (RFC 6052's
# well-known prefix, RFC 8215's local-use prefix, the IPv4 address in the last 32 bits) and the
# deprecated IPv4-compatible form (::a.b.c.d). 6to4, Teredo and IPv4-mapped have their own
# accessors in `ipaddress`.
_EMBEDDING_LAST_32 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"),
                      ipaddress.ip_network("::/96"))


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for: IPv4-mapped (::ffff:a.b.c.d), 6to4
    (2002::/16), Teredo (2001::/32: its server and its client), NAT64 (64:ff9b::/96,
    64:ff9b:1::/48) and IPv4-compatible (::/96); [] for any other address."""
    if ip.ipv4_mapped:
        return [ip.ipv4_mapped]
    if ip.sixtofour:
        return [ip.sixtofour]
    if ip.teredo:
        return list(ip.teredo)
    if any(ip in net for net in _EMBEDDING_LAST_32):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return []


def is_public_address(address: str) -> bool:
    """Whether a call may go to `address` (an IPv4 or IPv6 literal, an IPv6 zone `%eth0`
    ignored): only a globally routable unicast address (`ipaddress` `is_global`), so loopback,
    private, shared (100.64.0.0/10), link-local, reserved, documentation, multicast and
    unspecified addresses are refused. An IPv6 form that embeds an IPv4 address (see
    `embedded_ipv4`) is judged by the IPv4 addresses it embeds. Raises ValueError on a string
    that is not an address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded:
            return all(is_public_address(str(v4)) for v4 in embedded)
    return ip.is_global and not (ip.is_multicast or ip.is_loopback or ip.is_link_local
                                 or ip.is_private or ip.is_reserved or ip.is_unspecified)


def resolve_host(host: str, port: int, seconds: float) -> list[str]:
    """The addresses `host` resolves to, in the resolver's order, each once, within `seconds`.
    `getaddrinfo` takes no timeout: it runs in a daemon thread this call waits for at most
    `seconds` (a hung resolver keeps that thread, never the caller). Raises TargetError when
    the name does not resolve in time."""
    found: list = []

    def lookup() -> None:
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as exc:
            found.append(exc)

    thread = threading.Thread(target=lookup, name="resolve", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if not found:
        raise TargetError(f"The host did not resolve within {seconds:g}s.")
    if isinstance(found[0], BaseException):
        raise TargetError("The webhook host does not resolve.")
    return list(dict.fromkeys(info[4][0] for info in found[0]))


def check_url(url: str, *, allow_private: bool, resolve: bool = True,
              seconds: float = TIMEOUT_SECONDS) -> list[str]:
    """Check a target URL; return the addresses it may be called on.

    https only, unless `allow_private` (then http too). With `resolve`, the host is
    resolved within `seconds` and every address it resolves to must be public
    (`is_public_address`) unless `allow_private`. Raises TargetError (a 422 on the `webhook`
    field).
    """
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # e.g. "https://[::1/hook": an unbalanced bracket
        raise TargetError("The webhook URL is malformed.") from exc
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise TargetError("The webhook URL must use https.")
    if not parts.hostname or parts.username or parts.password:
        raise TargetError("The webhook URL needs a host and no credentials.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise TargetError("The webhook URL has a bad port.") from exc
    if not resolve:
        return []
    addresses = resolve_host(parts.hostname, port, seconds)
    if not allow_private and not all(is_public_address(a) for a in addresses):
        raise TargetError("The webhook host resolves to an address that is not public (loopback, "
                          "private, shared, link-local or reserved).")
    return addresses


class _Deadline:
    """Cuts a connection's socket once a call has run `seconds` in all. The socket timeout
    bounds each read, not the answer: a receiver dripping a byte a second would otherwise hold
    the sender for ever."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float):
        self.conn, self.expired = conn, False
        self.timer = threading.Timer(seconds, self._cut)
        self.timer.daemon = True

    def _cut(self) -> None:
        self.expired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the read blocked on it
            except OSError:
                pass

    def check(self) -> None:
        """Raise TimeoutError if the deadline passed before the socket could be cut."""
        if self.expired:
            raise TimeoutError("deadline passed while connecting")


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a pre-checked address, with SNI and certificate checks for the URL's host."""

    def __init__(self, host, address, deadline_seconds, **kwargs):
        super().__init__(host, **kwargs)
        self._address = address
        self.deadline = _Deadline(self, deadline_seconds)

    def connect(self):
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = sock  # visible to the deadline during the TLS handshake
        self.deadline.check()
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host, address, deadline_seconds, **kwargs):
        super().__init__(host, **kwargs)
        self._address = address
        self.deadline = _Deadline(self, deadline_seconds)

    def connect(self):
        self.sock = socket.create_connection((self._address, self.port), self.timeout)
        self.deadline.check()


@dataclass(frozen=True)
class Answer:
    """What a call got back: the HTTP `status`, the `content_type` (without parameters,
    lower case) and at most `max_bytes` + 1 bytes of the `body`."""

    status: int
    content_type: str
    body: bytes


def request(method: str, url: str, *, headers: dict, body: bytes | None, allow_private: bool,
            seconds: float = TIMEOUT_SECONDS, max_bytes: int = MAX_BYTES) -> Answer:
    """One HTTP request to `url` within `seconds` in all (resolving the name, connecting,
    sending, the whole answer), to the address the target check resolved (`check_url`).
    `headers` are sent as given over a default `User-Agent` (a `Host` among them replaces the
    default). Never follows a redirect (a 3xx is an answer like any other). Raises FetchError
    for a refused target, network trouble or the deadline."""
    started = time.monotonic()
    try:
        addresses = check_url(url, allow_private=allow_private, seconds=seconds)
    except TargetError as exc:
        raise FetchError(str(exc)) from exc
    return send_to(addresses[0], method, url, headers=headers, body=body,
                   seconds=max(0.05, seconds - (time.monotonic() - started)), max_bytes=max_bytes)


def send_to(address: str, method: str, url: str, *, headers: dict, body: bytes | None, seconds: float,
            max_bytes: int = MAX_BYTES) -> Answer:
    """`request` to `address`, one `check_url` has already checked for `url` (a caller that
    resolves on its own terms, as the inbox's key fetches do), within `seconds` in all.
    Raises FetchError for network trouble or the deadline (`connected` says whether it came
    before or after the connection was made)."""
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
    extra = {"context": ssl.create_default_context()} if parts.scheme == "https" else {}
    conn = kind(parts.hostname, address, seconds, port=parts.port, timeout=seconds, **extra)
    conn.deadline.timer.start()
    connected = False
    try:
        conn.connect()
        connected = True
        conn.request(method, path, body=body, headers={"User-Agent": USER_AGENT, **headers})
        response = conn.getresponse()
        raw = response.read(max_bytes + 1)
        answer = Answer(response.status, response.headers.get_content_type(), raw)
    except (OSError, http.client.HTTPException) as exc:
        if conn.deadline.expired:
            raise FetchError(f"timed out: no complete answer within {seconds:.1f}s", connected=connected) from None
        raise FetchError(f"{type(exc).__name__}: {exc}"[:500], connected=connected) from None
    finally:
        conn.deadline.timer.cancel()
        conn.close()
    return answer


@dataclass
class Attempt:
    """One delivery POST's outcome, as the queues record it: `ok` (a 2xx), the `status` when
    there was an answer, the `error` (None when ok). `host` is the target's host name, for the
    queues' per-host circuit breaker."""

    ok: bool
    status: int | None
    error: str | None
    host: str | None = field(default=None, compare=False)


def post(url: str, body: bytes, headers: dict, *, allow_private: bool,
         timeout: float = TIMEOUT_SECONDS) -> Attempt:
    """One delivery POST of `body` within `timeout` seconds in all (`request`); a 2xx is ok,
    anything else (a 3xx included: redirects are not followed) a failure named by its status.
    Never raises for network trouble or a refused target: the outcome is in the Attempt."""
    host = _host(url)
    try:
        answer = request("POST", url, headers=headers, body=body, allow_private=allow_private, seconds=timeout,
                         max_bytes=65536)
    except FetchError as exc:
        return Attempt(False, None, str(exc), host)
    ok = 200 <= answer.status < 300
    return Attempt(ok, answer.status, None if ok else f"HTTP {answer.status}", host)


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None
