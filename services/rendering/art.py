"""Pictures the demo paper draws for itself with Pillow: editorial art for pieces, edition
posters, square podcast artwork, and WebVTT captions for editions.

Everything here is a pure function of its arguments (a `seed` string drives every random
choice), so the same inputs give the same bytes and `media.made_once` can keep one file per
input. The art is abstract and geometric, never clip art, with a look of its own per section:

| section  | look                                                     |
|----------|----------------------------------------------------------|
| World    | meridians: arcs of a globe seen off-centre, route dots   |
| Politics | a hemicycle of seats split into blocs                    |
| Business | rising bars under a trend line                           |
| Science  | a lattice of dots with orbits                            |
| Culture  | Bauhaus shapes overlapping, a large letterform           |
| Sport    | diagonal speed stripes and a ball-sized disc             |

Any other section name picks one of these looks from its hash, on its own colours.
"""
from __future__ import annotations

import hashlib
import io
import math
import random
from collections.abc import Callable, Sequence
from datetime import date
from typing import TYPE_CHECKING

from services.rendering.media import colour_for, made_once, store, wrap

if TYPE_CHECKING:  # Pillow itself is imported where something is drawn (media.render_card)
    from PIL import Image, ImageDraw

# Bump when any drawing changes: the memo in `media.made_once` is keyed on it.
STYLE = "art-v1"
ART_SIZE = (1200, 630)        # a piece's art: the share-card shape every template reserves
POSTER_SIZE = (1280, 720)     # an edition's poster: 16:9, the player's shape
ARTWORK_SIZE = 3000           # podcast artwork: square, Apple's recommended 3000x3000
SUPERSAMPLE = 1               # drawn at size: twice the size and scaled down looked no better at 4x the time

# (background, ink, accent, second accent) per demo section.
PALETTES = {
    "World": ("#0f3d5c", "#e8f1f5", "#4fa3c7", "#f2c14e"),
    "Politics": ("#5c1a1b", "#f6ece3", "#c8553d", "#f0b67f"),
    "Business": ("#113c2f", "#eef5ee", "#3f9b6b", "#d9c26a"),
    "Science": ("#1d1b4b", "#eceaff", "#6c63ff", "#3ddbd9"),
    "Culture": ("#4a1942", "#fbeff7", "#e05d9e", "#f7b32b"),
    "Sport": ("#1f2a36", "#f3f6f8", "#ff6b35", "#00a6a6"),
}


def palette(section: str) -> tuple[str, str, str, str]:
    """The section's four colours (background, ink, accent, second accent); a section without
    a palette of its own gets colours derived from its name."""
    if section in PALETTES:
        return PALETTES[section]
    return (colour_for(section, lightness=0.2), "#f4f4f4", colour_for(section, lightness=0.55),
            colour_for(section + "/2", lightness=0.6))


def _meridians(draw: ImageDraw.ImageDraw, size, colours, rng: random.Random) -> None:
    width, height = size
    _, ink, accent, second = colours
    cx, cy = rng.uniform(0.55, 0.8) * width, rng.uniform(0.3, 0.7) * height
    radius = rng.uniform(0.55, 0.75) * height
    line = max(2, width // 400)
    draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), outline=ink, width=line * 2)
    for k in range(1, 6):
        squeeze = radius * k / 6
        draw.ellipse((cx - squeeze, cy - radius, cx + squeeze, cy + radius), outline=accent, width=line)
    for k in range(-4, 5):
        y = cy + radius * k / 5
        half = (radius ** 2 - (y - cy) ** 2) ** 0.5
        draw.line((cx - half, y, cx + half, y), fill=accent, width=line)
    points = [(rng.uniform(0.05, 0.95) * width, rng.uniform(0.1, 0.9) * height) for _ in range(5)]
    draw.line(points, fill=second, width=line * 2, joint="curve")
    for x, y in points:
        r = line * 5
        draw.ellipse((x - r, y - r, x + r, y + r), fill=second)


def _hemicycle(draw, size, colours, rng: random.Random) -> None:
    width, height = size
    _, ink, accent, second = colours
    cx, cy = width / 2, height * 0.9
    rows, seats = 7, []
    for row in range(rows):
        r = height * (0.32 + 0.08 * row)
        count = 14 + 5 * row
        for k in range(count):
            angle = math.pi * k / (count - 1)
            seats.append((angle, cx - r * math.cos(angle), cy - r * math.sin(angle)))
    seats.sort()
    split = rng.uniform(0.35, 0.65)
    dot = height / 70
    for n, (_, x, y) in enumerate(seats):
        share = n / len(seats)
        fill = accent if share < split else (second if share < split + 0.12 else ink)
        draw.ellipse((x - dot, y - dot, x + dot, y + dot), fill=fill)
    draw.rectangle((0, height * 0.93, width, height), fill=accent)


def _bars(draw, size, colours, rng: random.Random) -> None:
    width, height = size
    _, ink, accent, second = colours
    count = rng.randint(9, 14)
    gap = width / (count * 4 + 1)
    bar = gap * 3
    level = rng.uniform(0.25, 0.4)
    tops = []
    for k in range(count):
        level = min(0.85, max(0.15, level + rng.uniform(-0.08, 0.12)))
        x = gap + k * (bar + gap)
        top = height * (1 - level)
        draw.rectangle((x, top, x + bar, height), fill=accent if k % 3 else second)
        tops.append((x + bar / 2, top - height * 0.05))
    draw.line(tops, fill=ink, width=max(3, width // 300), joint="curve")
    for k in range(1, 5):
        y = height * k / 5
        draw.line((0, y, width, y), fill=ink, width=1)


def _lattice(draw, size, colours, rng: random.Random) -> None:
    width, height = size
    _, ink, accent, second = colours
    step = width / rng.randint(18, 26)
    cx, cy = rng.uniform(0.3, 0.7) * width, rng.uniform(0.3, 0.7) * height
    y = step / 2
    while y < height:
        x = step / 2
        while x < width:
            near = 1 - min(1.0, ((x - cx) ** 2 + (y - cy) ** 2) ** 0.5 / width)
            r = step * 0.08 + step * 0.3 * near ** 3
            draw.ellipse((x - r, y - r, x + r, y + r), fill=accent if near > 0.7 else ink)
            x += step
        y += step
    line = max(2, width // 400)
    for k in range(1, 4):
        rx, ry = width * 0.12 * k, height * 0.07 * k
        draw.ellipse((cx - rx, cy - ry, cx + rx, cy + ry), outline=second, width=line)


def _bauhaus(draw, size, colours, rng: random.Random) -> None:
    width, height = size
    _, ink, accent, second = colours
    for _ in range(rng.randint(4, 7)):
        kind = rng.choice(("circle", "triangle", "block"))
        fill = rng.choice((accent, second, ink))
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        s = rng.uniform(0.15, 0.45) * height
        if kind == "circle":
            draw.ellipse((x - s, y - s, x + s, y + s), fill=fill)
        elif kind == "triangle":
            draw.polygon([(x, y - s), (x + s, y + s), (x - s, y + s)], fill=fill)
        else:
            draw.rectangle((x - s, y - s / 3, x + s, y + s / 3), fill=fill)
    letter = rng.choice("ACEGMORSW")
    from PIL import ImageFont  # Pillow when something is drawn (media.py says why)

    font = ImageFont.load_default(size=int(height * 0.9))
    draw.text((width * 0.62, height * 0.5), letter, font=font, fill=ink, anchor="mm")


def _stripes(draw, size, colours, rng: random.Random) -> None:
    width, height = size
    _, ink, accent, second = colours
    slope = rng.uniform(0.35, 0.7) * height
    for _ in range(rng.randint(7, 11)):
        x = rng.uniform(-0.2, 1.0) * width
        thick = rng.uniform(0.01, 0.06) * width
        fill = rng.choice((accent, accent, second, ink))
        draw.polygon([(x, height), (x + thick, height), (x + thick + slope, 0), (x + slope, 0)],
                     fill=fill)
    r = height * rng.uniform(0.12, 0.18)
    cx, cy = rng.uniform(0.6, 0.85) * width, rng.uniform(0.3, 0.6) * height
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=ink)
    draw.arc((cx - r * 0.7, cy - r * 0.7, cx + r * 0.7, cy + r * 0.7), 200, 340, fill=accent,
             width=max(3, width // 200))


LOOKS: dict[str, Callable] = {
    "World": _meridians, "Politics": _hemicycle, "Business": _bars,
    "Science": _lattice, "Culture": _bauhaus, "Sport": _stripes,
}


def look(section: str) -> Callable:
    """The drawing function for `section` (a demo section's own, else one chosen by hash)."""
    if section in LOOKS:
        return LOOKS[section]
    ordered = list(LOOKS.values())
    return ordered[int(hashlib.sha256(section.encode()).hexdigest()[:8], 16) % len(ordered)]


def _jpeg(image: Image.Image, quality: int = 86) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality)
    return out.getvalue()


def render_art(section: str, seed: str) -> bytes:
    """A piece's editorial art: a 1200x630 JPEG in the section's look and colours; `seed`
    (any string, e.g. the piece's slug) varies the composition. Same inputs, same bytes."""
    from PIL import Image, ImageDraw  # Pillow when something is drawn (media.py says why)

    rng = random.Random(f"{STYLE}|{section}|{seed}")
    colours = palette(section)
    big = (ART_SIZE[0] * SUPERSAMPLE, ART_SIZE[1] * SUPERSAMPLE)
    image = Image.new("RGB", big, colours[0])
    look(section)(ImageDraw.Draw(image), big, colours, rng)
    return _jpeg(image.resize(ART_SIZE, Image.Resampling.LANCZOS))


def _bands(draw, box, sections: Sequence[str]) -> None:
    # One band per section, in its accent colour: the day's (or paper's) sections at a glance.
    left, top, right, bottom = box
    names = list(sections) or ["News"]
    step = (right - left) / len(names)
    for k, name in enumerate(names):
        draw.rectangle((left + k * step, top, left + (k + 1) * step, bottom), fill=palette(name)[2])


def render_poster(nameplate: str, day: date, sections: Sequence[str]) -> bytes:
    """An edition's 1280x720 (16:9) JPEG poster: the nameplate, "The cast" and the day in words,
    over bands in the colours of `sections`."""
    from PIL import Image, ImageDraw, ImageFont  # Pillow when something is drawn (media.py says why)

    width, height = POSTER_SIZE
    image = Image.new("RGB", POSTER_SIZE, "#14161a")
    draw = ImageDraw.Draw(image)
    _bands(draw, (0, height - 36, width, height), sections)
    small, big = ImageFont.load_default(size=40), ImageFont.load_default(size=96)
    draw.text((80, 80), nameplate, font=small, fill="#c9ccd1")
    draw.text((80, 150), "The cast", font=ImageFont.load_default(size=56), fill="#f2c14e")
    draw.text((80, 300), f"{day.day} {day:%B}", font=big, fill="#ffffff")
    draw.text((80, 420), f"{day:%A}, {day.year}", font=small, fill="#c9ccd1")
    r = 70
    cx, cy = width - 200, 330
    draw.ellipse((cx - r, cy - r, cx + r, cy + r), outline="#ffffff", width=6)
    draw.polygon([(cx - 22, cy - 36), (cx - 22, cy + 36), (cx + 38, cy)], fill="#ffffff")
    return _jpeg(image)


def render_artwork(nameplate: str) -> bytes:
    """The podcast's square artwork: a 3000x3000 RGB JPEG (Apple: 1400 to 3000 px square, JPEG
    or PNG, RGB) with the nameplate large and legible at thumbnail size, "The cast", and bands
    in the desk's section colours."""
    from PIL import Image, ImageDraw, ImageFont  # Pillow when something is drawn (media.py says why)

    size = ARTWORK_SIZE
    image = Image.new("RGB", (size, size), "#14161a")
    draw = ImageDraw.Draw(image)
    _bands(draw, (0, size - 360, size, size), list(PALETTES))
    font = ImageFont.load_default(size=300)
    lines = wrap(nameplate, font, size - 400)[:4]
    y = 420
    for line in lines:
        draw.text((200, y), line, font=font, fill="#ffffff")
        y += 360
    draw.text((200, y + 140), "The cast", font=ImageFont.load_default(size=220), fill="#f2c14e")
    return _jpeg(image, quality=88)


def _stamp(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}.{int(seconds * 1000) % 1000:03d}"


def captions_vtt(lines: Sequence[str], *, seconds_per_line: float = 4.0) -> bytes:
    """WebVTT captions (UTF-8) with one cue per line of `lines`, each `seconds_per_line` long,
    back to back from 00:00:00.000. A line's `-->` would end a cue early, so it is turned into
    an arrow; `&`, `<` and `>` are escaped (`&amp;` `&lt;` `&gt;`), as cue text requires (WebVTT
    section 4.2.2: a bare `<` starts a tag, a bare `&` a character reference)."""
    out = ["WEBVTT", ""]
    for n, line in enumerate(lines):
        start, end = n * seconds_per_line, (n + 1) * seconds_per_line
        text = " ".join(line.replace("-->", "\u2192").split())
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        out += [str(n + 1), f"{_stamp(start)} --> {_stamp(end)}", text, ""]
    return "\n".join(out).encode("utf-8")


# --- stored once, served from the paper's host ---------------------------------------------

def art_file(instance_path: str, section: str, seed: str) -> str:
    """`render_art(section, seed)` stored under the instance folder (drawn once per instance);
    returns its path on the paper's host, `/media/{hash}.jpg`."""
    return made_once(instance_path, f"{STYLE}|art|{section}|{seed}", "jpg",
                     lambda: render_art(section, seed))


def poster_file(instance_path: str, nameplate: str, day: date, sections: Sequence[str]) -> str:
    """`render_poster(...)` stored once; returns `/media/{hash}.jpg`."""
    return made_once(instance_path, f"{STYLE}|poster|{nameplate}|{day.isoformat()}|{'/'.join(sections)}",
                     "jpg", lambda: render_poster(nameplate, day, sections))


def artwork_file(instance_path: str, nameplate: str) -> str:
    """`render_artwork(nameplate)` stored once; returns `/media/{hash}.jpg` (3000x3000)."""
    return made_once(instance_path, f"{STYLE}|artwork|{nameplate}", "jpg",
                     lambda: render_artwork(nameplate))


def captions_file(instance_path: str, lines: Sequence[str], *, seconds_per_line: float = 4.0) -> str:
    """`captions_vtt(lines)` stored; returns `/media/{hash}.vtt`."""
    return store(instance_path, captions_vtt(lines, seconds_per_line=seconds_per_line), "vtt")
