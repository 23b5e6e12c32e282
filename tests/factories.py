"""`Desk`: builds papers, sections, personas, pieces and editions through the real services, so
tests set up data the way the newsroom would (filing signs and hashes every piece)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from extensions import db
from models import Edition, Paper, Persona, Piece, Section
from services.newsroom import filing, keys, provenance

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=timezone.utc)


class Desk:
    def __init__(self, app):
        self.app = app

    def paper(self, slug: str = "demo", *, public: bool = True, host: str | None = None,
              sections=("World", "Business", "Science"), personas=("Ada Quill", "Rex Ledger"),
              index_style: str = "levels", subscribe_path: str = "subscribers", **fields) -> Paper:
        """A paper with sections (in the given order), active personas and a signing key."""
        paper = Paper(slug=slug, host=host, nameplate=fields.pop("nameplate", f"The {slug.title()} Times"),
                      motto=fields.pop("motto", "All the news that fits"),
                      description=fields.pop("description", "A test paper."), is_public=public,
                      index_style=index_style, subscribe_path=subscribe_path,
                      config=fields.pop("config", {"timezone": "UTC"}), created_at=T0, **fields)
        db.session.add(paper)
        db.session.flush()
        for i, name in enumerate(sections):
            db.session.add(Section(paper_id=paper.id, name=name, slug=filing.slugify(name), position=i))
        for i, name in enumerate(personas):
            db.session.add(Persona(paper_id=paper.id, name=name, slug=filing.slugify(name),
                                   title="Correspondent", beat=f"beat {i}", position=i))
        provenance.create_signing_key(paper, T0)
        db.session.commit()
        return paper

    def section(self, paper: Paper, name: str) -> Section:
        return db.session.query(Section).filter_by(paper_id=paper.id, name=name).one()

    def persona(self, paper: Paper, name: str | None = None) -> Persona:
        query = db.session.query(Persona).filter_by(paper_id=paper.id)
        return query.filter_by(name=name).one() if name else query.order_by(Persona.position).first()

    def piece(self, paper: Paper, headline: str = "Rates rise again", *, section: str = "World",
              byline: str | None = None, dek: str = "The standfirst.", prose: str | None = None,
              facts: int = 2, on_air_at: datetime | None = T0, image: str | None = None) -> Piece:
        """File a piece (and put it on air at `on_air_at` unless that is None: a draft)."""
        prose = prose if prose is not None else " ".join(
            f"Sentence {n} of the story[^{n}]." for n in range(1, facts + 1)) or "No facts here."
        cited = [{"statement": f"Fact {n}", "source": "Statistics Office", "instrument": "Bulletin",
                  "claim_key": f"claim-{n}"} for n in range(1, facts + 1)]
        draft = filing.Draft(headline=headline, dek=dek, prose=prose,
                             section=self.section(paper, section),
                             persona=self.persona(paper, byline), cited_facts=cited, image=image)
        filed_at = (on_air_at or T0) - timedelta(minutes=5)
        piece = filing.file_piece(paper, draft, filer="test", now=filed_at)
        if on_air_at is not None:
            filing.put_on_air(paper, piece, on_air_at)
        db.session.commit()
        return piece

    def edition(self, paper: Paper, day, **fields) -> Edition:
        edition = Edition(paper_id=paper.id, day=day, title=fields.get("title", f"The cast, {day}"),
                          summary="The day in two minutes.",
                          video_url=f"https://cdn.example.com/{paper.slug}/{day}.mp4",
                          poster_url=f"https://cdn.example.com/{paper.slug}/{day}.jpg",
                          mime_type="video/mp4", length_bytes=12_345_678, duration_seconds=120,
                          published_at=datetime.combine(day, datetime.min.time(), timezone.utc)
                          + timedelta(hours=18))
        db.session.add(edition)
        paper.bump()
        db.session.commit()
        return edition

    def key(self, paper: Paper, kind: str = "read", **kwargs) -> str:
        """Issue a desk key; returns the plain key."""
        _, plain = keys.issue_key(paper, kind, **kwargs)
        db.session.commit()
        return plain
