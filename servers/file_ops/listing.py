"""Listing: one directory, a bounded tree, glob matches."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import invalid_input

from .entries import iso, kind_of, link_target_shown
from .walking import WalkStats, check_relative_pattern, glob_regex, literal_prefix, walk


@dataclass
class Listed:
    name: str
    type: str
    size_bytes: int | None
    modified: str | None
    link_target: str | None = None
    protected: bool = False


@dataclass
class Listing:
    path: str
    entries: list[Listed]
    total_entries: int
    truncated: bool


def list_directory(
    guard: PathGuard,
    path: str,
    *,
    show_hidden: bool,
    sort_by: str,
    reverse: bool,
    limit: int,
) -> Listing:
    """The entries of one directory; symlinks are shown as links (with their target), never followed."""
    real = guard.resolve(path, purpose="list")
    if not real.is_dir():
        raise invalid_input(f"{path!r} is a file, not a directory; use get_file_info or read_file.")
    fd = guard.open_directory(real)
    try:
        items: list[Listed] = []
        with os.scandir(fd) as iterator:
            for item in iterator:
                name = item.name
                if not show_hidden and name.startswith("."):
                    continue
                try:
                    info = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = kind_of(info.st_mode)
                link = link_target_shown(guard, real / name) if kind == "symlink" else None
                items.append(
                    Listed(
                        name=name,
                        type=kind,
                        size_bytes=info.st_size if stat.S_ISREG(info.st_mode) else None,
                        modified=iso(info.st_mtime),
                        link_target=link,
                        protected=guard.is_denied_name(name),
                    )
                )
    finally:
        os.close(fd)
    if sort_by == "size":
        items.sort(key=lambda item: (item.size_bytes or 0, item.name), reverse=reverse)
    elif sort_by == "modified":
        items.sort(key=lambda item: (item.modified or "", item.name), reverse=reverse)
    elif sort_by == "type":
        order = {"directory": 0, "file": 1, "symlink": 2, "other": 3}
        items.sort(key=lambda item: (order.get(item.type, 9), item.name), reverse=reverse)
    else:
        items.sort(key=lambda item: item.name, reverse=reverse)
    total = len(items)
    return Listing(path=str(real), entries=items[:limit], total_entries=total, truncated=total > limit)


@dataclass
class TreeNode:
    path: str
    type: str
    depth: int
    size_bytes: int | None = None


@dataclass
class Tree:
    path: str
    entries: list[TreeNode]
    truncated: bool


def directory_tree(
    guard: PathGuard,
    path: str,
    *,
    max_depth: int,
    max_entries: int,
    exclude: list[str],
    show_hidden: bool,
    respect_gitignore: bool,
) -> Tree:
    real = guard.resolve(path, purpose="list")
    if not real.is_dir():
        raise invalid_input(f"{path!r} is not a directory.")
    stats = WalkStats()
    nodes: list[TreeNode] = []
    truncated = False
    for entry in walk(
        guard,
        str(real),
        max_depth=max_depth,
        include_hidden=show_hidden,
        gitignore=respect_gitignore,
        exclude=exclude,
        max_entries=max(max_entries * 20, 10_000),
        stats=stats,
    ):
        if len(nodes) >= max_entries:
            truncated = True
            break
        size = None
        kind = "symlink" if entry.is_symlink else "directory" if entry.is_dir else "file"
        if kind == "file":
            try:
                size = os.lstat(entry.path).st_size
            except OSError:
                size = None
        nodes.append(TreeNode(path=entry.rel, type=kind, depth=entry.depth, size_bytes=size))
    return Tree(path=str(real), entries=nodes, truncated=truncated or stats.truncated)


@dataclass
class GlobOutcome:
    base: str
    pattern: str
    matches: list[str]
    truncated: bool
    timed_out: bool


def glob_files(
    guard: PathGuard,
    pattern: str,
    path: str,
    *,
    respect_gitignore: bool,
    include_hidden: bool,
    include_directories: bool,
    exclude: list[str],
    max_results: int,
    max_entries: int,
    timeout_seconds: float,
) -> GlobOutcome:
    """Paths below `path` matching `pattern` (relative, posix); never follows symlinked directories."""
    real = guard.resolve(path, purpose="list")
    if not real.is_dir():
        raise invalid_input(f"{path!r} is not a directory; `path` is where the pattern is matched from.")
    cleaned = check_relative_pattern(pattern)
    regex = glob_regex(cleaned)
    prefix = literal_prefix(cleaned)
    start_rel = ""
    if prefix:
        joined = os.path.join(str(real), prefix)
        if guard.is_denied(joined) or not os.path.lexists(joined):
            return GlobOutcome(str(real), pattern, [], False, False)
        if os.path.realpath(joined) == os.path.normpath(joined) and os.path.isdir(joined):
            start_rel = os.path.normpath(prefix).replace(os.sep, "/")
    max_depth = None if "**" in cleaned or "{" in cleaned else cleaned.count("/") + 1
    if start_rel and max_depth is not None:
        max_depth -= start_rel.count("/") + 1
    stats = WalkStats()
    matches: list[str] = []
    truncated = False
    for entry in walk(
        guard,
        str(real),
        max_depth=max_depth,
        include_hidden=include_hidden or cleaned.startswith(".") or "/." in cleaned,
        gitignore=respect_gitignore,
        exclude=exclude,
        max_entries=max_entries,
        deadline=time.monotonic() + timeout_seconds,
        stats=stats,
        start_rel=start_rel,
    ):
        if entry.is_dir and not include_directories:
            continue
        if regex.match(entry.rel):
            if len(matches) >= max_results:
                truncated = True
                break
            matches.append(entry.rel)
    return GlobOutcome(
        base=str(real),
        pattern=pattern,
        matches=sorted(matches),
        truncated=truncated or stats.truncated,
        timed_out=stats.timed_out,
    )
