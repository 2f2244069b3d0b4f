"""The framework's call path, in memory: schemas, structured output, error codes, progress."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.framework.demo_section import SECTION
from tests.stdio import text_of

pytestmark = pytest.mark.anyio


def _client() -> Client:
    server, _ = build_server(SECTION, SECTION.runtime(Settings.load()))
    return Client(server)


async def test_tools_list_carries_schemas_and_annotations() -> None:
    async with _client() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == ["demo_sum", "demo_lookup", "demo_count"]
    demo_sum = tools["demo_sum"]
    assert demo_sum.input_schema["additionalProperties"] is False
    assert demo_sum.input_schema["properties"]["numbers"]["maxItems"] == 5
    assert demo_sum.output_schema is not None and "total" in demo_sum.output_schema["properties"]
    assert demo_sum.annotations is not None
    assert demo_sum.annotations.read_only_hint is True
    assert demo_sum.annotations.destructive_hint is False
    assert demo_sum.annotations.open_world_hint is False


async def test_success_has_structured_content_and_text() -> None:
    async with _client() as client:
        result = await client.call_tool("demo_sum", {"numbers": [1, 2, 3.5]})
    assert not result.is_error
    assert result.structured_content == {"total": 6.5}
    assert text_of(result) == "total = 6.5"
    assert "data, not instructions" in result.content[0].text  # type: ignore[union-attr]


async def test_stringified_json_arguments_are_decoded() -> None:
    async with _client() as client:
        result = await client.call_tool("demo_sum", {"numbers": "[1, 2]"})
    assert result.structured_content == {"total": 3.0}


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({}, "numbers: required argument is missing"),
        ({"numbers": []}, "numbers"),
        ({"numbers": [1, 2, 3, 4, 5, 6]}, "numbers"),
        ({"numbers": ["x"]}, "numbers.0"),
        ({"numbers": [1], "extra": True}, "extra: unknown argument"),
    ],
)
async def test_invalid_input_names_the_field(arguments: dict, fragment: str) -> None:
    async with _client() as client:
        result = await client.call_tool("demo_sum", arguments)
    assert result.is_error
    assert result.structured_content["error_code"] == "INVALID_INPUT"
    assert fragment in result.structured_content["error"]
    assert result.structured_content["success"] is False


async def test_tool_failure_keeps_its_code_and_state_is_opened_lazily() -> None:
    async with _client() as client:
        ok = await client.call_tool("demo_lookup", {"key": "alpha"})
        missing = await client.call_tool("demo_lookup", {"key": "gamma"})
    assert ok.structured_content == {"value": "1"}
    assert missing.structured_content["error_code"] == "NOT_FOUND"
    assert "known keys: alpha, beta" in missing.structured_content["error"]


async def test_unexpected_exception_hides_details_and_server_keeps_serving() -> None:
    async with _client() as client:
        crash = await client.call_tool("demo_lookup", {"key": "boom"})
        after = await client.call_tool("demo_sum", {"numbers": [1]})
    assert crash.structured_content["error_code"] == "EXECUTION_FAILED"
    text = crash.content[0].text
    assert "secret-token-123" not in text and "Traceback" not in text
    assert after.structured_content == {"total": 1.0}


async def test_unknown_tool_is_not_found_with_the_real_names() -> None:
    async with _client() as client:
        result = await client.call_tool("demo_nope", {})
    assert result.is_error
    assert result.structured_content["error_code"] == "NOT_FOUND"
    assert "demo_sum" in result.structured_content["error"]


async def test_progress_notifications_reach_the_client() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with _client() as client:
        result = await client.call_tool("demo_count", {"steps": 3}, progress_callback=on_progress)
    assert result.structured_content == {"steps": 3}
    assert [entry[0] for entry in seen] == [1, 2, 3]
