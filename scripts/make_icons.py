"""Draw the site icons in static/img/ from the favicon's design (a serif "P" on a dark rounded
square, as static/img/favicon.svg): favicon.ico (16, 32, 48 px) for clients that ask for
/favicon.ico, apple-touch-icon.png (180 px) and icon-512.png for home screens and the web
app manifest. Run once after changing the design: `.venv/bin/python scripts/make_icons.py`;
the files are committed, so nothing draws them at request time.
"""
from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

STATIC = Path(__file__).resolve().parent.parent / "static" / "img"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Bold.ttf"
INK, PAPER = "#1a1a1a", "#fffdf8"


def draw(size: int, *, rounded: bool = True) -> Image.Image:
    """The icon at `size` x `size` pixels (RGBA). Home-screen icons are square (`rounded`
    False): the platform rounds them itself."""
    scale = 4  # drawn large and scaled down: smooth edges at 16 px
    big = size * scale
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    canvas = ImageDraw.Draw(image)
    if rounded:
        canvas.rounded_rectangle((0, 0, big - 1, big - 1), radius=big // 8, fill=INK)
    else:
        canvas.rectangle((0, 0, big, big), fill=INK)
    font = ImageFont.truetype(FONT, int(big * 0.66))
    canvas.text((big / 2, big * 0.53), "P", font=font, fill=PAPER, anchor="mm")
    return image.resize((size, size), Image.LANCZOS)


def main() -> None:
    draw(48).save(STATIC / "favicon.ico", sizes=[(16, 16), (32, 32), (48, 48)])
    draw(180, rounded=False).convert("RGB").save(STATIC / "apple-touch-icon.png", optimize=True)
    draw(512, rounded=False).convert("RGB").save(STATIC / "icon-512.png", optimize=True)


if __name__ == "__main__":
    main()
