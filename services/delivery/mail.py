"""Outgoing mail: over SMTP_URL, or to a file outbox when it is empty (docs/API.md "config").

SMTP_URL forms: `smtp://host:25` (plain), `smtp+starttls://user:pass@host:587`,
`smtps://user:pass@host:465`; user and password are percent-decoded. A `Mailer` keeps one
connection for a whole batch; when a message fails, it resets the session (RSET, else a fresh
connection on the next message) so one bad message does not poison the batch.

Two ways to make a message: `compose()` (the email package; confirm emails and the odd
alert) and `Template` (alerts to many readers: headers and bodies are rendered once, each
reader's copy is made by string substitution and `binascii` quoted-printable into an
`Outgoing`, ready for the wire, about a hundred times cheaper than `compose()`).
"""
from __future__ import annotations

import binascii
import functools
import re
import secrets
import smtplib
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, formataddr, make_msgid
from pathlib import Path
from urllib.parse import unquote, urlsplit

from flask import current_app

from services import http

SMTP_TIMEOUT = 20
# Round trips of one message that may each wait up to the timeout: connect and greeting, MAIL
# FROM, RCPT TO, DATA, the end of the data. A message's total time is bounded by this many
# timeouts (`SmtpMailer.total`), whatever the server does.
SMTP_STEPS = 5
DEFAULT_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


# Anything that would end a header line or hide in one: C0/C1 controls, DEL, the Unicode line
# and paragraph separators. Runs of them (and of spaces) become one space.
_NOT_ONE_LINE = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def one_line(value: str) -> str:
    """`value` made safe for a header: every run of whitespace or control characters (CR, LF,
    NUL, ...) collapsed to one space, ends trimmed. Stored names pass through here because the
    database may hold rows written before the API refused such values; one of them must not
    stop a send run for every paper."""
    return _NOT_ONE_LINE.sub(" ", value).strip()


# What a failure says about the message (MailError.kind).
PERMANENT, TEMPORARY, CONNECTION = "permanent", "temporary", "connection"


class MailError(Exception):
    """A message could not be handed over. `kind` says whose fault it is:

    - PERMANENT: the server answered 5xx for this message (its recipient, or its content at
      DATA): sending it again would get the same answer.
    - TEMPORARY: the server answered 4xx for this message (greylisting, mailbox full): it may
      be accepted later.
    - CONNECTION: no server answered for this message (connect refused, timeout, TLS or login
      failure, the server closing the connection or answering 421, the sender refused, the
      outbox not writable): nothing is known about the message itself.

    `code` is the SMTP reply code when there was one, else None."""

    def __init__(self, text: str, kind: str = CONNECTION, code: int | None = None):
        super().__init__(text)
        self.kind, self.code = kind, code


def classify(code: int) -> str:
    """The kind of a failure answered with SMTP reply `code` about one message: 5xx
    PERMANENT, 421 (the server is closing the connection) CONNECTION, other 4xx TEMPORARY."""
    if code == 421 or code < 400:
        return CONNECTION
    return PERMANENT if code >= 500 else TEMPORARY


def compose(*, from_name: str, from_addr: str, to: str, subject: str, text: str, html: str,
            now: datetime, list_id: str | None = None, unsubscribe_url: str | None = None) -> EmailMessage:
    """A multipart/alternative (text + HTML) message. With `unsubscribe_url`, RFC 2369/8058
    `List-Unsubscribe` and `List-Unsubscribe-Post: List-Unsubscribe=One-Click` are set.
    `from_name`, `subject` and `list_id` are made one line (`one_line`) whatever they hold."""
    message = EmailMessage()
    message["From"] = formataddr((one_line(from_name), from_addr))
    message["To"] = to
    message["Subject"] = one_line(subject)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = make_msgid(domain=from_addr.rsplit("@", 1)[-1])
    message["Auto-Submitted"] = "auto-generated"
    if list_id:
        message["List-Id"] = one_line(list_id)
    if unsubscribe_url:
        message["List-Unsubscribe"] = f"<{unsubscribe_url}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(text)
    message.add_alternative(html, subtype="html")
    return message


@dataclass(frozen=True)
class Outgoing:
    """A message ready for the wire: envelope sender, one recipient, the CRLF message bytes."""

    sender: str
    to: str
    data: bytes
    smtputf8: bool = False


def _crlf(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("\n", "\r\n") + ("" if text.endswith("\n") else "\r\n")


class Template:
    """One message for many readers: multipart/alternative (text + HTML, both UTF-8
    quoted-printable), with `List-Id` and, when `one_click`, RFC 8058 `List-Unsubscribe-Post`.

    `text` and `html` are rendered once with placeholder strings standing for the per-reader
    values; `fill()` substitutes them (HTML-escaped in the HTML part) and returns that reader's
    `Outgoing`, with its own `To`, `Message-ID` and `List-Unsubscribe: <url>` (one unfolded line,
    never an RFC 2047 encoded word, so mail clients can read it). The shared headers are made
    once by the email package (RFC 2047 for a non-ASCII nameplate or subject); `from_name`,
    `subject` and `list_id` are made one line (`one_line`) first."""

    def __init__(self, *, from_name: str, from_addr: str, subject: str, text: str, html: str,
                 now: datetime, list_id: str | None = None, one_click: bool = False):
        self.sender = from_addr
        self.text, self.html = _crlf(text), _crlf(html)
        self.boundary = "=_pd_" + secrets.token_hex(12)  # "=_" never occurs in quoted-printable
        head = EmailMessage(policy=policy.SMTP)
        head["From"] = formataddr((one_line(from_name), from_addr))
        head["Subject"] = one_line(subject)
        head["Date"] = format_datetime(now)
        head["Auto-Submitted"] = "auto-generated"
        if list_id:
            head["List-Id"] = one_line(list_id)
        if one_click:
            head["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
        head["MIME-Version"] = "1.0"
        head["Content-Type"] = f'multipart/alternative; boundary="{self.boundary}"'
        self.headers = bytes(head).split(b"\r\n\r\n", 1)[0] + b"\r\n"

    def fill(self, *, to: str, message_id: str, values: dict[str, tuple[str, str]],
             unsubscribe_url: str | None = None) -> Outgoing:
        """This reader's message. `values` maps each placeholder to (text value, HTML value).
        An internationalised address (RFC 6531) is written as UTF-8 and sent with SMTPUTF8.
        Raises ValueError for a line break in a header value."""
        for value in (to, message_id, unsubscribe_url or ""):
            if "\r" in value or "\n" in value:
                raise ValueError("line break in a header value")
        text, html = self.text, self.html
        for placeholder, (plain, escaped) in values.items():
            text, html = text.replace(placeholder, plain), html.replace(placeholder, escaped)
        own = f"To: {to}\r\nMessage-ID: {message_id}\r\n"
        if unsubscribe_url:
            own += f"List-Unsubscribe: <{unsubscribe_url}>\r\n"
        boundary = self.boundary.encode()
        part = b'Content-Type: text/%s; charset="utf-8"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n'
        data = b"".join([
            own.encode("utf-8"), self.headers, b"\r\n",
            b"--", boundary, b"\r\n", part % b"plain", binascii.b2a_qp(text.encode("utf-8"), istext=True),
            b"--", boundary, b"\r\n", part % b"html", binascii.b2a_qp(html.encode("utf-8"), istext=True),
            b"--", boundary, b"--\r\n"])
        return Outgoing(self.sender, to, data, smtputf8=not to.isascii())


class Mailer:
    """Send messages for one batch. Use as a context manager; `send` raises MailError."""

    def send(self, message: EmailMessage | Outgoing) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class OutboxMailer(Mailer):
    """Writes each message as one `.eml` file under `directory` (the default transport)."""

    def __init__(self, directory: str):
        self.directory = Path(directory)

    def send(self, message: EmailMessage | Outgoing) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            name = f"{datetime.now().strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.eml"
            temp = self.directory / (name + ".tmp")
            temp.write_bytes(message.data if isinstance(message, Outgoing) else bytes(message))
            temp.rename(self.directory / name)  # readers never see half a message
        except OSError as exc:
            raise MailError(f"outbox: {exc}") from exc


class SmtpMailer(Mailer):
    """One SMTP connection reused for the batch; reconnects after a failure.

    `timeout` (seconds) bounds each connect and each read; `total` (default SMTP_STEPS x
    `timeout`) bounds one message from connecting to the server's last answer: a watchdog
    thread (one per mailer, started with its first message) cuts the socket of a send that
    runs longer, so a server that drips its replies a byte at a time, each within the read
    timeout, cannot hold a sender (or the lease on its rows) for ever."""

    def __init__(self, url: str, timeout: float = SMTP_TIMEOUT, total: float | None = None):
        parts = urlsplit(url)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError("SMTP_URL must be smtp://, smtp+starttls:// or smtps://host[:port]")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or DEFAULT_PORTS[parts.scheme]
        self.user = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.timeout = timeout
        self.total = total if total is not None else SMTP_STEPS * timeout
        self._conn: smtplib.SMTP | None = None
        self._sock: socket.socket | None = None  # the socket of the send in progress
        self._started: float | None = None  # time.monotonic() when that send began
        self._cut = False
        self._closed = threading.Event()
        self._watchdog: threading.Thread | None = None

    def _connect(self) -> smtplib.SMTP:
        context = ssl.create_default_context()
        if self.scheme == "smtps":
            conn = _SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context, seen=self._seen)
        else:
            conn = _SMTP(self.host, self.port, timeout=self.timeout, seen=self._seen)
            if self.scheme == "smtp+starttls":
                conn.starttls(context=context)
                self._seen(conn.sock)
        if self.user:
            conn.login(self.user, self.password or "")
        return conn

    def _seen(self, sock: socket.socket) -> None:
        self._sock = sock

    def _watch(self) -> None:
        while not self._closed.wait(min(1.0, self.total / 4)):
            started, sock = self._started, self._sock
            if started is not None and sock is not None and time.monotonic() - started > self.total:
                self._cut = True
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes the read blocked on it
                except OSError:
                    pass

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.quit()
            except (smtplib.SMTPException, OSError):
                self._conn.close()
        self._conn = None

    def send(self, message: EmailMessage | Outgoing) -> None:
        """Hand `message` over. Raises MailError with its kind (see MailError): a failure to
        connect, log in or keep the connection is CONNECTION, whatever its reply code; a reply
        to this message's MAIL, RCPT or DATA is classified by `classify()`, except a refused
        sender (MAIL FROM), which is about us and every message, so CONNECTION. A send cut at
        `total` seconds is CONNECTION too."""
        if self._watchdog is None:
            self._watchdog = threading.Thread(target=self._watch, name="smtp-watchdog", daemon=True)
            self._watchdog.start()
        self._cut, self._started = False, time.monotonic()
        try:
            self._send(message)
        except MailError as exc:
            if self._cut:
                raise MailError(f"smtp: no answer within {self.total:g}s in all ({exc})", CONNECTION) from exc
            raise
        finally:
            self._started = None

    def _send(self, message: EmailMessage | Outgoing) -> None:
        for attempt in (1, 2):
            reused = self._conn is not None
            try:
                if self._conn is None:
                    self._conn = self._connect()
            except (smtplib.SMTPException, OSError) as exc:
                self._drop()
                raise MailError(f"smtp: cannot connect: {type(exc).__name__}: {exc}", CONNECTION,
                                getattr(exc, "smtp_code", None)) from exc
            conn = self._conn
            conn.data_begun = False
            try:
                if isinstance(message, Outgoing):
                    options = ["SMTPUTF8", "BODY=8BITMIME"] if message.smtputf8 else []
                    self._conn.sendmail(message.sender, [message.to], message.data, options)
                else:
                    self._conn.send_message(message)
                return
            except smtplib.SMTPServerDisconnected as exc:
                self._conn = None
                # A reused connection the server closed while it sat idle: one fresh try. Only
                # then: smtplib reports a read that timed out as a disconnect too, and once DATA
                # has begun the server may hold the message, so sending it again at once would
                # deliver it twice (it is retried after the queue's backoff instead).
                if attempt == 2 or not reused or conn.data_begun or self._cut:
                    raise MailError(f"smtp: {exc}", CONNECTION) from exc
            except smtplib.SMTPSenderRefused as exc:
                self._reset()
                raise MailError(f"smtp {exc.smtp_code}: sender refused: {exc.smtp_error!r}", CONNECTION,
                                exc.smtp_code) from exc
            except smtplib.SMTPRecipientsRefused as exc:
                self._reset()
                code, reply = next(iter(exc.recipients.values()), (550, b""))
                raise MailError(f"smtp {code}: recipient refused: {reply!r}", classify(code), code) from exc
            except smtplib.SMTPResponseException as exc:
                self._reset()
                raise MailError(f"smtp {exc.smtp_code}: {exc.smtp_error!r}", classify(exc.smtp_code),
                                exc.smtp_code) from exc
            except (smtplib.SMTPException, OSError) as exc:
                self._drop()
                raise MailError(f"smtp: {type(exc).__name__}: {exc}", CONNECTION) from exc

    def _reset(self) -> None:
        try:
            if self._conn is not None:
                self._conn.rset()
        except (smtplib.SMTPException, OSError):
            self._drop()

    def close(self) -> None:
        self._closed.set()
        self._drop()


class _ShowsSocket:
    """Mixed into smtplib's classes: shows the socket to `seen` as soon as it exists, so the
    mailer's watchdog can cut a connect whose greeting never ends, and sets `data_begun` when
    a message's DATA command goes out (the mailer clears it before each message)."""

    def __init__(self, *args, seen: Callable[[socket.socket], None], **kwargs):
        self._seen = seen
        super().__init__(*args, **kwargs)

    def _get_socket(self, host, port, timeout):
        sock = super()._get_socket(host, port, timeout)
        self._seen(sock)
        return sock

    def data(self, msg):
        # From the DATA command on, the server may keep the message whatever we hear next.
        self.data_begun = True
        return super().data(msg)


class _SMTP(_ShowsSocket, smtplib.SMTP):
    pass


class _SMTP_SSL(_ShowsSocket, smtplib.SMTP_SSL):  # noqa: N801 - named after the class it extends
    pass


def attempt(mailer: Mailer, message: EmailMessage | Outgoing) -> http.Attempt:
    """Hand `message` to `mailer` as one attempt of a queue (services/delivery/queues.py):
    ok when the server accepted it; a refusal (PERMANENT, TEMPORARY) with its SMTP reply code
    as `status`; a CONNECTION failure (the server said nothing about this message, 421
    included) with `status` None, which is what the engine counts against the server."""
    try:
        mailer.send(message)
    except MailError as exc:
        return http.Attempt(False, None if exc.kind == CONNECTION else exc.code, str(exc)[:1000])
    return http.Attempt(True, 250, None)


def connection_for(settings) -> Callable[[], Mailer]:
    """`Queue.connection` of the mail queues (services/delivery/queues.py): how each sending
    thread opens its mailer for a run, from the app's config (`open_mailer`), each SMTP connect
    and read bounded by `settings.timeout` seconds. Called with an app context."""
    config = dict(current_app.config)
    return functools.partial(open_mailer, config, timeout=settings.timeout)


def open_mailer(config, timeout: float = SMTP_TIMEOUT) -> Mailer:
    """The batch mailer for an app config: SMTP when `SMTP_URL` is set (each connect and each
    read waits at most `timeout` seconds), else the file outbox."""
    url = config.get("SMTP_URL") or ""
    return SmtpMailer(url, timeout=timeout) if url else OutboxMailer(config["OUTBOX_DIR"])
