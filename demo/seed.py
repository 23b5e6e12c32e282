"""The demo newsroom (docs/API.md "demo data"): a public paper and its private companion, each
with sections, AI personas, a signing key, signed pieces on air over many UTC days, a few drafts
and a few video editions.

Pieces are written in bulk, not through the ORM unit of work, so `--pieces 100000` takes
seconds: rows are built in Python with explicit ids and inserted in batches. Each revision's
basis, content hash and Ed25519 receipt come from the same functions the filing desk uses
(`filing.validate`, `filing.revision_basis`, `filing.seal`), so a seeded piece verifies exactly
like a filed one. Functions flush; the CLI command commits once.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import random
import time as timer
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from sqlalchemy import func, insert, literal, select, text

from demo.content import PERSONAS, SECTIONS, World, compose
from extensions import db
from models import (
    CADENCES,
    CitedFact,
    Edition,
    Paper,
    Persona,
    Piece,
    PieceChange,
    PieceRevision,
    Section,
    SigningKey,
    Subscriber,
)
from services.newsroom import filing, provenance
from services.rendering import art

SEED_FILER = "seed-demo"
DEFAULT_PIECES = 60
DEFAULT_SUBSCRIBERS = 12
# Sample readers: cadence and cast by position (half daily, three in ten weekly, two instant).
SUBSCRIBER_CADENCES = ("daily", "instant", "daily", "weekly", "daily",
                       "weekly", "daily", "instant", "daily", "weekly")
PRIVATE_PIECES = 24
DRAFTS = 3
BATCH = 2000
# Sealing (the RFC 8785 content hash and the Ed25519 receipt: a third of a piece's cost) runs in
# processes of the seeder's own from PARALLEL_FROM pieces on, SEAL_CHUNK pieces a task.
PARALLEL_FROM = 4000
SEAL_CHUNK = 500
MAX_SEAL_WORKERS = 4
MIN_DAYS, MAX_DAYS, PER_DAY = 14, 365, 4
# Every piece carries its own art, drawn by `services.rendering.art` and served from the paper's
# host; a section has ART_VARIANTS compositions, so a paper of 100,000 pieces draws 6 x 16.
ART_VARIANTS = 16
EDITION_DAYS_AGO = (1, 2, 3, 5)
CAPTION_SECONDS = 4  # each caption cue (a sentence of the transcript) is shown this long

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PaperSpec:
    """What to build for one demo paper."""

    slug: str
    nameplate: str
    motto: str
    description: str
    is_public: bool
    index_style: str
    subscribe_path: str
    pieces: int
    drafts: int = DRAFTS


@dataclass
class SeedReport:
    """What `seed_paper` wrote, for the CLI summary."""

    slug: str
    pieces: int = 0
    drafts: int = 0
    facts: int = 0
    images: int = 0
    days: int = 0
    editions: int = 0
    seconds: float = 0.0


def demo_specs(slug: str, pieces: int) -> list[PaperSpec]:
    """The public paper `slug` with `pieces` on air, and its private companion `{slug}-private`
    (keyed index, `/subscribe` path, PRIVATE_PIECES on air)."""
    name = "The Demo Desk" if slug == "demo" else f"The {slug.replace('-', ' ').title()} Desk"
    return [
        PaperSpec(slug=slug, nameplate=name, motto="Cited, signed and on air.",
                  description="A demonstration newsroom: invented news about fictional places, "
                              "filed by declared AI personas, every claim footnoted and every "
                              "piece signed.",
                  is_public=True, index_style="levels", subscribe_path="subscribers",
                  pieces=pieces),
        PaperSpec(slug=f"{slug}-private", nameplate=f"{name}: Private Wire",
                  motto="For keyholders only.",
                  description="A private demonstration desk: it answers only to its own keys.",
                  is_public=False, index_style="keyed", subscribe_path="subscribe",
                  pieces=PRIVATE_PIECES),
    ]


def existing_slugs(slugs: list[str]) -> list[str]:
    """Those of `slugs` that name a paper already."""
    query = select(Paper.slug).where(Paper.slug.in_(slugs)).order_by(Paper.slug)
    return list(db.session.scalars(query))


def delete_paper(slug: str) -> None:
    """Delete the paper `slug` and every row that belongs to it, children first.

    Ownership is found by walking foreign keys to `papers` (cascading keys first), so tables added
    later (subscribers, deliveries) go too, on SQLite without `PRAGMA foreign_keys` as well.
    """
    paper_id = db.session.scalar(select(Paper.id).where(Paper.slug == slug))
    if paper_id is None:
        return
    papers = Paper.__table__
    owned: dict[str, object] = {}

    def owner_clause(table, seen=()):
        if table is papers:
            return papers.c.id == paper_id
        if table.name not in owned:
            clause = None
            for fk in sorted(table.foreign_keys, key=lambda fk: fk.ondelete != "CASCADE"):
                parent = fk.column.table
                if parent is table or parent.name in seen:
                    continue
                if parent is papers:
                    clause = fk.parent == paper_id
                    break
                parent_clause = owner_clause(parent, (*seen, table.name))
                if parent_clause is not None:
                    clause = fk.parent.in_(select(fk.column).where(parent_clause))
                    break
            owned[table.name] = clause
        return owned[table.name]

    for table in reversed(db.metadata.sorted_tables):
        clause = owner_clause(table)
        if clause is not None:
            db.session.execute(table.delete().where(clause))
    db.session.expire_all()


def span_days(count: int) -> int:
    """How many UTC days (ending today) `count` on-air pieces are spread over."""
    return max(MIN_DAYS, min(MAX_DAYS, math.ceil(count / PER_DAY)))


def air_time(i: int, count: int, days: int, now: datetime) -> datetime:
    """When on-air piece `i` of `count` (0 = oldest) went on air: pieces are dealt evenly over
    `days` UTC days ending today, spaced through 06:00-22:00 (today: up to `now`, never after)."""
    bucket = i * days // count
    first = -(-bucket * count // days)
    size = -(-(bucket + 1) * count // days) - first
    day = now.date() - timedelta(days=days - 1 - bucket)
    midnight = datetime.combine(day, time(), timezone.utc)
    start, end = midnight + timedelta(hours=6), midnight + timedelta(hours=22)
    if day == now.date():
        start = start if now - midnight >= timedelta(hours=7) else midnight
        end = max(start, now - timedelta(minutes=1))
    step = (end - start) / size
    return (start + step * (i - first) + step / 2).replace(microsecond=0)


def _next_id(model) -> int:
    return (db.session.scalar(select(func.coalesce(func.max(model.id), 0))) or 0) + 1


def _reset_sequences(models) -> None:
    """PostgreSQL: move each table's id sequence past the ids written explicitly, so later ORM
    inserts do not collide. SQLite needs nothing (its rowids follow max(id))."""
    if db.session.get_bind().dialect.name != "postgresql":
        return
    for model in models:
        table = model.__tablename__
        highest = f"(SELECT max(id) FROM {table})"
        db.session.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                f"COALESCE({highest}, 1), {highest} IS NOT NULL)"))


def _newsroom(paper: Paper) -> tuple[dict[str, Section], dict[str, Persona]]:
    """Add the paper's sections (in order) and personas; returns them by section name."""
    sections = {}
    for position, (name, description) in enumerate(SECTIONS):
        sections[name] = Section(paper_id=paper.id, name=name, slug=filing.slugify(name),
                                 description=description, position=position)
    personas = {}
    for position, spec in enumerate(PERSONAS):
        persona = Persona(paper_id=paper.id, name=spec["name"], slug=filing.slugify(spec["name"]),
                          title=spec["title"], beat=spec["beat"], bio=spec["bio"],
                          position=position)
        personas.update({name: persona for name in spec["sections"]})
    db.session.add_all([*sections.values(), *set(personas.values())])
    db.session.flush()
    return sections, personas


def _unique(slug: str, taken: dict[str, int]) -> str:
    """`slug`, or `slug-2`, `slug-3`... when taken; `taken` counts uses per base slug."""
    candidate = slug
    while candidate in taken:
        taken[slug] = taken.get(slug, 1) + 1
        candidate = f"{slug}-{taken[slug]}"
    taken[candidate] = 1
    return candidate


def _batches(paper: Paper, spec: PaperSpec, *, now: datetime, rng: random.Random,
             report: SeedReport, instance_path: str):
    """Yield (piece rows, cited fact rows, revision rows, seal jobs) of at most BATCH pieces:
    composed in one `World` (no repeated headline, no contradicted figure), each with its
    section's art (`/media/...` on the paper's host, drawn into `instance_path` once), validated
    and given its basis as the filing desk would, with explicit ids. Not sealed yet: the piece
    rows' `content_hash` and the revision rows' `seal_rows` columns are filled from the results
    of the seal jobs ((piece id, basis, filed at), one per piece, in row order)."""
    sections, personas = _newsroom(paper)
    order = [name for name, _ in SECTIONS]
    piece_id, fact_id, rev_id = _next_id(Piece), _next_id(CitedFact), _next_id(PieceRevision)
    days = span_days(spec.pieces)
    taken: dict[str, int] = {}
    # A section has ART_VARIANTS pictures: each looked up in the instance folder once, not per piece.
    arts: dict[tuple[str, int], str] = {}
    total = spec.pieces + spec.drafts
    pieces, facts, revisions, jobs = [], [], [], []
    world = World()
    for i in range(total):
        section = order[i % len(order)]
        turn = i // len(order)
        story = compose(rng, section, world, turn)
        on_air = i < spec.pieces
        on_air_at = air_time(i, spec.pieces, days, now) if on_air else None
        filed_at = (on_air_at or now) - timedelta(minutes=rng.randint(4, 240))
        slug = _unique(filing.slugify(story["headline"]), taken)
        variant = turn % ART_VARIANTS
        image = arts.get((section, variant))
        if image is None:
            image = arts[section, variant] = art.art_file(instance_path, section, f"variant-{variant}")
        draft = filing.Draft(headline=story["headline"], dek=story["dek"], prose=story["prose"],
                             section=sections[section], persona=personas[section],
                             cited_facts=story["cited_facts"], image=image)
        filing.validate(draft)
        basis = filing.revision_basis(paper.slug, piece_id, slug, 1, draft)
        pieces.append({
            "id": piece_id, "paper_id": paper.id, "slug": slug, "section_id": sections[section].id,
            "persona_id": personas[section].id, "headline": draft.headline, "dek": draft.dek,
            "prose": draft.prose, "image": image, "rev": 1, "content_hash": None,
            "on_air": on_air, "on_air_at": on_air_at,
            "on_air_day": on_air_at.date() if on_air_at else None, "filed_at": filed_at,
            "updated_at": on_air_at or filed_at, "filed_by_key_id": None})
        for n, fact in enumerate(draft.cited_facts, start=1):
            facts.append({"id": fact_id, "piece_id": piece_id, "n": n,
                          **{name: fact[name] for name in filing.FACT_FIELDS}})
            fact_id += 1
        revisions.append({"id": rev_id, "piece_id": piece_id, "rev": 1, "basis": basis,
                          "prev_hash": None, "filer": SEED_FILER, "filed_at": filed_at})
        jobs.append((piece_id, basis, filed_at))
        piece_id, rev_id = piece_id + 1, rev_id + 1
        report.pieces += on_air
        report.drafts += not on_air
        report.facts += len(draft.cited_facts)
        report.images += image is not None
        if len(pieces) >= BATCH or i == total - 1:
            yield pieces, facts, revisions, jobs
            pieces, facts, revisions, jobs = [], [], [], []
    # Each piece has its own day while there are fewer pieces than days.
    report.days = min(days, spec.pieces)


def seal_rows(key: provenance.OpenedKey, paper_slug: str, jobs: list[tuple[int, dict, datetime]]) -> list[dict]:
    """`filing.seal` of each (piece id, basis, filed at) of `jobs`, in order: rev 1, no previous
    hash, filed by SEED_FILER. Runs in a sealing process (`_write_pieces`) or in this one."""
    return [filing.seal(key, paper_slug, piece_id, 1, basis, prev_hash=None, filer=SEED_FILER,
                        now=filed_at) for piece_id, basis, filed_at in jobs]


class SeedFailed(RuntimeError):
    """The seeder could not finish (a sealing or video process failed or stopped); nothing is
    committed."""


def seal_workers(total: int) -> int:
    """How many sealing processes `_write_pieces` starts for `total` pieces: none below
    PARALLEL_FROM (starting one costs about a second), else one per CPU but one, at least one and
    at most MAX_SEAL_WORKERS."""
    if total < PARALLEL_FROM:
        return 0
    return max(1, min(MAX_SEAL_WORKERS, (os.cpu_count() or 1) - 1))


def _result(paper: Paper, what: str, future: Future):
    """`future.result()`, or SeedFailed naming `what` when its process failed or died."""
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise SeedFailed(f"{paper.slug}: {what}: a seeding process stopped ({exc}); "
                         "nothing was written") from exc
    except Exception as exc:
        raise SeedFailed(f"{paper.slug}: {what} failed in a seeding process: {exc!r}; "
                         "nothing was written") from exc


def _sealed(paper: Paper, batch, futures) -> tuple[list, list, list]:
    """The batch's rows with their seals filled in from `futures` (each a list of `seal_rows`
    results, in row order). Raises SeedFailed when a sealing process failed or died."""
    pieces, facts, revisions, _ = batch
    results = []
    for future in futures:
        results.extend(_result(paper, f"sealing pieces {pieces[0]['id']}-{pieces[-1]['id']}", future))
    for piece, revision, sealed in zip(pieces, revisions, results, strict=True):
        piece["content_hash"] = sealed["content_hash"]
        revision.update(sealed)
    return pieces, facts, revisions


def _insert(connection, batch) -> None:
    # Core inserts: one executemany per table (the ORM's bulk path splits a batch wherever a
    # nullable column such as `image` changes between None and a value).
    for model, rows in zip((Piece, CitedFact, PieceRevision), batch, strict=True):
        if rows:
            connection.execute(insert(model.__table__), rows)


def _write_pieces(paper: Paper, spec: PaperSpec, key: SigningKey, *, now: datetime,
                  rng: random.Random, report: SeedReport, progress: Progress,
                  instance_path: str, workers: int | None = None) -> None:
    """Write the paper's on-air pieces and drafts in batches, in three stages that overlap:
    this thread composes batch n + 1 (composing is sequential: each piece extends one World)
    while `workers` sealing processes (None: `seal_workers`; 0: seal here) hash and sign batch n
    in chunks of SEAL_CHUNK pieces and one writer thread inserts batch n - 1 on the session's
    connection (each insert is awaited before the next starts, so the connection is never used
    by two threads at once). Batches are inserted in the order composed, so the rows are the
    same whatever `workers` is. Raises SeedFailed when a sealing process fails."""
    connection = db.session.connection()
    total, written = spec.pieces + spec.drafts, 0
    workers = seal_workers(total) if workers is None else workers
    opened = provenance.open_key(key)
    # Spawned, not forked: a fork would copy this process's database connection and threads.
    sealers = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) \
        if workers else None
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seed-writer")
    pending, in_flight = None, deque()

    def write(batch, futures):
        nonlocal pending, written
        rows = _sealed(paper, batch, futures)
        if pending is not None:
            pending.result()
        pending = writer.submit(_insert, connection, rows)
        written += len(rows[0])
        if total > 5 * BATCH and (written % (5 * BATCH) == 0 or written == total):
            progress(f"  {paper.slug}: {written:,}/{total:,} pieces written")

    try:
        for batch in _batches(paper, spec, now=now, rng=rng, report=report, instance_path=instance_path):
            jobs = batch[3]
            if sealers is None:
                done = Future()
                done.set_result(seal_rows(opened, paper.slug, jobs))
                futures = [done]
            else:
                try:
                    futures = [sealers.submit(seal_rows, opened, paper.slug, jobs[at:at + SEAL_CHUNK])
                               for at in range(0, len(jobs), SEAL_CHUNK)]
                except (BrokenProcessPool, OSError) as exc:
                    raise SeedFailed(f"{paper.slug}: the sealing processes could not take pieces "
                                     f"{jobs[0][0]}-{jobs[-1][0]} ({exc}); nothing was written") from exc
            in_flight.append((batch, futures))
            if len(in_flight) > 1:
                write(*in_flight.popleft())
        while in_flight:
            write(*in_flight.popleft())
        if pending is not None:
            pending.result()
    finally:
        # On failure: queued chunks are dropped and the processes stop (never left waiting).
        writer.shutdown(wait=True, cancel_futures=True)
        if sealers is not None:
            sealers.shutdown(wait=True, cancel_futures=True)
    _reset_sequences((Piece, CitedFact, PieceRevision))
    _write_changes(paper)


def _write_changes(paper: Paper) -> None:
    """The change feed's `aired` change of each piece on air, numbered in (`on_air_at`, `id`)
    order, as filing would have written them: one INSERT ... SELECT."""
    aired = (select(Piece.paper_id, func.row_number().over(order_by=(Piece.on_air_at, Piece.id)), Piece.id,
                    literal("aired"), Piece.rev, Piece.content_hash, Piece.on_air_at)
             .where(Piece.paper_id == paper.id, Piece.on_air.is_(True)))
    db.session.execute(insert(PieceChange).from_select(
        ["paper_id", "seq", "piece_id", "type", "rev", "content_hash", "at"], aired))


def edition_transcript(nameplate: str, day: date, pieces: list[tuple[str, str, str]]) -> list[str]:
    """The words of a day's edition, one sentence a line: a greeting, then for each of `pieces`
    ((section, headline, dek), in airing order) its section, headline and dek, then the
    disclosure that the desk's personas are AI."""
    lines = [f"Good evening. This is the cast from {nameplate} for {day:%A} {day.day} {day:%B}.",
             "Here are the day's pieces."]
    for section, headline, dek in pieces:
        lines.append(f"In {section}: {headline.rstrip('.')}.")
        if dek:
            lines.append(dek)
    lines += ["Every piece was written by an AI persona of the desk, and every claim in it is "
              "footnoted on our site.", "That was the cast. Good night."]
    return lines


def edition_video(instance_path: str, nameplate: str, day: date, sections: list[str],
                  lines: list[str]) -> tuple[str, int, int]:
    """demo/video.py `edition_video` for the edition of `day` (its poster drawn again for the
    greeting and the sign-off): (`/media/{hash}.mp4`, bytes, seconds). Runs in an edition
    process (`_write_editions`) or in this one."""
    # Here, not with the module: every web worker imports this one (commands/demo.py, for the
    # CLI), and demo/video.py brings Pillow, which a worker otherwise loads only to draw.
    from demo import video as video_made

    return video_made.edition_video(
        instance_path, nameplate, lambda: art.render_poster(nameplate, day, sections), lines,
        sections, seconds_per_cue=CAPTION_SECONDS)


def _write_editions(paper: Paper, now: datetime, report: SeedReport, instance_path: str,
                    workers: int = 0) -> None:
    """One edition on each of a few recent days (never today: it is not over yet), all drawn
    here and served from the paper's host: a 16:9 poster, WebVTT captions and the transcript
    they come from (the day's pieces read out), and a real MP4 video (demo/video.py: each
    caption over its section's art, in step with the captions), so the cast players and the
    podcast feed work out of the box. With `workers` > 0 the videos are made side by side in
    up to one process per CPU (each edition of a 100,000-piece paper is ~550 cues, ~10 s of
    ffmpeg on one core); the rows are the same either way. Raises SeedFailed when one fails."""
    sections = [name for name, _ in SECTIONS]
    editions = []
    for days_ago in EDITION_DAYS_AGO:
        day: date = now.date() - timedelta(days=days_ago)
        aired = db.session.execute(
            select(Section.name, Piece.headline, Piece.dek).join(Section, Piece.section_id == Section.id)
            .where(Piece.paper_id == paper.id, Piece.on_air_day == day)
            .order_by(Piece.on_air_at, Piece.id)).all()
        lines = edition_transcript(paper.nameplate, day, [tuple(row) for row in aired])
        editions.append((day, len(aired), lines, art.poster_file(instance_path, paper.nameplate, day, sections)))
    jobs = [(instance_path, paper.nameplate, day, sections, lines) for day, _, lines, _ in editions]
    processes = min(len(jobs), os.cpu_count() or 1) if workers else 0
    if processes > 1:
        with ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(edition_video, *job) for job in jobs]
            try:
                videos = [_result(paper, f"the video of the edition of {job[2]}", future)
                          for job, future in zip(jobs, futures, strict=True)]
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
    else:
        videos = [edition_video(*job) for job in jobs]
    for (day, count, lines, poster), (video, size, seconds) in zip(editions, videos, strict=True):
        db.session.add(Edition(
            paper_id=paper.id, day=day, title=f"{paper.nameplate}, {day.day} {day:%B %Y}",
            summary=f"The day's {count} pieces, read by the desk's AI personas."
            if count else "The day's pieces, read by the desk's AI personas.",
            video_url=video, poster_url=poster,
            captions_url=art.captions_file(instance_path, lines, seconds_per_line=CAPTION_SECONDS),
            transcript="\n\n".join(lines), mime_type="video/mp4", length_bytes=size,
            duration_seconds=seconds, published_at=datetime.combine(day, time(18, 0), timezone.utc)))
        report.editions += 1
    db.session.flush()


def seed_paper(spec: PaperSpec, *, now: datetime, instance_path: str, seed: int = 1,
               progress: Progress = lambda message: None, workers: int | None = None) -> SeedReport:
    """Build one demo paper from `spec` (its slug must be free). The text is deterministic in
    (`seed`, slug); times end at `now`. Pictures and captions are drawn into
    `{instance_path}/media` (once: a later seed reuses them) and named by `/media/...` paths,
    which every answer turns into URLs on the host asked. `workers`: sealing processes
    (`_write_pieces`; None picks by size, 0 seals in this process), and when not 0 the edition
    videos are made in processes too (`_write_editions`); the rows do not depend on it.
    Flushes; the caller commits. Raises SeedFailed when a sealing or video process fails."""
    started = timer.perf_counter()
    report = SeedReport(slug=spec.slug)
    paper = Paper(slug=spec.slug, nameplate=spec.nameplate, motto=spec.motto,
                  description=spec.description, is_public=spec.is_public,
                  index_style=spec.index_style, subscribe_path=spec.subscribe_path,
                  config={"timezone": "UTC", "language": "en"}, version=1, created_at=now)
    db.session.add(paper)
    db.session.flush()
    key = provenance.create_signing_key(paper, now)
    workers = seal_workers(spec.pieces + spec.drafts) if workers is None else workers
    _write_pieces(paper, spec, key, now=now, rng=random.Random(f"{seed}:{spec.slug}"),
                  report=report, progress=progress, instance_path=instance_path, workers=workers)
    _write_editions(paper, now, report, instance_path, workers=workers)
    paper.bump()
    db.session.flush()
    report.seconds = timer.perf_counter() - started
    return report


def subscriber_email(n: int) -> str:
    """The address of sample reader `n` (1-based): `reader00001@example.test` (RFC 2606 `.test`:
    nothing can ever be delivered there)."""
    return f"reader{n:05d}@example.test"


def seed_subscribers(paper: Paper, count: int, *, now: datetime, cadence: str | None = None) -> int:
    """Add `count` confirmed sample subscribers to `paper`, in bulk (one executemany per
    BATCH rows), sending nothing. Deterministic: reader n gets `subscriber_email(n)`, a cadence
    from SUBSCRIBER_CADENCES (or `cadence` for all), a section choice among every section
    (null), and pairs of the paper's sections, cast off for one in four, and a confirmation
    2 to 6 days before `now`, so each first alert window holds pieces. Numbering continues after
    the paper's existing `readerNNNNN` rows. Flushes; returns how many were written."""
    if cadence is not None and cadence not in CADENCES:
        raise ValueError(f"cadence must be one of {', '.join(CADENCES)}")
    names = list(db.session.scalars(select(Section.name).where(Section.paper_id == paper.id)
                                    .order_by(Section.position, Section.id)))
    choices = [None, *(names[i:i + 2] for i in range(0, len(names) - 1, 2)), names[::2] or None]
    start = db.session.scalar(select(func.count(Subscriber.id)).where(
        Subscriber.paper_id == paper.id, Subscriber.email.like("reader%@example.test"))) or 0
    connection = db.session.connection()
    rows = []
    for n in range(start + 1, start + count + 1):
        confirmed = now - timedelta(days=2 + n // 3 % 5, minutes=n % 1440)
        rows.append({"paper_id": paper.id, "email": subscriber_email(n),
                     "cadence": cadence or SUBSCRIBER_CADENCES[n % len(SUBSCRIBER_CADENCES)],
                     "sections": choices[(n + n // len(SUBSCRIBER_CADENCES)) % len(choices)], "cast": n % 4 != 0,
                     "webhook_url": None, "webhook_secret": None,
                     "created_at": confirmed - timedelta(minutes=3),
                     "confirm_sent_at": confirmed - timedelta(minutes=3), "confirmed_at": confirmed,
                     "unsubscribed_at": None, "last_sent_at": None})
        if len(rows) >= BATCH or n == start + count:
            connection.execute(insert(Subscriber.__table__), rows)
            rows = []
    return count
