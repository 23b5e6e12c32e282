"""Real loopback servers for the subscriber tests: an aiosmtpd SMTP sink and an http.server
webhook receiver, each in a thread. Imported by the test modules (not conftest)."""
from __future__ import annotations

import email
import email.policy
import socket
import threading
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller


class SinkHandler:
    """Keeps every accepted message; refuses recipients listed in `refuse` (550)."""

    def __init__(self):
        self.messages: list[EmailMessage] = []
        self.refuse: set[str] = set()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower() in self.refuse:
            return "550 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content, policy=email.policy.default))
        return "250 Message accepted"

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp(app):
    """A real SMTP server on loopback; the app's SMTP_URL points at it for the test."""
    handler = SinkHandler()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    handler.url = f"smtp://127.0.0.1:{controller.port}"
    previous = app.config["SMTP_URL"]
    app.config["SMTP_URL"] = handler.url
    yield handler
    app.config["SMTP_URL"] = previous
    controller.stop()


def body_text(message: EmailMessage) -> str:
    return message.get_body(("plain",)).get_content()


class Receiver:
    """Records webhook requests; answers with `status` (and `location` for redirects)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.status = 200
        self.location = None

    def start(self, port: int = 0):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(receiver.status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    rec = Receiver().start()
    yield rec
    rec.stop()
