"""Paths within a brain's projects: relative paths, the paths a caller names, bounded reads (containment is
`shared.ground.locations.is_inside`)."""

from __future__ import annotations

import os

from mcp_sections.shared.ground.errors import invalid_input


def relative(path: str, root: str) -> str:
    """`path` relative to `root`, posix ("" for the root itself)."""
    return "" if path == root else os.path.relpath(path, root).replace(os.sep, "/")


def clean_rel(file_path: str) -> str:
    """A caller's relative file path, normalised; INVALID_INPUT for an absolute, escaping or overlong one."""
    text = file_path.strip().replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or text.startswith("/") or "\x00" in text or len(text) > 300:
        raise invalid_input(
            "file_path must be a relative path such as 'src/auth.py' (no '..', not absolute, ≤ 300 characters)."
        )
    return "/".join(parts)


def read_head(path: str, limit: int) -> bytes | None:
    """At most `limit` bytes of a regular file, never through a symbolic link; None when it cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(limit + 1)[:limit]
    except OSError:
        return None
