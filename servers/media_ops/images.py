"""Images read safely: the header is checked (format, size, pixel count) before anything is decoded, and what goes
back to the client is a downscaled PNG/JPEG preview. Pillow only; no MCP imports."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico"})
READABLE_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF", "ICO")
SVG_SUFFIXES = frozenset({".svg", ".svgz"})
# What Pillow raises for a file whose bytes are damaged or cut short, on open or while decoding (is_damage)
DECODING_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error)
SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


@dataclass(frozen=True)
class ImageInfo:
    path: str
    format: str
    width: int
    height: int
    mode: str
    size_bytes: int
    modified: float


def probe(path: Path, shown: str, max_pixels: int, max_bytes: int) -> ImageInfo:
    """Format and dimensions from the header only; refuses what is too large before any pixel is decoded."""
    from PIL import Image

    if path.suffix.lower() in SVG_SUFFIXES:
        raise ToolFailure(
            ErrorCode.INVALID_INPUT,
            f"{shown!r} is an SVG: vector images are not rasterized here (an SVG can pull external files and "
            "URLs); export it to PNG first.",
        )
    info = path.stat()
    if info.st_size > max_bytes:
        raise ToolFailure(
            ErrorCode.MAX_LIMIT_EXCEEDED,
            f"{shown!r} is {info.st_size:,} bytes; the limit is {max_bytes:,} ([sections.media_ops] max_image_bytes).",
        )
    Image.MAX_IMAGE_PIXELS = max_pixels  # Pillow's own bomb check stays on, at our limit
    with decoding(path, shown, info.st_size, max_pixels), Image.open(path, formats=READABLE_FORMATS) as image:
        width, height = image.size
        image_format, mode = image.format or "?", image.mode
    check_pixels(width, height, shown, max_pixels)
    return ImageInfo(shown, image_format, width, height, mode, info.st_size, info.st_mtime)


@contextlib.contextmanager
def decoding(path: Path, shown: str, size: int, max_pixels: int) -> Iterator[None]:
    """Pillow's errors reading the file `path` (`shown`, `size` bytes) as coded failures: not an image, a
    decompression bomb, or a damaged or truncated image (`is_damage`, or a file that begins with an image format's
    signature but that Pillow cannot identify). Errors of the file system itself go on unchanged."""
    from PIL import Image, UnidentifiedImageError

    try:
        yield
    except UnidentifiedImageError:
        signed = signature_of(path)
        if signed is not None:
            raise damaged(repr(shown), size, f"no readable {signed} header follows its signature", signed) from None
        raise ToolFailure(
            ErrorCode.INVALID_INPUT, f"{shown!r} is not an image Pillow can read ({', '.join(READABLE_FORMATS)})."
        ) from None
    except Image.DecompressionBombError as exc:
        raise ToolFailure(
            ErrorCode.MAX_LIMIT_EXCEEDED,
            f"{shown!r} was refused as a decompression bomb ({exc}); the limit is {max_pixels:,} pixels "
            "([sections.media_ops] max_image_pixels). Nothing was decoded.",
        ) from None
    except DECODING_ERRORS as exc:
        if not is_damage(exc):
            raise
        reason = (str(exc).strip() or type(exc).__name__).replace(str(path), shown)
        raise damaged(repr(shown), size, reason, signature_of(path)) from None


def signature_of(path: Path) -> str | None:
    """The image format whose signature the file begins with (PNG, JPEG, GIF, WEBP, TIFF), if any."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
    except OSError:
        return None
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "WEBP"
    return next((name for magic, name in SIGNATURES if head.startswith(magic)), None)


def is_damage(exc: BaseException) -> bool:
    """Whether Pillow raised `exc` because the bytes are damaged or cut short ("Truncated File Read", "image file is
    truncated", a broken chunk), not because the file could not be opened (an OSError with an errno)."""
    return isinstance(exc, DECODING_ERRORS) and not (isinstance(exc, OSError) and exc.errno is not None)


def damaged(what: str, size: int | None, reason: str, image_format: str | None = None) -> ToolFailure:
    """INVALID_INPUT: `what` (`size` bytes, when known; a `image_format` image, when known) cannot be decoded."""
    sized = f" ({size:,} bytes)" if size is not None else ""
    return ToolFailure(
        ErrorCode.INVALID_INPUT,
        f"{what}{sized} is a damaged or truncated {image_format or 'image'} file: Pillow could not decode it "
        f"({reason[:200]}). Give a complete copy of the file (a download or copy may have stopped early).",
    )


def check_pixels(width: int, height: int, shown: str, max_pixels: int) -> None:
    if width <= 0 or height <= 0 or width * height > max_pixels:
        raise ToolFailure(
            ErrorCode.MAX_LIMIT_EXCEEDED,
            f"{shown!r} is {width}×{height} ({width * height:,} pixels); the limit is {max_pixels:,} "
            "([sections.media_ops] max_image_pixels). Nothing was decoded.",
        )


def load_rgb(path: Path, shown: str, max_pixels: int, max_bytes: int) -> object:
    """The image decoded as RGB (a PIL image), after `probe` accepted it; Pillow's own bomb limit stays on."""
    from PIL import Image

    info = probe(path, shown, max_pixels, max_bytes)
    with decoding(path, shown, info.size_bytes, max_pixels), Image.open(path, formats=READABLE_FORMATS) as image:
        image.seek(0)
        return image.convert("RGB")


def preview(image: object, max_side: int) -> tuple[str, str]:
    """(base64 data, mime type) of the image downscaled to fit `max_side`: PNG, or JPEG when that is smaller."""
    from PIL import Image

    assert isinstance(image, Image.Image)
    copy = image.copy()
    copy.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    png = io.BytesIO()
    copy.save(png, format="PNG", optimize=True)
    data, mime = png.getvalue(), "image/png"
    if len(data) > 300_000:
        jpeg = io.BytesIO()
        copy.convert("RGB").save(jpeg, format="JPEG", quality=85)
        if len(jpeg.getvalue()) < len(data):
            data, mime = jpeg.getvalue(), "image/jpeg"
    return base64.b64encode(data).decode("ascii"), mime


def contact_sheet(images: list[object], max_side: int) -> object:
    """The images side by side in a grid (as square as it goes) on white, fitting `max_side`: one small overview."""
    import math

    from PIL import Image

    columns = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / columns)
    cell = max(16, max_side // columns)
    sheet = Image.new("RGB", (columns * cell, rows * cell), "white")
    for index, image in enumerate(images):
        assert isinstance(image, Image.Image)
        thumb = image.convert("RGB")
        thumb.thumbnail((cell, cell), Image.Resampling.LANCZOS)
        column, row = index % columns, index // columns
        sheet.paste(thumb, (column * cell + (cell - thumb.width) // 2, row * cell + (cell - thumb.height) // 2))
    return sheet


def decode_untrusted(data: bytes, what: str, max_pixels: int) -> object:
    """Image bytes from a provider, checked like a file: a real raster image, within the pixel limit."""
    from PIL import Image

    Image.MAX_IMAGE_PIXELS = max_pixels
    try:
        with Image.open(io.BytesIO(data), formats=READABLE_FORMATS) as image:
            check_pixels(image.size[0], image.size[1], what, max_pixels)
            return image.convert("RGB")
    except (*DECODING_ERRORS, Image.DecompressionBombError):  # UnidentifiedImageError is an OSError
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED, f"{what} is not a readable PNG/JPEG/WebP image; nothing was written."
        ) from None


def is_image_name(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES
