"""A sub-agent run that fails is told as a failure: plan_actions (and orchestration's spawn_agent) whose sub-agents got
nothing done — the model unreachable, too slow — is an MCP tool error with the failure's code and how to fix it; one
that did some work and then failed returns that work, `success: false`. Its metrics count only what the model
reported, and name the model. The gateway in memory; the model is a scripted stand-in on 127.0.0.1, or a port where
nothing listens."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.helpers import write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.stdio import data_of, error_of

KEY = {"SCRIPTED_MODEL_KEY": "sk-failed-plans"}
IN_PROCESS = ("--in-process", "calculator")


def add_then_fail(request: Request) -> Reply:
    """One tool call, then the model's host breaks (a 500: DEPENDENCY_ERROR)."""
    if request.turn == 0:
        return Reply(tool_calls=[("calculator_binary", {"operation": "add", "a": 2, "b": 3})])
    raise RuntimeError("the model's host went down")


def second_breaks(request: Request) -> Reply:
    """Action 1 completes; action 2's very first model call fails."""
    if "(2 of 3)" in request.goal:
        raise RuntimeError("the model's host went down")
    return Reply(text="Done [none].")


def slow(request: Request) -> Reply:
    return Reply(text="Too late.", delay=2.0)


@pytest.fixture
def unreachable() -> Iterator[str]:
    """A model URL on 127.0.0.1 whose port is held by this test and never listened on: connections are refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel({"add_then_fail": add_then_fail, "second_breaks": second_breaks, "slow": slow}) as server:
        yield server


def args(tmp_path: Path, *tables: str) -> list[str]:
    config = write_config(tmp_path / "config.toml", *tables)
    return ["--config", str(config), "--data-dir", str(tmp_path / "data"), *IN_PROCESS]


def plan(goal: str, **more: Any) -> dict[str, Any]:
    return {"goal": goal, "sections": ["calculator"], **more}


@pytest.mark.anyio
async def test_a_plan_whose_model_cannot_be_reached_is_an_error(tmp_path: Path, unreachable: str) -> None:
    table = f'[gateway.model]\nprovider = "openai"\nmodel = "m1"\nbase_url = "{unreachable}"\n'
    agents = '[sections.orchestration.agents.adder]\nname = "Adder"\nsections = ["calculator"]\n'
    async with gateway_in_memory(*args(tmp_path, table, agents), cwd=tmp_path) as client:
        result = await client.call_tool("plan_actions", plan("Add 2 and 3."))
        code, message = error_of(result)
        assert code == "DEPENDENCY_ERROR"
        assert message.startswith(f"the sub-agent could not start: cannot reach the model endpoint at {unreachable}")
        assert "[gateway.model] base_url" in message  # how to fix it
        actions = [{"description": f"step {n}"} for n in range(3)]
        code, message = error_of(await client.call_tool("plan_actions", plan("Three steps.", actions=actions)))
        assert code == "DEPENDENCY_ERROR" and message.startswith("none of the 3 sub-agents could start: cannot reach")
        # orchestration's sub-agents (hosted by the gateway) alike
        spawn = {"name": "helper", "prompt": "Add 2 and 3.", "sections": ["calculator"]}
        forwarded = {"section": "orchestration", "tool": "spawn_agent", "arguments": spawn}
        code, message = error_of(await client.call_tool("call_section_tool", forwarded))
        assert code == "DEPENDENCY_ERROR" and "could not start: cannot reach the model endpoint" in message
        batch = {"tasks": [{"agent_id": "adder", "prompt": "Add 2 and 3."}, {"agent_id": "nobody", "prompt": "x"}]}
        forwarded = {"section": "orchestration", "tool": "parallel_tasks", "arguments": batch}
        code, message = error_of(await client.call_tool("call_section_tool", forwarded))
        assert code == "DEPENDENCY_ERROR" and message.startswith("no task could start — task 1 (adder): [DEPENDENCY_")
        assert "task 2 (nobody): [NOT_FOUND] Agent not found" in message


@pytest.mark.anyio
async def test_a_model_too_slow_to_answer_is_a_timeout(tmp_path: Path, model: ScriptedModel) -> None:
    table = model_table(model.base_url).replace("timeout_seconds = 30", "timeout_seconds = 0.3")
    async with gateway_in_memory(*args(tmp_path, table), env=KEY, cwd=tmp_path) as client:
        code, message = error_of(await client.call_tool("plan_actions", plan("[script:slow] wait")))
    assert code == "TIMEOUT" and "did not answer within 0 s" not in message
    assert "the model did not answer within" in message and "[gateway.model] timeout_seconds" in message


@pytest.mark.anyio
async def test_work_done_before_a_failure_is_returned(tmp_path: Path, model: ScriptedModel) -> None:
    async with gateway_in_memory(*args(tmp_path, model_table(model.base_url)), env=KEY, cwd=tmp_path) as client:
        result = data_of(await client.call_tool("plan_actions", plan("[script:add_then_fail] Add 2 and 3.")))
        assert result["success"] is False
        action = result["actions"][0]
        assert action["status"] == "failed" and "DEPENDENCY_ERROR" in action["error"]
        assert "`calculator_binary`" in result["report"]  # the work done, with its source
        assert result["metrics"]["tool_calls"] == 1 and result["metrics"]["tokens_reported"] == 1
        assert result["model"] == "scripted" and "model: scripted (openai)" in result["report"]
        # sequential: once an action's model cannot be reached, the next ones are skipped; the first one's work stays
        steps = [{"description": f"step {n}"} for n in range(1, 4)]
        result = data_of(await client.call_tool("plan_actions", plan("[script:second_breaks] go", actions=steps)))
    assert [action["status"] for action in result["actions"]] == ["completed", "failed", "skipped"]
    assert result["success"] is False and result["metrics"]["tokens_reported"] == 1
    never_answered = result["actions"][1]["metrics"]
    assert never_answered["tokens_input"] == 0 and never_answered["tokens_reported"] == 0  # nothing was reported
    assert "## Action 3: step 3 — skipped" in result["report"]
