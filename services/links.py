"""Absolute URLs on one paper's origin (every URL a paper hands out is absolute).

`Links(origin)` builds the reader page, API and asset addresses of the paper served at
`origin` (`"https://demo.example.com"`: scheme and host, with a port when it is not the
scheme's default, no trailing slash). Reader page paths live here, in one place, so the API,
feeds, pages, embeds and emails agree on them. Services that build URLs take a `links: Links`
argument and never look at a request:

- in a request, the web layer makes one from PUBLIC_URL_SCHEME and the request's own host
  (`weblinks.links()`), so every paper's answers point at the host they were asked on;
- outside one (`send-alerts`), `PaperOrigins.links(paper)` names the paper's canonical origin
  from the configuration.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlsplit

from models import Paper, Piece

# Ports a URL leaves out for its scheme (werkzeug drops them from `request.host` alike).
_DEFAULT_PORTS = {"http": "80", "ws": "80", "https": "443", "wss": "443"}


# Bump when the share card's drawing changes (services/rendering/media.py): every card gets a new
# URL, so no cache keeps a card drawn by older code.
CARD_STYLE = "card-v1"


def card_frame(nameplate: str, section: str, byline: str) -> str:
    """8 hex digits naming what a share card draws around the headline: the paper's nameplate,
    the section's and the byline's names as they are now (a rename makes no revision, yet shows
    on the card) and CARD_STYLE."""
    drawn = "\n".join((CARD_STYLE, nameplate, section, byline))
    return hashlib.sha256(drawn.encode("utf-8")).hexdigest()[:8]


def card_version(nameplate: str, piece: Piece) -> str:
    """`{rev}-{frame}` (`3-5f2a9c1e`): the version of `piece`'s share card, the last segment of
    its URL. The revision covers the headline (every correction is a new revision), `card_frame`
    the rest of what is drawn, so one version is always the same picture and its URL can be
    cached as immutable. Needs `piece.section` and `persona` loaded."""
    return f"{piece.rev}-{card_frame(nameplate, piece.section.name, piece.persona.name)}"


def host_name(raw_host: str) -> str:
    """A host without its port, lower-cased: `Demo.Example.com:5000` -> `demo.example.com`,
    `[::1]:5000` -> `[::1]`."""
    host = raw_host.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host


@dataclass(frozen=True, slots=True)
class Links:
    """Absolute URLs under `origin` (`scheme://host[:port]`, no trailing slash). Every method
    returns a string; none touches the database or raises."""

    origin: str

    @property
    def host(self) -> str:
        """The origin's host with its port, as a `Host` header carries it: `demo.localhost:5000`."""
        return self.origin.split("://", 1)[1]

    @property
    def host_name(self) -> str:
        """The origin's host without its port, lower-cased: `demo.localhost`."""
        return host_name(self.host)

    def absolute(self, path: str) -> str:
        """`/x` -> `{origin}/x` (`path` is appended as given: start it with `/`)."""
        return self.origin + path

    def media(self, url: str | None) -> str | None:
        """A stored picture, video or captions URL as readers get it: a path on the paper's own
        host (`/media/ab12....jpg`, what the demo stores, so it follows whatever host the paper
        is asked on) goes under the origin; an absolute URL is returned as stored; None or ""
        stays None."""
        if not url:
            return None
        return self.absolute(url) if url.startswith("/") and not url.startswith("//") else url

    def home(self) -> str:
        """`{origin}/`: the front page."""
        return self.absolute("/")

    def story_page(self, slug: str) -> str:
        """`{origin}/stories/{slug}`; `story_page("")` is the prefix of every story page."""
        return self.absolute(f"/stories/{slug}")

    def section_page(self, slug: str) -> str:
        """`{origin}/sections/{slug}`."""
        return self.absolute(f"/sections/{slug}")

    def day_page(self, day: date) -> str:
        """`{origin}/days/YYYY-MM-DD`: the back issue of a UTC day."""
        return self.absolute(f"/days/{day.isoformat()}")

    def edition_page(self, day: date) -> str:
        """`{origin}/cast/YYYY-MM-DD`: the video edition of a UTC day."""
        return self.absolute(f"/cast/{day.isoformat()}")

    def edition_embed(self, day: date) -> str:
        """The edition page in its frameable form (video only), for `<iframe>` embeds."""
        return self.edition_page(day) + "?embed=1"

    def embed(self, id_or_slug: str) -> str:
        """`{origin}/embed/{id or slug}`: a story card for an `<iframe>`."""
        return self.absolute(f"/embed/{id_or_slug}")

    def share_card(self, piece: Piece, nameplate: str) -> str:
        """`{origin}/cards/{slug}/{version}.png`: the 1200x630 share card of `piece` as it is now
        (`card_version`), drawn with the paper's `nameplate`. A new revision, or a renamed
        nameplate, section or byline, is a new URL, so the picture under one URL never changes.
        Needs `piece.section` and `persona` loaded."""
        return self.absolute(f"/cards/{piece.slug}/{card_version(nameplate, piece)}.png")

    def avatar(self, slug: str) -> str:
        """`{origin}/masthead/{slug}/avatar.svg`: a persona's portrait."""
        return self.absolute(f"/masthead/{slug}/avatar.svg")

    def avatar_png(self, slug: str) -> str:
        """`{origin}/masthead/{slug}/avatar.png`: the same portrait as a PNG (an actor's icon)."""
        return self.absolute(f"/masthead/{slug}/avatar.png")

    def api(self, path: str = "") -> str:
        """`api('/stories')` -> `{origin}/api/v1/stories`."""
        return self.absolute("/api/v1" + path)


def base_origin(url: str) -> str:
    """PUBLIC_BASE_URL as an origin: `http://127.0.0.1:5000/` -> `http://127.0.0.1:5000`
    (scheme and host lower-cased, a default port dropped, a non-ASCII host in IDNA). Raises
    ValueError, with the reason, for anything but `http(s)://host[:port]` with an optional
    trailing `/` (no path, query, fragment or credentials)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"PUBLIC_BASE_URL {url!r} is not a URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"PUBLIC_BASE_URL {url!r} must be http(s)://host[:port]")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"PUBLIC_BASE_URL {url!r} must be an origin only: no path, query or credentials")
    host = parts.hostname.lower()
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if port is not None and _DEFAULT_PORTS.get(scheme) != str(port):
        host = f"{host}:{port}"
    return f"{scheme}://{host}"


@dataclass(frozen=True, slots=True)
class PaperOrigins:
    """Each paper's canonical public origin, for work done outside a request (`send-alerts`):
    the paper's custom `host`, else `{slug}.{domain}` (the bare `domain` for `default_paper`),
    with `scheme` and `port` (empty: the scheme's default).

    With `base` (PUBLIC_BASE_URL as an origin, see `base_origin`), the default paper without a
    custom host is at `base` itself, whatever its host (a bare host such as `127.0.0.1:5000`,
    or `domain`), and every other paper takes `base`'s scheme and port on its own host:
    `http://127.0.0.1:5000` gives `http://gazette.localhost:5000` for the paper `gazette`.

    The host is written as a request on that origin reports it (werkzeug's `request.host`),
    so these URLs are the ones the paper's own pages hand out: lower-cased, a non-ASCII name in
    IDNA, no port when it is the scheme's default (80 for http, 443 for https)."""

    scheme: str
    domain: str
    default_paper: str
    port: str = ""
    base: str = ""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PaperOrigins:
        """From PUBLIC_BASE_URL when set (its scheme and port win over PUBLIC_URL_SCHEME and
        PUBLIC_PORT), PUBLIC_URL_SCHEME, PAPER_DOMAIN, DEFAULT_PAPER and PUBLIC_PORT. Raises
        KeyError when one of the middle three is missing, ValueError for a PUBLIC_BASE_URL that
        is not an origin or whose host tenancy would not serve as the default paper (neither
        PAPER_DOMAIN nor one of BARE_HOSTS): its links would reach another paper or none."""
        raw = str(config.get("PUBLIC_BASE_URL") or "").strip()
        if not raw:
            return cls(scheme=config["PUBLIC_URL_SCHEME"], domain=config["PAPER_DOMAIN"],
                       default_paper=config["DEFAULT_PAPER"], port=str(config.get("PUBLIC_PORT") or ""))
        base = base_origin(raw)
        bare = {config["PAPER_DOMAIN"].lower(), *config.get("BARE_HOSTS", ())}
        if host_name(base.split("://", 1)[1]) not in bare:
            raise ValueError(f"PUBLIC_BASE_URL {raw!r}: its host must be PAPER_DOMAIN or one of BARE_HOSTS "
                             f"({', '.join(sorted(bare))}), the hosts that serve the default paper")
        scheme, host = base.split("://", 1)
        port = host.rsplit(":", 1)[1] if not host.endswith("]") and ":" in host else ""
        return cls(scheme=scheme, domain=config["PAPER_DOMAIN"], default_paper=config["DEFAULT_PAPER"],
                   port=port, base=base)

    def origin(self, paper: Paper) -> str:
        """`scheme://host[:port]` of `paper` (reads its `host` and `slug`)."""
        if self.base and not paper.host and paper.slug == self.default_paper:
            return self.base
        host = paper.host or (self.domain if paper.slug == self.default_paper
                              else f"{paper.slug}.{self.domain}")
        host = host.lower()
        if not host.isascii():
            host = host.encode("idna").decode("ascii")
        port = self.port.strip()
        if port.isdigit():
            port = str(int(port)) if int(port) else ""  # `08080` is port 8080; port 0 is none
        if port and _DEFAULT_PORTS.get(self.scheme.lower()) != port:
            host = f"{host}:{port}"
        return f"{self.scheme}://{host}"

    def links(self, paper: Paper) -> Links:
        """The `Links` of `paper`'s canonical origin."""
        return Links(self.origin(paper))
