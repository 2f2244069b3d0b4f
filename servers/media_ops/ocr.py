"""Text read from images locally with RapidOCR (PP-OCR models shipped inside the `rapidocr` wheel, run by
onnxruntime on the CPU). One engine per process, built on first use; nothing is downloaded at run time."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

_lock = threading.Lock()
_engine: Any = None

# Text detection sees the image scaled down to 1280 px on its longer side, never scaled up. RapidOCR's packaged
# setting scales the shorter side up to 736 px: a 600×120 banner becomes 3680×736 and takes 2.3 s instead of 0.2 s.
# `python -m benchmarks.ocr_eval` compares both on clean and on scan-like images: the same lines read, in less than
# half the time (1280 keeps the small print of scans that 960 loses).
DETECTION = {"Det.limit_type": "max", "Det.limit_side_len": 1280}


@dataclass(frozen=True)
class TextLine:
    text: str
    confidence: float
    box: list[list[float]]  # four corners, clockwise from top-left, in pixels


def engine() -> Any:
    """The RapidOCR engine (its packaged models, `DETECTION`'s scaling), built once."""
    global _engine
    with _lock:
        if _engine is None:
            import logging

            from rapidocr import RapidOCR

            quiet = logging.getLogger("RapidOCR")  # its modules reset INFO (on stderr) when imported
            quiet.setLevel(logging.WARNING)
            _engine = RapidOCR(params=DETECTION)
            quiet.setLevel(logging.WARNING)
        return _engine


def read_text(image: Any) -> list[TextLine]:
    """The lines of text in a PIL RGB image, top to bottom."""
    import numpy as np

    result = engine()(np.asarray(image))
    if result is None or result.txts is None:
        return []
    lines = [
        TextLine(str(text), round(float(score), 4), [[round(float(x), 1), round(float(y), 1)] for x, y in box])
        for text, score, box in zip(result.txts, result.scores, result.boxes, strict=False)
    ]
    return sorted(lines, key=lambda line: (round(line.box[0][1] / 10), line.box[0][0]))
