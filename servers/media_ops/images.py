"""Images read safely: the header is checked (format, size, pixel count) before anything is decoded, and what goes
back to the client is a downscaled PNG/JPEG preview. Pillow only; no MCP imports."""

from __future__ import annotations

import base64
import io
import os
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico"})
READABLE_FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF", "ICO")
SVG_SUFFIXES = frozenset({".svg", ".svgz"})


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
    from PIL import Image, UnidentifiedImageError

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
    try:
        with Image.open(path, formats=READABLE_FORMATS) as image:
            width, height = image.size
            image_format, mode = image.format or "?", image.mode
    except UnidentifiedImageError:
        raise ToolFailure(
            ErrorCode.INVALID_INPUT, f"{shown!r} is not an image Pillow can read ({', '.join(READABLE_FORMATS)})."
        ) from None
    except Image.DecompressionBombError as exc:
        raise ToolFailure(
            ErrorCode.MAX_LIMIT_EXCEEDED,
            f"{shown!r} was refused as a decompression bomb ({exc}); the limit is {max_pixels:,} pixels "
            "([sections.media_ops] max_image_pixels). Nothing was decoded.",
        ) from None
    check_pixels(width, height, shown, max_pixels)
    return ImageInfo(shown, image_format, width, height, mode, info.st_size, info.st_mtime)


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

    probe(path, shown, max_pixels, max_bytes)
    with Image.open(path, formats=READABLE_FORMATS) as image:
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
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = max_pixels
    try:
        with Image.open(io.BytesIO(data), formats=READABLE_FORMATS) as image:
            check_pixels(image.size[0], image.size[1], what, max_pixels)
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError):
        raise ToolFailure(
            ErrorCode.EXECUTION_FAILED, f"{what} is not a readable PNG/JPEG/WebP image; nothing was written."
        ) from None


def is_image_name(name: str) -> bool:
    return os.path.splitext(name)[1].lower() in IMAGE_SUFFIXES
