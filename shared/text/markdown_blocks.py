"""Markdown read as blocks that stay whole: cutting a long text where a reader expects it to be cut.

A block is a fenced code block (from its opening fence to its closing one) or a run of lines between blank
lines. `window` cuts a page of text for a reader (web_ops' `start_index` / `max_chars`) and `pieces` cuts a
text into chunks for the brain; both cut only between blocks. A single block longer than the room left is the
one exception: it is cut at a line end, and a code block cut that way is closed at the cut and opened again
(same fence, same language) where the next page or piece starts, so every part still reads as code.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

_FENCE = re.compile(r"^(?P<indent>[ \t>]*)(?P<marks>`{3,}|~{3,})(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Fenced:
    start: int  # offset of the opening fence line
    body: int  # offset just after the opening fence line
    end: int  # offset just after the closing fence line (or the text's end when it is never closed)
    opening: str  # the opening line, e.g. "```python"
    closing: str  # the line that closes it, e.g. "```"


@dataclass(frozen=True)
class Blocks:
    """Where a text may be cut (`cuts`, ascending, 0 and the length included) and its fenced code blocks."""

    text: str
    cuts: list[int]
    fenced: list[Fenced]

    def fence_at(self, offset: int, *, body_only: bool = True) -> Fenced | None:
        """The fenced block whose body (or, with `body_only=False`, any of its lines) holds `offset`."""
        index = bisect_right([f.start for f in self.fenced], offset) - 1
        if index >= 0:
            fence = self.fenced[index]
            if (fence.body if body_only else fence.start) <= offset < fence.end:
                return fence
        return None


def blocks(text: str) -> Blocks:
    cuts = [0]
    fenced: list[Fenced] = []
    open_fence: tuple[int, int, str, str, str] | None = None  # (start, body, opening, marks, indent)
    offset = 0
    previous_blank = False
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        following = offset + len(line)
        match = _FENCE.match(stripped)
        if open_fence is None:
            if match:
                if offset and (previous_blank or cuts[-1] != offset):
                    cuts.append(offset)
                open_fence = (offset, following, stripped, match["marks"], match["indent"])
            elif not stripped.strip():
                previous_blank = True
            else:
                if previous_blank and offset:
                    cuts.append(offset)
                previous_blank = False
        elif match and _closes(match, open_fence[3]):
            start, body, opening, marks, indent = open_fence
            fenced.append(Fenced(start, body, following, opening, f"{indent}{marks}"))
            cuts.append(following)
            open_fence = None
            previous_blank = False
        offset = following
    if open_fence is not None:
        start, body, opening, marks, indent = open_fence
        fenced.append(Fenced(start, body, len(text), opening, f"{indent}{marks}"))
    cuts = sorted(set(cuts) | {len(text)})
    return Blocks(text, cuts, fenced)


def _closes(match: re.Match[str], marks: str) -> bool:
    """A fence line closes a block opened with `marks`: the same character, at least as many, no info string."""
    found = match["marks"]
    return found[0] == marks[0] and len(found) >= len(marks) and not match["info"].strip()


def window(text: str, start: int, max_chars: int, layout: Blocks | None = None) -> tuple[str, int | None]:
    """At most about `max_chars` of `text` from `start`, ending between blocks; and where the next one starts
    (None at the end). A start inside a code block reopens its fence; a code block longer than the page is cut
    at a line end and closed."""
    layout = layout or blocks(text)
    if start >= len(text):
        return "", None
    fence = layout.fence_at(start)
    prefix = f"{fence.opening}\n" if fence is not None else ""
    budget = max(max_chars - len(prefix), 1)
    limit = start + budget
    if limit >= len(text):
        return prefix + text[start:], None
    index = bisect_right(layout.cuts, limit) - 1
    end = layout.cuts[index]
    if end > start:
        return prefix + text[start:end], end
    return _cut_inside(layout, start, limit, prefix)


def _cut_inside(layout: Blocks, start: int, limit: int, prefix: str) -> tuple[str, int]:
    """One block longer than the room: cut at the last line end before `limit` (closing a code block there)."""
    text = layout.text
    fence = layout.fence_at(limit - 1)
    closing = f"\n{fence.closing}\n" if fence is not None else ""
    room = max(limit - len(closing), start + 1)
    newline = text.rfind("\n", start, room)
    space = text.rfind(" ", start, room) if newline < start else -1  # one line longer than the room: at a space
    end = newline + 1 if newline >= start else space + 1 if space > start else room
    if fence is not None and end <= fence.body:  # the page would hold only the opening line: take more
        end = min(text.find("\n", fence.body) + 1 or len(text), len(text))
    chunk = text[start:end]
    if fence is not None and layout.fence_at(end) is fence:
        chunk = chunk.rstrip("\n") + closing
    return prefix + chunk, end


def pieces(text: str, size: int, max_block: int) -> list[tuple[int, int, str]]:
    """The text in pieces of whole blocks of about `size` characters (a code block up to `max_block` stays
    whole however long): (first line, last line, text) with 1-based line numbers."""
    layout = blocks(text)
    starts = [0, *(i + 1 for i, ch in enumerate(text) if ch == "\n")]
    out: list[tuple[int, int, str]] = []
    position = 0
    while position < len(text):
        room = size
        fence = layout.fence_at(position + size, body_only=False)
        if fence is not None and fence.start == position and fence.end - position <= max_block:
            room = fence.end - position  # a code block longer than a piece, but not too long: whole
        chunk, following = window(text, position, room, layout)
        end = following if following is not None else len(text)
        if chunk.strip():
            first = bisect_right(starts, position)
            last = bisect_left(starts, end)
            out.append((first, max(first, last), chunk.strip("\n")))
        position = end
    return out
