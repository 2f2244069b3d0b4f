"""Walking trees safely: os.scandir, never following symlinked directories, glob and .gitignore matching."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp_sections.shared import globs
from mcp_sections.shared.errors import ErrorCode, ToolFailure, invalid_input
from mcp_sections.shared.gitignore import gitignore_lines
from mcp_sections.shared.guards.paths import PathGuard

ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn"})


# -- glob patterns ----------------------------------------------------------------------------------


MAX_GLOB_ALTERNATIVES = 256


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> globs.GlobPattern:
    """Compile a path glob: `**` spans directories, `*` and `?` stay in one component, `[...]` classes,
    `{a,b}` alternatives. Matched against posix relative paths, without catastrophic backtracking
    (`shared.globs`): a hostile include pattern or .gitignore line cannot hang the server."""
    index = 0
    length = len(pattern)
    # A stack of open brace groups; each group is a list of alternatives, each a list of items, where an item
    # is a Token or a nested group (list of alternatives).
    stack: list[list[list[Any]]] = [[[]]]
    while index < length:
        char = pattern[index]
        current = stack[-1][-1]
        if char == "*":
            if pattern.startswith("**", index):
                before_ok = index == 0 or pattern[index - 1] == "/"
                after = index + 2
                if before_ok and (after == length or pattern[after] == "/"):
                    if after == length:
                        current.append(globs.Token(globs.ANY))
                        index = after
                    else:
                        current.append(globs.Token(globs.DIRS))
                        index = after + 1
                    continue
            current.append(globs.Token(globs.STAR))
        elif char == "?":
            current.append(globs.Token("one"))
        elif char == "[":
            end = pattern.find("]", index + 2 if pattern[index + 1 : index + 2] in ("!", "]") else index + 1)
            if end < 0:
                current.append(globs.lit(char))
            else:
                body = pattern[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                body = body.replace("\\", "\\\\")
                try:
                    re.compile(f"[{body}]")
                except re.error as exc:
                    raise invalid_input(f"the glob {pattern!r} is not valid ({exc}).") from None
                current.append(globs.cls(body))
                index = end
        elif char == "{":
            stack.append([[]])
        elif char == "}" and len(stack) > 1:
            group = stack.pop()
            stack[-1][-1].append(group)
        elif char == "," and len(stack) > 1:
            stack[-1].append([])
        elif char == "\\" and index + 1 < length:
            index += 1
            current.append(globs.lit(pattern[index]))
        else:
            current.append(globs.lit(char))
        index += 1
    if len(stack) > 1:
        raise invalid_input(f"the glob {pattern!r} has an unclosed '{{'.")
    return globs.GlobPattern(_expand(stack[0], pattern), pattern)


def _expand(alternatives: list[list[Any]], pattern: str) -> list[list[globs.Token]]:
    """Brace groups multiplied out into plain token sequences (at most MAX_GLOB_ALTERNATIVES)."""
    result: list[list[globs.Token]] = []
    for items in alternatives:
        sequences: list[list[globs.Token]] = [[]]
        for item in items:
            if isinstance(item, globs.Token):
                for sequence in sequences:
                    sequence.append(item)
                continue
            options = _expand(item, pattern)
            sequences = [[*sequence, *option] for sequence in sequences for option in options]
            if len(sequences) > MAX_GLOB_ALTERNATIVES:
                raise invalid_input(
                    f"the glob {pattern[:100]!r} expands to more than {MAX_GLOB_ALTERNATIVES} alternatives; "
                    "use fewer `{a,b}` groups."
                )
        result.extend(sequences)
        if len(result) > MAX_GLOB_ALTERNATIVES:
            raise invalid_input(
                f"the glob {pattern[:100]!r} expands to more than {MAX_GLOB_ALTERNATIVES} alternatives; "
                "use fewer `{a,b}` groups."
            )
    return result


def check_relative_pattern(pattern: str) -> str:
    """A glob must be relative to the search base and may not climb out of it."""
    if "\x00" in pattern:
        raise invalid_input("the pattern contains a NUL byte.")
    text = pattern.replace("\\", "/") if os.sep == "\\" else pattern
    if text.startswith("/") or (os.name == "nt" and len(text) > 1 and text[1] == ":"):
        raise invalid_input(
            f"the pattern {pattern!r} is absolute; give a pattern relative to `path` (for example '**/*.py')."
        )
    if ".." in text.split("/"):
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"the pattern {pattern!r} contains '..'; patterns match below `path` and may not climb out of it. "
            "Change `path` instead.",
        )
    while text.startswith("./"):
        text = text[2:]
    return text


def literal_prefix(pattern: str) -> str:
    """The leading directories of a pattern that hold no wildcard (where a walk may start)."""
    parts = pattern.split("/")[:-1]
    prefix = []
    for part in parts:
        if any(char in part for char in "*?[{\\"):
            break
        prefix.append(part)
    return "/".join(prefix)


def name_matches(name: str, rel: str, patterns: list[str]) -> bool:
    """Include/exclude globs: a pattern without '/' matches the name, one with '/' the relative path."""
    for pattern in patterns:
        if "/" in pattern:
            if glob_regex(pattern.removeprefix("./")).match(rel):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


# -- .gitignore ----------------------------------------------------------------------------------------


@dataclass
class _IgnoreRule:
    regex: globs.GlobPattern
    negated: bool
    directory_only: bool


@dataclass
class GitIgnore:
    """The .gitignore rules in force in one directory (its own plus its parents'), git's semantics
    for the common cases: negation, directory-only rules, anchored rules, `**`."""

    rules: list[tuple[str, _IgnoreRule]] = field(default_factory=list)

    def child(self, directory: str, rel_dir: str) -> GitIgnore:
        path = os.path.join(directory, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(1_000_000)
        except OSError:
            return self
        rules = list(self.rules)
        for line in gitignore_lines(text):
            pattern = line.pattern if line.anchored else f"**/{line.pattern}"
            try:
                regex = glob_regex(pattern)
            except ToolFailure:
                continue
            rules.append((rel_dir, _IgnoreRule(regex, line.negated, line.directory_only)))
        return GitIgnore(rules)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        result = False
        for base, rule in self.rules:
            if rule.directory_only and not is_dir:
                continue
            if base:
                if not rel.startswith(base + "/"):
                    continue
                local = rel[len(base) + 1 :]
            else:
                local = rel
            if rule.regex.match(local):
                result = not rule.negated
        return result


# -- the walk -----------------------------------------------------------------------------------------------


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


def left_out(
    guard: PathGuard, name: str, rel: str, *, include_hidden: bool, gitignore: bool, exclude: list[str]
) -> bool:
    """The walk's rules for one entry, by its name and path relative to the base (.gitignore aside)."""
    return (
        (not include_hidden and name.startswith("."))
        or (name in ALWAYS_SKIPPED and (gitignore or not include_hidden))
        or guard.is_denied_name(name)
        or bool(exclude and name_matches(name, rel, exclude))
    )


def walk(
    guard: PathGuard,
    base: str,
    *,
    max_depth: int | None = None,
    include_hidden: bool = False,
    gitignore: bool = False,
    exclude: list[str] | None = None,
    max_entries: int = 500_000,
    deadline: float | None = None,
    stats: WalkStats | None = None,
    start_rel: str = "",
) -> Iterator[Entry]:
    """Entries below `base` (a checked directory), depth-first, each directory sorted by name.

    Symlinked directories are never descended (so no loop and no escape); symlinks are yielded as
    entries, and skipped when they lead outside the roots. Entries matching a deny glob are skipped.
    """
    stats = stats if stats is not None else WalkStats()
    exclude = exclude or []
    ignore_root = GitIgnore()
    start = os.path.join(base, start_rel) if start_rel else base
    if gitignore:
        # rules of the directories between base and start apply too
        current = base
        rel_dir = ""
        ignore_root = ignore_root.child(base, "")
        for part in [p for p in start_rel.split("/") if p]:
            current = os.path.join(current, part)
            rel_dir = f"{rel_dir}/{part}" if rel_dir else part
            ignore_root = ignore_root.child(current, rel_dir)
    first = _sorted_entries(start)
    if first is None:
        return
    stack: list[tuple[str, Iterator[tuple[str, bool, bool]], str, int, GitIgnore]] = [
        (start, iter(first), start_rel, 0, ignore_root)
    ]
    while stack:
        directory, iterator, rel_dir, depth, ignore = stack[-1]
        item = next(iterator, None)
        if item is None:
            stack.pop()
            continue
        name, is_dir, is_link = item
        stats.visited += 1
        if stats.visited > max_entries:
            stats.truncated = True
            return
        if deadline is not None and stats.visited % 256 == 0 and time.monotonic() > deadline:
            stats.timed_out = True
            return
        rel = f"{rel_dir}/{name}" if rel_dir else name
        if left_out(guard, name, rel, include_hidden=include_hidden, gitignore=gitignore, exclude=exclude):
            continue
        if gitignore and ignore.ignored(rel, is_dir):
            continue
        path = os.path.join(directory, name)
        if is_link and guard.entry_escapes(path):
            stats.skipped_links += 1
            continue
        yield Entry(path, rel, name, is_dir, is_link, depth + 1)
        if is_dir and (max_depth is None or depth + 1 < max_depth):
            children = _sorted_entries(path)
            if children is not None:
                child_ignore = ignore.child(path, rel) if gitignore else ignore
                stack.append((path, iter(children), rel, depth + 1, child_ignore))


_DIRECTORY_FLAGS = (
    os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def _sorted_entries(directory: str) -> list[tuple[str, bool, bool]] | None:
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
