"""The line syntax of `.gitignore` files, read the same way by the file tools' walk and the brain's walk.

Each caller compiles the patterns with its own glob engine and matches them with its own rules; this
module only says what a line means.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple


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
