"""Cutting markdown between blocks (shared/text/markdown_blocks.py), on generated texts of prose and code blocks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sections.shared.text.markdown_blocks import blocks, pieces, window

_WORDS = st.text(alphabet="abcdefgh ", min_size=1, max_size=70).map(lambda s: s.strip() or "x")
_PARAGRAPH = st.lists(_WORDS, min_size=1, max_size=4).map("\n".join)
_CODE_LINE = st.tuples(st.integers(0, 8), _WORDS).map(lambda t: " " * t[0] + t[1])
_CODE = st.tuples(
    st.sampled_from(["```", "```python", "~~~", "````js"]), st.lists(_CODE_LINE | st.just(""), max_size=40)
).map(lambda t: "\n".join([t[0], *t[1], t[0].rstrip("pythonjs")]))
_TEXT = st.lists(_PARAGRAPH | _CODE, min_size=1, max_size=25).map(lambda parts: "\n\n".join(parts) + "\n")


def _windows(text: str, size: int) -> list[tuple[int, str, int | None]]:
    out, start = [], 0
    layout = blocks(text)
    while start is not None:
        chunk, following = window(text, start, size, layout)
        out.append((start, chunk, following))
        start = following
    return out


@settings(max_examples=150, deadline=None)
@given(_TEXT, st.integers(200, 2000))
def test_windows_tile_the_text_and_cut_between_blocks_unless_a_block_is_longer(text: str, size: int) -> None:
    layout = blocks(text)
    for start, chunk, following in _windows(text, size):
        assert len(chunk) <= size
        reopened = layout.fence_at(start)
        body = chunk.removeprefix(f"{reopened.opening}\n") if reopened else chunk
        if following is None or following in layout.cuts:
            assert body == text[start:following]
        else:
            inside = layout.fence_at(following)
            assert inside is not None and inside.end - inside.start > size - len(inside.opening) - 1
            assert body == text[start:following].rstrip("\n") + f"\n{inside.closing}\n"
        assert following is None or following > start


@settings(max_examples=150, deadline=None)
@given(_TEXT)
def test_pieces_keep_each_code_block_whole_and_cover_every_line(text: str) -> None:
    layout = blocks(text)
    found = pieces(text, 300, 1200)
    contents = [content for _, _, content in found]
    for fence in layout.fenced:
        block = text[fence.start : fence.end].strip("\n")
        if len(block) <= 1200:
            assert any(block in content for content in contents)
    lines = [line for line in text.splitlines() if line.strip()]
    kept = "\n".join(contents)
    assert all(line in kept for line in lines)
    assert [first for first, _, _ in found] == sorted(first for first, _, _ in found)


def test_a_start_inside_a_code_block_reopens_its_fence() -> None:
    text = "intro\n\n```rust\nfn a() {}\nfn b() {}\n```\n\nafter\n"
    chunk, following = window(text, text.index("fn b"), 500)
    assert chunk == "```rust\nfn b() {}\n```\n\nafter\n" and following is None
