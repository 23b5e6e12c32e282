"""The origin of links written outside a request (alert mail, the instant-alert consumer):
PUBLIC_BASE_URL, else the one a running `make run` recorded in the instance folder, else, only
in development (`FLASK_DEBUG`, or tests), PAPER_DOMAIN with PUBLIC_URL_SCHEME and PUBLIC_PORT.

`make run` writes the PUBLIC_BASE_URL it serves under (`flask run-info`) to the instance
folder, so a later `flask send-alerts` or `flask worker` in another shell builds the same
links: the URL, then `port N`, the loopback port that server listens on. It is used only while
something listens there (and `make run` removes it when it stops), so no later command sends
links to a port nothing serves any more.
"""
from __future__ import annotations

import socket
from pathlib import Path

from flask import Flask

from services.links import PaperOrigins

RECORDED_BASE_URL = "public_base_url"
LISTENING_TIMEOUT = 0.5  # seconds: the connect to the recorded port (loopback)


class NoOrigin(ValueError):
    """Links built here would reach no server; the message names the setting to fix."""


def record_base_url(instance_path: str, base: str, port: int) -> None:
    """Record `base` (served by `make run` on loopback `port`) for later commands."""
    path = Path(instance_path) / RECORDED_BASE_URL
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{base}\nport {port}\n", encoding="utf-8")


def forget_base_url(instance_path: str) -> None:
    """Remove the recorded base URL (`make run` stopping)."""
    (Path(instance_path) / RECORDED_BASE_URL).unlink(missing_ok=True)


def recorded_base_url(instance_path: str) -> tuple[str | None, str]:
    """(the base URL `make run` recorded, or None when there is none to use; why, in words).
    A record whose port nothing on 127.0.0.1 accepts a connection on (within
    LISTENING_TIMEOUT) is from a server that stopped: not used. One without a port (written
    before ports were recorded) cannot be checked: not used either."""
    path = Path(instance_path) / RECORDED_BASE_URL
    if not path.is_file():
        return None, "none recorded"
    lines = path.read_text(encoding="utf-8").split()
    base = lines[0] if lines else ""
    port = lines[2] if len(lines) >= 3 and lines[1] == "port" and lines[2].isascii() and lines[2].isdigit() else None
    if not base or port is None or not 0 < int(port) < 65536:
        return None, f"{path} names no port to check; run `make run` again"
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=LISTENING_TIMEOUT).close()
    except OSError:
        return None, f"the server that recorded {base} (port {port}) is not running; ignored"
    return base, f"recorded by `make run`, listening on port {port}"


def origin_source(app: Flask) -> tuple[dict, str]:
    """(`app`'s config with the PUBLIC_BASE_URL links outside a request use, where it came
    from in words): PUBLIC_BASE_URL, else the live `make run`'s recorded one (above)."""
    config = dict(app.config)
    if str(config.get("PUBLIC_BASE_URL") or "").strip():
        return config, "PUBLIC_BASE_URL"
    recorded, why = recorded_base_url(app.instance_path)
    if recorded:
        config["PUBLIC_BASE_URL"] = recorded
        return config, why
    return config, f"no PUBLIC_BASE_URL; recorded origin: {why}"


def for_alerts(app: Flask) -> PaperOrigins:
    """Each paper's origin for alert links (see the module). Raises NoOrigin, naming the
    setting, when there is no base URL outside development (its links would be
    `http://localhost/...`, which reach nothing) or the one set is not usable."""
    config, _source = origin_source(app)
    if not str(config.get("PUBLIC_BASE_URL") or "").strip() and not (app.debug or app.testing):
        raise NoOrigin(
            "PUBLIC_BASE_URL is not set: alert links would lead to "
            f"{config['PUBLIC_URL_SCHEME']}://{config['PAPER_DOMAIN']}/..., not to this server. Set it to the "
            "origin readers reach the paper on (e.g. PUBLIC_BASE_URL=https://papers.example.com), or run "
            "`make alerts` beside `make run`. Nothing was planned or marked sent.")
    try:
        return PaperOrigins.from_config(config)
    except ValueError as exc:
        raise NoOrigin(str(exc)) from exc
