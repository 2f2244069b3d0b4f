"""Tool filters and profiles: a hidden tool is hidden wherever a tool is seen or called.

`list_tool_sections`, `describe_section`, `find_tools`, the exposed tools of tools/list, a sub-agent's tools and
`call_section_tool` (PERMISSION_DENIED naming the setting, before anything runs), with the real gateway: in memory
for the listings and for `--profile` (from the CLI's own words; todo in process), and a sub-agent on a scripted
model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.pool.filters import ToolFilter
from mcp_sections.servers.pool.settings import GatewaySettings
from mcp_sections.shared.serving.audit import read_records
from mcp_sections.shared.settings.config import ConfigError, Settings
from tests.gateway.helpers import write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.stdio import data_of, error_of

READ_ONLY = {"readOnlyHint": True}
TODO_READERS = {"todo_get", "todo_list", "todo_next"}


def test_rules_name_the_setting_that_hides_a_tool() -> None:
    assert ToolFilter().refusal("todo", "todo_delete", None) is None
    hidden = ToolFilter(disabled=("todo_del*",))
    assert "pattern 'todo_del*' of [gateway] disabled_tools" in (hidden.refusal("todo", "todo_delete", None) or "")
    assert hidden.shows("todo", "todo_create", None)
    section = ToolFilter(disabled=("shell_ops:*",))
    assert not section.shows("shell_ops", "git_status", READ_ONLY) and section.shows("file_ops", "read_file", None)
    only = ToolFilter(enabled=("calculator_*", "todo:todo_list"))
    assert only.shows("calculator", "calculator_binary", None) and only.shows("todo", "todo_list", None)
    assert "[gateway] enabled_tools" in (only.refusal("todo", "todo_get", None) or "")
    readonly = ToolFilter(profile="readonly", read_only=True)
    assert readonly.shows("todo", "todo_list", READ_ONLY)
    assert "profile 'readonly'" in (readonly.refusal("todo", "todo_create", {"readOnlyHint": False}) or "")
    assert not readonly.shows("x", "unknown_annotations", None)
    mine = ToolFilter(profile="review", profile_disabled=("todo_list",))
    assert "[gateway.profiles.review]" in (mine.refusal("todo", "todo_list", READ_ONLY) or "")


def test_settings_profiles_and_their_errors() -> None:
    assert GatewaySettings.load({}, profile="readonly").tool_filter().read_only
    custom = GatewaySettings.load(
        {"profiles": {"review": {"read_only": True, "disabled_tools": ["todo_next"]}}, "profile": "review"}
    )
    assert custom.tool_filter() == ToolFilter(profile="review", profile_disabled=("todo_next",), read_only=True)
    assert GatewaySettings.load({"disabled_tools": "a_*, b_*"}).disabled_tools == ["a_*", "b_*"]
    with pytest.raises(ValueError, match="unknown tool profile 'nope'; profiles: readonly"):
        GatewaySettings.load({}, profile="nope")
    with pytest.raises(ValueError, match="non-empty"):
        GatewaySettings.load({"disabled_tools": [""]})
    with pytest.raises(ValueError, match="extra"):
        GatewaySettings.load({"profiles": {"x": {"read_onyl": True}}})


@pytest.mark.anyio
async def test_hidden_tools_are_hidden_in_every_listing_and_refused_when_called(tmp_path: Path) -> None:
    from mcp_sections.servers.gateway.server import build_gateway_server

    settings = Settings.load(data_dir=tmp_path / "data")
    config = GatewaySettings.load(
        {"disabled_tools": ["todo_delete", "calculator:*_integrate"], "expose": ["todo"], "in_process": ["todo"]}
    )
    server, gateway = build_gateway_server(settings, config)
    async with Client(server) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert "todo_create" in listed and "todo_delete" not in listed  # the exposed tools

        sections = {s["id"]: s for s in data_of(await client.call_tool("list_tool_sections", {}))["sections"]}
        assert "todo_delete" not in sections["todo"]["tools"] and sections["todo"]["tool_count"] == 7
        assert "calculator_integrate" not in sections["calculator"]["tools"]
        assert "calculator_differentiate" in sections["calculator"]["tools"]

        described = data_of(await client.call_tool("describe_section", {"section": "todo"}))
        assert "todo_delete" not in {tool["name"] for tool in described["tools"]}
        assert described["section"]["tool_count"] == 7

        found = data_of(await client.call_tool("find_tools", {"query": "delete a todo task", "limit": 10}))
        assert found["tools"] and "todo_delete" not in {tool["name"] for tool in found["tools"]}

        refused = await client.call_tool(
            "call_section_tool", {"section": "todo", "tool": "todo_delete", "arguments": {"task_id": "task_1"}}
        )
        code, message = error_of(refused)
        assert code == "PERMISSION_DENIED"
        assert "'todo_delete' of [gateway] disabled_tools" in message
        assert error_of(await client.call_tool("todo_delete", {"task_id": "task_1"}))[0] == "NOT_FOUND"
        created = await client.call_tool(
            "call_section_tool", {"section": "todo", "tool": "todo_create", "arguments": {"name": "kept"}}
        )
        assert not created.is_error
    todo_calls = [record["tool"] for record in read_records(tmp_path / "data" / "audit", "todo")]
    assert todo_calls == ["todo_create"], "a refused call never reaches the section"
    assert gateway.pool.filters.describe() == "disabled: todo_delete, calculator:*_integrate"


def readonly_agent(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("todo_create", {"name": "not allowed"})])
    return Reply(text=f"My tools: {', '.join(sorted(request.tools))} [list_tool_sections].")


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"readonly": readonly_agent}) as server:
        yield server


@pytest.mark.anyio
async def test_profile_readonly_from_the_command_line_covers_calls_and_sub_agents(
    tmp_path: Path, model: ScriptedModel
) -> None:
    config = write_config(tmp_path / "config.toml", model_table(model.base_url))
    args = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "--profile", "readonly"]
    args += ["--in-process", "todo"]
    async with gateway_in_memory(*args, env={"SCRIPTED_MODEL_KEY": "k"}, cwd=tmp_path) as client:
        sections = {s["id"]: s for s in data_of(await client.call_tool("list_tool_sections", {}))["sections"]}
        assert set(sections["todo"]["tools"]) == TODO_READERS
        refused = await client.call_tool(
            "call_section_tool", {"section": "todo", "tool": "todo_create", "arguments": {"name": "x"}}
        )
        code, message = error_of(refused)
        assert code == "PERMISSION_DENIED" and "profile 'readonly'" in message and "--profile" in message
        listed = await client.call_tool("call_section_tool", {"section": "todo", "tool": "todo_list", "arguments": {}})
        assert not listed.is_error

        planned = data_of(
            await client.call_tool("plan_actions", {"goal": "[script:readonly] go", "sections": ["todo"]})
        )
        seen: Any = model.requests[0].tools
        assert {name for name in seen if name.startswith("todo_")} == TODO_READERS
        assert "not available to you" in model.requests[-1].tool_results[0]
        assert planned["success"]


def test_an_unknown_profile_stops_the_gateway_with_the_known_ones(tmp_path: Path) -> None:
    from mcp_sections.servers.pool.settings import load_gateway_settings
    from mcp_sections.shared.settings.config import load_settings

    config = tmp_path / "c.toml"
    config.write_text("[gateway.profiles.review]\nread_only = true\n", encoding="utf-8")
    settings = load_settings(config_file=config, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="unknown tool profile 'writer'; profiles: readonly, review"):
        load_gateway_settings(settings, profile="writer")
    assert load_gateway_settings(settings, profile="review").tool_filter().read_only
