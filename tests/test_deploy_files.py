"""The deploy files carry every setting a deployment needs, and the deployment they describe
cannot be stalled by slow clients: read as docker compose and a shell would read them, and the
production environment file checked by the app's own startup checks."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from app import create_app
from services.links import PaperOrigins

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
NEEDED = ("SECRET_KEY", "DATABASE_URL", "PAPER_DOMAIN", "PUBLIC_URL_SCHEME", "PUBLIC_BASE_URL", "MAIL_FROM",
          "SMTP_URL", "RATELIMIT_STORAGE_URI", "CACHE_TYPE", "CACHE_REDIS_URL", "TRUSTED_PROXIES")


def env_example() -> dict[str, str]:
    settings = {}
    for line in (DEPLOY / "env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            settings[name.strip()] = " ".join(shlex.split(value))
    return settings


def test_the_production_env_file_sets_every_needed_setting_and_the_app_accepts_them(tmp_path):
    settings = env_example()
    assert set(NEEDED) <= set(settings), set(NEEDED) - set(settings)
    assert settings["PUBLIC_BASE_URL"].startswith("https://")
    config = {name: settings[name] for name in ("PUBLIC_BASE_URL", "MAIL_FROM", "PAPER_DOMAIN", "PUBLIC_URL_SCHEME")}
    # The startup checks (app.py): a base URL its links can use, a sender mail can use.
    app = create_app({"TESTING": True, "SQLALCHEMY_DATABASE_URI": "sqlite://", "INSTANCE_PATH": str(tmp_path),
                      "SECRET_KEY": "x" * 64, **config})
    origins = PaperOrigins.from_config(app.config)
    assert origins.base == "https://papers.example.com"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_every_app_service_in_compose_has_the_links_and_sender_settings(compose):
    app_services = [name for name, service in compose["services"].items()
                    if "PAPER_DOMAIN" in service.get("environment", {})]
    assert {"web", "outbox", "alerts", "migrate"} <= set(app_services)
    for name in app_services:
        environment = compose["services"][name]["environment"]
        assert {"PUBLIC_BASE_URL", "MAIL_FROM", "SECRET_KEY", "SMTP_URL"} <= set(environment), name


def test_in_compose_only_a_proxy_faces_clients(compose):
    """gunicorn's sync workers serve one request each: a client never reaches them directly, so
    two silent connections cannot hold both workers (issue 25: /healthz waited 32 s)."""
    services = compose["services"]
    assert "ports" not in services["web"]
    published = {name for name, service in services.items() if service.get("ports")}
    assert published == {"proxy"}
    proxy = services["proxy"]
    [mount] = [v for v in proxy["volumes"] if v.endswith("/etc/nginx/conf.d/default.conf:ro")]
    conf = (DEPLOY / mount.split(":")[0].removeprefix("./")).read_text()
    assert "server web:8000" in conf
    for directive in ("client_header_timeout", "client_body_timeout", "proxy_request_buffering on",
                      "proxy_buffering on", "proxy_set_header Host $host"):
        assert directive in conf, directive
    assert services["web"]["environment"]["TRUSTED_PROXIES"].endswith("1}")
