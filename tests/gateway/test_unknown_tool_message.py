"""A tool a section does not have, with no name close to it: one sentence saying so, ended, then the section's
tools — through call_section_tool and describe_section alike (the gateway in memory, its section a real process)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import gateway_in_memory
from tests.stdio import error_of

pytestmark = pytest.mark.anyio
SENTENCES = re.compile(r"section 'calculator' has no tool 'nope'\. Its tools are: (calculator_\w+, )+calculator_\w+\.")


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[Client]:
    async with gateway_in_memory("--data-dir", str(tmp_path / "data"), "--root", str(tmp_path), cwd=tmp_path) as made:
        yield made


async def test_an_unknown_tool_is_told_in_whole_sentences(client: Client) -> None:
    called = {"section": "calculator", "tool": "nope", "arguments": {}}
    code, message = error_of(await client.call_tool("call_section_tool", called))
    assert code == "NOT_FOUND" and SENTENCES.fullmatch(message), message
    code, message = error_of(await client.call_tool("describe_section", {"section": "calculator", "tools": ["nope"]}))
    assert code == "NOT_FOUND" and SENTENCES.fullmatch(message), message
    # with a guess, the question ends the first sentence
    typo = {"section": "calculator", "tool": "calculator_binar", "arguments": {}}
    _, message = error_of(await client.call_tool("call_section_tool", typo))
    guessed = r"section 'calculator' has no tool 'calculator_binar'; did you mean calculator_binary( or \w+)*\? Its "
    assert re.match(guessed + "tools are: ", message), message
