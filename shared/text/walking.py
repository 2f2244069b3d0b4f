"""The one directory walker: file_ops' listings and searches and the brain's ingest both walk with it.

Depth-first, each directory's entries sorted by name and yielded before what lies below them; a directory is
opened with O_NOFOLLOW and symbolic links are never descended (so no loop and no escape through a link),
though they are yielded as entries for the caller to judge. `.gitignore` files are honoured when the caller
gives the rules in force at the start (`shared.text.gitignore.rules_down_to`): each directory's own file is read
on the way down. What else to leave out is the caller's `skip(name, rel, is_dir)`; `hidden` paths (the suite's
own state, `PathGuard.private_inside_roots()`) are never yielded nor entered. Bounded by an entry count and a
deadline, both reported in `WalkStats`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.text.gitignore import IgnoreRule, is_ignored, read_gitignore


@dataclass
class Entry:
    path: str  # absolute
    rel: str  # relative to the walk's base, posix
    name: str
    is_dir: bool
    is_symlink: bool
    depth: int


@dataclass
class WalkStats:
    visited: int = 0
    truncated: bool = False
    timed_out: bool = False
    skipped_links: int = 0
    skipped_ignored: int = 0


def walk(
    base: str,
    *,
    start_rel: str = "",
    ignore_rules: Sequence[IgnoreRule] | None = None,
    skip: Callable[[str, str, bool], bool] | None = None,
    escapes: Callable[[str], bool] | None = None,
    hidden: Collection[Path | str] = (),
    max_depth: int | None = None,
    max_entries: int = 500_000,
    deadline: float | None = None,
    stats: WalkStats | None = None,
) -> Iterator[Entry]:
    """Entries below `base/start_rel` (`base` a checked, real directory).

    `ignore_rules`: None walks without .gitignore; else the rules in force at the start. `skip(name, rel,
    is_dir)` leaves an entry (and what is below it) out. `escapes(path)` says whether a symbolic link leads
    outside what may be shown: such links are counted and skipped. `hidden`: absolute real paths left out.
    """
    stats = stats if stats is not None else WalkStats()
    hidden_paths = frozenset(os.fspath(path) for path in hidden)
    start = os.path.join(base, start_rel) if start_rel else base
    gitignore = ignore_rules is not None
    rules: tuple[IgnoreRule, ...] = (*(ignore_rules or ()), *(read_gitignore(start, start_rel) if gitignore else ()))
    first = sorted_entries(start)
    if first is None:
        return
    stack: list[tuple[str, Iterator[tuple[str, bool, bool]], str, int, tuple[IgnoreRule, ...]]] = [
        (start, iter(first), start_rel, 0, rules)
    ]
    while stack:
        directory, iterator, rel_dir, depth, in_force = stack[-1]
        item = next(iterator, None)
        if item is None:
            stack.pop()
            continue
        name, is_dir, is_link = item
        if _out_of_budget(stats, max_entries, deadline):
            return
        rel = f"{rel_dir}/{name}" if rel_dir else name
        path = os.path.join(directory, name)
        if _left_out(
            stats, name, rel, path, is_dir, is_link, skip, in_force if gitignore else None, hidden_paths, escapes
        ):
            continue
        yield Entry(path, rel, name, is_dir, is_link, depth + 1)
        if is_dir and (max_depth is None or depth + 1 < max_depth):
            children = sorted_entries(path)
            if children is not None:
                below = (*in_force, *read_gitignore(path, rel)) if gitignore else in_force
                stack.append((path, iter(children), rel, depth + 1, below))


def _out_of_budget(stats: WalkStats, max_entries: int, deadline: float | None) -> bool:
    """Count one more entry; True (and why, in `stats`) once the walk must stop."""
    stats.visited += 1
    if stats.visited > max_entries:
        stats.truncated = True
        return True
    if deadline is not None and stats.visited % 256 == 0 and time.monotonic() > deadline:
        stats.timed_out = True
        return True
    return False


def _left_out(
    stats: WalkStats,
    name: str,
    rel: str,
    path: str,
    is_dir: bool,
    is_link: bool,
    skip: Callable[[str, str, bool], bool] | None,
    ignore_rules: Sequence[IgnoreRule] | None,
    hidden: frozenset[str],
    escapes: Callable[[str], bool] | None,
) -> bool:
    """Whether an entry stays out of the walk: the caller's `skip`, `.gitignore`, a hidden path, an escaping link."""
    if skip is not None and skip(name, rel, is_dir):
        return True
    if ignore_rules is not None and is_ignored(ignore_rules, rel, is_dir):
        stats.skipped_ignored += 1
        return True
    if path in hidden:
        return True
    if is_link and escapes is not None and escapes(path):
        stats.skipped_links += 1
        return True
    return False


_DIRECTORY_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def sorted_entries(directory: str) -> list[tuple[str, bool, bool]] | None:
    """(name, is_dir, is_symlink) of a directory's entries, sorted; the directory itself is opened with
    O_NOFOLLOW, so a directory swapped for a symlink during the walk is not listed."""
    try:
        fd = os.open(directory, _DIRECTORY_FLAGS)
    except OSError:
        return None
    try:
        with os.scandir(fd) as iterator:
            items = [(item.name, item.is_dir(follow_symlinks=False), item.is_symlink()) for item in iterator]
    except OSError:
        return None
    finally:
        os.close(fd)
    items.sort()
    return items
