"""ripgrep as the engine of `search_files` on directories: rg finds the files that can match, fast; the Python
engine (`searching.py`) then searches exactly those files, so a call returns what the Python engine alone
would return. (A regular expression's lines are matched by rg too, but on the lines split in Python: `linear.py`.)

Why rg's lines are not used as they are: they cannot be identical. Python splits lines with
`str.splitlines` (also at \\r, \\v, \\f, \\x1c-\\x1e, U+0085, U+2028/9), decodes UTF-16/32 and Latin-1
files, folds case fully for literals (`ß` matches `ss`), cuts regex lines at 10,000 characters, and its
regex dialect (`re`, or the `regex` package) differs from rg's in \\w, \\s, case folding and more. So rg
runs with a pattern that matches a *superset* of the files the Python engine can match in, and only the
files rg reports are read again in Python (few, and in the page cache). The time goes where it went before:
walking the tree and reading every file, now done by rg.

The superset pattern (`rg_pattern`): every character atom of the Python pattern becomes a class holding
exactly the ASCII characters Python's engines accept there (asked of `re` and `regex` themselves), the
non-ASCII characters it names (also as their Latin-1 byte), or any non-ASCII byte run when it may accept
non-ASCII text; anchors, word boundaries and lookarounds are dropped (that only widens). Files starting
with a UTF-16/32 byte-order mark are always candidates (`--encoding none` keeps rg on raw bytes).

The set of files, exactly the walk's (`walking.walk`): rg is given only the filters it reproduces exactly
or more loosely (hidden files, `.git`/`.hg`/`.svn`, plain name globs of `include`/`exclude` and of the deny
list, the size cap, .gitignore files below the base), and every path it reports is replayed through the
walk's rules (hidden, `.git`, deny globs, `exclude`, .gitignore, `include`) and the PathGuard (inside the
roots, no symlink on the way, not denied) before a byte of it is read: rg's output is never trusted. With
.gitignore on, a second rg lists the ignore files the search reads; one that rg and the walk could read
differently (braces, backslashes, POSIX classes, odd line breaks, not UTF-8, over 1 MB) or any `.rgignore`
(rg cannot be told to skip those alone) sends the call to the Python engine.

Order: rg first runs on all cores and the files it reports are sorted here in the walk's order (depth-first,
names as Python strings). When they are many (over 2 x `max_results` + 100: the search is going to stop at
`max_results` long before the end of the tree), rg is started again with `--sort path`, one core, and its
files stream in the walk's order, so the search stops rg early. Names that sort differently as bytes and as
Python strings (undecodable names beside non-BMP or private-use ones) then fall back: when two are reported
out of order, or when the walk finds an undecodable name before the point where the search stopped.

Not used (`RipgrepUnavailable`, the Python engine runs): the `search_engine = "python"` setting; rg not found on
`DEFAULT_SEARCH_PATH`; a single file; a case-insensitive literal with non-ASCII characters (full case
folding); regex syntax the `regex` package reads differently from `re` (fuzzy `{e<=1}`, `[[:alpha:]]`) or
that rg cannot compile; an unusable ignore file (above); rg failing; paths out of order (above).

Caveats: `files_searched` counts the files of rg's walk (another rg lists them, without looking at their
sizes, which costs a `stat` each; rg's own summary counts only files with matches), so oversized, binary
and unreadable files without a match count as searched, and files the replay would drop are counted when
`include` has patterns with '/'; when the search stops early (`max_results`, the time budget) only the
files read in Python are counted. `files_skipped` counts only candidates. `walk_max_entries` does not
bound rg (the time budget does). At the time budget rg stops a tenth of the budget early (at most 1 s) so
that what it found can still be read; such partial results differ from the Python engine's. A
`.gitignore` that is a symlink is not listed by rg (it never follows links), so it is not checked.

Safety: no shell; a fixed environment (PATH, a HOME that does not exist); `--no-config`; never `--pre`,
`-L` or `--search-zip`; the pattern after `-e` and the directory after `--`; a deadline that kills rg.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, Self

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import SuiteError
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH

from .walking import ALWAYS_SKIPPED, GitIgnore, left_out, name_matches, walk

try:
    from re import _constants as constants  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as constants  # type: ignore[no-redef]
    import sre_parse as parser  # type: ignore[no-redef]

try:  # the Python engine uses `regex` when installed: atoms are checked against both engines
    import regex as _regex_module  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - depends on the environment
    _regex_module = None

SEARCH_PATH = DEFAULT_SEARCH_PATH
"""Where rg is looked for (never the server's PATH)."""
ENVIRONMENT = {"PATH": DEFAULT_SEARCH_PATH, "HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent", "LC_ALL": "C"}
"""rg's whole environment: nothing inherited (no RIPGREP_CONFIG_PATH), a HOME that holds nothing."""
MAX_IGNORE_FILE_BYTES = 1_000_000  # the walk reads this much of a .gitignore

_ANY_HIGH = r"(?-u:[\x80-\xFF][\x80-\xBF]{0,3})"  # one non-ASCII character: UTF-8, Latin-1, or invalid bytes
_NEVER = r"(?-u:\b\B)"  # matches nothing (rg has no empty class)
_WIDE_BOM = r"(?-u:\xFF\xFE|\xFE\xFF)"  # UTF-16/32 byte-order marks: decoded by Python, not by rg here
_FOLDS = {"i": (0x130, 0x131), "k": (0x212A,), "s": (0x17F,)}
"""The non-ASCII characters `re`/`regex` match for an ASCII letter under IGNORECASE (checked by a test)."""
_CATEGORIES = {
    constants.CATEGORY_DIGIT: r"\d",
    constants.CATEGORY_NOT_DIGIT: r"\D",
    constants.CATEGORY_SPACE: r"\s",
    constants.CATEGORY_NOT_SPACE: r"\S",
    constants.CATEGORY_WORD: r"\w",
    constants.CATEGORY_NOT_WORD: r"\W",
}
_REPEATS = {constants.MAX_REPEAT, constants.MIN_REPEAT} | (
    {constants.POSSESSIVE_REPEAT} if hasattr(constants, "POSSESSIVE_REPEAT") else set()
)
_ZERO_WIDTH = {constants.AT, constants.ASSERT, constants.ASSERT_NOT}
_REGEX_MODULE_SYNTAX = re.compile(r"\{[^}]*[eids]|\[:")  # fuzzy matching, POSIX classes: `regex` only
_PLAIN_GLOB = re.compile(r"(?!.*\*\*)[^\\/\[\]{},!][^\\/\[\]{},]*")  # read alike by fnmatch and rg, joinable in braces
_UNSAFE_IGNORE_LINE = re.compile(r"[\\{}\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|\[:|\[!?\]|\r.")


class RipgrepUnavailable(SuiteError):
    """rg cannot reproduce this search exactly (or is missing, or failed): the Python engine runs instead."""


class Closing:
    """What runs rg processes: a context manager that closes them (`close`) on leaving."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


def ended(process: subprocess.Popen[bytes]) -> None:
    """Kill a process still running, and reap it."""
    if process.poll() is None:
        process.kill()
    process.wait()


@functools.lru_cache(maxsize=8)
def _which(search_path: str) -> str | None:
    return shutil.which("rg", path=search_path)


def executable() -> str | None:
    """The rg program on `SEARCH_PATH`, or None (looked up once per search path)."""
    return _which(SEARCH_PATH)


# -- the superset pattern ------------------------------------------------------------------------------------


def rg_pattern(pattern: str, *, regex: bool, case_sensitive: bool) -> str:
    """An rg regex matching in every file where the Python engine can find `pattern` (and maybe more)."""
    if regex:
        if _REGEX_MODULE_SYNTAX.search(pattern):
            raise RipgrepUnavailable("syntax the regex package reads differently from re")
        flags = 0 if case_sensitive else re.IGNORECASE
        try:
            tree = parser.parse(pattern, flags)
        except re.error as exc:  # the engine refuses it first; kept for direct callers
            raise RipgrepUnavailable(f"the pattern does not parse: {exc}") from None
        core = _translate(tree, tree.state.flags | flags)
    elif case_sensitive:
        core = "".join(_one_of([ord(char)]) for char in pattern)
    else:
        # the engine rules files out with an ASCII-only lower-casing byte scan, then folds lines fully
        if not pattern.isascii():
            raise RipgrepUnavailable("a case-insensitive literal with non-ASCII characters folds fully")
        core = "".join(_one_of({ord(char.lower()), ord(char.upper())}) for char in pattern)
    return f"(?:{core})|{_WIDE_BOM}"


def _one_of(members: Iterable[int], *, any_high: bool = False) -> str:
    """One character: the listed code points (U+0080-U+00FF also as their Latin-1 byte), or with `any_high`
    the ASCII ones plus any non-ASCII character or byte run. Line feeds never occur in a line."""
    chars = sorted(set(members) - {0x0A})
    if 0xFFFD in chars:  # a replacement character stands for undecodable bytes
        any_high = True
    if any_high:
        chars = [char for char in chars if char < 0x80]
    parts = []
    if len(chars) == 1:
        parts.append(_escape(chars[0]))
    elif chars:
        parts.append("[" + "".join(_escape(char) for char in chars) + "]")
    latin = [char for char in chars if 0x80 <= char <= 0xFF]
    if latin:
        parts.append("(?-u:[" + "".join(f"\\x{char:02X}" for char in latin) + "])")
    if any_high:
        parts.append(_ANY_HIGH)
    if not parts:
        return _NEVER
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _escape(char: int) -> str:
    return chr(char) if chr(char).isascii() and chr(char).isalnum() else f"\\x{{{char:X}}}"


def _translate(items: Any, flags: int) -> str:
    out = []
    for op, value in items:
        if op in (constants.LITERAL, constants.NOT_LITERAL, constants.ANY, constants.IN):
            out.append(_atom(op, value, flags))
        elif op == constants.SUBPATTERN:
            _, add, delete, sub = value
            out.append(f"(?:{_translate(sub, (flags | add) & ~delete)})")
        elif op == getattr(constants, "ATOMIC_GROUP", None):
            out.append(f"(?:{_translate(value, flags)})")
        elif op == constants.BRANCH:
            out.append("(?:" + "|".join(_translate(branch, flags) for branch in value[1]) + ")")
        elif op in _REPEATS:
            low, high, sub = value
            upper = "" if high == constants.MAXREPEAT else str(high)
            out.append(f"(?:{_translate(sub, flags)}){{{low},{upper}}}")
        elif op in _ZERO_WIDTH:
            continue  # anchors, word boundaries, lookarounds: leaving them out only widens the match
        else:
            raise RipgrepUnavailable(f"regex construct {op} is not translated")
    return "".join(out)


def _atom(op: Any, value: Any, flags: int) -> str:
    """One character of the Python pattern as an rg expression accepting at least the same characters."""
    folding = bool(flags & re.IGNORECASE)
    if op == constants.LITERAL and not folding:
        return _one_of([value])
    members = _ascii_members(atom_source(op, value), folding, bool(flags & re.ASCII))
    ascii_only = (op == constants.LITERAL and value < 0x80) or (
        op == constants.IN
        and all(kind == constants.LITERAL or (kind == constants.RANGE and item[1] < 0x80) for kind, item in value)
        and all(item < 0x80 for kind, item in value if kind == constants.LITERAL)
    )
    if not ascii_only:  # `.`, negations, \w and the like, non-ASCII characters: any non-ASCII text may match
        return _one_of(members, any_high=True)
    return _one_of([*members, *(fold for char in members for fold in _FOLDS.get(chr(char).lower(), ()))])


def atom_source(op: Any, value: Any) -> str:
    """One character of a parsed Python pattern (any, a literal or its negation, a class) as a Python pattern of its
    own; RipgrepUnavailable for a class item it does not translate."""
    if op == constants.ANY:
        return "."
    if op == constants.LITERAL:
        return f"\\U{value:08x}"
    if op == constants.NOT_LITERAL:
        return f"[^\\U{value:08x}]"
    parts: list[str] = []
    for kind, item in value:
        if kind == constants.NEGATE:
            parts.insert(0, "^")
        elif kind == constants.LITERAL:
            parts.append(f"\\U{item:08x}")
        elif kind == constants.RANGE:
            parts.append(f"\\U{item[0]:08x}-\\U{item[1]:08x}")
        elif kind == constants.CATEGORY and item in _CATEGORIES:
            parts.append(_CATEGORIES[item])
        else:
            raise RipgrepUnavailable(f"class item {kind} is not translated")
    return "[" + "".join(parts) + "]"


@functools.lru_cache(maxsize=1024)
def _ascii_members(source: str, folding: bool, ascii_only: bool) -> frozenset[int]:
    """The ASCII characters a one-character pattern accepts, in `re` or in `regex` (the union)."""
    compiled = [re.compile(source, (re.IGNORECASE if folding else 0) | (re.ASCII if ascii_only else 0))]
    if _regex_module is not None:
        extra = (_regex_module.IGNORECASE if folding else 0) | (_regex_module.ASCII if ascii_only else 0)
        compiled.append(_regex_module.compile(source, extra | _regex_module.VERSION0))
    return frozenset(char for char in range(0x80) if any(engine.fullmatch(chr(char)) for engine in compiled))


# -- the walk ------------------------------------------------------------------------------------------------


def walk_arguments(
    guard: PathGuard, *, include: list[str], exclude: list[str], gitignore: bool, include_hidden: bool
) -> list[str]:
    """rg's walk options, never stricter than `walking.walk` (the replay removes the rest). Globs are given
    only when fnmatch and rg read them alike; the deny list (lower-cased names, compared lower-cased by the
    guard) goes as it is, so rg skips some of what the guard denies, never more. Each list is one brace glob:
    rg pays per glob and file."""
    args = ["--hidden"] if include_hidden else []
    if gitignore:  # .gitignore files below the base only: the walk reads nothing else
        args += ["--no-ignore-dot", "--no-ignore-exclude", "--no-ignore-global", "--no-ignore-parent"]
        args += ["--no-require-git", "--no-ignore-messages"]
    else:
        args.append("--no-ignore")
    skipped = sorted(ALWAYS_SKIPPED) if gitignore or not include_hidden else []
    skipped += [glob for glob in exclude if _PLAIN_GLOB.fullmatch(glob)]
    skipped += [glob.lower() for glob in guard.deny_globs if _PLAIN_GLOB.fullmatch(glob)]
    if include and all(_PLAIN_GLOB.fullmatch(glob) for glob in include):
        args.append(f"--glob={_any_of(include)}")  # a whitelist: the negation after it wins over it
    if skipped:
        args.append(f"--glob=!{_any_of(skipped)}")
    return args


def _any_of(globs: list[str]) -> str:
    unique = list(dict.fromkeys(globs))
    return unique[0] if len(unique) == 1 else "{" + ",".join(unique) + "}"


class _Replay:
    """The walk's rules applied to one path reported by rg (relative to the base), plus the PathGuard."""

    def __init__(
        self,
        guard: PathGuard,
        base: str,
        *,
        include: list[str],
        exclude: list[str],
        gitignore: bool,
        include_hidden: bool,
    ) -> None:
        self.guard = guard
        self.base = base
        self.include = include
        self.exclude = exclude
        self.gitignore = gitignore
        self.include_hidden = include_hidden
        self._ignores: dict[str, GitIgnore] = {}

    def admits(self, rel: str) -> bool:
        parts = rel.split("/")
        if any(part in ("", ".", "..") for part in parts):
            return False
        for index, name in enumerate(parts):
            sub = "/".join(parts[: index + 1])
            hidden, ignoring, exclude = self.include_hidden, self.gitignore, self.exclude
            if left_out(self.guard, name, sub, include_hidden=hidden, gitignore=ignoring, exclude=exclude):
                return False
            if self.gitignore and self._ignore("/".join(parts[:index])).ignored(sub, index < len(parts) - 1):
                return False
        if self.include and not name_matches(parts[-1], rel, self.include):
            return False
        path = os.path.join(self.base, rel)
        # no symlink on the way (the walk never descends one), inside the roots, not denied by a path glob
        return (
            os.path.realpath(path) == path and self.guard.root_of(path) is not None and not self.guard.is_denied(path)
        )

    def _ignore(self, rel_dir: str) -> GitIgnore:
        found = self._ignores.get(rel_dir)
        if found is None:
            if rel_dir:
                parent = self._ignore(rel_dir.rpartition("/")[0])
                found = parent.child(os.path.join(self.base, rel_dir), rel_dir)
            else:
                found = GitIgnore().child(self.base, "")
            self._ignores[rel_dir] = found
        return found


def _safe_ignore_file(path: str) -> bool:
    """Whether rg and the walk read this .gitignore the same way."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_IGNORE_FILE_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return len(data) <= MAX_IGNORE_FILE_BYTES and not any(_UNSAFE_IGNORE_LINE.search(line) for line in text.split("\n"))


# -- running rg ------------------------------------------------------------------------------------------


class _Pipe:
    """Records (lines, or NUL-terminated names) from a child's stdout, as they arrive."""

    def __init__(self, process: subprocess.Popen[bytes], separator: bytes) -> None:
        assert process.stdout is not None
        self.process = process
        self.fd = process.stdout.fileno()
        self.separator = separator
        self.ended = False
        self._pending = bytearray()

    def read(self) -> list[bytes]:
        """The records completed by one read (call when readable); at the end, the unterminated rest."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            self.ended = True
            rest = bytes(self._pending)
            self._pending.clear()
            return [rest] if rest else []
        start = len(self._pending)
        self._pending += chunk
        end = self._pending.rfind(self.separator, start)
        if end < 0:
            return []
        records = bytes(self._pending[:end]).split(self.separator)
        del self._pending[: end + 1]
        return records


class Candidates(Closing):
    """The files under `base` (a checked, real directory) in which the Python engine may find `pattern`, as
    (absolute path, path relative to `base`) in the walk's order. A context manager: leaving it kills rg.

    rg processes run side by side: the search (`--json`, one match per file is enough); with .gitignore on, a
    listing of the ignore files it reads, checked as they come; then a listing of the files in its walk
    (counted for `files_searched`). Iterating raises `RipgrepUnavailable` when rg turns out unable to
    reproduce the walk; so does `finish`, which does the last checks.
    """

    def __init__(
        self,
        guard: PathGuard,
        base: str,
        pattern: str,
        *,
        regex: bool,
        case_sensitive: bool,
        include: list[str],
        exclude: list[str],
        gitignore: bool,
        include_hidden: bool,
        max_file_bytes: int,
        max_results: int,
        deadline: float,
    ) -> None:
        program = executable()
        if program is None:
            raise RipgrepUnavailable("rg is not installed")
        expression = rg_pattern(pattern, regex=regex, case_sensitive=case_sensitive)
        walking = walk_arguments(
            guard, include=include, exclude=exclude, gitignore=gitignore, include_hidden=include_hidden
        )
        self.base = base
        self.deadline = deadline
        self.timed_out = False
        self._prefix = base if base.endswith(os.sep) else base + os.sep
        self._replay = _Replay(
            guard, base, include=include, exclude=exclude, gitignore=gitignore, include_hidden=include_hidden
        )
        self._guard = guard
        self._walk_options: dict[str, Any] = {
            "include_hidden": include_hidden,
            "gitignore": gitignore,
            "exclude": exclude,
        }
        self._last: list[str] = []  # the last path handed out, as names
        self._summary = False
        self._processes: list[subprocess.Popen[bytes]] = []
        self._count_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        # rg's own deadline leaves a tenth of the budget (at most a second) to read what it found
        self._rg_deadline = deadline - min(1.0, 0.1 * max(deadline - time.monotonic(), 0))
        self._collect_at_most = 2 * max_results + 100
        self._streamed = False
        search = ["--json", "--text", "--encoding=none", "--max-count=1", "--no-messages"]
        search += [f"--max-filesize={max_file_bytes}", *walking, "-e", expression]
        self._sorted_search = [program, "--sort=path", "--line-buffered", *search]
        self._search = _Pipe(self._start([program, *search]), b"\n")
        listing = ["--files", "--null", "--threads=1", "--no-messages"]
        self._count_argv = [program, *listing, *walking]
        self._count: subprocess.Popen[bytes] | None = None  # started once the other listing ended: less contention
        self._ignore_files: _Pipe | None = None
        if gitignore:  # whitelisted after the walk's globs: listed even where those (or being hidden) skip them
            unfiltered = walk_arguments(
                guard, include=[], exclude=exclude, gitignore=gitignore, include_hidden=include_hidden
            )
            names = [*unfiltered, "--glob=.gitignore", "--glob=.rgignore"]
            self._ignore_files = _Pipe(self._start([program, *listing, *names]), b"\0")
        else:
            self._count = self._start(self._count_argv, self._count_file)

    def _start(self, head: list[str], stdout: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
        argv = [head[0], "--no-config", *head[1:], "--", self.base]
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.DEVNULL, env=ENVIRONMENT, cwd="/"
            )
        except OSError as exc:
            self.close()
            raise RipgrepUnavailable(f"rg could not start: {exc}") from None
        self._processes.append(process)
        return process

    def close(self) -> None:
        """Kill and reap the processes (finished ones are only reaped)."""
        for process in self._processes:
            ended(process)
            if process.stdout is not None:
                process.stdout.close()
        self._count_file.close()

    def __iter__(self) -> Iterator[tuple[str, str]]:
        """rg on all cores first, its files sorted here; if they are many (the search will stop at `max_results`
        long before the end of the tree), rg again in the walk's order (one core), streamed."""
        found = []
        for rel in self._reported():
            found.append(rel)
            if len(found) > self._collect_at_most:
                break
        else:
            for rel in sorted(found, key=lambda rel: rel.split("/")):
                self._last = rel.split("/")
                if self._replay.admits(rel):
                    yield os.path.join(self.base, rel), rel
            return
        self._search.process.kill()
        self._search = _Pipe(self._start(self._sorted_search), b"\n")
        self._streamed = True
        self._summary = False
        for rel in self._reported():
            parts = rel.split("/")
            if parts <= self._last:
                raise RipgrepUnavailable("rg's order differs from the walk's")
            self._last = parts
            if self._replay.admits(rel):
                yield os.path.join(self.base, rel), rel

    def _reported(self) -> Iterator[str]:
        """The files the search reports, relative to the base."""
        for line in self._lines():
            if line.startswith(b'{"type":"begin"'):
                yield self._relative(json.loads(line)["data"]["path"])
            elif not line.startswith(b'{"type":'):  # one match and the end of each file are not needed
                self._summary = True  # the summary, last, starts with its data

    def _relative(self, path: dict[str, str]) -> str:
        text = path["text"] if "text" in path else os.fsdecode(base64.b64decode(path["bytes"]))
        if not text.startswith(self._prefix):
            raise RipgrepUnavailable("rg reported a path outside the search directory")
        return text[len(self._prefix) :]

    def _lines(self) -> Iterator[bytes]:
        """The search's output lines until it ends, or the deadline passes (rg is killed: `timed_out`); the
        ignore files are checked as they are listed, so an unusable one stops the search early."""
        with selectors.DefaultSelector() as selector:
            for pipe in (self._search, self._ignore_files):
                if pipe is not None and not pipe.ended:
                    selector.register(pipe.fd, selectors.EVENT_READ, pipe)
            while not self._search.ended:
                remaining = self._rg_deadline - time.monotonic()
                if remaining <= 0:
                    self.timed_out = True
                    self._search.process.kill()
                    return
                for key, _ in selector.select(remaining):
                    pipe = key.data
                    records = pipe.read()
                    if pipe.ended:
                        selector.unregister(key.fd)
                    if pipe is self._search:
                        yield from records
                    else:
                        self._check_ignore_files(records)
        if self._search.process.wait() == 2 and not self._summary:
            raise RipgrepUnavailable("rg failed (for example, the pattern did not compile)")

    def _check_ignore_files(self, records: list[bytes]) -> None:
        """Refuse (fall back) if rg reads an ignore file the walk would read differently, or a .rgignore."""
        assert self._ignore_files is not None
        for raw in records:
            if raw.endswith((b"/.gitignore", b"/.rgignore")):
                _check_ignore_file(os.fsdecode(raw))
        if self._ignore_files.ended:
            if self._ignore_files.process.wait() not in (0, 1):
                raise RipgrepUnavailable("rg could not list the ignore files")
            if self._count is None:
                self._count = self._start(self._count_argv, self._count_file)

    def finish(self, *, complete: bool) -> int | None:
        """The last checks, after the search ran to its end (`complete`) or was stopped (`max_results`, the time
        budget). Returns the number of files in rg's walk, for `files_searched` (rg does not
        count the files it searched without a match), or None when stopped early: the files up to where the
        search stopped cannot be counted, and all of them would be too many."""
        pipe = self._ignore_files
        if not complete:
            self._search.process.kill()
            if self._count is not None:
                self._count.kill()
            while pipe is not None and not pipe.ended and _readable(pipe.fd, 0):
                self._check_ignore_files(pipe.read())
            unchecked = pipe is not None and not pipe.ended
            if self._streamed or unchecked:
                self._check_up_to(self._last, names=self._streamed, ignore_files=unchecked)
            return None
        while pipe is not None and not pipe.ended:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or not _readable(pipe.fd, remaining):
                raise RipgrepUnavailable("rg did not list the ignore files in time")
            self._check_ignore_files(pipe.read())
        assert self._count is not None  # started when the ignore files were all listed
        try:
            if self._count.wait(max(self.deadline - time.monotonic(), 0.001)) not in (0, 1):
                return None
        except subprocess.TimeoutExpired:
            return None
        self._count_file.seek(0)
        return self._count_file.read().count(b"\0")

    def _check_up_to(self, last: list[str], *, names: bool, ignore_files: bool) -> None:
        """When the search stopped early, the walk itself checks the part of the tree up to `last` (in the walk's
        order), which costs less than what the Python engine would have spent there:

        - `names`: in rg's streamed order, no undecodable name: one could sort before `last` as a Python string
          and after it as bytes, a file rg did not reach yet;
        - `ignore_files`: the ignore files of its directories, all that can have changed what was found before
          `last`, when rg's listing has not got to them. Where rg's reading and the walk's first differ, both
          read the same ignore file, so the walk finds it.

        At the time budget the walk stops where it is (the result is partial anyway)."""
        directories = [""]
        for entry in walk(self._guard, self.base, **self._walk_options, deadline=self.deadline):
            if entry.rel.split("/") > last:
                break
            if names and not entry.name.isascii():
                try:
                    entry.name.encode()
                except UnicodeEncodeError:
                    raise RipgrepUnavailable(
                        f"{entry.rel!r} is not UTF-8: rg's order may differ from the walk's"
                    ) from None
            if entry.is_dir and not entry.is_symlink:
                directories.append(entry.rel)
        for directory in directories if ignore_files else ():
            for name in (".gitignore", ".rgignore"):
                path = os.path.join(self.base, directory, name)
                if os.path.lexists(path):
                    _check_ignore_file(path)


def _check_ignore_file(path: str) -> None:
    """Refuse (fall back) if rg reads an ignore file the walk would read differently, or a .rgignore."""
    if path.endswith(".rgignore") or not _safe_ignore_file(path):
        raise RipgrepUnavailable(f"{path!r} could be read differently by rg and by the walk")


def _readable(fd: int, timeout: float) -> bool:
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(timeout))
