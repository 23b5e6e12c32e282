"""c2sp.org/tlog-tiles paths and sizes: tiles of height 8 (256 hashes), `tile/<L>/<N>[.p/<W>]`
and `tile/entries/<N>[.p/<W>]`, with N in 3-digit groups, all but the last prefixed `x`
(1234067 -> `x001/x234/067`). Pure functions."""
from __future__ import annotations

import re
from dataclasses import dataclass

HEIGHT = 8
WIDTH = 1 << HEIGHT  # hashes in a full tile, entries in a full bundle
# The C2SP grammar's digits are ASCII (`\d` would take any Unicode digit, so that another
# spelling, in Arabic-Indic digits say, named the same tile).
_GROUP = re.compile(r"x[0-9]{3}")
_LAST = re.compile(r"[0-9]{3}")
_LEVEL = re.compile(r"0|[1-9][0-9]?")
_PARTIAL = re.compile(r"[1-9][0-9]{0,2}")
# An index is below 2**64 (a tree's size is a uint64): at most 7 groups of 3 digits. A longer
# path names no tile, and is refused before any number is made of it.
MAX_GROUPS = 7
MAX_INDEX = 2**63 // WIDTH  # N * 256 stays a signed 64-bit integer (the database's bigint)


@dataclass(frozen=True)
class Tile:
    """A tile: `level` (None for an entry bundle), `index` N, `width` W (WIDTH when full)."""

    level: int | None
    index: int
    width: int

    @property
    def full(self) -> bool:
        return self.width == WIDTH

    def path(self) -> str:
        """The tile's path under the log's prefix, e.g. `tile/0/x001/234.p/7`."""
        head = "entries" if self.level is None else str(self.level)
        return f"tile/{head}/{encode_index(self.index)}" + ("" if self.full else f".p/{self.width}")


def encode_index(n: int) -> str:
    """N as path elements: `000`, `x001/234`, ..."""
    groups = [f"{n % 1000:03d}"]
    n //= 1000
    while n:
        groups.append(f"x{n % 1000:03d}")
        n //= 1000
    return "/".join(reversed(groups))


def parse_path(path: str) -> Tile | None:
    """The Tile a path after `tile/` names (`0/x001/234.p/7`, `entries/000`), or None for a
    path that names no tile (bad level, bad groups, a width of 0 or over 255, leading zeros,
    any digit but ASCII's, more than MAX_GROUPS groups)."""
    parts = path.split("/")
    if len(parts) < 2 or len(parts) > MAX_GROUPS + 3:
        return None
    head, rest = parts[0], parts[1:]
    width = WIDTH
    if len(rest) >= 2 and rest[-2].endswith(".p"):
        if not _PARTIAL.fullmatch(rest[-1]) or int(rest[-1]) >= WIDTH:
            return None
        width = int(rest[-1])
        rest = rest[:-2] + [rest[-2][:-2]]
    if (not rest or len(rest) > MAX_GROUPS or not _LAST.fullmatch(rest[-1])
            or not all(_GROUP.fullmatch(g) for g in rest[:-1])):
        return None
    if len(rest) > 1 and rest[0] == "x000":
        return None  # no leading zero groups: one spelling per index
    index = int("".join(g.lstrip("x") for g in rest))
    if index >= MAX_INDEX:
        return None  # its first entry would be past any tree a signed 63-bit size describes
    if head == "entries":
        return Tile(None, index, width)
    if not _LEVEL.fullmatch(head) or int(head) > 63:
        return None
    return Tile(int(head), index, width)


def tiles_for(size: int) -> list[Tile]:
    """Every tile (levels 0 and up, and the entry bundles) a tree of `size` leaves is served
    as: full ones and the rightmost partial one of each level."""
    out: list[Tile] = []
    level, count = 0, size
    while count:
        for n in range(count // WIDTH):
            out.append(Tile(level, n, WIDTH))
        if count % WIDTH:
            out.append(Tile(level, count // WIDTH, count % WIDTH))
        count //= WIDTH
        level += 1
    full, rest = divmod(size, WIDTH)
    out += [Tile(None, n, WIDTH) for n in range(full)]
    if rest:
        out.append(Tile(None, full, rest))
    return out


def covered(tile: Tile, size: int) -> bool:
    """True when every hash (or entry) of `tile` is fixed by a tree of `size` leaves."""
    level = tile.level or 0
    return (tile.index * WIDTH + tile.width) << (HEIGHT * level) <= size
