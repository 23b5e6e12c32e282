"""Outgoing mail: over SMTP_URL, or to a file outbox when it is empty (CONTRACT.md "config").

SMTP_URL forms: `smtp://host:25` (plain), `smtp+starttls://user:pass@host:587`,
`smtps://user:pass@host:465`; user and password are percent-decoded. A `Mailer` keeps one
connection for a whole batch; when a message fails, it resets the session (RSET, else a fresh
connection on the next message) so one bad message does not poison the batch.
"""
from __future__ import annotations

import smtplib
import ssl
import uuid
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, formataddr, make_msgid
from pathlib import Path
from urllib.parse import unquote, urlsplit

SMTP_TIMEOUT = 20
DEFAULT_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


class MailError(Exception):
    """A message could not be handed over (the server refused it or could not be reached)."""


def compose(*, from_name: str, from_addr: str, to: str, subject: str, text: str, html: str,
            now: datetime, list_id: str | None = None, unsubscribe_url: str | None = None) -> EmailMessage:
    """A multipart/alternative (text + HTML) message. With `unsubscribe_url`, RFC 2369/8058
    `List-Unsubscribe` and `List-Unsubscribe-Post: List-Unsubscribe=One-Click` are set."""
    message = EmailMessage()
    message["From"] = formataddr((from_name, from_addr))
    message["To"] = to
    message["Subject"] = subject
    message["Date"] = format_datetime(now)
    message["Message-ID"] = make_msgid(domain=from_addr.rsplit("@", 1)[-1])
    message["Auto-Submitted"] = "auto-generated"
    if list_id:
        message["List-Id"] = list_id
    if unsubscribe_url:
        message["List-Unsubscribe"] = f"<{unsubscribe_url}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    message.set_content(text)
    message.add_alternative(html, subtype="html")
    return message


class Mailer:
    """Send messages for one batch. Use as a context manager; `send` raises MailError."""

    def send(self, message: EmailMessage) -> None:  # pragma: no cover - interface
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

    def send(self, message: EmailMessage) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            name = f"{datetime.now().strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:12]}.eml"
            temp = self.directory / (name + ".tmp")
            temp.write_bytes(bytes(message))
            temp.rename(self.directory / name)  # readers never see half a message
        except OSError as exc:
            raise MailError(f"outbox: {exc}") from exc


class SmtpMailer(Mailer):
    """One SMTP connection reused for the batch; reconnects after a failure."""

    def __init__(self, url: str, timeout: float = SMTP_TIMEOUT):
        parts = urlsplit(url)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError("SMTP_URL must be smtp://, smtp+starttls:// or smtps://host[:port]")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or DEFAULT_PORTS[parts.scheme]
        self.user = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else None
        self.timeout = timeout
        self._conn: smtplib.SMTP | None = None

    def _connect(self) -> smtplib.SMTP:
        context = ssl.create_default_context()
        if self.scheme == "smtps":
            conn = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        else:
            conn = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            if self.scheme == "smtp+starttls":
                conn.starttls(context=context)
        if self.user:
            conn.login(self.user, self.password or "")
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.quit()
            except (smtplib.SMTPException, OSError):
                self._conn.close()
        self._conn = None

    def send(self, message: EmailMessage) -> None:
        for attempt in (1, 2):
            try:
                if self._conn is None:
                    self._conn = self._connect()
                self._conn.send_message(message)
                return
            except smtplib.SMTPServerDisconnected as exc:
                # A reused connection the server has since closed: one fresh try.
                self._conn = None
                if attempt == 2:
                    raise MailError(f"smtp: {exc}") from exc
            except smtplib.SMTPResponseException as exc:
                self._reset()
                raise MailError(f"smtp {exc.smtp_code}: {exc.smtp_error!r}") from exc
            except smtplib.SMTPRecipientsRefused as exc:
                self._reset()
                raise MailError(f"smtp: recipient refused {list(exc.recipients)}") from exc
            except (smtplib.SMTPException, OSError) as exc:
                self._drop()
                raise MailError(f"smtp: {type(exc).__name__}: {exc}") from exc

    def _reset(self) -> None:
        try:
            if self._conn is not None:
                self._conn.rset()
        except (smtplib.SMTPException, OSError):
            self._drop()

    def close(self) -> None:
        self._drop()


def open_mailer(config) -> Mailer:
    """The batch mailer for an app config: SMTP when `SMTP_URL` is set, else the file outbox."""
    url = config.get("SMTP_URL") or ""
    return SmtpMailer(url) if url else OutboxMailer(config["OUTBOX_DIR"])
