"""What a call that misses is told, through the tools in memory on real files: edit_file's old_text that matches
only when whitespace is ignored (where, the first difference, the file's text there), the "already made" hint only
when new_text is evidence of it, and search_files' literal search for what looks like a regular expression."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.stdio import call, fail

# sqlparse's statement splitter, where an outside tester met the false "already made": the test is at lines 5 and 12
SPLITTER = """class StatementSplitter:
    def process(self, stream):
        for ttype, value in stream:
            # a semicolon ends the statement
        if ttype is T.Punctuation and value == ';':
            self._unconfirmed_start = None

    def _change_splitlevel(self, ttype, value):
        if ttype is T.Keyword and value == 'BEGIN':
            return 1

        if ttype is T.Punctuation and value == ';':
            self._unconfirmed_start = None
        return self.level
"""
TEST = "if ttype is T.Punctuation and value == ';':"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    (tmp_path / "root").mkdir()
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    env = {
        "MCP_SECTIONS_CONFIG": str(tmp_path / "config.toml"),
        "MCP_SECTIONS_ROOTS": "",
        "MCP_SECTIONS_DATA_DIR": str(tmp_path / "data"),
    }
    async with section_in_memory("file_ops", "--root", str(tmp_path / "root"), env=env) as connected:
        yield connected


@pytest.fixture
def splitter(tmp_path: Path) -> Path:
    path = tmp_path / "root" / "engine.py"
    path.write_text(SPLITTER, encoding="utf-8")
    return path


async def edit_refused(client: Client, old_text: str, new_text: str, path: str = "engine.py") -> str:
    edits = [{"old_text": old_text, "new_text": new_text}]
    return await fail(client, "edit_file", "VALIDATION_FAILED", path=path, edits=edits, dry_run=True)


@pytest.mark.anyio
async def test_a_shortening_edit_with_wrong_indentation_is_told_the_indentation_not_already_made(
    client: Client, splitter: Path
) -> None:
    # the tester's call: the second line indented by 4 spaces instead of 12; new_text is a part of old_text
    message = await edit_refused(client, f"{TEST}\n    self._unconfirmed_start = None", TEST)
    assert "already" not in message and "earlier call" not in message, message
    assert "it matches when whitespace is ignored, at lines 5, 12" in message
    assert "Line 6 (old_text's line 2) is indented with 12 spaces in the file, 4 spaces in old_text" in message
    # the file's text there, its indentation visible, numbered as read_file numbers lines
    assert "     5| ········if ttype is T.Punctuation and value == ';':" in message
    assert "     6| ············self._unconfirmed_start = None" in message
    assert "No edit was applied" in message
    assert splitter.read_text(encoding="utf-8") == SPLITTER


@pytest.mark.anyio
async def test_a_tiny_or_contained_new_text_never_claims_an_earlier_edit(client: Client, splitter: Path) -> None:
    # a deletion: new_text is empty of evidence, it was in old_text before any edit
    message = await edit_refused(client, "return 1\n    return 0", "return 1")
    assert "earlier call" not in message and "its first line appears at line 10" in message
    # "x" stands in most files; the cause here is a text that is nowhere
    message = await edit_refused(client, "def absent_function():", "x")
    assert "earlier call" not in message and "Re-read the file" in message
    # with the indentation fault the whitespace message comes first, whatever new_text is
    message = await edit_refused(client, f"{TEST}\n  self._unconfirmed_start = None", "x")
    assert "earlier call" not in message and "2 spaces in old_text" in message


@pytest.mark.anyio
async def test_a_repeated_edit_is_still_told_it_may_be_made(client: Client, splitter: Path) -> None:
    edit = {"old_text": "return 1", "new_text": "return level + 1"}
    await call(client, "edit_file", path="engine.py", edits=[edit])
    message = await edit_refused(client, edit["old_text"], edit["new_text"])
    assert "its new_text is there already (line 10): an earlier call may have made this edit" in message
    # a re-indenting edit repeated: old_text matches when whitespace is ignored, and the text there is new_text
    reindent = {"old_text": "        return self.level", "new_text": "\treturn self.level"}
    await call(client, "edit_file", path="engine.py", edits=[reindent])
    message = await edit_refused(client, "        return self.level\n", "\treturn self.level\n")
    assert "at line 14" in message and "old_text begins with 8 spaces, the file has 1 line break, 1 tab" in message
    assert "The text there is new_text already: an earlier call may have made this edit" in message
    assert "    14| →return self.level" in message


@pytest.mark.anyio
async def test_the_whitespace_message_says_what_differs(client: Client, tmp_path: Path) -> None:
    (tmp_path / "root" / "table.txt").write_text("name  = 'a'\nvalue = 1   \nlast = 2\n", encoding="utf-8")
    message = await edit_refused(client, "name = 'a'", "name = 'b'", "table.txt")
    assert "at line 1" in message and "the file has `name··=·'a'`, old_text `name·=·'a'`" in message
    message = await edit_refused(client, "value = 1\nlast = 2", "value = 2\nlast = 3", "table.txt")
    assert "Line 2 (old_text's line 1) ends with 3 spaces in the file, nothing in old_text" in message
    assert "     2| value = 1···" in message
    message = await edit_refused(client, "name = 'a' value = 1", "name = 'b' value = 2", "table.txt")
    assert "The line breaks differ: old_text has 1 line there, the file 2 (from line 1 on)" in message


@pytest.mark.anyio
async def test_a_literal_search_for_a_regular_expression_says_so(client: Client, splitter: Path) -> None:
    data = await call(client, "search_files", pattern=r"def _change_splitlevel\(")
    assert data["matches"] == [] and data["note"] == (
        r"no match for the literal text `def _change_splitlevel\(`; it looks like a regular expression (`\(` in "
        "it): pass regex=true to search it as one."
    )
    found = await call(client, "search_files", pattern=r"def _change_splitlevel\(", regex=True)
    assert [match["line_number"] for match in found["matches"]] == [8] and found["note"] is None
    # a literal text that finds nothing and has no sign of a regular expression, or one that finds lines: no note
    for pattern in ("def absent(", "a | b", "value == ';'"):
        assert (await call(client, "search_files", pattern=pattern))["note"] is None
