"""Pictures the paper draws itself: persona avatars (SVG) and story share cards (PNG), and the
store of media files it serves from its own host under `/media/` (the demo's art, posters,
podcast artwork and captions, drawn by `services.rendering.art`).

Avatars and cards are deterministic: the same persona or piece always gives the same bytes, so
their URLs are stable and cache well. A share card's URL names everything it draws
(services.links.card_version: the piece's revision, a digest of the names around the headline
and of CARD_STYLE, which is kept there), so it is served as immutable; cards are rendered with
Pillow once per version and kept on disk under `{instance_path}/cards/`.
"""
from __future__ import annotations

import colorsys
import hashlib
import io
import os
import re
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from sqlalchemy import select
from sqlalchemy.orm import joinedload

from extensions import db
from models import Paper, Persona, Piece
from services import links
from services.reading import visibility

if TYPE_CHECKING:  # Pillow itself is imported where something is drawn (render_card)
    from PIL import ImageFont

CARD_SIZE = (1200, 630)
AVATAR_SIZE = 256


def colour_for(text: str, *, lightness: float = 0.36, saturation: float = 0.55) -> str:
    """A stable `#rrggbb` colour for `text`: its hue comes from the SHA-256 of the text; the
    default lightness keeps white lettering readable on it."""
    hue = int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16) % 360 / 360
    red, green, blue = colorsys.hls_to_rgb(hue, lightness, saturation)
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


def initials(name: str) -> str:
    """'Ada Quill' -> 'AQ', 'Rex' -> 'R', 'Jean-Luc de la Mer' -> 'JM'; '?' for a blank name."""
    words = [w for w in name.replace("-", " ").split() if w[0].isalnum()]
    if not words:
        return "?"
    letters = words[0][0] + (words[-1][0] if len(words) > 1 else "")
    return letters.upper()


# --- avatars ------------------------------------------------------------------------------

def avatar_svg(persona: Persona) -> str:
    """A square SVG portrait: the persona's initials on a colour derived from its slug, with an
    `AI` badge (every persona is a declared AI). Text is XML-escaped."""
    background = colour_for(persona.slug)
    ring = colour_for(persona.slug, lightness=0.5)
    label = f"{persona.name}, an AI persona"
    size, half = AVATAR_SIZE, AVATAR_SIZE // 2
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" role="img" aria-label={quoteattr(label)}>'
        f"<title>{escape(label)}</title>"
        f'<rect width="{size}" height="{size}" fill="{background}"/>'
        f'<circle cx="{half}" cy="{half}" r="{half - 16}" fill="none" stroke="{ring}" stroke-width="8"/>'
        f'<text x="{half}" y="{half}" dy="0.35em" text-anchor="middle" '
        "font-family=\"system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif\" "
        f'font-size="96" font-weight="600" fill="#ffffff">{escape(initials(persona.name))}</text>'
        f'<rect x="172" y="196" width="64" height="36" rx="8" fill="#ffffff"/>'
        f'<text x="204" y="214" dy="0.35em" text-anchor="middle" font-family="Helvetica, Arial, '
        f'sans-serif" font-size="22" font-weight="700" fill="{background}">AI</text>'
        "</svg>"
    )


# Bump when the PNG portrait's drawing changes: its memo in `made_once` is keyed on it.
AVATAR_STYLE = "avatar-png-v1"


def render_avatar_png(persona: Persona) -> bytes:
    """The portrait `avatar_svg` draws, as an AVATAR_SIZE square PNG (for fediverse servers,
    many of which refuse SVG for an actor's icon): the initials on the slug's colour in a ring,
    with the `AI` badge. Same persona, same bytes."""
    from PIL import Image, ImageDraw  # see render_card

    background = colour_for(persona.slug)
    ring = colour_for(persona.slug, lightness=0.5)
    size, half = AVATAR_SIZE, AVATAR_SIZE // 2
    image = Image.new("RGB", (size, size), background)
    draw = ImageDraw.Draw(image)
    # The SVG's circle: radius half - 16, an 8 px stroke on it (Pillow strokes inside the box).
    outer = half - 16 + 4
    draw.ellipse((half - outer, half - outer, half + outer, half + outer), outline=ring, width=8)
    draw.text((half, half), initials(persona.name), font=_font(96), fill="#ffffff", anchor="mm")
    draw.rounded_rectangle((172, 196, 236, 232), radius=8, fill="#ffffff")
    draw.text((204, 214), "AI", font=_font(22), fill=background, anchor="mm")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def avatar_png_file(instance_path: str, persona: Persona) -> Path:
    """The persona's PNG portrait on disk, rendered the first time it is asked for (one file
    per slug, name and AVATAR_STYLE: `made_once`) and read from there after."""
    path = made_once(instance_path, f"{AVATAR_STYLE}|{persona.slug}|{persona.name}", "png",
                     lambda: render_avatar_png(persona))
    return media_folder(instance_path) / path.removeprefix(MEDIA_PREFIX)


# --- share cards --------------------------------------------------------------------------

def find_card_piece(paper: Paper, slug: str, *, now: datetime) -> Piece | None:
    """The piece of this paper on air by `now` with this slug (section and persona loaded), or None."""
    if not slug or len(slug) > 120:
        return None
    return db.session.scalar(
        select(Piece)
        .where(Piece.paper_id == paper.id, Piece.slug == slug, visibility.on_air())
        .options(joinedload(Piece.section), joinedload(Piece.persona)),
        visibility.at(now),
    )


def card_key(paper: Paper, piece: Piece) -> str:
    """The name of a piece's card file: piece id + its content hash (32 hex) + its frame
    (services.links.card_frame): `{id}-{hash}-{frame}`. Needs `piece.section` and `persona`
    loaded."""
    digest = piece.content_hash.removeprefix("sha256:")[:32]
    return f"{piece.id}-{digest}-{links.card_frame(paper.nameplate, piece.section.name, piece.persona.name)}"


def card_path(instance_path: str, paper: Paper, piece: Piece) -> Path:
    """The card's PNG file on disk, rendered (atomically) first if it is not there yet."""
    folder = Path(instance_path) / "cards"
    path = folder / f"{card_key(paper, piece)}.png"
    if not path.exists():
        data = render_card(paper.nameplate, piece.section.name, piece.headline, piece.persona.name)
        _write_atomically(folder, path, data)
    return path


def _font(size: int) -> ImageFont.FreeTypeFont:
    from PIL import ImageFont  # see render_card

    return ImageFont.load_default(size=size)


def wrap(text: str, font, width: int) -> list[str]:
    """Greedy word wrap of `text` into lines no wider than `width` pixels; a word wider than a
    line is broken between characters."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if font.getlength(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = ""
        for char in word:
            if font.getlength(line + char) > width and line:
                lines.append(line)
                line = ""
            line += char
    if line:
        lines.append(line)
    return lines


def clip(text: str, font, width: int) -> str:
    """`text` on one line no wider than `width` pixels, ending with `…` when cut."""
    if font.getlength(text) <= width:
        return text
    while text and font.getlength(text + "…") > width:
        text = text[:-1]
    return text.rstrip() + "…"


def _fit_headline(headline: str, width: int, height: int) -> tuple[ImageFont.FreeTypeFont, list[str], int]:
    """The largest font (72 down to 40 px) at which the headline fits the box; at the smallest,
    the lines that fit, the last ending with an ellipsis."""
    for size in range(72, 39, -4):
        font, leading = _font(size), int(size * 1.2)
        lines = wrap(headline, font, width)
        if len(lines) * leading <= height:
            return font, lines, leading
    room = max(1, height // leading)
    kept = lines[:room]
    if len(lines) > room:
        kept[-1] = clip(kept[-1] + "…", font, width) if font.getlength(kept[-1] + "…") > width \
            else kept[-1] + "…"
    return font, kept, leading


def render_card(nameplate: str, section: str, headline: str, byline: str) -> bytes:
    """A 1200x630 PNG share card: nameplate, section in its colour, the headline wrapped to
    fit, and the byline marked as an AI persona. Same inputs, same bytes.

    Pillow is imported where something is drawn (here, `render_avatar_png`, `_font`, and
    services/rendering/art.py), not with the module: every web worker imports this module, few
    ever draw (a file once drawn is served from the media folder), and Pillow's modules and
    libraries are 3.5 MB of a worker's memory."""
    from PIL import Image, ImageDraw

    width, height = CARD_SIZE
    accent = colour_for(section)
    image = Image.new("RGB", CARD_SIZE, "#faf7f0")
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 24, height), fill=accent)
    margin, text_width = 80, width - 80 - 72
    draw.text((margin, 52), clip(nameplate, _font(44), text_width), font=_font(44), fill="#1a1a1a")
    draw.text((margin, 124), clip(section.upper(), _font(30), text_width), font=_font(30), fill=accent)
    font, lines, leading = _fit_headline(headline, text_width, 520 - 180)
    for i, line in enumerate(lines):
        draw.text((margin, 180 + i * leading), line, font=font, fill="#111111")
    draw.line((margin, 540, width - 72, 540), fill="#d8d2c4", width=2)
    credit = clip(f"By {byline}, an AI persona", _font(28), text_width)
    draw.text((margin, 556), credit, font=_font(28), fill="#555555")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


# --- the paper's own media files ----------------------------------------------------------

MEDIA_PREFIX = "/media/"
# A stored file's name: 32 hex digits of the SHA-256 of its bytes, then its kind.
MEDIA_NAME = re.compile(r"[0-9a-f]{32}\.(jpg|png|vtt|mp4)")
MEDIA_TYPES = {"jpg": "image/jpeg", "png": "image/png", "vtt": "text/vtt; charset=utf-8",
               "mp4": "video/mp4"}


def media_folder(instance_path: str) -> Path:
    """`{instance_path}/media`: the files served under `/media/`."""
    return Path(instance_path) / "media"


def _write_atomically(folder: Path, path: Path, data: bytes) -> None:
    """Write `data` to `path` (a file in `folder`, which is made if missing) through a temporary
    file in the same folder; OSError from the file system propagates, leaving no temporary."""
    folder.mkdir(parents=True, exist_ok=True)
    # Write then rename: a concurrent request never reads half a file.
    handle, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def store(instance_path: str, data: bytes, ext: str) -> str:
    """Keep `data` as a media file named by its content (`{sha256[:32]}.{ext}`, ext one of
    MEDIA_TYPES) and return its path on the paper's host, `/media/{name}`. Storing the same bytes
    twice writes nothing. Raises ValueError for an unknown `ext`."""
    if ext not in MEDIA_TYPES:
        raise ValueError(f"media kind must be one of {', '.join(MEDIA_TYPES)}")
    name = f"{hashlib.sha256(data).hexdigest()[:32]}.{ext}"
    folder = media_folder(instance_path)
    path = folder / name
    if not path.exists():
        _write_atomically(folder, path, data)
    return MEDIA_PREFIX + name


def made_once(instance_path: str, spec: str, ext: str, render: Callable[[], bytes]) -> str:
    """`store(render())`, remembered by `spec` (a string naming every input of `render`, its
    style version included): when `spec` was made before and its file is still there, the path
    is returned without rendering again. So seeding the demo twice, or two papers with the same
    art, draws each picture once per instance folder."""
    folder = media_folder(instance_path)
    memo = folder / "made" / hashlib.sha256(spec.encode("utf-8")).hexdigest()[:32]
    if memo.exists():
        name = memo.read_text("ascii").strip()
        if MEDIA_NAME.fullmatch(name) and (folder / name).exists():
            return MEDIA_PREFIX + name
    path = store(instance_path, render(), ext)
    _write_atomically(memo.parent, memo, path.removeprefix(MEDIA_PREFIX).encode("ascii"))
    return path


def media_file(instance_path: str, name: str) -> tuple[Path, str] | None:
    """The stored file called `name` and its Content-Type, or None when `name` is not a media
    file name or no such file was stored."""
    if not MEDIA_NAME.fullmatch(name):
        return None
    path = media_folder(instance_path) / name
    if not path.is_file():
        return None
    return path, MEDIA_TYPES[name.rsplit(".", 1)[1]]
