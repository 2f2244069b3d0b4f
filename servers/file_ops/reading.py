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


@dataclass(frozen=True)
class _Window:
    """Which lines a read returns: `offset` and `limit` (1-based line numbers), the first `head` or the last `tail`;
    none of them: the whole file."""

    offset: int | None
    limit: int | None
    head: int | None
    tail: int | None

    @property
    def to_the_end(self) -> bool:
        """No limit, head or tail: the lines from `offset` (or the first) to the end."""
        return self.limit is None and self.head is None and self.tail is None

    @property
    def whole(self) -> bool:
        return self.offset is None and self.to_the_end


@dataclass(frozen=True)
class _Text:
    """What a read knows of a text file before its lines: the path shown, its size, MIME type and encoding."""

    path: str
    size: int
    mime: str
    encoding: str

    def read(
        self, *, content: str, truncated: bool, start_line: int | None, end_line: int | None, total_lines: int | None
    ) -> FileRead:
        return FileRead(
            path=self.path,
            size_bytes=self.size,
            mime_type=self.mime,
            encoding=self.encoding,
            content=content,
            start_line=start_line,
            end_line=end_line,
            total_lines=total_lines,
            truncated=truncated,
        )


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
    window = _Window(offset, limit, head, tail)
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
            return _read_image(handle, path, shown, size, image_mime, images=images, max_bytes=max_image_bytes)
        chosen = detect_encoding(sample, complete=size <= len(sample)) if encoding == "auto" else encoding
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
            text, chosen = _decoded(data, chosen, detected=encoding == "auto")
            return _window_of_text(_Text(shown, size, mime, chosen), text, window, max_bytes)
        if window.whole:
            raise limit_exceeded(
                f"{path!r} is {size} bytes, above the {max_bytes}-byte read limit; read part of it with "
                "`head`, `tail`, or `offset` and `limit` (line numbers)."
            )
        return _window_of_stream(_Text(shown, size, mime, chosen), handle, window, max_bytes)


def _read_image(
    handle: io.BufferedReader, path: str, shown: str, size: int, mime: str, *, images: bool, max_bytes: int
) -> FileRead:
    """An image's bytes (at most `max_bytes`), where images are returned."""
    if not images:
        raise invalid_input(f"{path!r} is an image ({mime}); read it with read_file.")
    if size > max_bytes:
        raise limit_exceeded(
            f"{path!r} is an image of {size} bytes, above the {max_bytes}-byte image limit; "
            "use get_file_info for its metadata."
        )
    handle.seek(0)
    data = handle.read(size + 1)[:max_bytes]
    return FileRead(path=shown, size_bytes=size, mime_type=mime, image=data)


def _decoded(data: bytes, encoding: str, *, detected: bool) -> tuple[str, str]:
    """The text and its encoding: a detected UTF-8 that does not decode whole (the sample did) is Latin-1."""
    if detected and encoding == "utf-8":
        try:
            return data.decode("utf-8"), encoding
        except UnicodeDecodeError:
            return data.decode("latin-1"), "latin-1"
    return _decode(data, encoding), encoding


def _decode(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        raise invalid_input(f"unknown encoding {encoding!r}; use auto, utf-8, utf-16 or latin-1.") from None


def _window_of_text(file: _Text, text: str, window: _Window, max_chars: int) -> FileRead:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if window.tail is not None:
        start = max(total - window.tail, 0)
        end = total
    elif window.head is not None:
        start, end = 0, min(window.head, total)
    else:
        start = (window.offset or 1) - 1
        if start >= total and total > 0:
            raise invalid_input(f"offset {window.offset} is past the end of {file.path!r}, which has {total} lines.")
        end = total if window.limit is None else min(start + window.limit, total)
    chosen = lines[start:end]
    if window.tail is not None:
        content, truncated, count = _bounded_tail(chosen, max_chars)
        start = end - count
    else:
        content, truncated, count = _bounded_join(chosen, max_chars)
    end_line = start + count
    return file.read(
        content=content,
        start_line=start + 1 if count else start,
        end_line=end_line,
        total_lines=total,
        truncated=truncated or (window.to_the_end and end_line < total),
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


def _window_of_stream(file: _Text, handle: io.BufferedReader, window: _Window, max_chars: int) -> FileRead:
    """A window of a file too large to load whole: lines are streamed, never all held."""
    if window.tail is not None:
        lines = _tail_lines(handle, file.size, file.encoding, window.tail, max_chars)
        content, truncated, _ = _bounded_tail(lines, max_chars)
        return file.read(content=content, truncated=truncated, start_line=None, end_line=None, total_lines=None)
    start = 0 if window.head is not None else (window.offset or 1) - 1
    wanted = window.head if window.head is not None else window.limit
    reader = io.TextIOWrapper(handle, encoding=file.encoding, errors="replace", newline="")
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
        raise invalid_input(f"offset {window.offset} is past the end of {file.path!r}, which has {line_number} lines.")
    return file.read(
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
