"""Known secret values, masked wherever they come back: re-encoded, reversed, in another case, or in part.

Masking by shape (shared/confinement/secrets/masking.py) finds what looks like a secret. A program that re-encodes what
it read (`base64`, `jq @base64`, `jq explode`, `grep -o .`, `rev`, `tr a-z A-Z`, `cut -c5-`, `head -c`/`tail -c`,
`xxd`, `od`, URL-quoting) turns it into something that looks like nothing. So the values the suite knows are
secret are remembered here — the values inside the deny-listed files (shared/confinement/secrets/files.py), every value
a detector masked, and secret-looking variables of the server's own environment — and every later output is
searched for them and their encodings, as CI systems mask the secrets registered with them.

How. A value and its encodings (reversed; rot13; base64 at each of the three byte alignments, standard and
URL-safe; hex; URL-encoding) are each reduced to a *skeleton*: its ASCII letters and digits, lower-cased. An output
is reduced the same way, which undoes case changes and whatever a program puts between characters (`grep -o .`'s
line breaks, `od -c`'s spaces, base64's line wrapping, a list's quotes and commas). Some encodings are decoded in
the output instead, and searched again: runs of numbers (`jq explode`'s code points, `od`'s octal or hex words),
character escapes (JSON's `\\u00e4` from `json.dumps`' ensure_ascii, `\\x41`, `\\U0001f600`: only when the output
holds one), and runs of upper-case base32 (`base32`, `b32encode`, wrapped lines joined; from each of the eight
characters of a group). Any piece of a skeleton at least MIN_FRAGMENT characters long is masked, with every
character of the output it spans: a token body without its prefix, or `head -c 20` and `tail -c 21` of a token,
are such pieces. Not recognised: lower-case base32, and any transform of a program's own choosing (below).

MIN_FRAGMENT = 12: twelve letters and digits of a random token carry ~60 bits, so they never occur in ordinary
text by chance, and a hex or base64 window of that length cannot be hit by git hashes or other encoded data;
eight would (a commit log holds thousands of 8-digit hex windows). A program must cut a secret into pieces of
11 characters or fewer to get it through. Values are remembered when their skeleton has at least MIN_LENGTH
characters and does not look like a word (letters and digits mixed, a capital after a small letter, or 16
characters and more; `Software` is a word):
`DB_PASSWORD=postgres` is masked there by shape, but "postgres" is not masked in every later output.

Speed. Every 6-character substring of every skeleton goes into one set (one per pool, below); an output's
skeleton is cut into 6-character blocks at fixed steps, and one set test tells whether any block belongs to a known
value (a piece of 11 characters or more always holds a whole block). Only then is the match found and extended
character by character. 64 KB of output with 50 known values costs about 1 ms (`python -m benchmarks.bench_sandbox`).

Two pools, so that nothing a program prints decides what is forgotten. Values longer than PIECE characters (a
private key's body) are remembered in overlapping pieces.
- The values of the protected files and of the server's environment (`learn_source`) are kept for as long as
  their source holds them, whatever programs print. They have a bound that fails closed: past MAX_SOURCE_CHARS
  characters, the values of a further source are not taken, that source is listed by `refused()`, and no program
  is started until it fits again (shared/confinement/secrets/files.py refuses with MAX_LIMIT_EXCEEDED and names the
  largest sources: keys the user keeps in the roots, or files a program wrote to fill the pool). A root's usual secrets
  are far below it: a home directory with nine pyenv Pythons, whose test suites hold ~150 keys, has ~71,000.
- The values learnt from output (what a detector masked) share MAX_CHARS characters, the least recently seen
  forgotten first: a program that prints thousands of token-shaped strings can push those out, never the first.
Memory: ~700 bytes per remembered character (every 6-character block of every encoding is indexed): ~11 MB for a
full output pool, ~50 MB for the home directory above, ~180 MB at MAX_SOURCE_CHARS; each pool's index is rebuilt
only when it changes (~0.4 s for that home, once).

The limit, plainly: a program that computes an arbitrary transform of a secret it can read (XOR, a shift of
its own, 11 characters per call) can always leak it; masking by value is best effort. The guarantee is that the
deny-listed files cannot be read by programs at all (shared/confinement/secrets/files.py).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import codecs
import itertools
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import compress
from urllib.parse import quote

MIN_LENGTH = 8
MIN_FRAGMENT = 12
BLOCK = MIN_FRAGMENT // 2  # a piece of 2 * BLOCK - 1 characters holds a whole block wherever it starts
PIECE = 512
MAX_CHARS = 16 * 1024  # values learnt from output
MAX_SOURCE_CHARS = 256 * 1024  # values of the protected files and the environment
ENVIRONMENT = "the server's environment"  # the source of its secret-looking variables

_LETTERS_AND_DIGITS = b"0123456789abcdefghijklmnopqrstuvwxyz"
_DROPPED = bytes(byte for byte in range(256) if byte not in _LETTERS_AND_DIGITS)
_HEX_CLASS = bytes.maketrans(_LETTERS_AND_DIGITS, b"0" * 16 + b"g" * 20)
_ALNUM_FLAGS = bytes(byte in _LETTERS_AND_DIGITS or byte in _LETTERS_AND_DIGITS.upper() for byte in range(256))
_TOKENS = re.compile(r"[0-9A-Fa-f]+")
_NUMBER_RUN = b"0" * (2 * MIN_FRAGMENT)  # hex-digit characters in a row before a run is decoded as numbers
_MIN_TOKENS = 6
_ESCAPE = re.compile(r"(\\+(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|U[0-9a-fA-F]{8}|u\{[0-9a-fA-F]{1,6}\}))")
_BASE32_RUN = re.compile(r"[A-Z2-7]{16,}(?:=*\r?\n[A-Z2-7]+)*=*")  # uppercase, as `base32` writes it, wrapped or not
_BASE32_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BASE32_CLASS = bytes(ord("A") if byte in _BASE32_LETTERS else ord(" ") for byte in range(256))
_BASE32_LEAST = b"A" * 16

_SECRET_NAME = re.compile(
    r"(?:^|_)[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|AUTH)(?:_|$)|(?:^|_)PASS(?:_|$)",
    re.IGNORECASE,
)
_PLAIN_URL = re.compile(r"https?://[^@\s]*")
_CASE_CHANGE = re.compile(r"[a-z][A-Z]")


def skeleton(text: str) -> str:
    """The ASCII letters and digits of `text`, lower-cased, in order."""
    return text.encode("ascii", "replace").lower().translate(None, _DROPPED).decode("ascii")


def worth_remembering(value: str) -> bool:
    """Long enough, not a repeated pattern (5 different characters at least), and unlike a word: letters and digits
    mixed, or a capital after a small letter (`Tr0ub4dor`, `xK9q...`, `MyPassw0rd`; not `Software`, `postgres`), or
    16 characters and more."""
    letters = skeleton(value)
    if len(letters) < MIN_LENGTH or len(set(letters)) < 5:
        return False
    if len(letters) >= 16:
        return True
    digits = any(c.isdigit() for c in value)
    return (digits and any(c.isalpha() for c in value)) or _CASE_CHANGE.search(value) is not None


def secret_environment(environ: Mapping[str, str]) -> list[str]:
    """Values of variables whose name says secret (`*_KEY`, `*TOKEN*`, `*PASSWORD*`, ...), except paths and
    plain addresses."""
    return [
        value
        for name, value in environ.items()
        if _SECRET_NAME.search(name) and not plain(value) and worth_remembering(value)
    ]


def plain(value: str) -> bool:
    """An absolute path or an address without credentials: configuration, not a secret."""
    return os.path.isabs(value) or _PLAIN_URL.fullmatch(value) is not None


def encodings(value: str) -> frozenset[str]:
    """The skeletons a value can come back as: itself, reversed, rot13, hex, URL-encoded, base64 at each alignment
    (base32 and character escapes are decoded in the output instead: `KnownSecrets.spans`)."""
    data = value.encode("utf-8", "replace")
    forms = {value, value[::-1], codecs.encode(value, "rot13"), data.hex(), quote(value, safe="")}
    for skip in range(3):  # the secret's first byte at each of base64's three positions in a group
        chunk = data[skip:]
        forms.add(base64.b64encode(chunk[: len(chunk) - len(chunk) % 3]).decode("ascii"))
    return frozenset(form for form in map(skeleton, forms) if len(form) >= MIN_LENGTH)


def pieces(value: str) -> list[str]:
    """A value cut into PIECE-character pieces overlapping by MIN_FRAGMENT (one piece when it is short)."""
    if len(value) <= PIECE:
        return [value]
    step = PIECE - MIN_FRAGMENT
    return [value[start : start + PIECE] for start in range(0, len(value) - MIN_FRAGMENT, step)]


@dataclass(frozen=True)
class _Index:
    """What one search needs, built when the known values change: the blocks of the long skeletons (each with the
    skeleton it comes from, or -1 when several hold it), and the short skeletons, searched whole."""

    blocks: dict[str, int]
    forms: tuple[str, ...]
    short: tuple[str, ...]

    @classmethod
    def of(cls, forms: Iterable[str]) -> _Index | None:
        """The index of `forms` (None when there are none)."""
        forms = list(forms)
        if not forms:
            return None
        long_forms = tuple(sorted({form for form in forms if len(form) >= 2 * BLOCK - 1}))
        short = tuple(sorted({form for form in forms if len(form) < 2 * BLOCK - 1}))
        blocks: dict[str, int] = {}
        for number, form in enumerate(long_forms):
            for at in range(len(form) - BLOCK + 1):
                block = form[at : at + BLOCK]
                blocks[block] = number if blocks.get(block, number) == number else -1
        return cls(blocks, long_forms, short)

    def search(self, view: str, blocks: list[str]) -> list[tuple[int, int]]:
        """Where pieces of known skeletons lie in `view` (itself a skeleton, cut into `blocks` at each BLOCK), as
        view spans."""
        found: list[tuple[int, int]] = []
        hits = self.blocks.keys() & blocks
        if hits:
            covered = 0
            for number in [number for number, block in enumerate(blocks) if block in hits]:
                at, block = number * BLOCK, blocks[number]
                if at + BLOCK <= covered:
                    continue
                owner = self.blocks[block]
                best = self._longest_match(view, at, block, self.forms if owner == -1 else (self.forms[owner],))
                if best is not None:
                    found.append(best)
                    covered = best[1]
        for form in self.short:
            at = view.find(form)
            while at != -1:
                found.append((at, at + len(form)))
                at = view.find(form, at + len(form))
        return found

    @staticmethod
    def _longest_match(view: str, at: int, block: str, forms: Iterable[str]) -> tuple[int, int] | None:
        best: tuple[int, int] | None = None
        for form in forms:
            offset = form.find(block)
            while offset != -1:
                start, end = _extend(view, at, form, offset)
                if end - start >= min(MIN_FRAGMENT, len(form)) and (best is None or end - start > best[1] - best[0]):
                    best = (start, end)
                offset = form.find(block, offset + 1)
        return best


def _extend(view: str, at: int, form: str, offset: int) -> tuple[int, int]:
    """The span of `view` around the block at `at` that equals `form` around `offset`."""
    left = 0
    while left < offset and left < at and view[at - left - 1] == form[offset - left - 1]:
        left += 1
    right = at + BLOCK
    limit = min(len(view), at + len(form) - offset)
    while right < limit and view[right] == form[offset + right - at]:
        right += 1
    return at - left, right


def _alnum_positions(text: str) -> list[int]:
    """Where each character of `skeleton(text)` stands in `text`, in one C-level pass (built only when something
    matched): the ASCII encoding with `?` for every other character keeps one byte per character."""
    return list(compress(range(len(text)), text.encode("ascii", "replace").translate(_ALNUM_FLAGS)))


def _number_runs(view: str) -> Iterator[tuple[int, int]]:
    """Spans of `view` made of at least 2 * MIN_FRAGMENT hex digits in a row (numbers, once separators went)."""
    classes = view.encode("ascii").translate(_HEX_CLASS)
    at = classes.find(_NUMBER_RUN)
    while at != -1:
        start = classes.rfind(b"g", 0, at) + 1
        end = classes.find(b"g", at)
        end = len(classes) if end == -1 else end
        yield start, end
        at = classes.find(_NUMBER_RUN, end)


def _unescaped(text: str) -> tuple[str, Callable[..., int]] | None:
    """`text` with its character escapes decoded (None when it has none), and the map from a position in the decoded
    text back to `text` (`origin(position)`, or with `True` the end of the character at `position`)."""
    parts = _ESCAPE.split(text)  # plain, escape, plain, escape, ..., plain: split in C, one call per escape below
    if len(parts) == 1:
        return None
    origins = list(itertools.accumulate(map(len, parts), initial=0))
    codes = [int(escape.lstrip("\\")[1:].strip("{}"), 16) for escape in parts[1::2]]
    parts[1::2] = [chr(code) if code <= 0x10FFFF else "\ufffd" for code in codes]
    starts = list(itertools.accumulate(map(len, parts), initial=0))  # decoded: an escape is one character

    def origin(position: int, end: bool = False) -> int:
        part = bisect.bisect_right(starts, position) - 1
        if part % 2:  # inside an escape: all of it
            return origins[part + 1] if end else origins[part]
        return origins[part] + position - starts[part] + end

    return "".join(parts), origin


def _word(number: int) -> str:
    """A 16-bit little-endian word (od's default and `od -x`) as its two characters."""
    return chr(number & 0xFF) + chr(number >> 8 & 0xFF)


def _decodings(tokens: list[str]) -> Iterator[list[str]]:
    """What a run of numbers may spell, token by token: decimal code points (`jq explode`, `od -tu1`), octal
    bytes (`od -b`), octal and hex 16-bit words (`od`, `od -x`). A 7-digit token is od's offset column."""
    joined = "".join(tokens)
    lengths = set(map(len, tokens))
    if joined.isdigit():
        yield [chr(int(token)) if len(token) < 7 else "" for token in tokens]
        if "8" not in joined and "9" not in joined:
            if lengths <= {1, 2, 3, 7}:
                yield [chr(int(token, 8)) if len(token) < 7 else "" for token in tokens]
            if lengths <= {6, 7}:
                yield [_word(int(token, 8)) if len(token) == 6 and int(token, 8) < 0x10000 else "" for token in tokens]
    if lengths <= {4, 7}:
        yield [_word(int(token, 16)) if len(token) == 4 else "" for token in tokens]


class KnownSecrets:
    """The process's known secret values (thread-safe, bounded): learn them, then find them in any output. Two pools
    (see the module docstring): the values of sources (protected files, the environment), never forgotten for
    output's sake, and the values learnt from output, least recently seen forgotten first."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        """`environ`: read for secret-looking variables at the first search (the process's own by default)."""
        self._lock = threading.Lock()
        self._pieces: OrderedDict[str, frozenset[str]] = OrderedDict()  # learnt from output, least recently seen first
        self._chars = 0
        self._sources: dict[str, tuple[str, ...]] = {}  # a protected file (or ENVIRONMENT) -> the pieces it holds
        self._kept: dict[str, tuple[frozenset[str], int]] = {}  # a piece of the sources -> (its forms, sources)
        self._kept_chars = 0
        self._refused: dict[str, int] = {}  # sources left out (over MAX_SOURCE_CHARS) -> their characters
        self._indexes: tuple[_Index, ...] = ()
        self._dirty = (False, False)  # (sources, output): the index of each pool must be built again
        self._built: tuple[_Index | None, _Index | None] = (None, None)
        self._environ = environ
        self._environ_learnt = False

    def __len__(self) -> int:
        return len(self._pieces) + len(self._kept)

    def learn(self, values: Iterable[str]) -> int:
        """Remember values worth remembering (see `worth_remembering`) seen in output; how many were new."""
        new = 0
        with self._lock:
            for value in values:
                if not worth_remembering(value):
                    continue
                for piece in pieces(value):
                    if piece in self._kept:
                        continue
                    if piece in self._pieces:
                        self._pieces.move_to_end(piece)
                    else:
                        self._pieces[piece] = encodings(piece)
                        self._chars += len(piece)
                        self._dirty = (self._dirty[0], True)
                        new += 1
            while self._chars > MAX_CHARS:
                piece, _ = self._pieces.popitem(last=False)
                self._chars -= len(piece)
        return new

    def learn_source(self, source: str, values: Iterable[str]) -> bool:
        """Remember the values `source` (a protected file, or ENVIRONMENT) holds now, in place of those it held
        before; False when they do not fit under MAX_SOURCE_CHARS (the source is then listed by `refused`)."""
        found = list(dict.fromkeys(piece for value in values if worth_remembering(value) for piece in pieces(value)))
        with self._lock:
            self._drop_source(source)
            added = sum(len(piece) for piece in found if piece not in self._kept)
            if self._kept_chars + added > MAX_SOURCE_CHARS:
                self._refused[source] = added
                return False
            for piece in found:
                forms, count = self._kept.get(piece) or (encodings(piece), 0)
                self._kept[piece] = (forms, count + 1)
                if self._pieces.pop(piece, None) is not None:  # learnt from output too: the source keeps it now
                    self._chars -= len(piece)
            self._kept_chars += added
            self._sources[source] = tuple(found)
            self._dirty = (True, True)
            return True

    def forget_source(self, source: str) -> None:
        """Forget what `source` held (the file is gone, or no longer protected)."""
        with self._lock:
            self._drop_source(source)

    def knows_source(self, source: str) -> bool:
        """Whether the values of `source` were taken (or left out for lack of room) since it was last forgotten."""
        return source in self._sources or source in self._refused

    def refused(self) -> dict[str, int]:
        """The sources whose values were left out for lack of room, with their characters (empty: all are known)."""
        with self._lock:
            return dict(self._refused)

    def _drop_source(self, source: str) -> None:
        self._refused.pop(source, None)
        for piece in self._sources.pop(source, ()):
            forms, count = self._kept[piece]
            if count > 1:
                self._kept[piece] = (forms, count - 1)
            else:
                del self._kept[piece]
                self._kept_chars -= len(piece)
                self._dirty = (True, self._dirty[1])

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where known values, or pieces of them, lie in `text` (in any of their encodings)."""
        indexes = self._current()
        if not indexes or not text:
            return []
        found = self._spans(indexes, text)
        if "\\u" in text or "\\x" in text or "\\U" in text:  # escapes: JSON's `\u00e4` (ensure_ascii), `\x41`
            unescaped = _unescaped(text)
            if unescaped is not None:
                decoded, origin = unescaped
                found += [(origin(start), origin(end - 1, True)) for start, end in self._spans(indexes, decoded)]
        classes = text.encode("ascii", "replace").translate(_BASE32_CLASS)
        at = classes.find(_BASE32_LEAST)
        while at != -1:  # only where 16 base32 letters stand in a row: then the regular expression, from there
            run = _BASE32_RUN.match(text, at)
            assert run is not None
            found += self._base32(indexes, text, run.start(), run.end())
            at = classes.find(_BASE32_LEAST, run.end())
        return found

    def _spans(self, indexes: tuple[_Index, ...], text: str) -> list[tuple[int, int]]:
        """Where the values of `indexes` lie in `text`: as they are in its skeleton, or spelt by its runs of numbers."""
        view = skeleton(text)
        found: list[tuple[int, int]] = []
        matched = _search(indexes, view)
        runs = list(_number_runs(view))
        if matched or runs:
            at = _alnum_positions(text)
            found = [(at[start], at[end - 1] + 1) for start, end in matched]
            for start, end in runs:
                first, last = at[start], at[end - 1] + 1
                if last - first - (end - start) >= _MIN_TOKENS - 1:  # separated numbers, not one long hex word
                    found += self._numbers(indexes, text, first, last)
        return found

    def _base32(self, indexes: tuple[_Index, ...], text: str, start: int, end: int) -> list[tuple[int, int]]:
        """Known values in a run of base32 (`base32`, Python's b32encode; wrapped lines joined), decoded from each of
        the eight characters of a group, so that a piece cut anywhere is read."""
        at = [position for position in range(start, end) if text[position] not in "=\r\n"]
        letters = "".join(text[position] for position in at)
        found: list[tuple[int, int]] = []
        for skip in range(8):
            usable = (len(letters) - skip) // 8 * 8
            if usable < 16:
                break
            try:
                decoded = base64.b32decode(letters[skip : skip + usable]).decode("latin-1")
            except (binascii.Error, ValueError):
                continue
            for first, last in self._spans(indexes, decoded):  # a byte b is spelt by characters 8b/5 to 8(b+1)/5
                found.append((at[skip + first * 8 // 5], at[min(skip + -(-last * 8 // 5), len(at)) - 1] + 1))
        return found

    def _numbers(self, indexes: tuple[_Index, ...], text: str, start: int, end: int) -> list[tuple[int, int]]:
        tokens = _TOKENS.findall(text, start, end)
        found: list[tuple[int, int]] = []
        if len(tokens) < _MIN_TOKENS:
            return found
        for decoded in _decodings(tokens):
            matched = _search(indexes, skeleton("".join(decoded)))
            if matched:
                spans = [token.span() for token in _TOKENS.finditer(text, start, end)]
                owners = [number for number, chars in enumerate(decoded) for _ in skeleton(chars)]
                found += [(spans[owners[first]][0], spans[owners[last - 1]][1]) for first, last in matched]
        return found

    def _current(self) -> tuple[_Index, ...]:
        if not self._environ_learnt:
            self._environ_learnt = True
            environ = os.environ if self._environ is None else self._environ
            self.learn_source(ENVIRONMENT, secret_environment(environ))
        if any(self._dirty):
            with self._lock:
                kept, learnt = self._built
                if self._dirty[0]:
                    kept = _Index.of(form for forms, _ in self._kept.values() for form in forms)
                if self._dirty[1]:
                    learnt = _Index.of(form for forms in self._pieces.values() for form in forms)
                self._built = (kept, learnt)
                self._indexes = tuple(index for index in self._built if index is not None)
                self._dirty = (False, False)
        return self._indexes


def _search(indexes: tuple[_Index, ...], view: str) -> list[tuple[int, int]]:
    """Where pieces of the values of any of `indexes` lie in `view` (a skeleton)."""
    blocks = [view[at : at + BLOCK] for at in range(0, len(view) - BLOCK + 1, BLOCK)]
    return [span for index in indexes for span in index.search(view, blocks)]


KNOWN = KnownSecrets()
"""The process-wide registry: masking (shared/confinement/secrets/masking.py) searches it, the file scan and detectors
feed it."""
