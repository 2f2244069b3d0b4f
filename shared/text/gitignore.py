"""`.gitignore` files: the one reader and matcher, used by the file tools' walk and the brain's walk.

Git's semantics for the cases projects use: comments, `!` negation, `dir/` rules that match directories only,
anchored rules (a `/` inside: relative to the .gitignore's directory) and unanchored ones (a name at any
depth), `*`, `?`, `[...]`, `**`; the last matching rule wins. Patterns compile to `shared.text.globs` tokens, which
match without catastrophic backtracking. A .gitignore is read only when it is a regular file (never through a
symbolic link, which could lead outside the roots), and only its first `MAX_FILE_CHARS` characters.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from mcp_sections.shared.text import globs

MAX_FILE_CHARS = 1_000_000


class GitIgnoreLine(NamedTuple):
    pattern: str  # the glob, without the `!`, an escaping `\` and the leading and trailing slashes
    negated: bool  # `!pattern`: re-includes what an earlier rule ignored
    directory_only: bool  # `pattern/`: matches directories only
    anchored: bool  # the pattern holds a `/`: relative to the .gitignore's directory, else a name at any depth


def gitignore_lines(text: str) -> Iterator[GitIgnoreLine]:
    """The rules of a .gitignore text, in order; blank lines, comments and bare slashes are skipped."""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        if line.startswith("\\"):
            line = line[1:]
        directory_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        yield GitIgnoreLine(line.lstrip("/"), negated, directory_only, "/" in line)


@dataclass(frozen=True)
class IgnoreRule:
    base: str  # directory of the .gitignore, relative to the walk root ('' for the root)
    regex: globs.GlobPattern
    negated: bool
    directory_only: bool
    anchored: bool
    prefix: str = ""  # for a .gitignore above the walk root: the path from its directory down to the root + "/"


def _glob_tokens(glob: str) -> list[globs.Token]:
    """A .gitignore glob as `shared.text.globs` tokens (git's dialect: no braces, `[!...]` negates a class)."""
    out: list[globs.Token] = []
    i = 0
    while i < len(glob):
        tokens, i = _glob_token(glob, i)
        out += tokens
    return out


def _glob_token(glob: str, i: int) -> tuple[list[globs.Token], int]:
    """The token(s) of the glob at `i` and the index after them."""
    c = glob[i]
    if glob.startswith("**/", i):
        return [globs.Token(globs.DIRS)], i + 3
    if glob.startswith("/**", i) and i + 3 == len(glob):
        return [globs.lit("/"), globs.Token(globs.ANY)], i + 3
    if glob.startswith("**", i):
        return [globs.Token(globs.ANY)], i + 2
    if c == "*":
        return [globs.Token(globs.STAR)], i + 1
    if c == "?":
        return [globs.Token("one")], i + 1
    if c == "[":
        return _class_token(glob, i)
    if c == "\\" and i + 1 < len(glob):
        return [globs.lit(glob[i + 1])], i + 2
    return [globs.lit(c)], i + 1


def _class_token(glob: str, i: int) -> tuple[list[globs.Token], int]:
    """The `[...]` class at `i` (`[!...]` negated; re.error for one the rule is skipped for); a lone `[` is literal."""
    end = glob.find("]", i + 1)
    if end == -1:
        return [globs.lit("[")], i + 1
    body = glob[i + 1 : end].replace("\\", "\\\\")
    if body.startswith("!"):
        body = "^" + body[1:]
    re.compile(f"[{body}]")  # re.error: the rule is skipped
    return [globs.cls(body)], end + 1


def parse_gitignore(text: str, base: str, prefix: str = "") -> list[IgnoreRule]:
    """The rules of one .gitignore text found in directory `base` (relative to the walk root)."""
    rules = []
    for line in gitignore_lines(text):
        try:
            regex = globs.GlobPattern([_glob_tokens(line.pattern)], line.pattern)
        except re.error:
            continue
        rules.append(IgnoreRule(base, regex, line.negated, line.directory_only, line.anchored, prefix))
    return rules


def read_gitignore(directory: str, base: str, prefix: str = "") -> list[IgnoreRule]:
    """The rules of `directory/.gitignore` (none when it is absent, unreadable or not a regular file)."""
    path = os.path.join(directory, ".gitignore")
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return []
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse_gitignore(handle.read(MAX_FILE_CHARS), base, prefix)
    except OSError:
        return []


def is_ignored(rules: Sequence[IgnoreRule], rel: str, is_dir: bool) -> bool:
    """Whether `rel` (relative to the walk root) is ignored: the last matching rule wins."""
    ignored = False
    name = rel.rsplit("/", 1)[-1]
    for rule in rules:
        if rule.directory_only and not is_dir:
            continue
        if rule.base:
            if not rel.startswith(rule.base + "/"):
                continue
            local = rel[len(rule.base) + 1 :]
        else:
            local = rule.prefix + rel
        if rule.regex.match(local if rule.anchored else name):
            ignored = not rule.negated
    return ignored


def ancestor_rules(root: str, max_levels: int = 20) -> list[IgnoreRule]:
    """Rules of the .gitignore files above `root` up to its git work tree's top (none outside a git tree)."""
    ancestors: list[str] = []
    current = os.path.abspath(root)
    for _ in range(max_levels):
        if os.path.exists(os.path.join(current, ".git")):
            break
        parent = os.path.dirname(current)
        if parent == current:
            return []
        current = parent
        ancestors.append(current)
    else:
        return []
    rules: list[IgnoreRule] = []
    for ancestor in reversed(ancestors):
        prefix = os.path.relpath(root, ancestor).replace(os.sep, "/") + "/"
        rules += read_gitignore(ancestor, "", prefix)
    return rules


def rules_down_to(root: str, start_rel: str, *, ancestors: bool = False) -> list[IgnoreRule]:
    """Rules in force at `root/start_rel` before its own .gitignore: those of `root` and of every directory
    down to the parent of `start_rel` (and, with `ancestors`, those above `root` inside its git tree)."""
    rules: list[IgnoreRule] = ancestor_rules(root) if ancestors else []
    parts = [part for part in start_rel.split("/") if part]
    for depth in range(len(parts)):
        rules += read_gitignore(os.path.join(root, *parts[:depth]), "/".join(parts[:depth]))
    return rules
