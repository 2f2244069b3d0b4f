"""Gaps closed with real section processes (the gateway in memory): cancelling plan_actions stops the whole
sub-agent tree; a section killed in the middle of a call fails that call alone; call_section_tool's validation errors
point at the field."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.gateway.helpers import builtin_available, demo_section_table, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.processes import kill_running_with, running_with, unique_seconds
from tests.stdio import data_of, error_of
from tests.waiting import cancelled_once, eventually

KEY = {"SCRIPTED_MODEL_KEY": "sk-cancel-test"}
WORKFLOW = "wf_cancel"
pytestmark = pytest.mark.skipif(
    not (builtin_available("todo") and builtin_available("shell_ops")), reason="todo/shell_ops not importable"
)
_steps = itertools.count(1)


def tree(request: Request) -> Reply:
    """Depth 1 delegates to depth 2, which works forever: one todo_create per turn."""
    if request.depth == 1 and request.turn == 0:
        return Reply(tool_calls=[("plan_actions", {"goal": "[script:tree] keep working", "sections": ["todo"]})])
    if request.depth == 1:
        return Reply(text="The deeper agent finished [plan_actions].")
    step = next(_steps)
    return Reply(tool_calls=[("todo_create", {"workflow_id": WORKFLOW, "name": f"step {step}"})], delay=0.15)


def quick(request: Request) -> Reply:
    return Reply(text="Done [none].", delay=0.3)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"tree": tree, "quick": quick}) as server:
        yield server


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway-cancel")


@pytest.fixture(scope="module")
async def client(workdir: Path, model: ScriptedModel) -> AsyncIterator[Client]:
    shell = '[sections.shell_ops]\nallowed_programs = ["sleep"]\n'
    limits = "[gateway]\nagent_max_turns = 200\nrestart_backoff_seconds = 0.05\n"
    config = write_config(workdir / "config.toml", limits, demo_section_table(), model_table(model.base_url), shell)
    args = ["--config", str(config), "--data-dir", str(workdir / "data"), "--root", str(workdir)]
    async with gateway_in_memory(*args, env=KEY, cwd=workdir) as connected:
        yield connected


async def todo_count(client: Client) -> int:
    result = await client.call_tool(
        "call_section_tool", {"section": "todo", "tool": "todo_list", "arguments": {"workflow_id": WORKFLOW}}
    )
    return data_of(result)["total"]


@pytest.mark.anyio
async def test_cancelling_plan_actions_stops_the_whole_tree(client: Client, model: ScriptedModel) -> None:
    assert await todo_count(client) == 0  # the todo section is started before the plan
    arguments = {"goal": "[script:tree] start", "sections": ["todo"]}
    # cancelled once the deeper agent is at work: its third request carries the results of two todo_create calls
    still_running = await cancelled_once(
        lambda: client.call_tool("plan_actions", arguments),
        lambda: sum(request.depth == 2 for request in model.requests) >= 3,
    )
    assert still_running, "the plan should still have been running"
    assert {request.depth for request in model.requests} == {1, 2}  # the tree was two levels deep
    await anyio.sleep(0.5)  # a model answer (0.15 s) or a tool call already in flight may land
    requests, created = len(model.requests), await todo_count(client)
    assert created >= 2
    await anyio.sleep(1.0)  # the deeper agent made a request every ~0.2 s: five would have come
    assert len(model.requests) == requests, "no model request after the cancellation"
    assert await todo_count(client) == created, "no tool call after the cancellation"
    # the three slots are free again: three concurrent plans all run
    model.requests.clear()
    results: list[Any] = []

    async def one() -> None:
        results.append(await client.call_tool("plan_actions", {"goal": "[script:quick] go", "sections": ["demo"]}))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            group.start_soon(one)
    assert [data_of(result)["success"] for result in results] == [True, True, True]
    assert model.peak_in_flight == 3


@pytest.mark.anyio
async def test_a_section_killed_during_a_call_fails_that_call_only(client: Client, workdir: Path) -> None:
    marker = f"serve shell_ops --data-dir {workdir / 'data'}"
    outcome: dict[str, Any] = {}
    warm = {"section": "shell_ops", "tool": "run_command", "arguments": {"command": ["sleep", "0.1"]}}
    assert data_of(await client.call_tool("call_section_tool", warm))["exit_code"] == 0
    running = running_with(marker)
    assert running

    sleeping = f"sleep {unique_seconds(30)}"  # found by its command line, whatever else runs on the machine

    async def long_call() -> None:
        arguments = {"command": sleeping.split(), "timeout_seconds": 60}
        started = time.monotonic()
        outcome["result"] = await client.call_tool(
            "call_section_tool", {"section": "shell_ops", "tool": "run_command", "arguments": arguments}
        )
        outcome["seconds"] = time.monotonic() - started

    async with anyio.create_task_group() as group:
        group.start_soon(long_call)
        await eventually(lambda: running_with(sleeping), interval=0.05)  # inside run_command, sleeping
        assert "result" not in outcome
        killed = kill_running_with(marker)
        assert killed
    code, message = error_of(outcome["result"])
    assert code == "DEPENDENCY_ERROR" and "shell_ops" in message and "restarts it" in message
    assert outcome["seconds"] < 20
    await eventually(lambda: not running_with(sleeping), timeout=10)  # its sandboxed program went with it
    assert data_of(await client.call_tool("call_section_tool", warm))["exit_code"] == 0  # restarted
    assert set(running_with(marker)).isdisjoint(killed)


@pytest.mark.anyio
async def test_call_section_tool_validation_errors_name_the_field(client: Client) -> None:
    # top-level problems are covered in test_gateway.py; here: nested paths, several at once, no values echoed
    result = await client.call_tool(
        "call_section_tool",
        {
            "section": "shell_ops",
            "tool": "run_command",
            "arguments": {"command": ["sleep", 5], "timeout_seconds": -1, "secret": "hunter2"},
        },
    )
    code, message = error_of(result)
    assert code == "INVALID_INPUT"
    assert "secret: unknown argument" in message and "timeout_seconds: must be > 0" in message
    assert "command.1: must be of type string" in message and "hunter2" not in message
    assert "describe_section" in message and "anyOf" not in message
    assert result.structured_content["details"]["fields"] == ["command", "secret", "timeout_seconds"]
    # every alternative refused the value: they are all named
    result = await client.call_tool(
        "call_section_tool", {"section": "shell_ops", "tool": "run_command", "arguments": {"command": 5}}
    )
    assert "command: must be of type array or string" in error_of(result)[1]
