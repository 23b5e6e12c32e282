"""A TCP relay on loopback between a process and a server it depends on, which a test (or
scripts/faults.py) can take away and give back: the way to partition one app host from its
database or Redis while the others keep theirs.

    relay = Relay(("127.0.0.1", 6379)).start()   # connect to 127.0.0.1:relay.port instead
    relay.stop(); relay.start()                   # gone (every connection reset), then back
    relay.impair(delay=0.3, loss=0.5)             # each chunk held 0.3 s; half the new
                                                  # connections black-holed (accepted, never relayed)
"""
from __future__ import annotations

import random
import socket
import threading
import time


def free_port() -> int:
    """A free TCP port on loopback (the OS's choice)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Relay:
    """A TCP relay from a loopback port to `target`, which can be stopped (listener and every
    live connection closed) and started again on the same port, or impaired (`impair`)."""

    def __init__(self, target: tuple[str, int], *, seed: int = 0):
        self.target, self.port = target, free_port()
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.listener: socket.socket | None = None
        self.delay, self.loss = 0.0, 0.0
        self._random = random.Random(seed)

    def start(self) -> Relay:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()
        return self

    def impair(self, *, delay: float = 0.0, loss: float = 0.0) -> None:
        """From now on hold each chunk `delay` seconds before relaying it, and black-hole a
        `loss` share of new connections (accepted, nothing relayed either way): what a lossy,
        slow link looks like to a client with a timeout. `impair()` heals it."""
        self.delay, self.loss = delay, loss

    def stop(self) -> None:
        listener, self.listener = self.listener, None
        with self.lock:
            live, self.sockets = self.sockets, []
        for sock in [listener, *live]:
            if sock is None:
                continue
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the threads blocked on it
            except OSError:
                pass
            sock.close()

    def cut(self) -> None:
        """Reset every live connection, keep listening (new connections are relayed)."""
        with self.lock:
            live, self.sockets = self.sockets, []
        for sock in live:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            if self.loss and self._random.random() < self.loss:
                with self.lock:
                    self.sockets.append(client)  # held open, never answered: closed by stop/cut
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                if self.delay:
                    time.sleep(self.delay)
                if self.loss and self._random.random() < self.loss:
                    break  # the link drops: both ends reset below
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
