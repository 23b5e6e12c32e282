"""`flask log verify`: a monitor of any Paper Desk paper's transparency log, over HTTP only.

    verify(client, state=..., grace=...) -> Report

It reads `/api/v1/log` (origin, vkey), the paper index (its slug), the signed checkpoint, every
tile and entry bundle, and every piece on air, and checks:

1. the checkpoint is signed by the log's key (the key and origin kept in the state file from the
   first run on: a log that changes key or origin fails), and cosignatures by the listed
   witnesses verify;
2. the tree: each entry hashes to its level-0 tile hash, each upper tile hash is the root of the
   full tile below, and the root they give is the checkpoint's;
3. consistency with the checkpoint the state file holds from the last run: the old root is the
   root of the first `old size` entries of the new tree (a log that shrank or rewrote its past
   fails), proved again with an RFC 6962 consistency proof;
4. every entry is canonical paperdesk-log/1 JSON of this paper, and entries' `at` never go
   back in time (a backdated change cannot be appended late);
5. every piece on air (`/api/v1/stories`, paged) is the newest entry for it (not unaired, same
   rev), and no piece the log says is on air is missing from the paper; and each piece's full
   public answer hashes to its `content_hash` (docs/PROOFS.md "From the public story to the
   hash basis"), which is its newest entry's: every piece's, read 200 at a time from the list
   with `full=true` (each row exactly its `/api/v1/stories/{id}` answer), or with `sample` the
   pieces changed since the last run plus a random choice of the others, one GET each. The
   hash basis covers the fields in BASIS_FIELDS (`byline_title` from basis version 2); a
   mismatch names the field that changed since the last run verified the piece (the state
   file keeps a 4-hex digest of each field per verified piece, `field_digests`);
6. every piece's publication time (`on_air_at`, on the list's rows) is the `at` of its newest
   `aired` entry: a piece backdated in the database fails, naming `on_air_at`;
7. every revision in the public history of each corrected piece so read hashes to its
   `content_hash`, the hash its log entry holds (docs/CORRECTIONS.md).

Speed (docs/PROOFS.md has the figures): one keep-alive connection per thread; the list's next
page requested (from its `Link`) while this one is checked; entries and bases re-encoded with
orjson, which writes RFC 8785's bytes for them, rfc8785 judging any mismatch.

A mismatch explained by a newer change in the public change feed (`/api/v1/changes`) dated
less than `grace` seconds ago is reported as pending, not as a failure: the log signs new
entries every few seconds. Everything else is a problem, each naming the piece or tile.
"""
from __future__ import annotations

import base64
import hashlib
import http.client
import queue
import random
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import orjson
import rfc8785

from services.transparency import entries, merkle, note, tiles

MAX_RETRY_WAIT = 60.0
SAFE_INTEGER = 2**53 - 1  # RFC 8785 (I-JSON): integers beyond it are not exact
PAGE = 200          # rows per list page, the API's most
PAGES_AHEAD = 4     # pages fetched ahead of the one being checked
NEXT_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="next"')


class FetchError(Exception):
    """A GET that failed for good (network, or a status other than the one expected)."""


class Client:
    """GETs against one Paper Desk server: `base` (`http(s)://host[:port]`), an optional `host`
    header (another paper on the same server), keep-alive connections per thread, and 429s
    waited out (Retry-After, at most MAX_RETRY_WAIT seconds each, 5 times)."""

    def __init__(self, base: str, host: str | None = None, *, timeout: float = 30.0):
        parts = urllib.parse.urlsplit(base)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base!r}")
        self.scheme, self.netloc, self.timeout = parts.scheme, parts.netloc, timeout
        self.prefix = parts.path.rstrip("/")
        self.host = host
        self.requests = 0
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = self._local.conn = kind(self.netloc, timeout=self.timeout)
        return conn

    def get(self, path: str, *, ok: tuple[int, ...] = (200,)) -> tuple[int, bytes]:
        """(status, body) of GET `path`; raises FetchError for a status not in `ok`."""
        status, body, _ = self.fetch(path, ok=ok)
        return status, body

    def fetch(self, path: str, *, ok: tuple[int, ...] = (200,)) -> tuple[int, bytes, http.client.HTTPResponse]:
        """(status, body, response: its headers) of GET `path`; raises FetchError for a status
        not in `ok`."""
        headers = {"Accept-Encoding": "identity", "User-Agent": "PaperDesk-log-monitor/1"}
        if self.host:
            headers["Host"] = self.host
        for attempt in range(6):
            conn = self._connection()
            try:
                conn.request("GET", self.prefix + path, headers=headers)
                response = conn.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self._local.conn = None
                if attempt == 5:
                    raise FetchError(f"GET {path}: {exc}") from None
                time.sleep(0.2)
                continue
            self.requests += 1
            if response.status == 429 and attempt < 5:
                wait = response.getheader("Retry-After", "1")
                time.sleep(min(MAX_RETRY_WAIT, float(wait) if wait.isdigit() else 1.0))
                continue
            if response.status not in ok:
                raise FetchError(f"GET {path}: {response.status}")
            return response.status, body, response
        raise FetchError(f"GET {path}: rate limited")

    def json(self, path: str) -> dict:
        """The decoded JSON body of GET `path` (FetchError as `get`; ValueError for bad JSON)."""
        return orjson.loads(self.get(path)[1])

    def pages(self, path: str) -> Iterator[bytes]:
        """The bodies of a paged list from `path` on, following each answer's `Link: <...>;
        rel="next"` (docs/API.md "paging"): the next request goes out before the caller has
        decoded the page (a thread fetches ahead, at most PAGES_AHEAD pages), so the server's
        work and the caller's overlap. FetchError as `get`, raised where the page would be."""
        ahead: queue.Queue = queue.Queue(maxsize=PAGES_AHEAD)
        stop = threading.Event()

        def walk() -> None:
            at: str | None = path
            try:
                while at and not stop.is_set():
                    _, body, response = self.fetch(at)
                    ahead.put(body)
                    at = self._next(response.getheader("Link", ""))
                ahead.put(None)
            except Exception as exc:  # handed to the reader, who raises it  # noqa: BLE001
                ahead.put(exc)

        walker = threading.Thread(target=walk, name="monitor-pages", daemon=True)
        walker.start()
        try:
            while (item := ahead.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            stop.set()
            while walker.is_alive():  # let a walker blocked on a full queue see `stop`
                try:
                    ahead.get(timeout=0.1)
                except queue.Empty:
                    pass

    def _next(self, link: str) -> str | None:
        """The path (with query) of a `Link` header's rel="next" URL, on this server; None
        without one. A next URL on another host is refused (FetchError)."""
        found = NEXT_LINK.search(link)
        if found is None:
            return None
        target = urllib.parse.urlsplit(found.group(1))
        path = target.path + ("?" + target.query if target.query else "")
        if not path.startswith(self.prefix + "/"):
            raise FetchError(f"a next-page link outside the server: {found.group(1)}")
        return path[len(self.prefix):]


@dataclass
class Report:
    """What a run found: `problems` (each a sentence naming what failed), `pending` (mismatches
    the change feed explains), and the figures."""

    problems: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    origin: str = ""
    size: int = 0
    old_size: int | None = None
    pieces: int = 0
    recomputed: int = 0
    revisions: int = 0
    tiles: int = 0
    cosigned_by: list[str] = field(default_factory=list)
    state: dict | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


# ----------------------------------------------------------------------------- the basis


# What the log covers of a piece's public answer, by where it is checked (docs/PROOFS.md "What
# the basis covers"): the fields of its signed hash basis (BASIS_FIELDS; `byline_title` from
# basis version 2 on), and its publication time, which is the `at` of its newest `aired` entry.
BASIS_FIELDS = ("slug", "rev", "headline", "dek", "prose", "section", "byline", "byline_title", "image",
                "cited_facts")
BASIS_VERSIONS = (2, 1)  # newest first: a piece filed now matches at the first try


def public_fields(story: dict) -> dict:
    """The basis fields of a full public story answer, as served (`image` as served: see
    `basis_of` for the spellings the desk may have stored)."""
    return {"slug": story["slug"], "rev": story["rev"], "headline": story["headline"], "dek": story["dek"],
            "prose": story["prose"], "section": story["section"], "byline": story["byline"],
            "byline_title": (story.get("persona") or {}).get("title", ""), "image": story.get("image"),
            "cited_facts": [{"n": f["n"], "statement": f["statement"], "source": f["source"],
                             "instrument": f["instrument"], "claim_key": f["claim_key"]}
                            for f in story["cited_facts"]]}


def basis_of(story: dict, paper: str, origin_url: str) -> list[dict]:
    """The candidate hash bases of a public story answer (docs/PROOFS.md), newest basis version
    first: the fields as served, with `image` either as served or, when it is a URL on the
    paper's own origin (`origin_url`), the path the desk stored (`/media/...`). A missing image
    is null or "". A candidate can only hash to the signed `content_hash` when the signed basis
    was exactly it, so trying an older version's fields never lets a covered field change."""
    fields = public_fields(story)
    image = fields.pop("image")
    title = fields.pop("byline_title")
    if image is None:
        images: list = [None, ""]
    elif image.startswith(origin_url + "/"):
        images = [image[len(origin_url):], image]  # the desk's own art: stored as its path, most likely
    else:
        images = [image]
    out = []
    for version in BASIS_VERSIONS:
        base = {"paper": paper, "piece": story["id"], **fields}
        if version >= 2:
            base.update({"basis": version, "byline_title": title})
        if story.get("kind") is not None:  # a typed revision signs its kind and note (docs/CORRECTIONS.md)
            base.update(kind=story["kind"], note=story["note"])
        out += [{**base, "image": i} for i in images]
    return out


def field_digests(story: dict) -> str:
    """A short digest of each basis field of a public answer, in BASIS_FIELDS order ('.'-joined,
    4 hex digits each): what the state file keeps of a verified piece, so that a later run can
    name the field a rewrite changed (`changed_fields`)."""
    fields = public_fields(story)
    return ".".join(hashlib.blake2b(orjson.dumps(fields[name], option=orjson.OPT_SORT_KEYS),
                                    digest_size=2).hexdigest() for name in BASIS_FIELDS)


def changed_fields(before: str, after: str) -> list[str]:
    """The basis fields whose served value differs between two `field_digests` (`before`: what
    a previous run verified, `after`: what is served now)."""
    now = after.split(".")
    was = before.split(".")
    if len(was) != len(now):
        return []
    return [name for name, a, b in zip(BASIS_FIELDS, was, now, strict=True) if a != b]


def content_hash(basis: dict) -> str:
    """`sha256:` + hex of the RFC 8785 form of `basis` (the reference: rfc8785)."""
    return "sha256:" + hashlib.sha256(rfc8785.dumps(basis)).hexdigest()


def hashes_to(story: dict, paper: str, origin_url: str) -> tuple[bool, str]:
    """(whether one of the story's candidate bases (`basis_of`) hashes to its served
    `content_hash`, that hash when one does, else the first candidate's). Each candidate is first written with orjson
    (sorted keys, compact), which for a basis (ASCII keys, strings, small integers, null) gives
    RFC 8785's bytes about 30 times faster than rfc8785; a match there proves the hash is of
    this very content. Only when no candidate matches is the verdict taken from rfc8785 itself,
    so an orjson quirk can cost time, never a false failure or a false pass."""
    bases = basis_of(story, paper, origin_url)
    served = story["content_hash"]
    for basis in bases if _plain(bases[0]) else ():
        if "sha256:" + hashlib.sha256(orjson.dumps(basis, option=orjson.OPT_SORT_KEYS)).hexdigest() == served:
            return True, served
    recomputed = [content_hash(b) for b in bases]
    return (True, served) if served in recomputed else (False, recomputed[0])


# ----------------------------------------------------------------------------- the run


def _tile_reader(fetched: dict[tuple[int, int], bytes]) -> Callable[[int, int], bytes]:
    def subtree(height: int, index: int) -> bytes:
        level, rest = divmod(height, tiles.HEIGHT)
        lo, hi = index << rest, (index + 1) << rest
        data = fetched[(level, lo // tiles.WIDTH)]
        a, b = (lo % tiles.WIDTH) * 32, ((hi - 1) % tiles.WIDTH + 1) * 32
        if len(data) < b:
            raise LookupError(f"tile {level}/{lo // tiles.WIDTH} is too short")
        part = [data[i:i + 32] for i in range(a, b, 32)]
        return merkle.root_of(part)

    return subtree


def verify(client: Client, *, state: dict | None, grace: float = 300.0, workers: int = 8,
           sample: int | None = None, now: datetime | None = None,
           progress: Callable[[str], None] = lambda m: None, page: int = PAGE) -> Report:
    """One monitor run (see the module). `state` is what the previous run returned as
    `report.state` (None on a first run); the new one is in `report.state` when the log itself
    verified (signature, tree, consistency). `sample`: recompute the hash of only that many
    public answers (every piece changed since the last run, then a random choice of the
    others); None: of every piece on air. `page`: rows per list page (1-200)."""
    report = Report()
    now = now or datetime.now(timezone.utc)
    info = client.json("/api/v1/log")
    index = client.json("/api/v1")
    paper = index["paper"]
    origin_url = index["home"].rstrip("/")
    report.origin = info["origin"]
    verifier = note.parse_vkey(info["vkey"])
    if state:
        if state.get("origin") != info["origin"] or state.get("vkey") != info["vkey"]:
            report.problems.append(f"the log's origin or key changed since the last run: was {state.get('origin')} "
                                   f"{state.get('vkey')}, now {info['origin']} {info['vkey']}")
            return report
    if verifier.name != info["origin"]:
        report.problems.append("the log key's name is not the origin")
        return report
    served = client.get("/log/checkpoint")[1].decode("utf-8")
    try:
        text = note.verify_note(served, verifier)
        checkpoint = note.parse_checkpoint(text)
    except note.NoteError as exc:
        report.problems.append(f"checkpoint: {exc}")
        return report
    if checkpoint.origin != info["origin"]:
        report.problems.append(f"checkpoint: origin {checkpoint.origin!r} is not the log's {info['origin']!r}")
        return report
    _check_cosignatures(report, served, text, info.get("witnesses") or [])
    size = report.size = checkpoint.size
    progress(f"checkpoint: {checkpoint.origin} size {size}, signature OK")

    # Every tile and bundle of the tree, fetched in parallel.
    wanted = tiles.tiles_for(size)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        bodies = list(pool.map(lambda t: client.get("/log/" + t.path())[1], wanted))
    report.tiles = len(wanted)
    fetched = {(t.level, t.index): b for t, b in zip(wanted, bodies, strict=True) if t.level is not None}
    bundles = {t.index: b for t, b in zip(wanted, bodies, strict=True) if t.level is None}
    logged: list[dict] = []
    for t, body in zip(wanted, bodies, strict=True):
        if t.level is not None and len(body) != t.width * 32:
            report.problems.append(f"tile {t.path()}: {len(body)} bytes, not {t.width * 32}")
    for n in sorted(bundles):
        try:
            items = entries.unbundle(bundles[n])
        except ValueError as exc:
            report.problems.append(f"tile/entries/{tiles.encode_index(n)}: {exc}")
            continue
        hashes = fetched.get((0, n), b"")
        for i, data in enumerate(items):
            idx = n * tiles.WIDTH + i
            if hashes[i * 32:i * 32 + 32] != merkle.leaf_hash(data):
                report.problems.append(f"entry {idx} does not hash to its level-0 tile hash")
            try:
                entry = entries.parse_entry(data)
            except ValueError as exc:
                report.problems.append(f"entry {idx}: {exc}")
                continue
            if entry["paper"] != paper:
                report.problems.append(f"entry {idx} names paper {entry['paper']!r}, not {paper!r}")
            logged.append({**entry, "index": idx})
    if len(logged) != size and not report.problems:
        report.problems.append(f"the bundles hold {len(logged)} entries, the checkpoint {size}")
    for (level, n), body in fetched.items():
        for i in range(len(body) // 32 if level else 0):  # upper tiles: roots of full tiles below
            child = fetched.get((level - 1, n * tiles.WIDTH + i))
            if child is None or len(child) != tiles.WIDTH * 32:
                report.problems.append(f"tile {level}/{tiles.encode_index(n)}: hash {i} has no full tile below it")
            elif merkle.root_of([child[j:j + 32] for j in range(0, len(child), 32)]) != body[i * 32:i * 32 + 32]:
                report.problems.append(f"tile {level}/{tiles.encode_index(n)}: hash {i} is not the root of "
                                       "the tile below")
    if report.problems:
        return report
    subtree = _tile_reader(fetched)
    if merkle.tree_hash(size, subtree) != checkpoint.root:
        report.problems.append("the tiles do not give the checkpoint's root hash")
        return report
    progress(f"tree: {size} entries and {len(wanted)} tiles give the signed root")

    # Consistency with what the last run saw.
    if state and state.get("size") is not None:
        old, old_root = int(state["size"]), base64.b64decode(state["root"])
        report.old_size = old
        if old > size:
            report.problems.append(f"the log shrank: size {size} after {old}")
            return report
        proof = merkle.consistency_proof(old, size, subtree)
        if merkle.range_hash(0, old, subtree) != old_root or not merkle.check_consistency(
                old, size, old_root, checkpoint.root, proof):
            report.problems.append(f"the tree of size {size} is not consistent with the checkpoint of size {old} "
                                   f"seen before: the log rewrote its past")
            return report
        progress(f"consistency: size {old} -> {size} proved")
    for before, after in zip(logged, logged[1:], strict=False):
        if _moment(after["at"]) < _moment(before["at"]):
            report.problems.append(f"entry {after['index']} (piece {after['piece']}) is dated {after['at']}, before "
                                   f"entry {before['index']} ({before['at']}): backdated")
    report.state = {"origin": info["origin"], "vkey": info["vkey"], "size": size,
                    "root": base64.b64encode(checkpoint.root).decode(), "checkpoint": served,
                    "checked_at": now.isoformat()}
    # Without a previous run nothing counts as "changed since": a sample is random throughout.
    changed_from = int(state["size"]) if state and state.get("size") is not None else size
    verified = _check_pieces(client, report, logged, paper, origin_url, grace, workers, now, progress, sample,
                             changed_from, page, (state or {}).get("fields") or {})
    report.state["fields"] = verified
    return report


def _moment(text: str) -> datetime:
    """An RFC 3339 UTC time as the log and the API write it (`...Z`, fractions optional)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _check_cosignatures(report: Report, served: str, text: str, witnesses: list[dict]) -> None:
    _, signatures = note.split_note(served)
    for w in witnesses:
        try:
            verifier = note.parse_vkey(w["vkey"])
        except note.NoteError as exc:
            report.problems.append(f"witness {w.get('name')}: {exc}")
            continue
        for signature in signatures:
            if signature.name == verifier.name and signature.id == verifier.id:
                try:
                    note.verify_cosignature(text, signature, verifier)
                    report.cosigned_by.append(verifier.name)
                except note.NoteError as exc:
                    report.problems.append(f"checkpoint: {exc}")


def _on_air(client: Client, *, full: bool, limit: int) -> Iterator[list[dict]]:
    """The pieces on air, a page at a time (`/api/v1/stories`, newest first): story rows, or with
    `full` full stories (`full=true`, each as `/api/v1/stories/{id}` answers it)."""
    for body in client.pages(f"/api/v1/stories?limit={limit}" + ("&full=true" if full else "")):
        yield orjson.loads(body)["stories"]


def _recent_changes(client: Client, since: datetime) -> dict[str, dict]:
    """The newest change per piece among the public change feed's changes dated after `since`."""
    newest: dict[str, dict] = {}
    path = "/api/v1/changes?limit=500"
    while path:
        body = client.json(path)
        for change in body["changes"]:
            if _moment(change["at"]) >= since:
                newest[change["id"]] = change
        path = f"/api/v1/changes?limit=500&cursor={body['next_cursor']}" if body["changes"] and len(
            body["changes"]) == 500 else None
    return newest


def _check_pieces(client: Client, report: Report, logged: list[dict], paper: str, origin_url: str,
                  grace: float, workers: int, now: datetime, progress: Callable[[str], None],
                  sample: int | None, changed_from: int, page_size: int,
                  remembered: dict[str, str]) -> dict[str, str]:
    """Check every piece on air (see the module, 5.). `remembered`: each piece's `field_digests`
    as the last run verified it (to name what a rewrite changed). Returns the same for this
    run: every piece whose answer verified now, and the remembered ones of pieces still on air
    that a sample left out."""
    newest: dict[str, dict] = {}
    aired: dict[str, dict] = {}  # each piece's newest `aired` entry: when it was published
    for entry in logged:
        newest[entry["piece"]] = entry
        if entry["event"] == "aired":
            aired[entry["piece"]] = entry
    # Every piece on air: its full public answer read in the list's pages (`full=true`), each
    # hash recomputed as its page arrives; with `sample`, the plain rows, then the chosen
    # answers one by one.
    answers: list[dict] = []  # each: id, slug, rev, content_hash, matches, recomputed; or id, slug, error
    rows: list[dict] = []
    for page in _on_air(client, full=sample is None, limit=page_size):
        for row in page:
            rows.append({"id": row["id"], "slug": row["slug"], "rev": row["rev"], "on_air_at": row["on_air_at"]})
            if sample is None:
                answers.append(_answer(row, paper, origin_url))
    report.pieces = len(rows)
    # Every piece on air against its newest entry, by revision ...
    mismatches: list[tuple[str, str, dict]] = []  # (piece, problem, what is served: id, rev, content_hash?)
    for row in rows:
        entry = newest.get(row["id"])
        served = {"id": row["id"], "rev": row["rev"]}
        if entry is None:
            mismatches.append((row["id"], f"piece {row['id']} ({row['slug']}) is on air but not in the log", served))
        elif entry["event"] == "unaired":
            mismatches.append((row["id"], f"piece {row['id']} ({row['slug']}) is on air but logged as unaired "
                                          f"(entry {entry['index']})", served))
        elif entry["rev"] != row["rev"]:
            mismatches.append((row["id"], f"piece {row['id']} ({row['slug']}): served rev {row['rev']}, logged rev "
                                          f"{entry['rev']} (entry {entry['index']})", served))
        published = aired.get(row["id"])
        if published is not None and entry is not None and entry["event"] != "unaired" and (
                row["on_air_at"] is None or _moment(row["on_air_at"]) != _moment(published["at"])):
            mismatches.append((row["id"], f"piece {row['id']} ({row['slug']}): field on_air_at is served as "
                                          f"{row['on_air_at']}, but the log has it aired at {published['at']} "
                                          f"(entry {published['index']}): its publication time was changed",
                               {**served, "on_air_at": row["on_air_at"]}))
    # ... and each full public answer (all of them, or the pieces changed since the last run and
    # a random sample) against its content_hash, recomputed, and the newest entry's.
    if sample is not None:
        chosen = rows
        if sample < len(rows):
            changed = [r for r in rows if r["id"] in newest and newest[r["id"]]["index"] >= changed_from]
            rest = [r for r in rows if not (r["id"] in newest and newest[r["id"]]["index"] >= changed_from)]
            chosen = changed + random.SystemRandom().sample(rest, max(0, min(len(rest), sample - len(changed))))

        def check(row) -> dict:
            try:
                story = client.json(f"/api/v1/stories/{row['id']}")
            except FetchError as exc:
                return {"id": row["id"], "slug": row["slug"], "error": str(exc)}
            return _answer(story, paper, origin_url)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            answers = list(pool.map(check, chosen))
    report.recomputed = len(answers)
    listed = {row["id"] for row in rows}
    verified = {piece: digests for piece, digests in remembered.items() if piece in listed}
    for story in answers:
        if "error" in story:
            report.problems.append(f"piece {story['id']} ({story['slug']}): listed on air but {story['error']}")
            continue
        if story["matches"]:
            verified[story["id"]] = story["fields"]
        else:  # what the last run verified stays remembered, to name the field next time too
            before = remembered.get(story["id"])
            changed = changed_fields(before, story["fields"]) if before else []
            named = (f"field {', '.join(changed)} changed since the last run verified it" if changed else
                     "no earlier run verified it, so the changed field cannot be named")
            report.problems.append(f"piece {story['id']} ({story['slug']}): its public answer hashes to "
                                   f"{story['recomputed']}, not its content_hash {story['content_hash']}: "
                                   f"changed behind its hash ({named})")
        entry = newest.get(story["id"])
        if entry is not None and entry["event"] != "unaired" and entry["rev"] == story["rev"] \
                and entry["content_hash"] != story["content_hash"]:
            mismatches.append((story["id"], f"piece {story['id']} ({story['slug']}): served rev {story['rev']} "
                                            f"{story['content_hash']}, logged {entry['content_hash']} "
                                            f"(entry {entry['index']})", story))
    for piece, entry in newest.items():
        if entry["event"] != "unaired" and piece not in listed:
            mismatches.append((piece, f"piece {piece} is logged as on air (entry {entry['index']}) but the paper "
                                      "does not serve it, and logged no unairing", {}))
    if mismatches:
        recent = _recent_changes(client, now - timedelta(seconds=grace))
        for piece, problem, served in mismatches:
            change = recent.get(piece)
            if not served:
                explained = change is not None and change["type"] == "unaired"
            else:
                explained = change is not None and change["type"] != "unaired" and change["rev"] == served["rev"] \
                    and served.get("content_hash", change["content_hash"]) == change["content_hash"] \
                    and (served.get("on_air_at") is None or (
                        change["type"] == "aired" and _moment(change["at"]) == _moment(served["on_air_at"])))
            (report.pending if explained else report.problems).append(problem)
    _check_history(client, report, logged, answers, workers)
    progress(f"pieces: {len(rows)} on air checked against their newest entries, {len(answers)} public answers "
             f"recomputed, {report.revisions} revisions of corrected pieces")
    return verified


def _plain(basis: dict) -> bool:
    """Whether orjson writes `basis` (a `basis_of` dict: fixed ASCII keys) as RFC 8785 does:
    its values strings or null, `rev`, `basis` and each fact's `n` integers within +-2**53 (a float, for
    one, orjson writes as it read it, `1.0`, where RFC 8785 writes `1`)."""
    for key, value in basis.items():
        if key in ("rev", "basis"):
            if type(value) is not int or not -SAFE_INTEGER <= value <= SAFE_INTEGER:
                return False
        elif key == "cited_facts":
            for fact in value:
                for name, item in fact.items():
                    if name == "n":
                        if type(item) is not int or not -SAFE_INTEGER <= item <= SAFE_INTEGER:
                            return False
                    elif type(item) is not str:
                        return False
        elif value is not None and type(value) is not str:
            return False
    return True


def _answer(story: dict, paper: str, origin_url: str) -> dict:
    """What the checks need of one full public story answer: its id, slug, rev, served
    `content_hash`, whether it `matches` its recomputed hash (`hashes_to`) and that hash, and
    its `fields` (`field_digests`)."""
    matches, recomputed = hashes_to(story, paper, origin_url)
    return {"id": story["id"], "slug": story["slug"], "rev": story["rev"], "content_hash": story["content_hash"],
            "matches": matches, "recomputed": recomputed, "fields": field_digests(story),
            "corrected": bool(story.get("corrections"))}


def _check_history(client: Client, report: Report, logged: list[dict], answers: list[dict], workers: int) -> None:
    """Every earlier revision of each corrected piece among `answers` (docs/CORRECTIONS.md):
    its public history's text hashes to its `content_hash`, which is the hash the log holds for
    that piece and revision (the revisions since the piece aired are all logged)."""
    hashes = {(e["piece"], e["rev"]): e["content_hash"] for e in logged if e["event"] != "unaired"}

    def check(story: dict) -> list[str]:
        problems = []
        try:
            history = client.json(f"/api/v1/stories/{story['id']}/revisions?limit=200")["revisions"]
        except FetchError as exc:
            return [f"piece {story['id']} ({story['slug']}): its history: {exc}"]
        for revision in history:
            label = f"piece {story['id']} ({story['slug']}) rev {revision['rev']}"
            if hashes.get((story["id"], revision["rev"]), revision["content_hash"]) != revision["content_hash"]:
                problems.append(f"{label}: the history says {revision['content_hash']}, the log "
                                f"{hashes[(story['id'], revision['rev'])]}")
            try:
                text = client.json(f"/api/v1/stories/{story['id']}/revisions/{revision['rev']}")
            except FetchError as exc:
                problems.append(f"{label}: {exc}")
                continue
            if content_hash(text["basis"]) != revision["content_hash"]:
                problems.append(f"{label}: its public text hashes to {content_hash(text['basis'])}, not "
                                f"{revision['content_hash']}: changed behind its hash")
        report.revisions += len(history)
        return problems

    corrected = [story for story in answers if story.get("corrected")]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for problems in pool.map(check, corrected):
            report.problems.extend(problems)
