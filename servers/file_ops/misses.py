"""Why an edit_file `old_text` was not found, told so that the caller can fix its call.

In this order, the first that applies: the text holds a secret's mask (it can never match); it matches when
whitespace is ignored (the line(s) where, the first difference, and the file's text there with its whitespace made
visible); its `new_text` stands in the file where it is evidence that an earlier call made this edit; its first line
is there but not the rest; nothing is.

What the whitespace message quotes of the file is whitespace and the text of the match, whose other characters are
the caller's own `old_text`: nothing else of the file goes into the (unenveloped) error message.
"""

from __future__ import annotations

import itertools
import re

from mcp_sections.shared.confinement.secrets.masking import MASK, contains_mask

MIN_EVIDENCE = 8  # non-blank characters a new_text needs before its presence says anything
SHOWN_LINES = 8
SHOWN_WIDTH = 160
_WHITESPACE_NAMES = {" ": ("space", "spaces"), "\t": ("tab", "tabs"), "\n": ("line break", "line breaks")}


def line_numbers(text: str, needle: str, most: int = 10) -> list[int]:
    """The 1-based lines where `needle` starts in `text` (at most `most`)."""
    numbers: list[int] = []
    start = 0
    while len(numbers) < most:
        index = text.find(needle, start)
        if index < 0:
            break
        numbers.append(_line_of(text, index))
        start = index + max(len(needle), 1)
    return numbers


def lines_named(numbers: list[int]) -> str:
    """`line 3` or `lines 3, 7`: how every edit_file message names lines."""
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(map(str, numbers))


def missing_message(number: int, text: str, old: str, new: str, path: str) -> str:
    """The message of edit #`number`, whose `old` (and `new`, the replacement) was not found in `text`."""
    base = f"edit #{number}: old_text was not found in {path!r}"
    if contains_mask(old):
        return (
            f"{base}: it contains {MASK}, which tool output shows in place of a secret value; the file holds the "
            "real value. Choose old_text that leaves the secret's line out. No edit was applied."
        )
    near = near_matches(text, old)
    if near:
        return base + _whitespace_message(text, old, new, near)
    made = made_at(text, old, new)
    if made:
        return (
            f"{base}, and its new_text is there already ({lines_named(made)}): an earlier call may have made this "
            "edit. Read the file (read_file) before editing it again. No edit was applied."
        )
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if first:
        lines = [number for number, line in enumerate(text.splitlines(), start=1) if first in line][:5]
        if lines:
            return (
                f"{base}; its first line appears at {lines_named(lines)}, but the rest differs. "
                "Re-read the file and copy the text exactly. No edit was applied."
            )
    return base + ". Re-read the file (read_file) and copy the text to replace exactly. No edit was applied."


def near_matches(text: str, old: str, most: int = 10) -> list[tuple[int, int]]:
    """Where `old` matches `text` when whitespace is ignored (each run of it matching any other run): the spans,
    from the first to the last non-blank character (at most `most`). Both texts squeezed to single spaces, then
    found by plain substring search (linear, whatever the texts), each index mapped back through the file's words."""
    needle = " ".join(old.split())
    if not needle:
        return []
    squeezed = " ".join(text.split())
    words = re.finditer(r"\S+", text)
    word, at = None, -1  # the current word of `text`, and where it starts in `squeezed`
    spans: list[tuple[int, int]] = []

    def original(index: int) -> int:  # `squeezed[index]` (never a space) in `text`; indexes only grow
        nonlocal word, at
        while word is None or index >= at + len(word.group()):
            at = at + len(word.group()) + 1 if word is not None else 0
            word = next(words)
        return word.start() + index - at

    index = squeezed.find(needle)
    while index >= 0 and len(spans) < most:
        spans.append((original(index), original(index + len(needle) - 1) + 1))
        index = squeezed.find(needle, index + len(needle))
    return spans


def made_at(text: str, old: str, new: str) -> list[int]:
    """The lines where `new` stands when its presence is evidence that an earlier call made this edit, i.e. when
    it could hardly be there otherwise: not when it is part of `old` (a deletion or a shortening: what it keeps of
    `old` was in the file before any edit), nor when it is short (a name, a number, a bracket — fewer than
    MIN_EVIDENCE non-blank characters — stands in most files by chance). Otherwise []."""
    if new in old or not substantial(new):
        return []
    return line_numbers(text, new, 5)


def substantial(new: str) -> bool:
    return len("".join(new.split())) >= MIN_EVIDENCE


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _whitespace_message(text: str, old: str, new: str, near: list[tuple[int, int]]) -> str:
    start, end = near[0]
    crlf = "\r\n" in text
    difference, at = _first_difference(text, old, start, end, crlf)
    message = (
        f"; it matches when whitespace is ignored, at {lines_named([_line_of(text, s) for s, _ in near])}: the "
        f"indentation, spaces, tabs or line endings differ. {difference}"
    )
    if text[start:end] == new.strip() and substantial(new):
        message += " The text there is new_text already: an earlier call may have made this edit."
    return (
        message + f" The file's text there (· is a space, → a tab):\n{_shown(text, start, end, crlf, at)}\n"
        "Copy it into old_text with its exact whitespace (read_file shows the file). No edit was applied."
    )


def _first_difference(text: str, old: str, start: int, end: int, crlf: bool) -> tuple[str, int]:
    """What differs first between `old` and the file's `text[start:end]` that it nearly matches, and on which line
    of the match (0-based)."""
    found = text[start:end]
    lead, trail = old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]
    prefix, suffix = text[:start], text[end:]
    before, after = prefix[len(prefix.rstrip()) :], suffix[: len(suffix) - len(suffix.lstrip())]
    if lead and not before.endswith(lead):
        return f"old_text begins with {_named(lead)}, the file has {_named(before)} before it.", 0
    if crlf:
        found, old = found.replace("\r\n", "\n"), old.replace("\r\n", "\n")
    wanted, got = old.strip().split("\n"), found.split("\n")
    first, skipped = _line_of(text, start), lead.count("\n")  # old_text's blank lines before its text
    if len(wanted) != len(got):
        index = next((i for i, (w, g) in enumerate(zip(wanted, got, strict=False)) if w.split() != g.split()), 0)
        return (
            f"The line breaks differ: old_text has {_count(len(wanted), 'line')} there, the file {len(got)} "
            f"(from line {first + index} on).",
            index,
        )
    for index, (w, g) in enumerate(zip(wanted, got, strict=True)):
        if w == g:
            continue
        line = f"Line {first + index} (old_text's line {index + 1 + skipped})"
        w_lead, g_lead = w[: len(w) - len(w.lstrip())], g[: len(g) - len(g.lstrip())]
        w_trail, g_trail = w[len(w.rstrip()) :], g[len(g.rstrip()) :]
        if w_lead != g_lead:
            return f"{line} is indented with {_named(g_lead)} in the file, {_named(w_lead)} in old_text.", index
        if w_trail != g_trail:
            return f"{line} ends with {_named(g_trail)} in the file, {_named(w_trail)} in old_text.", index
        return (
            f"{line}: the spaces inside it differ: the file has `{_visible(g, every=True)}`, old_text "
            f"`{_visible(w, every=True)}`.",
            index,
        )
    if trail and not after.startswith(trail):
        return f"old_text ends with {_named(trail)}, the file has {_named(after)} after it.", len(got) - 1
    return "No difference shows but the line endings (CRLF or LF): the file mixes them.", 0


def _shown(text: str, start: int, end: int, crlf: bool, at: int) -> str:
    """The file's lines of the match, numbered, indentation and trailing whitespace made visible (at most
    SHOWN_LINES, from just before line `at` of the match). A line's text before or after the match is cut (…)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    head = "" if not text[line_start:start].strip() else "…"
    tail = "" if not text[end:line_end].strip() else "…"
    shown = text[line_start if not head else start : line_end if not tail else end]
    lines = shown.split("\n")
    first = _line_of(text, start)
    skip = max(0, min(at - 2, len(lines) - SHOWN_LINES))
    rows = []
    for index, line in enumerate(lines[skip : skip + SHOWN_LINES], start=skip):
        if crlf:
            line = line.removesuffix("\r")
        line = _visible(line)
        line = (head if index == 0 else "") + line + (tail if index == len(lines) - 1 else "")
        if len(line) > SHOWN_WIDTH:
            line = line[:SHOWN_WIDTH] + "…"
        rows.append(f"{first + index:>6}| {line}")
    if skip:
        rows.insert(0, f"{'':>6}| … ({skip} line(s) above)")
    if skip + SHOWN_LINES < len(lines):
        rows.append(f"{'':>6}| … ({len(lines) - skip - SHOWN_LINES} more line(s))")
    return "\n".join(rows)


def _visible(line: str, *, every: bool = False) -> str:
    """`line` with its indentation and trailing whitespace as · (space) and → (tab), a CR as ␍, other whitespace as
    its code point; with `every`, the whitespace inside it too (tabs always)."""
    body = line.strip()
    if not body:
        return _marked(line)
    lead, trail = line[: len(line) - len(line.lstrip())], line[len(line.rstrip()) :]
    inside = _marked(body) if every else body.replace("\t", "→")
    return _marked(lead) + inside + _marked(trail)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _marked(whitespace: str) -> str:
    marks = {" ": "·", "\t": "→", "\r": "␍"}
    return "".join(marks.get(c, f"<U+{ord(c):04X}>" if c.isspace() else c) for c in whitespace)


def _named(whitespace: str) -> str:
    """`12 spaces`, `1 tab, 4 spaces`, `nothing`."""
    parts = []
    for char, run in itertools.groupby(whitespace):
        count = len(list(run))
        one, many = _WHITESPACE_NAMES.get(char, ("CR", "CRs") if char == "\r" else (f"U+{ord(char):04X}",) * 2)
        parts.append(f"{count} {one if count == 1 else many}")
    return ", ".join(parts) or "nothing"
