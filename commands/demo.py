"""`seed-demo` (the demo papers, docs/API.md "demo data") and `run-info` (what `make run` prints:
the URLs to try and a fresh demo admin key)."""
from __future__ import annotations

import re
import time

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select

from commands import database
from commands import log as log_commands
from demo import seed as demo_seed
from extensions import db
from models import CADENCES, Paper, clock
from services.delivery.origins import forget_base_url, record_base_url
from services.newsroom import keys
from services.reading import stories

SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,53}[a-z0-9])?$")


def _slug(ctx, param, value: str) -> str:
    """A DNS label short enough that `{slug}-private` is one too (papers are served on
    `{slug}.{PAPER_DOMAIN}`)."""
    if not SLUG.match(value):
        raise click.BadParameter("use 1-55 lower-case letters, digits and inner hyphens")
    return value


@click.command("seed-demo")
@click.option("--paper", "slug", default="demo", show_default=True, callback=_slug,
              help="Slug of the public demo paper; its private companion is SLUG-private.")
@click.option("--pieces", type=click.IntRange(0, 1_000_000), default=demo_seed.DEFAULT_PIECES,
              show_default=True, help="Pieces on air on the public paper (100000 for benchmarks).")
@click.option("--subscribers", type=click.IntRange(0, 1_000_000), default=demo_seed.DEFAULT_SUBSCRIBERS,
              show_default=True,
              help="Confirmed sample subscribers on the public paper (readerNNNNN@example.test; "
                   "no email is sent). 100000 for benchmarks.")
@click.option("--subscriber-cadence", type=click.Choice(["mixed", *CADENCES]), default="mixed",
              show_default=True, help="Cadence of every sample subscriber, or a mix.")
@click.option("--seed", type=int, default=1, show_default=True,
              help="Text seed: the same seed writes the same pieces.")
@click.option("--if-empty", is_flag=True, help="Leave papers that already exist alone (make run).")
@click.option("--reset", is_flag=True, help="Delete the demo papers first, then seed them again.")
@click.option("--seal-workers", type=click.IntRange(0, 16), default=None,
              help="Processes that hash and sign pieces (0: none, sign in this one; otherwise the "
                   "edition videos are made side by side in processes too). Default: one per CPU "
                   "but one from 4,000 pieces on. The pieces are the same either way.")
@with_appcontext
def seed_demo(slug: str, pieces: int, subscribers: int, subscriber_cadence: str, seed: int,
              if_empty: bool, reset: bool, seal_workers: int | None) -> None:
    """Create the demo papers: sections, AI personas, signed pieces on air over many days,
    drafts, video editions and confirmed sample subscribers."""
    if if_empty and reset:
        raise click.UsageError("--if-empty and --reset contradict each other; pick one.")
    specs = demo_seed.demo_specs(slug, pieces)
    existing = demo_seed.existing_slugs([spec.slug for spec in specs])
    if existing and not (if_empty or reset):
        raise click.ClickException(
            f"paper {', '.join(existing)} already exists. Pass --reset to delete and re-seed it, "
            "or --if-empty to leave it as it is.")
    if if_empty:
        for name in existing:
            click.echo(f"{name}: exists, left as it is (--if-empty)")
        specs = [spec for spec in specs if spec.slug not in existing]
    elif reset:
        for name in existing:
            demo_seed.delete_paper(name)
            click.echo(f"{name}: deleted (--reset)")
    now = clock.utcnow()
    try:
        for spec in specs:
            click.echo(f"{spec.slug}: seeding {spec.pieces:,} pieces on air "
                       f"({'public' if spec.is_public else 'private'})")
            report = demo_seed.seed_paper(spec, now=now, seed=seed, progress=click.echo,
                                          instance_path=current_app.instance_path,
                                          workers=seal_workers)
            click.echo(f"{report.slug}: {report.pieces:,} on air over {report.days} UTC days, "
                       f"{report.drafts} drafts, {report.facts:,} cited facts, {report.images:,} "
                       f"with art, {report.editions} video editions, all signed "
                       f"({report.seconds:.1f}s)")
            if spec.is_public and subscribers:
                started = time.perf_counter()
                paper = db.session.scalar(select(Paper).where(Paper.slug == spec.slug))
                demo_seed.seed_subscribers(paper, subscribers, now=now,
                                      cadence=None if subscriber_cadence == "mixed" else subscriber_cadence)
                click.echo(f"{spec.slug}: {subscribers:,} confirmed subscribers "
                           f"({subscriber_cadence}), no email sent ({time.perf_counter() - started:.1f}s)")
        db.session.commit()
    except demo_seed.SeedFailed as exc:
        db.session.rollback()
        raise click.ClickException(str(exc)) from exc
    except Exception:
        db.session.rollback()
        raise
    if specs:  # a bulk load: without fresh statistics PostgreSQL sorts whole papers per page
        started = time.perf_counter()
        statement = database.refresh_statistics()
        click.echo(f"statistics refreshed ({statement}, {time.perf_counter() - started:.1f}s)")
        # The demo's pieces are in their paper's transparency log at once (the worker would
        # append and sign them within LOG_CHECKPOINT_SECONDS).
        started = time.perf_counter()
        appended = log_commands.catch_up(clock.utcnow())
        click.echo(f"transparency logs: {appended:,} change(s) appended and signed "
                   f"({time.perf_counter() - started:.1f}s)")


def _host(slug: str, port: int) -> str:
    if slug == current_app.config["DEFAULT_PAPER"]:
        return f"127.0.0.1:{port}"
    return f"{slug}.{current_app.config['PAPER_DOMAIN']}:{port}"


@click.command("run-info")
@click.option("--port", type=click.IntRange(1, 65535), default=5000, show_default=True)
@click.option("--paper", "slug", default="demo", show_default=True, callback=_slug)
@click.option("--forget", is_flag=True, help="Remove the recorded PUBLIC_BASE_URL (`make run` stopping) and exit.")
@with_appcontext
def run_info(port: int, slug: str, forget: bool) -> None:
    """Print the URLs to try on the demo paper and a fresh demo admin key (label "make run").
    With PUBLIC_BASE_URL set (`make run` sets it), record it and `port` in the instance folder
    for later `send-alerts` and `worker` runs, used while that port is served
    (services/delivery/origins.py `recorded_base_url`); `--forget` removes the record."""
    if forget:
        forget_base_url(current_app.instance_path)
        return
    paper = db.session.scalar(select(Paper).where(Paper.slug == slug))
    if paper is None:
        raise click.ClickException(f"paper {slug} does not exist; run `flask seed-demo` first.")
    base = f"http://{_host(slug, port)}"
    newest = stories.latest(paper, 1, now=clock.utcnow())
    story = newest[0] if newest else None
    term = next((w.lower() for w in re.findall(r"[A-Za-z]{5,}", story.headline)), "news") \
        if story else "news"
    api = f"{base}/api/v1"
    rows = [
        ("API index", api), ("stories", f"{api}/stories"),
        ("a story", f"{api}/stories/{story.id}" if story else None),
        ("its proof (key)", f"{api}/stories/{story.id}/proof" if story else None),
        ("sections", f"{api}/sections"), ("days", f"{api}/days"),
        ("a day", f"{api}/days/{story.on_air_day.isoformat()}" if story else None),
        ("search", f"{api}/search?q={term}"), ("front", f"{api}/front"), ("cast", f"{api}/cast"),
        ("posts", f"{api}/posts"), ("masthead", f"{api}/masthead"),
        ("openapi", f"{api}/openapi.json"), ("receipt keys", f"{api}/receipt-keys"),
        ("playground", f"{base}/api"), ("home", f"{base}/"),
    ]
    click.echo(f"{paper.nameplate} ({slug}) on {base}")
    base_url = str(current_app.config.get("PUBLIC_BASE_URL") or "").strip()
    if base_url:
        record_base_url(current_app.instance_path, base_url, port)
    for label, url in rows:
        if url:
            click.echo(f"  {label:<16}{url}")
    private = f"{slug}-private"
    if demo_seed.existing_slugs([private]):
        click.echo(f"  {'private paper':<16}http://{_host(private, port)}/api/v1 "
                   "(404 without one of its own keys)")
    _, plain = keys.issue_key(paper, "admin", label="make run")
    db.session.commit()
    click.echo(f'Demo admin key for {slug} (label "make run"), send it as '
               f'"Authorization: Bearer <key>" or "X-Desk-Key: <key>":')
    click.echo(plain)


COMMANDS = [seed_demo, run_info]
