"""The SMTP mailer's one quiet retry: a reused connection the server closed while idle is
opened again for the same message, but a message whose DATA went out is never sent twice by
the mailer, however the answer fails to come (smtplib reports a read that timed out as a
disconnect). Over a real loopback SMTP server (aiosmtpd)."""
from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from aiosmtpd.controller import Controller

from services.delivery import mail
from tests.fixtures.servers import SinkHandler, free_port


class SlowSink(SinkHandler):
    """Keeps each message as it arrives, then waits `slow` seconds before its 250."""

    slow = 0.0

    async def handle_DATA(self, server, session, envelope):
        answer = await super().handle_DATA(server, session, envelope)
        await asyncio.sleep(self.slow)
        return answer


def _message(n: int):
    return mail.compose(from_name="Desk", from_addr="desk@example.com", to=f"r{n}@example.com",
                        subject=f"Hello {n}", text="Hi", html="<p>Hi</p>", now=datetime.now(timezone.utc))


@pytest.fixture
def sink():
    handler = SlowSink()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    handler.controller, handler.port = controller, port
    yield handler
    handler.controller.stop()


def _to(sink) -> list[str]:
    return [m["To"] for m in sink.received]


@pytest.fixture
def mailer(sink):
    """A mailer for the sink with a 1 s timeout (each connect and read), closed afterwards."""
    made = mail.SmtpMailer(f"smtp://127.0.0.1:{sink.port}", timeout=1.0)
    yield made
    made.close()


def test_a_late_answer_to_data_is_a_failure_not_a_second_copy(sink, mailer):
    sink.slow = 2.5
    with pytest.raises(mail.MailError, match="timed out") as raised:
        mailer.send(_message(1))
    assert raised.value.kind == mail.CONNECTION  # retried after the queue's backoff
    assert _to(sink) == ["r1@example.com"]  # the server has it once


def test_a_late_answer_on_a_reused_connection_is_not_sent_again_either(sink, mailer):
    mailer.send(_message(1))
    sink.slow = 2.5
    with pytest.raises(mail.MailError, match="timed out"):
        mailer.send(_message(2))
    assert _to(sink) == ["r1@example.com", "r2@example.com"]


def test_a_reused_connection_the_server_closed_while_idle_is_opened_again(sink, mailer):
    mailer.send(_message(1))
    # The server goes away and comes back on the same port: the mailer's connection is dead.
    sink.controller.stop()
    sink.controller = Controller(sink, hostname="127.0.0.1", port=sink.port)
    sink.controller.start()
    mailer.send(_message(2))  # no error: the one fresh try
    assert _to(sink) == ["r1@example.com", "r2@example.com"]
