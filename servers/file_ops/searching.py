"""Content search: literal or regular expression, over a safe walk, with a time budget.

Regular expressions run on a linear-time engine where one is available (`linear.py`): with ripgrep installed
(and `search_engine = "auto"`), rg matches the lines split here, with a pattern translated to accept exactly the
lines the Python engine would, in time linear in the text whatever the pattern; lines are not cut. The Python engine
(`re`, or the `regex` package) matches instead when rg is missing or off, and for what no automaton has
(lookarounds, backreferences, atomic groups; a word boundary on non-ASCII text). Being a backtracking engine, it
keeps three guards: nested unbounded quantifiers and backreferences are refused up front (they are what makes
backtracking exponential); lines longer than `MAX_REGEX_LINE` are cut before a regex sees them; and with the `regex`
package each match runs with a timeout (it also releases the GIL). Literal search never backtracks and runs on a
byte prefilter.

In a directory, ripgrep (when installed) finds the files that can match and only those are searched here
(`ripgrep.py`): same results, a fraction of the time on large trees. Otherwise the walk (`walking.py`)
hands over every file.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input

from .linear import OutOfTime, RgLines, exact_pattern
from .reading import SNIFF_BYTES, detect_encoding
from .ripgrep import RipgrepUnavailable
from .walking import WalkStats, name_matches, walk

logger = logging.getLogger("mcp_sections.file_ops")

MAX_LINE_SHOWN = 400
MAX_REGEX_LINE = 10_000
MAX_PATTERN_LENGTH = 1000

try:
    from re import _constants as constants  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as constants  # type: ignore[no-redef]
    import sre_parse as parser  # type: ignore[no-redef]

try:  # optional: per-match timeouts and a GIL-free matcher
    import regex as _regex_module  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - depends on the environment
    _regex_module = None


@dataclass
class Match:
    path: str
    line_number: int
    line: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass
class SearchOutcome:
    base: str
    matches: list[Match]
    files_searched: int
    files_matched: int
    files_skipped: int
    truncated: bool
    timed_out: bool
    note: str | None = None


_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")  # UTF-16/32: ASCII is not a byte substring
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_small_file(guard: PathGuard, path: str, max_bytes: int) -> bytes | None:
    """The bytes of a regular file inside the roots, or None (special, too large, vanished, escaped, or hard-linked
    while hard links are not readable)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes or not guard.descriptor_inside(fd):
            return None
        if not guard.readable_links(info):  # another name of it may be a protected file or lie outside
            return None
        chunks = []
        remaining = info.st_size + 1
        while remaining > 0:
            chunk = os.read(fd, remaining)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks) if len(chunks) != 1 else chunks[0]
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def check_regex_syntax(pattern: str) -> Any:
    """Refuse a pattern that is too long or does not parse (for every engine); returns Python's parse of it."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise invalid_input(f"the pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_LENGTH}.")
    try:
        return parser.parse(pattern)
    except re.error as exc:
        raise invalid_input(f"the regular expression is not valid: {exc}.") from None


def check_regex_safety(pattern: str) -> None:
    """Refuse the constructs that make a backtracking engine exponential: needed only where the Python engine
    matches (rg's automata take linear time whatever the pattern)."""
    _refuse_backtracking(check_regex_syntax(pattern))


_REPEATS = {constants.MAX_REPEAT, constants.MIN_REPEAT} | (
    {constants.POSSESSIVE_REPEAT} if hasattr(constants, "POSSESSIVE_REPEAT") else set()
)


def _unbounded(high: int) -> bool:
    return high == constants.MAXREPEAT or high > 100


def _has_repeat_or_branch(items: Any) -> bool:
    for op, value in items:
        if op in _REPEATS:
            _, high, sub = value
            if _unbounded(high) or _has_repeat_or_branch(sub):
                return True
        elif op == constants.BRANCH:
            return True
        elif op == constants.SUBPATTERN:
            if _has_repeat_or_branch(value[-1]):
                return True
        elif op in (constants.ASSERT, constants.ASSERT_NOT) and _has_repeat_or_branch(value[1]):
            return True
    return False


def _refuse_backtracking(items: Any) -> None:
    """Backreferences, and a repetition or alternation inside an unbounded repetition, anywhere in the parse."""
    for op, value in items:
        if op in (constants.GROUPREF, constants.GROUPREF_EXISTS):
            raise invalid_input("backreferences are not supported in search patterns; use a simpler pattern.")
        if op in _REPEATS:
            _, high, sub = value
            if _unbounded(high) and _has_repeat_or_branch(sub):
                raise invalid_input(
                    "the pattern nests a repetition inside another unbounded repetition (like (a+)+ or "
                    "(a|b)*), which can take exponential time; rewrite it without the nesting."
                )
            _refuse_backtracking(sub)
        elif op == constants.SUBPATTERN:
            _refuse_backtracking(value[-1])
        elif op == constants.BRANCH:
            for branch in value[1]:
                _refuse_backtracking(branch)
        elif op in (constants.ASSERT, constants.ASSERT_NOT):
            _refuse_backtracking(value[1])


def _line_matcher(pattern: str, *, regex: bool, case_sensitive: bool, deadline: float) -> Callable[[str], bool]:
    if not regex:
        if case_sensitive:
            return lambda line: pattern in line
        folded = pattern.casefold()
        return lambda line: folded in line.casefold()
    check_regex_safety(pattern)
    flags = 0 if case_sensitive else re.IGNORECASE
    if _regex_module is not None:
        try:
            compiled = _regex_module.compile(pattern, flags | _regex_module.VERSION0)
        except _regex_module.error as exc:
            raise invalid_input(f"the regular expression is not valid: {exc}.") from None

        def search(line: str) -> bool:
            remaining = max(deadline - time.monotonic(), 0.01)
            return compiled.search(line[:MAX_REGEX_LINE], timeout=remaining, concurrent=True) is not None

        return search
    try:
        plain = re.compile(pattern, flags)
    except re.error as exc:  # pragma: no cover - check_regex_safety parsed it already
        raise invalid_input(f"the regular expression is not valid: {exc}.") from None
    return lambda line: plain.search(line[:MAX_REGEX_LINE]) is not None


class _Lines:
    """Which lines of a file match: rg (`linear.RgLines`, with `rg`) for a regular expression where it is exact,
    else the Python matcher (made when first needed: the backtracking guards refuse some patterns rg takes).
    `close()` ends rg."""

    def __init__(self, pattern: str, *, regex: bool, case_sensitive: bool, deadline: float, rg: bool) -> None:
        self.pattern, self.regex, self.case_sensitive, self.deadline = pattern, regex, case_sensitive, deadline
        self.rg: RgLines | None = None
        self._python: Callable[[str], bool] | None = None
        if rg:
            try:
                self.rg = RgLines(exact_pattern(pattern, case_sensitive=case_sensitive), deadline)
            except (RipgrepUnavailable, OutOfTime) as reason:
                logger.debug("search_files matches lines in Python: %s", reason)
        try:
            if self.rg is None or self.rg.translation.ascii_only:
                self.python()  # refuse now what the Python engine would refuse later
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.rg is not None:
            self.rg.close()

    def python(self) -> Callable[[str], bool]:
        if self._python is None:
            self._python = _line_matcher(
                self.pattern, regex=self.regex, case_sensitive=self.case_sensitive, deadline=self.deadline
            )
        return self._python

    def matching(self, text: str, lines: list[str]) -> Iterable[int]:
        """The indices of the lines of `text` (split as `lines`) that match, in order."""
        if self.rg is not None and self.rg.usable(text):
            try:
                return self.rg.matching(lines)
            except RipgrepUnavailable as reason:  # rg ended: the Python engine goes on
                logger.debug("search_files matches lines in Python: %s", reason)
                self.rg = None
        matcher = self.python()
        return (index for index, line in enumerate(lines) if matcher(line))


def _prefilter(pattern: str, *, regex: bool, case_sensitive: bool) -> Callable[[bytes], bool] | None:
    """A cheap whole-file byte test that rules files out (literal ASCII needles only)."""
    if regex or not pattern.isascii():
        return None
    needle = pattern.encode("ascii")
    if case_sensitive:
        return lambda data: needle in data
    lowered = needle.lower()
    return lambda data: lowered in data.lower()


@dataclass
class _Tally:
    """What the search loop accumulates over candidate files (from the walk or from rg)."""

    matches: list[Match] = field(default_factory=list)
    searched: int = 0
    skipped: int = 0
    matched_files: int = 0
    truncated: bool = False
    timed_out: bool = False

    def collect(
        self,
        candidates: Iterable[tuple[str, str]],
        search_one: Callable[[str, str], list[Match] | None],
        max_results: int,
        deadline: float,
    ) -> None:
        # Sequential on purpose: files come from the page cache in the common case, and the work per file
        # holds the GIL (decoding, matching), so threads only add hand-off cost on a 2-core machine.
        for file_path, rel in candidates:
            if time.monotonic() > deadline:
                self.timed_out = True
                break
            try:
                result = search_one(file_path, rel)
            except OutOfTime:
                self.timed_out = True
                break
            if result is None:
                self.skipped += 1
                continue
            self.searched += 1
            if not result:
                continue
            self.matched_files += 1
            room = max_results - len(self.matches)
            if len(result) > room:
                self.matches.extend(result[:room])
                self.truncated = True
                break
            self.matches.extend(result)


def search_files(
    guard: PathGuard,
    pattern: str,
    path: str,
    *,
    regex: bool,
    case_sensitive: bool,
    include: list[str],
    exclude: list[str],
    context_lines: int,
    max_results: int,
    respect_gitignore: bool,
    include_hidden: bool,
    max_file_bytes: int,
    max_entries: int,
    timeout_seconds: float,
    engine: Literal["auto", "python"] = "python",
) -> SearchOutcome:
    """Search file contents. `engine="auto"` (the tool's default, the `search_engine` setting) lets ripgrep pick
    the files to search in a directory when it can do so exactly (`ripgrep.py`), and match a regular expression's
    lines in linear time (`linear.py`): the result is the same as with `engine="python"`, the walk and the Python
    engine alone, except that lines over `MAX_REGEX_LINE` are not cut, and a pattern the backtracking guards
    refuse, or one that would run out of time in Python, is answered."""
    if pattern == "":
        raise invalid_input("the search pattern is empty.")
    if "\x00" in pattern:
        raise invalid_input("the search pattern contains a NUL byte.")
    started = time.monotonic()
    deadline = started + timeout_seconds
    real = guard.resolve(path, purpose="read")
    if regex:
        check_regex_syntax(pattern)
    rg = regex and engine == "auto"
    search = _Search(
        guard,
        pattern,
        real,
        regex=regex,
        case_sensitive=case_sensitive,
        include=include,
        exclude=exclude,
        context_lines=context_lines,
        max_results=max_results,
        respect_gitignore=respect_gitignore,
        include_hidden=include_hidden,
        max_file_bytes=max_file_bytes,
        max_entries=max_entries,
        deadline=deadline,
        lines=_Lines(pattern, regex=regex, case_sensitive=case_sensitive, deadline=deadline, rg=rg),
    )
    try:
        tally = (search.with_ripgrep() if engine == "auto" and real.is_dir() else None) or search.with_walk()
    except TimeoutError:
        raise ToolFailure(
            ErrorCode.TIMEOUT,
            f"the regular expression took longer than the {timeout_seconds:g}s search budget; simplify it "
            "(avoid nested or overlapping repetitions) or search a smaller directory.",
        ) from None
    finally:
        search.lines.close()
    return SearchOutcome(
        base=search.base,
        matches=tally.matches,
        files_searched=tally.searched,
        files_matched=tally.matched_files,
        files_skipped=tally.skipped,
        truncated=tally.truncated,
        timed_out=tally.timed_out,
        note=None if regex or tally.matches or tally.timed_out else regex_note(pattern),
    )


# What a literal pattern that found nothing shows when it was meant as a regular expression: an escaped
# metacharacter or class (`\(`, `\d`), a repeated dot (`.*`), an anchor at its end (`^…`, `…$`), or an alternation
# between words (`a|b`; not a shell pipe or a table's ` | `).
_REGEX_SIGNS = re.compile(r"\\[][(){}.*+?|^$dDwWsSbB]|\.[*+?]|^\^|\$$|(?<=[\w)])\|(?=[\w(])")


def regex_note(pattern: str) -> str | None:
    """What a literal search for `pattern` that found nothing says when `pattern` looks like a regular expression
    (and is one Python reads); None otherwise."""
    sign = _REGEX_SIGNS.search(pattern)
    if sign is None:
        return None
    try:
        re.compile(pattern)
    except re.error:
        return None
    return (
        f"no match for the literal text `{pattern}`; it looks like a regular expression (`{sign.group()}` in it): "
        "pass regex=true to search it as one."
    )


@dataclass
class _Search:
    """One search_files call: its pattern and options, and how it searches a file, a tree by walking it, or the
    files ripgrep lists."""

    guard: PathGuard
    pattern: str
    real: Path
    regex: bool
    case_sensitive: bool
    include: list[str]
    exclude: list[str]
    context_lines: int
    max_results: int
    respect_gitignore: bool
    include_hidden: bool
    max_file_bytes: int
    max_entries: int
    deadline: float
    lines: _Lines

    def __post_init__(self) -> None:
        self.prefilter = _prefilter(self.pattern, regex=self.regex, case_sensitive=self.case_sensitive)
        self.base = str(self.real) if self.real.is_dir() else str(self.real.parent)

    def one(self, file_path: str, rel: str) -> list[Match] | None:
        """The matches in one file (at most one over `max_results`), or None for a file skipped."""
        data = read_small_file(self.guard, file_path, self.max_file_bytes)
        if data is None:
            return None
        if self.prefilter is not None and not data.startswith(_WIDE_BOMS) and not self.prefilter(data):
            return []  # the common case: a fast byte scan rules the file out before any decoding
        encoding = detect_encoding(data[:SNIFF_BYTES], complete=len(data) <= SNIFF_BYTES)
        if encoding is None:
            return None
        text = data.decode(encoding, errors="replace")
        lines = text.splitlines()
        found: list[Match] = []
        context = self.context_lines
        for index in self.lines.matching(text, lines):
            found.append(
                Match(
                    path=rel,
                    line_number=index + 1,
                    line=lines[index][:MAX_LINE_SHOWN],
                    before=[text[:MAX_LINE_SHOWN] for text in lines[max(index - context, 0) : index]],
                    after=[text[:MAX_LINE_SHOWN] for text in lines[index + 1 : index + 1 + context]],
                )
            )
            if len(found) > self.max_results:
                break
        return found

    def with_ripgrep(self) -> _Tally | None:
        """The files rg lists as able to match, searched here; None where rg cannot list them exactly."""
        from . import ripgrep

        tally = _Tally()
        try:
            with ripgrep.Candidates(
                self.guard,
                self.base,
                self.pattern,
                regex=self.regex,
                case_sensitive=self.case_sensitive,
                include=self.include,
                exclude=self.exclude,
                gitignore=self.respect_gitignore,
                include_hidden=self.include_hidden,
                max_file_bytes=self.max_file_bytes,
                max_results=self.max_results,
                deadline=self.deadline,
            ) as candidates:
                tally.collect(candidates, self.one, self.max_results, self.deadline)
                tally.timed_out = tally.timed_out or candidates.timed_out
                listed = candidates.finish(complete=not (tally.truncated or tally.timed_out))
                if listed is not None:  # rg searched the files it listed; those the tally skipped count as skipped
                    tally.searched = max(listed - tally.skipped, tally.searched)
        except ripgrep.RipgrepUnavailable as reason:
            logger.debug("search_files without ripgrep: %s", reason)
            return None
        return tally

    def with_walk(self) -> _Tally:
        """Every file the walk hands over (or the one file searched)."""
        stats = WalkStats()
        real = self.real
        if real.is_dir():
            candidates: Iterable[tuple[str, str]] = (
                (entry.path, entry.rel)
                for entry in walk(
                    self.guard,
                    str(real),
                    include_hidden=self.include_hidden,
                    gitignore=self.respect_gitignore,
                    exclude=self.exclude,
                    max_entries=self.max_entries,
                    deadline=self.deadline,
                    stats=stats,
                )
                if not (entry.is_dir or entry.is_symlink)
                and not (self.include and not name_matches(entry.name, entry.rel, self.include))
            )
        else:
            candidates = [(str(real), real.name)]
        tally = _Tally()
        tally.collect(candidates, self.one, self.max_results, self.deadline)
        tally.truncated = tally.truncated or stats.truncated
        tally.timed_out = tally.timed_out or stats.timed_out
        return tally
