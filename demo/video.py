"""The demo editions' videos, made at seed time: a real H.264 MP4 that any browser and podcast
app plays, drawn here from the edition's poster, the section art and its caption lines.

One still frame per caption cue (the cue's section art, darkened, with the cue's words and the
paper's name), each held for the cue's length, so the captions (`services.rendering.art.
captions_vtt`, the same lines and timing) run in step with the picture. Encoded by the ffmpeg
binary that the `imageio-ffmpeg` wheel ships (pinned in requirements.lock), so no system ffmpeg
or network is needed. At one frame a second of 640x360 stills an edition of about 30 cues is two
minutes of video, a few hundred kilobytes, made in about a second.
"""
from __future__ import annotations

import io
import os
import tempfile
import textwrap
from collections.abc import Callable, Sequence

from PIL import Image, ImageDraw, ImageEnhance, ImageFont

from services.rendering import art
from services.rendering.media import made_once, media_folder

SIZE = (640, 360)  # 16:9, the poster's shape at half its size (even sides: yuv420p needs them)
FPS = 1
# Bumped when the frames or the encoding change, so `made_once` makes the videos again.
STYLE = "video-1"


def _fit(picture: bytes) -> Image.Image:
    """`picture` (JPEG or PNG bytes) scaled and cropped to SIZE, in RGB."""
    with Image.open(io.BytesIO(picture)) as opened:
        image = opened.convert("RGB")
    scale = max(SIZE[0] / image.width, SIZE[1] / image.height)
    image = image.resize((round(image.width * scale), round(image.height * scale)))
    left, top = (image.width - SIZE[0]) // 2, (image.height - SIZE[1]) // 2
    return image.crop((left, top, left + SIZE[0], top + SIZE[1]))


def _backdrop(background: bytes) -> Image.Image:
    """`background` fitted to SIZE and darkened: what every frame over it starts from."""
    return ImageEnhance.Brightness(_fit(background)).enhance(0.55)


def _fonts() -> tuple[ImageFont.FreeTypeFont, ImageFont.FreeTypeFont]:
    """The nameplate's font and the caption's."""
    return ImageFont.load_default(size=22), ImageFont.load_default(size=26)


def _caption(backdrop: Image.Image, words: str, nameplate: str, fonts) -> bytes:
    """A frame drawn on a copy of `backdrop` (left as it is): see `frame`."""
    image = backdrop.copy()
    draw = ImageDraw.Draw(image)
    top_font, font = fonts
    draw.text((24, 18), nameplate, font=top_font, fill="#f2c14e")
    lines = textwrap.wrap(words, width=44)[:3]
    band_top = SIZE[1] - 36 - 34 * len(lines)
    draw.rectangle((0, band_top - 12, SIZE[0], SIZE[1]), fill="#14161a")
    for n, line in enumerate(lines):
        draw.text((24, band_top + 34 * n), line, font=font, fill="#ffffff")
    return image.tobytes()


def frame(background: bytes, words: str, nameplate: str) -> bytes:
    """One frame as raw RGB bytes (SIZE): `background` darkened, `nameplate` at the top, and
    `words` (a caption cue) in a band across the lower third."""
    return _caption(_backdrop(background), words, nameplate, _fonts())


def render_video(cues: Sequence[tuple[bytes, str]], nameplate: str, *, seconds_per_cue: int) -> bytes:
    """An MP4 (H.264, yuv420p, no audio, `faststart` so playback starts before the download
    ends) showing each of `cues` ((background picture bytes, words)) for `seconds_per_cue`
    seconds, in order. Raises RuntimeError when the bundled ffmpeg fails."""
    import imageio_ffmpeg  # imported here: only seeding needs it

    handle, path = tempfile.mkstemp(suffix=".mp4")
    os.close(handle)
    try:
        writer = imageio_ffmpeg.write_frames(
            path, SIZE, fps=FPS, codec="libx264", pix_fmt_in="rgb24", pix_fmt_out="yuv420p",
            macro_block_size=8, ffmpeg_log_level="error",
            output_params=["-preset", "veryfast", "-tune", "stillimage", "-movflags", "+faststart"])
        writer.send(None)  # start the encoder
        # An edition of 100,000 pieces reads out some 550 cues over 7 pictures (6 sections'
        # art and the poster): each picture is decoded, scaled and darkened once, not per cue
        # (the frames are the same bytes as `frame` draws).
        backdrops: dict[bytes, Image.Image] = {}
        fonts = _fonts()
        for background, words in cues:
            if background not in backdrops:
                backdrops[background] = _backdrop(background)
            still = _caption(backdrops[background], words, nameplate, fonts)
            for _ in range(seconds_per_cue * FPS):
                writer.send(still)
        writer.close()
        with open(path, "rb") as made:
            return made.read()
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"the demo video could not be encoded: {exc}") from exc
    finally:
        os.unlink(path)


def edition_video(instance_path: str, nameplate: str, poster: Callable[[], bytes], lines: Sequence[str],
                  sections: Sequence[str], *, seconds_per_cue: int) -> tuple[str, int, int]:
    """An edition's video stored once per instance folder (`made_once`: drawn and encoded only
    the first time): each caption line over the art of the section it reads out (a line
    `In <section>: ...` starts that section; the greeting and the sign-off are over the poster,
    `poster()` its JPEG bytes). Returns (`/media/{hash}.mp4`, its size in bytes, its duration in
    seconds)."""

    def render() -> bytes:
        cues, background, drawn, still = [], None, {}, poster()
        for line in lines:
            section = next((name for name in sections if line.startswith(f"In {name}:")), None)
            if section is not None:
                if section not in drawn:
                    drawn[section] = art.render_art(section, f"cast|{section}")
                background = drawn[section]
            elif background is None or line.startswith(("Every piece", "That was")):
                background = still
            cues.append((background, line))
        return render_video(cues, nameplate, seconds_per_cue=seconds_per_cue)

    spec = f"{STYLE}|{nameplate}|{seconds_per_cue}|{'/'.join(sections)}|" + "\n".join(lines)
    path = made_once(instance_path, spec, "mp4", render)
    size = (media_folder(instance_path) / path.rsplit("/", 1)[1]).stat().st_size
    return path, size, len(lines) * seconds_per_cue
