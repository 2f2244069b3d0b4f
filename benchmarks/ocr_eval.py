"""OCR evaluation: lines read exactly, and time, for media_ops' detection scaling against RapidOCR's packaged one.

Run: python -m benchmarks.ocr_eval

Two generated sets (seeded, so every run sees the same images):
- clean: black text on white, from a 300×60 label to an A4 page at 300 dpi, text 14–40 px high;
- scan-like: the same kind of text, smaller on large pages (12–30 px on up to 4000×3000), on a tinted background
  with noise, a slight blur and a 1° tilt.
A line counts when the engine returns it exactly. Times are the engine's own (no server), one image at a time.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import print_table

WORDS = [
    *("invoice", "total", "amount", "due", "friday", "march", "harbour", "exit", "north", "station", "platform"),
    *("ticket", "order", "number", "customer", "street", "garden", "river", "version", "release", "notes"),
    *("install", "package", "error", "warning", "meeting", "agenda", "budget", "draft"),
]
# (width, height, text height in px, lines at most)
Size = tuple[int, int, int, int]
CLEAN: tuple[Size, ...] = (
    *((300, 60, 16, 1), (400, 80, 18, 1), (600, 120, 40, 1), (800, 200, 24, 2), (1280, 720, 14, 8)),
    *((1280, 720, 18, 8), (1600, 900, 22, 10), (400, 900, 20, 12), (2480, 3508, 36, 20), (3000, 2000, 28, 15)),
)
SCAN_LIKE: tuple[Size, ...] = (
    *((1920, 1080, 12, 10), (1920, 1080, 14, 10), (3000, 2000, 20, 15), (2480, 3508, 24, 20)),
    *((2480, 3508, 28, 20), (4000, 3000, 30, 15)),
)
IMAGES_PER_SIZE = 3
PACKAGED: dict[str, Any] = {}  # RapidOCR's config.yaml: the shorter side scaled up to 736 px


@dataclass
class Sample:
    size: tuple[int, int, int]
    image: Any
    lines: list[str]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 6))]
    return " ".join([words[0].capitalize(), *words[1:], str(rng.randint(10, 9999))])


def make_samples(sizes: tuple[Size, ...], scan_like: bool, seed: int) -> list[Sample]:
    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    rng = random.Random(seed)
    background = (235, 232, 220) if scan_like else (255, 255, 255)
    samples = []
    for width, height, text_px, most in sizes:
        for index in range(IMAGES_PER_SIZE):
            image = Image.new("RGB", (width, height), background)
            draw = ImageDraw.Draw(image)
            font = ImageFont.load_default(size=text_px)
            lines: list[str] = []
            top = 10
            while len(lines) < most and top <= height - text_px - 5:
                line = _sentence(rng)
                while draw.textlength(line, font=font) > width - 30 and len(line.split()) > 2:
                    line = line.rsplit(" ", 1)[0]
                draw.text((15, top), line, fill="black", font=font)
                lines.append(line)
                top += int(text_px * 2.2)
            if scan_like:
                noise = np.random.default_rng(seed * 100 + index).normal(0, 12, (height, width, 3))
                pixels = np.clip(np.asarray(image).astype(np.int16) + noise.astype(np.int16), 0, 255)
                image = Image.fromarray(pixels.astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.6))
                image = image.rotate(1.0, fillcolor=background)
            samples.append(Sample((width, height, text_px), image, lines))
    return samples


Outcome = tuple[int, int, float, dict[tuple[int, int, int], float]]


def evaluate(params: dict[str, Any], samples: list[Sample]) -> Outcome:
    """(lines read exactly, lines, seconds, seconds per image by size) for an engine built with `params`."""
    import logging

    import numpy as np
    from rapidocr import RapidOCR

    logging.getLogger("RapidOCR").setLevel(logging.WARNING)  # after the import: rapidocr's modules reset it to INFO
    engine = RapidOCR(params=params)
    engine(np.asarray(samples[0].image))  # warm-up: sessions and first allocations
    read = total = 0
    seconds = 0.0
    by_size: dict[tuple[int, int, int], float] = {}
    for sample in samples:
        started = time.perf_counter()
        result = engine(np.asarray(sample.image))
        elapsed = time.perf_counter() - started
        found = set(result.txts or ())
        read += sum(line in found for line in sample.lines)
        total += len(sample.lines)
        seconds += elapsed
        by_size[sample.size] = by_size.get(sample.size, 0.0) + elapsed / IMAGES_PER_SIZE
    return read, total, seconds, by_size


def main() -> None:
    from mcp_sections.servers.media_ops.ocr import DETECTION

    sets = {"clean": make_samples(CLEAN, False, 1), "scan-like": make_samples(SCAN_LIKE, True, 2)}
    settings = {
        "RapidOCR packaged (shorter side up to 736)": PACKAGED,
        "media_ops (longer side down to 1280)": DETECTION,
    }
    rows = []
    detail = []
    for set_name, samples in sets.items():
        for setting_name, params in settings.items():
            read, total, seconds, by_size = evaluate(params, samples)
            rows.append((set_name, setting_name, f"{read}/{total} ({read / total:.1%})", f"{seconds:.1f} s"))
            detail += [(set_name, setting_name, f"{w}×{h}, {px} px", f"{s:.2f} s") for (w, h, px), s in by_size.items()]
    print_table(["set", "detection scaling", "lines read exactly", "time"], rows)
    print()
    print_table(["set", "detection scaling", "image, text height", "seconds per image"], detail)


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
