"""HTTP caching and CORS policy for public and keyed answers (docs/API.md "caching", "CORS";
docs/DEPLOYING.md "Caching, and a CDN in front").

Everything hangs on the paper's `version`, which every write moves (`Paper.bump`), and, for
stored answers, on the versions of what each one shows (web/state.py `Scopes`):

1. ETag / 304. A public GET's ETag names exactly the state its stored answer is keyed by
   (`answer_etag`): `{paper id}.{scopes}.{digest}.{salt}`, `scopes` the ones its view declared
   (`piece:12+section:3`, `lists:1`, `rest:1`: `depends_on_piece`, `depends_on_lists`, else
   every write of the paper; the paper's own `paper:` scope is implied) and `digest` a hash of
   `answer_state` (their versions, the paper's birth and the scheduled instants passed) and the
   URL's cache key. So a matching `If-None-Match` is answered 304 in before_request, before the
   view runs (the scopes are read from the tag: no piece is loaded), after every write that
   moved none of those scopes, on any worker, and after none that did; nor after a settings
   change (`paper:`), a scheduled instant passing (`aired`: when a scheduled piece airs, with
   no write at all, every ETag and cache key of the paper moves at that instant, so no cached
   answer outlives it), a new FORMAT_SALT, or a new lifetime of the store. Without scope
   versions (SHARED_STATE=off, the store down, a scope moved after the request's generation)
   the ETag is the paper's whole state, `{paper id}.{version}.{birth}[.a{aired}].{salt}`
   (`paper_state` and the salt), which every write moves, as the keys fall back. A kept answer (the
   response cache's, the replay's) carries the tag of the state it is kept under, which is the
   one the 304 step computes while it is served.
2. Response cache. A public GET's answer, as its view made it (status 200, body, the view's own
   headers), is stored in flask-caching (`extensions.cache`: SimpleCache in development,
   RedisCache in production) under the paper's id, the scheme and host (answers hold absolute
   URLs) and the path with its query sorted by name, with the state it was made at
   (`answer_state`: the versions of the scopes it depends on, web/state.py `Scopes`). The next
   identical GET at that state is answered from there in before_request. A hit still passes
   through every after_request hook (security headers, CORS, ETag and Cache-Control, rate-limit
   headers, request id), so it carries exactly the headers a miss would. A write needs no
   invalidation: the versions of what it changed move. An answer depends on every write of its
   paper unless its view declares less (`depends_on_piece`: a story's own answers), so a
   revision leaves the other stories' answers warm, and their ETags good. Requests that
   present a key (`Authorization` or `X-Desk-Key`) never read or write it.
   A view may keep *part* of its answer the same way (`keep_part`, `kept_part`): under the
   `answer_state` of the narrower scopes that part depends on, in this worker's store of kept
   answers (web/replay.py), never with every cache off. A story page keeps the page but its
   rail, so an airing in its section costs the page its rail alone.
3. Surrogate keys for a CDN: every public answer (but a 304) carries `Surrogate-Key:
   paper-<id>`, and a piece's own answers (story, card, oEmbed, share card) `piece-<id>` too
   (`tag_piece`). services/delivery/purge.py posts those keys to PURGE_URL when a piece goes on or off air.

Keyed answers are `private, no-store` and never carry CORS headers or surrogate keys.
"""
from __future__ import annotations

import hashlib
import logging
import re
import zlib
from typing import NamedTuple
from urllib.parse import urlencode

from flask import Response, has_request_context
from flask.globals import request_ctx
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header, parse_etags

from extensions import cache
from models.clock import utcnow
from services.reading import visibility
from web import compression, policy, request_state, state, tenancy
from web.headers import KEY_HEADERS, KEY_VARY, has_any, header
from web.request_state import this_app, this_g, this_request
from web.steps import replays, runs_for

# Bump when the wire format changes, so clients holding old ETags refetch after a deploy.
FORMAT_SALT = "f1"
# A pull or a correction reaches every standards-following cache within a minute with no CDN
# purge (30 s fresh, then at most 30 s served stale while revalidating); revalidation is a cheap
# 304 (`answer_etag`).
PUBLIC_CACHE_CONTROL = "public, max-age=30, stale-while-revalidate=30"
_REDIRECTS = frozenset((301, 302, 303, 307, 308))
# Headers a view sets to manage caching itself: such an answer is not stored.
_SELF_MANAGED = ("ETag", "Cache-Control", "Vary", "Set-Cookie", "Last-Modified", "Expires")
# environ: this answer is public and holds the paper at (state, slug, scopes); web/replay.py keeps it.
REPLAY_MARK = "paperdesk.replay"
# environ: the scopes (web/state.py `Scopes`) the current answer depends on, when its view said
# (`depends_on_piece`); else every answer of the paper moves with every write of the paper.
_DEPENDS = "paperdesk.depends"
# A scope no write moves, named as scopes are (an ETag carries it): the clock's hour (UTC).
# `answer_state` puts the request's hour in the state of an answer that depends on it.
HOURLY = "hourly:0"
_SCOPED = "s"  # answer_state: the third part of a state keyed by scopes begins with it
# answer_etag: how the scope names are joined in a tag, and what the 304 step reads of one
# a client sends (a tag names at most a piece and its section; the paper's is implied).
_NAMES_JOIN = "+"
_TAG_NAMES = 4
_TAG_TRIES = 8  # tags of one If-None-Match judged at most (a client holds one per URL)
_TAG_MAX = 160
_SCOPE_NAME = re.compile(r"[a-z]+:[0-9]{1,18}")
_NAME_MARK = ":"  # in every scope name, in no state
_HOUR_MARK = ".h"  # in the whole-state tag of an answer that depends on the hour (HOURLY)
log = logging.getLogger("paperdesk.cache")


def request_now():
    """The one instant of the current request that public visibility and this module's keys
    are judged at (services/reading/visibility.py): the clock at its first use in the request
    (`begin` forgets it), the clock itself outside a request."""
    if not has_request_context():
        return utcnow()
    state = request_state.current()
    now = state.now
    if now is None:
        now = state.now = utcnow()
    return now


def tag_piece(piece) -> None:
    """Give the current answer the surrogate key `piece-<id>` besides `paper-<id>`, so a CDN
    purge of that piece reaches it. Call from views that answer for one piece."""
    request_state.current().surrogate_keys.append(f"piece-{piece.id}")


def depends_on_piece(piece, *, section_rail: bool = False) -> None:
    """Declare that the current answer shows one piece only: its row, cited facts and
    revisions (the tables web/state.py PIECE_TABLES), its persona and section and the paper
    (PAPER_TABLES), and with `section_rail` the newest pieces of its section. Its stored and
    replayed copies then stay good across writes of other pieces (web/state.py `Scopes`);
    an answer that declares nothing moves with every write of its paper. Call from a view that
    reads nothing else (tests/test_keyed_answers.py checks the tables each one reads)."""
    this_request().environ[_DEPENDS] = piece_scopes(piece, section_rail=section_rail)


def piece_scopes(piece, *, section_rail: bool = False) -> tuple[str, ...]:
    """The scope names of what `depends_on_piece` declares for `piece` (anything with `id`
    and `section_id`): `piece:<id>`, and with `section_rail` `section:<section_id>`."""
    if section_rail:
        return (f"piece:{piece.id}", f"section:{piece.section_id}")
    return (f"piece:{piece.id}",)


def depends_on_lists(*, hourly: bool = False) -> None:
    """Declare that the current answer shows the paper's pieces (lists, the front, feeds,
    search: any of the tables web/state.py LIST_TABLES), its sections, personas and settings,
    and nothing else: its stored and replayed copies then outlive the paper's other writes (a
    checkpoint of its transparency log). With `hourly`, it also shows a window of time that
    moves on the hour (the news sitemap's two days, counted from the hour): its copies and its
    ETag then hold for the clock's hour too (HOURLY). Call from a view that reads nothing else
    (tests/test_keyed_answers.py checks the tables each one reads)."""
    names = (f"lists:{this_g().paper_snapshot.id}",)
    this_request().environ[_DEPENDS] = (*names, HOURLY) if hourly else names


def _answer_scopes() -> tuple[str, ...]:
    """The scope names the current answer depends on (see `depends_on_piece`)."""
    paper = this_g().paper_snapshot.id
    return (f"paper:{paper}", *this_request().environ.get(_DEPENDS, (f"rest:{paper}",)))


def answer_state(snap, names, table) -> str:
    """The version state of an answer of the paper `snap` (tenancy.PaperSnapshot) that
    depends on the scopes `names`, by the scope versions `table` (web/state.py ScopeTable, read
    after the request's generation): it moves whenever one of those scopes does, or a
    scheduled instant of the paper comes. Without a table, or with a scope moved since the
    request's generation, it is the paper's whole state (`state_of`), which every write moves.
    Stored answers (the response cache, the replay) are kept under it, and the ETag names it
    (`answer_etag`). An answer that depends on HOURLY holds the request's hour as well, in
    either form."""
    hourly = names is not None and HOURLY in names
    if hourly:
        names = tuple(name for name in names if name != HOURLY)
    scoped = table.state(names) if table is not None and names is not None else None
    if scoped is None:
        held = state_of(snap)
    else:
        _id, _version, birth = snap.state.split(".", 2)
        aired = visibility.passed(snap.air_schedule, request_now())
        held = f"{snap.id}.{birth}.{_SCOPED}{scoped}" + (f".a{aired}" if aired else "")
    return f"{held}.h{request_now():%Y%m%d%H}" if hourly else held


def answer_etag(snap, held: str, names, url_key: str) -> str:
    """The (unquoted) strong ETag of a public answer of the paper `snap` that holds `held`
    (`answer_state` of the scopes `names`) at the URL whose response cache key is `url_key`:

    - `{paper id}.{names}.{digest}.{salt}` when `held` is keyed by scopes: `names` are the
      answer's scopes but the paper's own (`piece:12+section:3`, `lists:1`, `rest:1`; so
      that the 304 step, before the view, knows what to ask the versions of), `digest` 16 hex
      digits of blake2b over `held` and `url_key` (so one URL's tag is no other's);
    - `{paper id}.{version}.{birth}[.a{aired}].{salt}`, the paper's whole state, when it is
      not (no scope versions to read: the store off, down, or a scope moved after the
      request's generation), as the keys fall back.

    `salt` is FORMAT_SALT: a deploy that changes the wire format ends every 304. One rule for
    all three: what the cache key and the replay key hold is what the ETag names."""
    if names is None or held.split(".", 3)[2][:1] != _SCOPED:
        return f"{held}.{FORMAT_SALT}"
    digest = hashlib.blake2b(f"{held}\n{url_key}".encode("utf-8", "backslashreplace"), digest_size=8).hexdigest()
    return f"{snap.id}.{_NAMES_JOIN.join(names[1:])}.{digest}.{FORMAT_SALT}"


def _scopes_in_tag(snap, tag: str) -> tuple[str, ...] | None:
    """The scope names a tag `answer_etag` made for the paper `snap` names, or None for any
    other tag (the paper's whole state, another paper's, another deploy's, not ours)."""
    salt = f".{FORMAT_SALT}"
    if len(tag) > _TAG_MAX or not tag.endswith(salt) or not tag.startswith(f"{snap.id}."):
        return None
    parts = tag[: -len(salt)].split(".")
    if len(parts) != 3 or len(parts[2]) != 16:
        return None
    declared = parts[1].split(_NAMES_JOIN)
    if len(declared) > _TAG_NAMES or not all(_SCOPE_NAME.fullmatch(name) for name in declared):
        return None
    return (f"paper:{snap.id}", *declared)


def _scope_table():
    app = this_app()
    return state.for_app(app).scopes_for(state.generation_for(app, this_request().environ))


def route_cache_control() -> str:
    """The Cache-Control of the current route's public answers (its policy's, or the default)."""
    return policy.of(this_app(), this_request().endpoint).cache_control or PUBLIC_CACHE_CONTROL


def _cacheable() -> bool:
    """A public GET/HEAD of a paper (the steps that ask run only for routes whose policy
    caches, policy.caches)."""
    g = this_g()
    return this_request().method in ("GET", "HEAD") and g.get("key") is None and "paper" in g


def paper_state() -> str:
    """`{id}.{version}.{birth}`, then `.a{n}` once `n` > 0 of the paper's scheduled instants
    have come: names what the current paper's public answers hold. `birth` (its creation
    time, hex seconds) tells apart a paper deleted and made again under the same id, whose
    version starts over (`seed-demo --reset` on SQLite reuses the highest id). `n` is judged at
    the request's one instant (`request_now`), the one its views pass to its queries,
    so an answer is stored under the state it was computed for. Taken from the request's
    tenancy.PaperSnapshot; use it wherever something is kept per paper version."""
    return state_of(this_g().paper_snapshot)


def state_of(snap, now=None) -> str:
    """`paper_state` of a tenancy.PaperSnapshot at `now` (aware UTC; default: the request's
    instant inside a request, the clock outside: `request_now`)."""
    aired = visibility.passed(snap.air_schedule, now or request_now())
    return f"{snap.state}.a{aired}" if aired else snap.state


def _url_key() -> str:
    """`response_cache_key` of the current request, computed once."""
    state = request_state.current()
    if state.url_key is None:
        state.url_key = response_cache_key()
    return state.url_key


def _current_answer() -> tuple[str, tuple[str, ...]]:
    """(`answer_state`, scope names) of the current public answer as its view declared it:
    what it is stored, replayed and tagged under. Computed once a request."""
    state = request_state.current()
    if state.answer is None:
        names = _answer_scopes()
        state.answer = (answer_state(this_g().paper_snapshot, names, _scope_table()), names)
    return state.answer


def surrogate_keys() -> str:
    """The Surrogate-Key header value of the current public answer: `paper-<id>` then any
    piece keys (space-separated, as Fastly and Varnish xkey read it)."""
    return " ".join([f"paper-{this_g().paper_snapshot.id}", *dict.fromkeys(request_state.current().surrogate_keys)])


@runs_for(policy.caches)
@replays(None)  # the replay is this step's answer, kept
def answer_from_recent_paper():
    """Pipeline step, ahead of tenancy: a public GET of a paper this worker resolved under the
    deployment's current generation (tenancy.recent_snapshot, web/state.py) is answered 304 or
    from the response cache without asking the database for the paper. Anything else (a miss, a key, a private
    or unknown paper, a view without ETags) goes on to tenancy and the view as usual."""
    req = this_request()
    if req.method not in ("GET", "HEAD") or has_any(KEY_HEADERS, req.environ) or req.endpoint is None:
        return None
    snap = tenancy.recent_snapshot(this_app(), req.host, req.environ)
    if snap is None or not snap.is_public:
        return None
    state = request_state.current()
    this_g().paper_snapshot, state.public_get = snap, True
    response = _not_modified() or answer_from_cache()
    if response is None:
        state.public_get = False
        del this_g().paper_snapshot
    return response


@runs_for(policy.caches)
@replays(None)  # a kept 304 is this step's answer; not_modified_tag judges both
def answer_not_modified():
    """Pipeline step, after tenancy: a public GET whose If-None-Match holds the current ETag gets 304 at once."""
    state = request_state.current()
    state.public_get = _cacheable()
    if not state.public_get:
        return None
    return _not_modified()


def _not_modified():
    state = paper_state()
    request = request_state.current()
    if request.not_modified_checked == state:
        return None  # answer_from_recent_paper asked already, for the same state
    request.not_modified_checked = state
    held = header("If-None-Match")
    if held is None:
        return None
    offers = _offers()
    if offers and chosen_type() != offers[0]:
        return None  # the ETag is the default representation's (a browser's redirect has none)
    answer, names, etag = _held_answer(held, state)
    form = not_modified_tag(held, etag)
    if form is None:
        return None
    _mark_for_replay(answer, names, body=False)
    response = Response(status=304)
    response.set_etag(etag, weak=form == "weak")
    response.headers["Cache-Control"] = route_cache_control()
    response.headers["Vary"] = _vary(f"{KEY_VARY}, Accept-Encoding")
    return response


def _held_answer(held: str, paper: str) -> tuple[str, tuple[str, ...] | None, str]:
    """(state, scope names, ETag) of the answer a client's `If-None-Match` header `held` may
    name: the first tag in it `answer_etag` made for this paper at this URL whose scopes have
    not moved since (their state read now, as the cache and the replay read theirs: no piece is
    read); else the paper's whole state `paper` (`paper_state`) in this hour, when the header
    holds that tag of an answer that depends on the hour (HOURLY, made without scope
    versions); else the paper's whole state, with no names."""
    fallback = paper, None, f"{paper}.{FORMAT_SALT}"
    if _HOUR_MARK in held:
        hourly = f"{paper}.h{request_now():%Y%m%d%H}"
        if not_modified_tag(held, f"{hourly}.{FORMAT_SALT}") is not None:
            return hourly, None, f"{hourly}.{FORMAT_SALT}"
    if _NAME_MARK not in held:
        return fallback  # no tag in it names scopes (the paper's whole state has no ':')
    snap = this_g().paper_snapshot
    prefix = f"{snap.id}."
    ours = [tag for tag in parse_etags(held).as_set(include_weak=True) if tag.startswith(prefix)]
    for tag in ours[:_TAG_TRIES]:
        names = _scopes_in_tag(snap, tag)
        if names is None:
            continue
        answer = answer_state(snap, names, _scope_table())
        if answer_etag(snap, answer, names, _url_key()) == tag:
            return answer, names, tag
    return fallback


def not_modified_tag(if_none_match: str, etag: str) -> str | None:
    """Whether an `If-None-Match` header value holds `etag` (an opaque tag, unquoted) under
    the weak comparison (RFC 9110 13.1.2): None when it does not (the full answer is due), else
    the form a 304 answers with, the one the client holds: `weak` when it holds only `W/"etag"`
    (what a gzip answer carries, web/compression.py), else `strong`. The pipeline's 304 and the
    replay's choice of a kept 304 both ask this."""
    tags = parse_etags(if_none_match)
    if not tags.contains_weak(etag):
        return None
    return "weak" if tags.is_weak(etag) and not tags.contains(etag) else "strong"


def chosen_type() -> str | None:
    """The media type the current request's `Accept` chooses among its route's `offers`
    (web/policy.py; werkzeug's quality rules, the route's default on a tie, with no `Accept`
    or with one that names none of them), or None for a route that offers no choice."""
    offers = _offers()
    if not offers:
        return None
    return parse_accept_header(header("Accept"), MIMEAccept).best_match(offers, default=offers[0])


def _offers() -> tuple[str, ...]:
    return policy.of(this_app(), this_request().endpoint).offers


def _vary(route_varies: str) -> str:
    """`route_varies` (the key headers' Vary) with `Accept` first for a route that negotiates."""
    return f"Accept, {route_varies}" if _offers() else route_varies


def declared_for_endpoint() -> frozenset[str]:
    """The query parameters the current request's route reads (its policy's `query`)."""
    return policy.of(this_app(), this_request().endpoint).query or frozenset()


def response_cache_key() -> str:
    """The cache key of the current public GET: paper id, then a digest of scheme, host, path
    and the query parameters the route declares, names sorted (values of one name keep their
    order), and the media type chosen for a route that `offers` several. Parameters a route
    does not read change nothing in its answer, so they are left out of the key: `?junk=N`
    cannot make new entries. The entry holds the state its answer was made at
    (`answer_state`): one found under another is a miss."""
    declared = declared_for_endpoint()
    request = this_request()
    # A route that reads no parameter, or a request that sends none: no query to parse.
    args = sorted(((name, value) for name, value in request.args.items(multi=True)
                   if name in declared), key=lambda item: item[0]) if declared and request.query_string else ()
    parts = [request.scheme, request.host.lower(), request.path, urlencode(args) if args else ""]
    chosen = chosen_type()
    if chosen is not None:  # a route that negotiates keeps one answer per type chosen
        parts.append(chosen)
    raw = "\n".join(parts)
    digest = hashlib.blake2b(raw.encode("utf-8", "backslashreplace"), digest_size=16).hexdigest()
    return f"resp:{this_g().paper_snapshot.id}.{FORMAT_SALT}:{digest}"


def _mark_for_replay(held: str, names: tuple[str, ...] | None = None, *, body: bool = True) -> None:
    """Tell web/replay.py that this answer is public and holds the paper at `held` (a 304, a
    stored answer, or one served from the cache), `answer_state` of the scopes `names` (None:
    the paper's whole state). An answer with a `body` is not marked when every cache is off;
    a 304 (no body: only which tag is current at which state) always is."""
    if not body or not _cache_off():
        this_request().environ[REPLAY_MARK] = (held, this_g().paper_snapshot.slug, names)


def _cache_off() -> bool:
    return this_app().config["CACHE_TYPE"] in ("NullCache", "null")


def _response_cacheable() -> bool:
    if _cache_off():
        return False  # every cache off: not even the key is worth computing
    return request_state.current().public_get and not has_any(KEY_HEADERS)


@runs_for(policy.caches)
@replays(None)  # the kept answer is the stored one
def answer_from_cache():
    """Pipeline step (after the 304 check): a stored answer for this public GET, if any.
    A cache that fails (Redis down) is logged and skipped: the request is served fresh."""
    if not _response_cacheable():
        return None
    state = request_state.current()
    key = state.cache_key = _url_key()
    if key == state.cache_missed:  # answer_from_recent_paper asked already
        return None
    try:
        entry = cache.get(key)
    except Exception:  # noqa: BLE001 - a cache outage must never fail a request
        log.warning("response cache read failed", exc_info=True)
        return None
    held = None
    if entry is not None and len(entry) == 6:  # entries stored before the scopes had fewer fields
        status, headers, body, gzipped, names, held = entry
    if held is None or held != answer_state(this_g().paper_snapshot, names, _scope_table()):
        state.cache_missed = key  # none, or one made at another state: the view answers afresh
        return None
    state.cache_hit = True
    state.answer = (held, names)  # what `decorate` tags it with: the stored answer's state
    _mark_for_replay(held, names)
    if gzipped is not None:
        state.gzip_body = gzipped  # compression.compress sends it to a client that accepts gzip
    return this_app().response_class(body, status=status, headers=headers)


class KeptPart(NamedTuple):
    """Part of a public answer kept in this worker (`keep_part`): the `state` it holds
    (`answer_state` of the scopes `names`), its text deflated (`body`: what the store weighs,
    as it weighs a replayed answer's body; `text()` gives the text back) and the view's own
    `extra` (small immutable data)."""

    state: str
    names: tuple[str, ...]
    body: bytes
    extra: tuple

    def text(self) -> str:
        """The kept text."""
        return zlib.decompress(self.body).decode("utf-8")


# A part is kept deflated: it shares the replay's byte budget with the whole answers, and a
# page's part beside its answer would otherwise halve the pages kept (about 15 KB of HTML a
# story page, 4.5 KB deflated at level 1: 50 us to keep, 27 us to read back).
_PART_LEVEL = 1


_PART = "part"  # first in a kept part's key; a replayed answer's key begins with its URL scheme


def _part_store():
    """The worker's one store of kept answers (web/replay.py `LocalAnswers`), when it keeps
    bodies and the current request is a public GET whose answers may be kept; else None."""
    if not _response_cacheable():
        return None
    replay = this_app().extensions.get("paperdesk.replay")
    if replay is None or replay.kept is None or not replay.bodies:
        return None
    return replay.kept


def kept_part(part: str) -> KeptPart | None:
    """What `keep_part(part, ...)` kept for the current URL (the response cache's key: paper,
    scheme, host, path and query), while the versions of the scopes it was kept under stand
    (`answer_state`, the rule the response cache and the replay keep whole answers by, read
    from the worker's scope table: no statement); else None. Always None when answers are not
    kept (every cache off, RESPONSE_CACHE_LOCAL_BYTES=0, a keyed request)."""
    store = _part_store()
    if store is None:
        return None
    entry = store.get((_PART, part, _url_key()))
    if entry is None or entry.state != answer_state(this_g().paper_snapshot, entry.names, _scope_table()):
        return None
    return entry


def keep_part(part: str, scopes: tuple[str, ...], body: str, extra: tuple = ()) -> None:
    """Keep `body` (with `extra`) as part `part` of the current URL's answer, made from what
    the scopes `scopes` (`piece_scopes`; the paper's own `paper:` scope is implied) hold at
    this request's state: `kept_part` gives it back until one of them moves, on any worker
    (web/state.py). Kept in the replay's store, under its byte budget and its
    least-recently-used order. Keep only what reads nothing beyond those scopes."""
    store = _part_store()
    if store is None:
        return
    snap = this_g().paper_snapshot
    names = (f"paper:{snap.id}", *scopes)
    store.put((_PART, part, _url_key()), KeptPart(answer_state(snap, names, _scope_table()), names,
                                                  zlib.compress(body.encode("utf-8"), _PART_LEVEL), extra))


def _storable(response: Response) -> bool:
    if response.status_code != 200 or response.is_streamed or response.direct_passthrough:
        return False
    if any(name in response.headers for name in _SELF_MANAGED):
        return False
    # A view that read or wrote the session answers per visitor (Flask sets the cookie later).
    session = getattr(request_ctx, "_session", None)
    if session is not None and getattr(session, "accessed", False):
        return False
    length = response.calculate_content_length()
    return length is not None and length <= this_app().config["RESPONSE_CACHE_MAX_BYTES"]


@runs_for(policy.caches)
@replays(None)  # its Surrogate-Key is kept with the answer
def store_answer(response: Response) -> Response:
    """Pipeline step, first after the view (it sees the view's own answer): give a
    public answer its Surrogate-Key and store a fresh 200 in the response cache."""
    state = request_state.current()
    if not state.public_get or response.status_code == 304 or state.cache_hit:
        return response
    response.headers["Surrogate-Key"] = surrogate_keys()
    key = state.cache_key
    if key is not None and _storable(response):
        headers = [(k, v) for k, v in response.headers.items() if k != "Content-Length"]
        body = response.get_data()
        # Compressed once, here, so that no warm hit compresses again.
        gzipped = compression.gzip_bytes(body) if compression.compressible(response) else None
        held, names = _current_answer()
        entry = (response.status_code, headers, body, gzipped, names, held)
        _mark_for_replay(held, names)
        try:
            cache.set(key, entry)
        except Exception:  # noqa: BLE001 - a cache outage must never fail a request
            log.warning("response cache write failed", exc_info=True)
    return response


@replays(None)  # ETag, Cache-Control and Vary are kept with the answer
def decorate(response: Response) -> Response:
    """Pipeline step, after CORS: cache headers on public GETs; keyed answers private and without CORS."""
    if this_g().get("key") is not None:
        response.headers["Cache-Control"] = "private, no-store"
        for name in [h for h in response.headers.keys() if h.lower().startswith("access-control-")]:
            del response.headers[name]
        response.headers.pop("Surrogate-Key", None)
        return response
    status = response.status_code
    if status in _REDIRECTS and request_state.current().public_get:
        # A redirect moves when what it points at moves, so it is never cached as long as its
        # route's own answers (a share card's version is immutable, the 302 to it is not).
        if "Cache-Control" not in response.headers:
            response.headers["Cache-Control"] = PUBLIC_CACHE_CONTROL
        response.vary.update(KEY_HEADERS)
        if _offers():
            response.vary.add("Accept")
        return response
    if status == 200 and request_state.current().public_get:
        # One pass over the headers, then one extend (a werkzeug lookup of a missing header
        # raises and catches an exception): ETag, Cache-Control, Vary, in that order.
        headers = response.headers
        present = {name.lower() for name in headers.keys()}
        added = []
        if "etag" not in present:
            held, names = _current_answer()
            added.append(("ETag", f'"{answer_etag(this_g().paper_snapshot, held, names, _url_key())}"'))
        if "cache-control" not in present:
            added.append(("Cache-Control", route_cache_control()))
        if "vary" in present:
            response.vary.update(KEY_HEADERS)
            if _offers():
                response.vary.add("Accept")
        else:
            added.append(("Vary", _vary(KEY_VARY)))
        headers.extend(added)
    return response

