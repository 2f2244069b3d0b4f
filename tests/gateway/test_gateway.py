"""The gateway in memory, built from the CLI's words, with real section subprocesses (one gateway per module). The
gateway's own process is the subject elsewhere: over stdio in test_tasks, test_telemetry and test_real_project, over
HTTP in test_expose and test_tasks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.registry import BUILTIN_SECTIONS
from tests.gateway.helpers import GATEWAY_TOOLS, builtin_available, demo_section_table, write_config
from tests.in_memory import gateway_in_memory
from tests.processes import kill_running_with, running_with
from tests.shell_ops.repos import git, make_repo
from tests.stdio import call, check_snapshot, data_of, error_of, fail
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(not builtin_available("todo"), reason="the todo section is not importable")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway")


@pytest.fixture(scope="module")
async def client(workdir: Path) -> AsyncIterator[Client]:
    broken = '[gateway.sections.broken]\ncommand = "/nonexistent/mcp-server"\ndescription = "Cannot start."\n'
    watch = "[gateway]\nrestart_backoff_seconds = 0.05\nidle_watch_seconds = 0.25\n"  # see a dead section sooner
    config = write_config(workdir / "config.toml", watch, demo_section_table(), broken)
    project = make_repo(workdir / "project")
    git(project, "checkout", "-q", "-b", "feature/x")
    (project / "package.json").write_text('{"name": "web-app", "version": "2.1.0"}')
    git(project, "add", "package.json")
    git(project, "commit", "-q", "-m", "the web app")
    args = ["--config", str(config), "--data-dir", str(workdir / "data"), "--root", str(workdir)]
    async with gateway_in_memory(*args, cwd=workdir) as connected:
        yield connected


def todo_marker(workdir: Path) -> str:
    return f"serve todo --data-dir {workdir / 'data'}"


@pytest.mark.anyio
async def test_list_tool_sections_starts_no_process(client: Client, workdir: Path) -> None:
    listing = await call(client, "list_tool_sections")
    sections = {section["id"]: section for section in listing["sections"]}
    assert listing["always_available"] == GATEWAY_TOOLS
    todo = sections["todo"]
    assert todo["kind"] == "builtin" and todo["state"] == "not_started"
    assert "todo_create" in todo["tools"] and todo["tool_count"] == len(todo["tools"])
    demo = sections["demo"]
    assert demo["kind"] == "stdio" and demo["state"] == "not_started" and demo["tools_known"] is False
    assert list(sections) == [*BUILTIN_SECTIONS, "broken", "demo"]
    # describing a built-in section is computed from its declaration: still no process
    described = await call(client, "describe_section", section="todo")
    create = next(tool for tool in described["tools"] if tool["name"] == "todo_create")
    assert {"inputSchema", "outputSchema", "annotations", "description"} <= set(create)
    assert create["annotations"]["readOnlyHint"] is False
    assert running_with(todo_marker(workdir)) == []


@pytest.mark.anyio
async def test_tools_list_snapshot_is_stable(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == GATEWAY_TOOLS
    check_snapshot("gateway", [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools])
    forward = next(tool for tool in tools if tool.name == "call_section_tool")
    assert forward.output_schema is None  # it returns the section's own results
    assert client.server_capabilities.tools is not None
    assert not client.server_capabilities.tools.list_changed
    again = (await client.list_tools(cache_mode="refresh")).tools
    assert [tool.name for tool in again] == GATEWAY_TOOLS


@pytest.mark.anyio
async def test_call_section_tool_forwards_results_unchanged(client: Client, workdir: Path) -> None:
    created = await call(
        client,
        "call_section_tool",
        section="todo",
        tool="todo_create",
        arguments={"workflow_id": "wf_gateway", "name": "Write the gateway", "priority": 2},
    )
    task_id = created.get("task_id") or created.get("task", {}).get("id")
    assert task_id
    assert running_with(todo_marker(workdir)), "the todo section runs once used"
    sections = {s["id"]: s for s in (await call(client, "list_tool_sections"))["sections"]}
    assert sections["todo"]["state"] == "running"
    # the section's own error comes back as it sent it
    result = await client.call_tool(
        "call_section_tool", {"section": "todo", "tool": "todo_get", "arguments": {"task_id": "task_missing"}}
    )
    code, message = error_of(result)
    assert code in ("NOT_FOUND", "INVALID_INPUT") and message


@pytest.mark.anyio
async def test_arguments_are_checked_against_the_section_schema(client: Client) -> None:
    message = await fail(
        client, "call_section_tool", "INVALID_INPUT", section="todo", tool="todo_create", arguments={"priority": "x"}
    )
    assert "name: required argument is missing" in message
    assert "priority: must be of type integer" in message
    message = await fail(
        client,
        "call_section_tool",
        "INVALID_INPUT",
        section="demo",
        tool="demo_sum",
        arguments={"numbers": [1], "depth": 2},
    )
    assert "depth: unknown argument" in message
    result = await client.call_tool(
        "call_section_tool", {"section": "demo", "tool": "demo_sum", "arguments": {"numbers": [1, 2, 3, 4, 5, 6]}}
    )
    assert result.structured_content["details"]["fields"] == ["numbers"]
    # the gateway's own tool refuses unknown arguments too
    await fail(client, "call_section_tool", "INVALID_INPUT", section="demo", tool="demo_sum", depth=1)


@pytest.mark.anyio
async def test_unknown_section_or_tool_is_not_found(client: Client) -> None:
    message = await fail(client, "call_section_tool", "NOT_FOUND", section="nope", tool="x", arguments={})
    assert "todo" in message and "demo" in message
    message = await fail(client, "call_section_tool", "NOT_FOUND", section="todo", tool="todo_fly", arguments={})
    assert "todo_create" in message
    await fail(client, "describe_section", "NOT_FOUND", section="nope")
    await fail(client, "no_such_tool", "NOT_FOUND")


@pytest.mark.anyio
async def test_third_party_section_starts_on_use_and_forwards_progress(client: Client) -> None:
    described = await call(client, "describe_section", section="demo")
    assert [tool["name"] for tool in described["tools"]] == ["demo_sum", "demo_lookup", "demo_count"]
    assert described["section"]["state"] == "running"
    steps: list[tuple[float, float | None, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        steps.append((value, total, message))

    result = await client.call_tool(
        "call_section_tool",
        {"section": "demo", "tool": "demo_count", "arguments": {"steps": 3}},
        progress_callback=progress,
    )
    assert data_of(result) == {"steps": 3}
    assert [step[0] for step in steps] == [1, 2, 3]
    code, message = error_of(
        await client.call_tool(
            "call_section_tool", {"section": "demo", "tool": "demo_lookup", "arguments": {"key": "boom"}}
        )
    )
    assert code == "EXECUTION_FAILED" and "secret" not in message
    sections = {s["id"]: s for s in (await call(client, "list_tool_sections"))["sections"]}
    assert sections["demo"]["tools"] == ["demo_sum", "demo_lookup", "demo_count"]


@pytest.mark.anyio
async def test_a_section_killed_while_idle_is_seen_and_calls_never_reach_it(client: Client, workdir: Path) -> None:
    arguments = {"workflow_id": "wf_gateway"}
    await call(client, "call_section_tool", section="todo", tool="todo_list", arguments=arguments)
    killed = kill_running_with(todo_marker(workdir))
    assert killed
    # a read-only call right after the kill: it never ran on the dead process, so it is sent to a new one
    assert await call(client, "call_section_tool", section="todo", tool="todo_list", arguments=arguments) is not None
    alive = running_with(todo_marker(workdir))
    assert alive and not set(alive) & set(killed)
    # killed while idle: list_tool_sections stops showing it as running within a few seconds
    killed = kill_running_with(todo_marker(workdir))

    async def todo_once_not_running() -> dict[str, Any] | None:
        todo = next(s for s in (await call(client, "list_tool_sections"))["sections"] if s["id"] == "todo")
        return None if todo["state"] == "running" else todo

    todo = await eventually(todo_once_not_running, timeout=10, interval=0.05)
    assert todo["state"] == "stopped" and "idle" in todo["error"]
    # the next call, even one that writes, starts a new process: it never reaches the dead one
    created = await call(
        client, "call_section_tool", section="todo", tool="todo_create", arguments={**arguments, "name": "after"}
    )
    assert created and not set(running_with(todo_marker(workdir))) & set(killed)
    # other sections and the gateway itself were never affected
    assert (await call(client, "call_section_tool", section="demo", tool="demo_sum", arguments={"numbers": [2]}))[
        "total"
    ] == 2


@pytest.mark.anyio
async def test_a_section_that_cannot_start_fails_alone(client: Client) -> None:
    for _ in range(2):
        message = await fail(client, "call_section_tool", "DEPENDENCY_ERROR", section="broken", tool="x", arguments={})
        assert "could not be started" in message and "[gateway.sections.broken]" in message
    sections = {s["id"]: s for s in (await call(client, "list_tool_sections"))["sections"]}
    assert sections["broken"]["state"] == "failed" and sections["broken"]["error"]
    await fail(client, "describe_section", "DEPENDENCY_ERROR", section="broken")
    assert (await call(client, "call_section_tool", section="demo", tool="demo_sum", arguments={"numbers": [1]}))[
        "total"
    ] == 1


@pytest.mark.anyio
async def test_context_tools(client: Client, workdir: Path) -> None:
    where = await call(client, "get_working_directory")
    assert where["cwd"] == str(workdir.resolve())
    assert where["roots"] == [str(workdir.resolve())]
    info = await call(client, "get_environment_info")
    assert info["python"]["version"] and info["os"]["system"]
    assert info["model"]["configured"] is False and info["model"]["provider"] is None
    assert {s["id"] for s in info["sections"]} >= {"todo", "demo"}
    assert info["max_depth"] == 3 and info["max_subagents"] == 3
    project = await call(client, "get_project_info", path="project")
    assert project["type"] == "node" and project["name"] == "web-app" and project["version"] == "2.1.0"
    head = git(workdir / "project", "rev-parse", "HEAD").strip()  # what shell_ops' git_status reports
    assert project["git"] == {
        "root": str(workdir / "project"),
        "branch": "feature/x",
        "detached": False,
        "commit": head,
    }
    await fail(client, "get_project_info", "PERMISSION_DENIED", path="/")
    await fail(client, "get_project_info", "NOT_FOUND", path="missing")


@pytest.mark.anyio
async def test_plan_actions_without_a_model_says_how_to_configure_one(client: Client) -> None:
    message = await fail(client, "plan_actions", "DEPENDENCY_ERROR", goal="Add numbers", sections=["demo"])
    assert "[gateway.model]" in message and "MCP_SECTIONS_GATEWAY_MODEL_PROVIDER" in message
