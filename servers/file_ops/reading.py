"""Reading files: encoding detection, binary sniffing, images, line windows (offset/limit, head, tail)."""

from __future__ import annotations

import codecs
import io
import mimetypes
import os
import stat
from collections import deque
from dataclasses import dataclass

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, limit_exceeded

SNIFF_BYTES = 8192
TAIL_BLOCK = 64 * 1024

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

# every byte except the control characters that do not occur in text (tab, newlines, form feed, escape do)
_NOT_CONTROL = bytes(byte for byte in range(256) if not (byte < 32 and byte not in (9, 10, 12, 13, 27)))

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass
class FileRead:
    """What one read returns: either text (with its line window) or an image."""

    path: str
    size_bytes: int
    mime_type: str | None
    encoding: str | None = None
    content: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    total_lines: int | None = None
    truncated: bool = False
    image: bytes | None = None


def sniff_image(sample: bytes) -> str | None:
    for signature, mime in _IMAGE_SIGNATURES:
        if sample.startswith(signature):
            return mime
    if sample[:4] == b"RIFF" and sample[8:12] == b"WEBP":
        return "image/webp"
    return None


def detect_encoding(sample: bytes, *, complete: bool) -> str | None:
    """The text encoding of a sample, or None when it looks binary.

    BOMs decide first (UTF-32, UTF-8, UTF-16); then a NUL byte means binary; then strict UTF-8;
    then, unless control characters dominate (binary), Latin-1 (which decodes any byte).
    """
    for bom, name in _BOMS:
        if sample.startswith(bom):
            return name
    if b"\x00" in sample:
        return None
    controls = len(sample.translate(None, _NOT_CONTROL))
    if sample and controls / len(sample) > 0.3:
        return None
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=complete)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    if sample and controls / len(sample) > 0.1:
        return None
    return "latin-1"


def looks_binary(sample: bytes) -> bool:
    return detect_encoding(sample, complete=False) is None


def guess_mime(path: str, sample: bytes = b"") -> str | None:
    return sniff_image(sample) or mimetypes.guess_type(path)[0]


def read_file(
    guard: PathGuard,
    path: str,
    *,
    offset: int | None = None,
    limit: int | None = None,
    head: int | None = None,
    tail: int | None = None,
    encoding: str = "auto",
    max_bytes: int,
    max_image_bytes: int,
    images: bool = True,
) -> FileRead:
    """Read a text file (or an image) inside the roots, as a window of lines."""
    real = guard.resolve(path, purpose="read")
    if real.is_dir():
        raise invalid_input(f"{path!r} is a directory; use list_directory or directory_tree to see its entries.")
    fd = guard.open_file(real)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):  # pragma: no cover - open_file already checks
            raise ToolFailure(ErrorCode.PERMISSION_DENIED, f"{path!r} is not a regular file.")
        size = info.st_size
        sample = handle.read(SNIFF_BYTES)
        image_mime = sniff_image(sample)
        shown = str(real)
        if image_mime is not None and encoding == "auto":
            if not images:
                raise invalid_input(f"{path!r} is an image ({image_mime}); read it with read_file.")
            if size > max_image_bytes:
                raise limit_exceeded(
                    f"{path!r} is an image of {size} bytes, above the {max_image_bytes}-byte image limit; "
                    "use get_file_info for its metadata."
                )
            handle.seek(0)
            data = handle.read(size + 1)[:max_image_bytes]
            return FileRead(path=shown, size_bytes=size, mime_type=image_mime, image=data)

        complete = size <= len(sample)
        chosen = detect_encoding(sample, complete=complete) if encoding == "auto" else encoding
        if chosen is None:
            mime = guess_mime(shown, sample) or "application/octet-stream"
            raise invalid_input(
                f"{path!r} looks like a binary file ({mime}, {size} bytes); read_file returns text and images "
                "(PNG, JPEG, GIF, WebP) only. Use get_file_info for its metadata, or pass an explicit encoding "
                "to decode it anyway."
            )
        mime = mimetypes.guess_type(shown)[0] or "text/plain"
        handle.seek(0)
        if size <= max_bytes:
            data = handle.read(size + 1)[:max_bytes]  # sized by the file: no cap-sized buffer per read
            if encoding == "auto" and chosen == "utf-8":
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    chosen = "latin-1"
                    text = data.decode("latin-1")
            else:
                text = _decode(data, chosen)
            return _window_of_text(shown, size, mime, chosen, text, offset, limit, head, tail, max_bytes)
        if offset is None and limit is None and head is None and tail is None:
            raise limit_exceeded(
                f"{path!r} is {size} bytes, above the {max_bytes}-byte read limit; read part of it with "
                "`head`, `tail`, or `offset` and `limit` (line numbers)."
            )
        return _window_of_stream(shown, size, mime, chosen, handle, offset, limit, head, tail, max_bytes)


def _decode(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        raise invalid_input(f"unknown encoding {encoding!r}; use auto, utf-8, utf-16 or latin-1.") from None


def _window_of_text(
    path: str,
    size: int,
    mime: str,
    encoding: str,
    text: str,
    offset: int | None,
    limit: int | None,
    head: int | None,
    tail: int | None,
    max_chars: int,
) -> FileRead:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if tail is not None:
        start = max(total - tail, 0)
        end = total
    elif head is not None:
        start, end = 0, min(head, total)
    else:
        start = (offset or 1) - 1
        if start >= total and total > 0:
            raise invalid_input(f"offset {offset} is past the end of {path!r}, which has {total} lines.")
        end = total if limit is None else min(start + limit, total)
    chosen = lines[start:end]
    if tail is not None:
        content, truncated, count = _bounded_tail(chosen, max_chars)
        start = end - count
    else:
        content, truncated, count = _bounded_join(chosen, max_chars)
    end_line = start + count
    return FileRead(
        path=path,
        size_bytes=size,
        mime_type=mime,
        encoding=encoding,
        content=content,
        start_line=start + 1 if count else start,
        end_line=end_line,
        total_lines=total,
        truncated=truncated or (limit is None and head is None and tail is None and end_line < total),
    )


def _bounded_join(lines: list[str], max_chars: int) -> tuple[str, bool, int]:
    total = 0
    for index, line in enumerate(lines):
        total += len(line)
        if total > max_chars:
            return "".join(lines[:index]), True, index
    return "".join(lines), False, len(lines)


def _bounded_tail(lines: list[str], max_chars: int) -> tuple[str, bool, int]:
    """The longest suffix of `lines` within `max_chars`: (text, cut short, lines kept)."""
    total = 0
    for count, line in enumerate(reversed(lines)):
        total += len(line)
        if total > max_chars:
            kept = lines[len(lines) - count :] if count else []
            return "".join(kept), True, count
    return "".join(lines), False, len(lines)


def _window_of_stream(
    path: str,
    size: int,
    mime: str,
    encoding: str,
    handle: io.BufferedReader,
    offset: int | None,
    limit: int | None,
    head: int | None,
    tail: int | None,
    max_chars: int,
) -> FileRead:
    """A window of a file too large to load whole: lines are streamed, never all held."""
    if tail is not None:
        lines = _tail_lines(handle, size, encoding, tail, max_chars)
        content, truncated, _ = _bounded_tail(lines, max_chars)
        return FileRead(
            path=path,
            size_bytes=size,
            mime_type=mime,
            encoding=encoding,
            content=content,
            truncated=truncated,
            start_line=None,
            end_line=None,
            total_lines=None,
        )
    start = 0 if head is not None else (offset or 1) - 1
    wanted = head if head is not None else limit
    reader = io.TextIOWrapper(handle, encoding=encoding, errors="replace", newline="")
    collected: list[str] = []
    used = 0
    truncated = False
    line_number = 0
    for line in reader:
        line_number += 1
        if line_number <= start:
            continue
        if wanted is not None and len(collected) >= wanted:
            break
        if used + len(line) > max_chars:
            truncated = True
            break
        collected.append(line)
        used += len(line)
    reader.detach()
    if start and line_number <= start:
        raise invalid_input(f"offset {offset} is past the end of {path!r}, which has {line_number} lines.")
    return FileRead(
        path=path,
        size_bytes=size,
        mime_type=mime,
        encoding=encoding,
        content="".join(collected),
        start_line=start + 1 if collected else start,
        end_line=start + len(collected),
        total_lines=None,
        truncated=truncated,
    )


def _tail_lines(handle: io.BufferedReader, size: int, encoding: str, count: int, max_chars: int) -> list[str]:
    """The last `count` lines, read backwards in blocks (8-bit and UTF-8 files) or streamed (UTF-16/32)."""
    if encoding.replace("-", "").lower().startswith(("utf16", "utf32")):
        reader = io.TextIOWrapper(handle, encoding=encoding, errors="replace", newline="")
        window: deque[str] = deque(reader, maxlen=count)
        reader.detach()
        return list(window)
    position = size
    data = b""
    while position > 0 and data.count(b"\n") <= count and len(data) <= 4 * max_chars:
        step = min(TAIL_BLOCK, position)
        position -= step
        handle.seek(position)
        data = handle.read(step) + data
    text = data.decode("utf-8" if encoding == "utf-8-sig" else encoding, errors="replace")
    lines = text.splitlines(keepends=True)
    if position > 0 and lines:
        lines = lines[1:]  # the first line is probably cut
    return lines[-count:]
