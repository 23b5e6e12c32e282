"""The one HTTP client (services/http.py): every outside call is bounded in total, the name's
resolution included."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from services import http


def test_a_resolver_that_hangs_costs_the_call_its_deadline_not_more(monkeypatch):
    # A resolver that never answers in time (getaddrinfo takes no timeout of its own); the
    # call's one deadline still holds.
    release = threading.Event()
    real = socket.getaddrinfo

    def hanging(*args, **kwargs):
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    started = time.monotonic()
    with pytest.raises(http.FetchError, match="did not resolve within 0.5s"):
        http.request("POST", "http://hook.example.test/x", headers={}, body=b"{}", allow_private=True, seconds=0.5)
    attempt = http.post("http://hook.example.test/x", b"{}", {}, allow_private=True, timeout=0.5)
    release.set()
    assert time.monotonic() - started < 3
    assert not attempt.ok and "did not resolve" in attempt.error and attempt.host == "hook.example.test"


def test_a_refused_target_is_an_attempt_that_failed_never_an_exception():
    attempt = http.post("https://127.0.0.1:1/hook", b"{}", {}, allow_private=False, timeout=1)
    assert not attempt.ok and attempt.status is None and "not public" in attempt.error
