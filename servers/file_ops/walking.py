"""Walking trees safely: os.scandir, never following symlinked directories, glob and .gitignore matching."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input
from mcp_sections.shared.text import globs
from mcp_sections.shared.text.gitignore import IgnoreRule, is_ignored, read_gitignore, rules_down_to
from mcp_sections.shared.text.walking import Entry, WalkStats
from mcp_sections.shared.text.walking import walk as walk_entries

ALWAYS_SKIPPED = frozenset({".git", ".hg", ".svn"})


# -- glob patterns ----------------------------------------------------------------------------------


MAX_GLOB_ALTERNATIVES = 256


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> globs.GlobPattern:
    """Compile a path glob: `**` spans directories, `*` and `?` stay in one component, `[...]` classes,
    `{a,b}` alternatives. Matched against posix relative paths, without catastrophic backtracking
    (`shared.text.globs`): a hostile include pattern or .gitignore line cannot hang the server."""
    index = 0
    length = len(pattern)
    # A stack of open brace groups; each group is a list of alternatives, each a list of items, where an item
    # is a Token or a nested group (list of alternatives).
    stack: list[list[list[Any]]] = [[[]]]
    while index < length:
        char = pattern[index]
        current = stack[-1][-1]
        if char in "*[":
            token, index = _star(pattern, index) if char == "*" else _bracket(pattern, index)
            current.append(token)
            continue
        if char == "{":
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
            current.append(globs.Token("one") if char == "?" else globs.lit(char))
        index += 1
    if len(stack) > 1:
        raise invalid_input(f"the glob {pattern!r} has an unclosed '{{'.")
    return globs.GlobPattern(_expand(stack[0], pattern), pattern)


def _star(pattern: str, index: int) -> tuple[globs.Token, int]:
    """The token of the `*` at `index` (`**` as a whole component spans directories) and the index after it."""
    if pattern.startswith("**", index):
        after = index + 2
        if (index == 0 or pattern[index - 1] == "/") and (after == len(pattern) or pattern[after] == "/"):
            if after == len(pattern):
                return globs.Token(globs.ANY), after
            return globs.Token(globs.DIRS), after + 1
    return globs.Token(globs.STAR), index + 1


def _bracket(pattern: str, index: int) -> tuple[globs.Token, int]:
    """The class `[...]` at `index` (a `[` never closed is itself) and the index after it."""
    end = pattern.find("]", index + 2 if pattern[index + 1 : index + 2] in ("!", "]") else index + 1)
    if end < 0:
        return globs.lit("["), index + 1
    body = pattern[index + 1 : end]
    if body.startswith("!"):
        body = "^" + body[1:]
    body = body.replace("\\", "\\\\")
    try:
        re.compile(f"[{body}]")
    except re.error as exc:
        raise invalid_input(f"the glob {pattern!r} is not valid ({exc}).") from None
    return globs.cls(body), end + 1


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


@dataclass(frozen=True)
class GitIgnore:
    """The .gitignore rules in force in one directory: its parents' and its own (`shared.text.gitignore`)."""

    rules: tuple[IgnoreRule, ...] = ()

    def child(self, directory: str, rel_dir: str) -> GitIgnore:
        own = read_gitignore(directory, rel_dir)
        return GitIgnore((*self.rules, *own)) if own else self

    def ignored(self, rel: str, is_dir: bool) -> bool:
        return is_ignored(self.rules, rel, is_dir)


# -- the walk -----------------------------------------------------------------------------------------------


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
    """Entries below `base` (a checked directory), depth-first, each directory sorted by name (`shared.text.walking`).

    Symlinked directories are never descended; symlinks are yielded as entries, and skipped when they lead
    outside the roots. Entries matching a deny glob, hidden ones (unless asked), VCS directories and
    `exclude` matches are left out.
    """
    excluded = exclude or []

    def skip(name: str, rel: str, is_dir: bool) -> bool:
        return left_out(guard, name, rel, include_hidden=include_hidden, gitignore=gitignore, exclude=excluded)

    return walk_entries(
        base,
        start_rel=start_rel,
        ignore_rules=rules_down_to(base, start_rel) if gitignore else None,
        skip=skip,
        escapes=guard.entry_escapes,
        hidden=guard.private_inside_roots(),
        max_depth=max_depth,
        max_entries=max_entries,
        deadline=deadline,
        stats=stats,
    )
