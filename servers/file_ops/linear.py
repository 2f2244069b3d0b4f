"""Regular expressions on a linear-time engine: rg matches the lines that `search_files` splits in Python.

Python's `re` (and the `regex` package) backtrack: `(.*a){20}!x` on a 30,000-character line runs for minutes.
ripgrep's engine (Rust's `regex`: finite automata) answers any pattern in time linear in the text. So a regular
expression search hands its lines to one rg process per call (`RgLines`), and everything else stays as it was:
the files, their decoding (UTF-16/32, Latin-1), the line splitting (`str.splitlines`), the context lines and the
limits are Python's. rg reads the lines on its standard input, joined by line feeds, each batch (one file) followed
by a line of four U+001C, which no split line can hold (splitlines splits there) and which a branch of the pattern
always matches: rg's report of that line number ends the batch.

The pattern given to rg (`exact_pattern`) accepts exactly the lines the Python engine would: it is translated from
Python's own parse of the pattern, and every character it names becomes an explicit class of the code points the
Python engine in use (`regex` when installed, else `re`) accepts there, with its flags (case folding, ASCII) — asked
of that engine itself, over every code point, once per process for each distinct class. `^`, `$`, `\\A`, `\\Z` mark
the line's ends (a split line holds no line break). Repetitions, groups and alternations keep their meaning for
"is there a match in this line"; laziness does not change it.

Not translated (`RipgrepUnavailable`: the Python engine matches, with its guards): lookarounds, backreferences,
conditionals, atomic groups and possessive repetitions (they change which lines match and no automaton has them),
syntax only the `regex` package reads, and a pattern rg cannot compile within its size limit. A word boundary
(`\\b`, `\\B`) is exact in rg only on ASCII text (Python's Unicode word characters are not rg's): a line of another
script is then matched by the Python engine (`Translation.ascii_only`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_sections.shared.ground.errors import SuiteError

from .ripgrep import _REGEX_MODULE_SYNTAX, ENVIRONMENT, Closing, RipgrepUnavailable, atom_source, ended, executable

try:
    from re import _constants as constants  # type: ignore[attr-defined]
    from re import _parser as parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as constants  # type: ignore[no-redef]
    import sre_parse as parser  # type: ignore[no-redef]

try:  # the Python engine's choice (searching.py): `regex` when installed
    import regex as _regex_module  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - depends on the environment
    _regex_module = None

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
LINE_FEED = 0x0A
END_OF_BATCH = "\x1c" * 4  # a line of its own: str.splitlines never leaves U+001C inside a line (four: rg waits
# for more than two bytes at the start of its input)
REGEX_SIZE_LIMIT = "64M"  # rg's compiled pattern may be this large (its default, 10M, refuses `\w{40}`)
_NEVER = r"(?-u:\b\B)"
_REPEATS = {constants.MAX_REPEAT, constants.MIN_REPEAT}
_STARTS = {constants.AT_BEGINNING, constants.AT_BEGINNING_LINE, constants.AT_BEGINNING_STRING}
_ENDS = {constants.AT_END, constants.AT_END_LINE, constants.AT_END_STRING}
_BOUNDARIES = {constants.AT_BOUNDARY: r"(?-u:\b)", constants.AT_NON_BOUNDARY: r"(?-u:\B)"}

Ranges = tuple[tuple[int, int], ...]


class OutOfTime(SuiteError):
    """The search's time budget ran out while rg matched lines."""


@dataclass(frozen=True)
class Translation:
    expression: str
    ascii_only: bool  # exact only on lines of ASCII characters (a word boundary outside ASCII mode)


def exact_pattern(pattern: str, *, case_sensitive: bool) -> Translation:
    """rg's pattern for the lines where the Python engine finds `pattern`; RipgrepUnavailable where none is exact.
    The pattern must parse (`searching.check_regex_syntax`)."""
    if _REGEX_MODULE_SYNTAX.search(pattern):
        raise RipgrepUnavailable("syntax the regex package reads differently from re")
    flags = 0 if case_sensitive else re.IGNORECASE
    tree = parser.parse(pattern, flags)
    translator = _Translator()
    expression = translator.translate(tree, tree.state.flags | flags)
    return Translation(expression, translator.ascii_only)


class _Translator:
    def __init__(self) -> None:
        self.ascii_only = False

    def translate(self, items: Any, flags: int) -> str:
        out = []
        for op, value in items:
            if op in (constants.LITERAL, constants.NOT_LITERAL, constants.ANY, constants.IN):
                out.append(_render(_members(op, value, flags)))
            elif op == constants.SUBPATTERN:
                _, add, delete, sub = value
                out.append(f"(?:{self.translate(sub, (flags | add) & ~delete)})")
            elif op == constants.BRANCH:
                out.append("(?:" + "|".join(self.translate(branch, flags) for branch in value[1]) + ")")
            elif op in _REPEATS:
                low, high, sub = value
                upper = "" if high == constants.MAXREPEAT else str(high)
                out.append(f"(?:{self.translate(sub, flags)}){{{low},{upper}}}")
            elif op == constants.AT and value in _STARTS:
                out.append("^")
            elif op == constants.AT and value in _ENDS:
                out.append("$")
            elif op == constants.AT and value in _BOUNDARIES:
                self.ascii_only = self.ascii_only or not flags & re.ASCII
                out.append(_BOUNDARIES[value])
            else:  # lookarounds, backreferences, conditionals, atomic groups, possessive repetitions
                raise RipgrepUnavailable(f"regex construct {op} has no linear-time equivalent")
        return "".join(out)


# -- the characters of one atom ---------------------------------------------------------------------------------


def _members(op: Any, value: Any, flags: int) -> Ranges:
    """The code points the Python engine accepts for one character of the pattern (line feeds aside)."""
    if op == constants.ANY:  # any character but a line feed, which no split line holds
        return _complement([])
    if not flags & re.IGNORECASE:
        if op == constants.LITERAL:
            return _normal([(value, value)])
        if op == constants.NOT_LITERAL:
            return _complement([(value, value)])
        if all(kind in (constants.LITERAL, constants.RANGE, constants.NEGATE) for kind, _ in value):
            listed = [(item, item) if kind == constants.LITERAL else item for kind, item in value if item is not None]
            negated = any(kind == constants.NEGATE for kind, _ in value)
            return _complement(listed) if negated else _normal(listed)
    return _scanned(atom_source(op, value), bool(flags & re.IGNORECASE), bool(flags & re.ASCII))


@functools.cache
def _every_character() -> str:
    """Every Unicode scalar value, in order (surrogates, which no decoded text holds, left out)."""
    return "".join(map(chr, range(SURROGATES[0]))) + "".join(map(chr, range(SURROGATES[1] + 1, MAX_CODE_POINT + 1)))


def _code_point(index: int) -> int:
    return index if index < SURROGATES[0] else index + SURROGATES[1] - SURROGATES[0] + 1


@functools.lru_cache(maxsize=512)
def _scanned(source: str, folding: bool, ascii_only: bool) -> Ranges:
    """The code points the Python engine in use accepts for the one-character pattern `source`: its runs over
    every code point, found by the engine itself."""
    if _regex_module is not None:
        extra = (_regex_module.IGNORECASE if folding else 0) | (_regex_module.ASCII if ascii_only else 0)
        compiled: Any = _regex_module.compile(f"(?:{source})+", extra | _regex_module.VERSION0)
    else:  # pragma: no cover - depends on the environment
        compiled = re.compile(f"(?:{source})+", (re.IGNORECASE if folding else 0) | (re.ASCII if ascii_only else 0))
    runs = [(_code_point(m.start()), _code_point(m.end() - 1)) for m in compiled.finditer(_every_character())]
    return _normal(runs)


def _normal(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sorted, merged, without line feeds and surrogates."""
    merged: list[list[int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    out: list[tuple[int, int]] = []
    for low, high in merged:
        for hole_low, hole_high in ((LINE_FEED, LINE_FEED), SURROGATES):
            if low <= hole_high and high >= hole_low:
                if low < hole_low:
                    out.append((low, hole_low - 1))
                low = hole_high + 1
        if low <= high:
            out.append((low, high))
    return tuple(out)


def _complement(ranges: Iterable[tuple[int, int]]) -> Ranges:
    gaps = []
    start = 0
    for low, high in _normal(ranges):
        if low > start:
            gaps.append((start, low - 1))
        start = high + 1
    if start <= MAX_CODE_POINT:
        gaps.append((start, MAX_CODE_POINT))
    return _normal(gaps)


def _render(ranges: Ranges) -> str:
    if not ranges:
        return _NEVER
    parts = [f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}" for low, high in ranges]
    return "[" + "".join(parts) + "]"


# -- rg matching lines --------------------------------------------------------------------------------------------


class RgLines(Closing):
    """One rg process that says which of the lines it is given match the translated pattern (a context manager:
    leaving it ends rg). Raises RipgrepUnavailable when rg is missing or refuses the pattern."""

    def __init__(self, translation: Translation, deadline: float) -> None:
        program = executable()
        if program is None:
            raise RipgrepUnavailable("rg is not installed")
        self.translation = translation
        self.deadline = deadline
        argv = [program, "--no-config", "--line-number", "--no-filename", "--no-heading", "--color=never"]
        argv += [
            "--text",
            "--encoding=none",
            "--max-columns=1",
            "--line-buffered",
            f"--regex-size-limit={REGEX_SIZE_LIMIT}",
        ]
        with tempfile.TemporaryFile() as patterns:
            # one pattern a line, from a file (a translated pattern may be longer than an argument may be): the
            # translation, and the end of a batch
            patterns.write(f"{translation.expression}\n^\\x{{1C}}{{4}}$\n".encode("ascii"))
            patterns.flush()
            patterns.seek(0)
            argv += [f"--file=/dev/fd/{patterns.fileno()}", "-"]
            try:
                self._process = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=ENVIRONMENT,
                    cwd="/",
                    pass_fds=(patterns.fileno(),),
                )
            except OSError as exc:
                raise RipgrepUnavailable(f"rg could not start: {exc}") from None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._in, self._out = self._process.stdin.fileno(), self._process.stdout.fileno()
        os.set_blocking(self._in, False)
        self._next = 1  # the number rg gives the next line it reads
        self._pending = b""
        try:
            self.matching([])  # rg answers once it compiled the pattern (or ends, refusing it)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        ended(self._process)
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def usable(self, text: str) -> bool:
        """Whether rg's answer for the lines of `text` is exact (see `Translation.ascii_only`)."""
        return not self.translation.ascii_only or text.isascii()

    def matching(self, lines: Sequence[str]) -> list[int]:
        """The indices of the lines that match, in order. OutOfTime at the deadline (rg is ended)."""
        first = self._next
        end = first + len(lines)  # the number of the batch's last line, END_OF_BATCH
        self._next = end + 1
        text = "\n".join(lines) + "\n" if lines else ""
        payload = memoryview((text + END_OF_BATCH + "\n").encode("utf-8", "surrogatepass"))
        found: list[int] = []
        with selectors.DefaultSelector() as selector:
            selector.register(self._out, selectors.EVENT_READ)
            selector.register(self._in, selectors.EVENT_WRITE)
            writing = True
            while True:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self.close()
                    raise OutOfTime("rg was still matching lines at the time budget")
                for key, _ in selector.select(remaining):
                    if key.fd == self._in:
                        try:
                            payload = payload[os.write(self._in, payload[: 1 << 16]) :]
                        except BrokenPipeError:
                            payload = payload[:0]
                        if not payload and writing:
                            selector.unregister(self._in)
                            writing = False
                        continue
                    chunk = os.read(self._out, 1 << 16)
                    if not chunk:
                        self.close()
                        raise RipgrepUnavailable("rg ended early (for example, it refused the pattern)")
                    records = (self._pending + chunk).split(b"\n")
                    self._pending = records.pop()
                    for record in records:
                        number = int(record.split(b":", 1)[0])
                        if number == end:
                            return found
                        found.append(number - first)
