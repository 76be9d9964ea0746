"""An org's favicon, drawn from its primary colour (issue 32): a 32x32 rounded square of the
colour holding a ring of its contrasting colour (black or white, ``render.theme_variables``'
choice), as a PNG inside an ICO file (the ICO format allows PNG images since Windows Vista;
every browser reads it). Built by code, no asset; a few kilobytes at most, kept per colour."""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache

from api.helpcenter.render import contrast

SIZE = 32
SAMPLES = 4  # per axis and pixel: the edges are anti-aliased
RADIUS = 7.0  # of the square's corners
RING = (9.5, 5.5)  # outer and inner radius of the ring


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _in_square(x: float, y: float) -> bool:
    cx = min(max(x, RADIUS), SIZE - RADIUS)
    cy = min(max(y, RADIUS), SIZE - RADIUS)
    return (x - cx) ** 2 + (y - cy) ** 2 <= RADIUS**2


def _in_ring(x: float, y: float) -> bool:
    d = (x - SIZE / 2) ** 2 + (y - SIZE / 2) ** 2
    return RING[1] ** 2 <= d <= RING[0] ** 2


def pixels(primary: str) -> bytes:
    """The image as RGBA rows, each after its PNG filter byte (0: none)."""
    mark = "#ffffff" if contrast(primary, "#ffffff") >= contrast(primary, "#000000") else "#000000"
    back, front = _rgb(primary), _rgb(mark)
    rows = bytearray()
    step = 1 / SAMPLES
    for py in range(SIZE):
        rows.append(0)
        for px in range(SIZE):
            inside = ring = 0
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    x, y = px + (sx + 0.5) * step, py + (sy + 0.5) * step
                    if _in_square(x, y):
                        inside += 1
                        ring += _in_ring(x, y)
            total = SAMPLES * SAMPLES
            share = ring / inside if inside else 0.0
            rgb = [round(b + (f - b) * share) for b, f in zip(back, front, strict=True)]
            rows.extend([*rgb, round(255 * inside / total)])
    return bytes(rows)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def png(primary: str) -> bytes:
    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(pixels(primary), 9))
        + _chunk(b"IEND", b"")
    )


@lru_cache(maxsize=256)
def ico(primary: str) -> bytes:
    """The favicon of ``primary`` (``#rrggbb``, validated by the settings) as an ICO file."""
    image = png(primary)
    header = struct.pack("<HHH", 0, 1, 1)
    entry = struct.pack("<BBBBHHII", SIZE, SIZE, 0, 0, 1, 32, len(image), 6 + 16)
    return header + entry + image
