"""plan_actions end to end: the gateway in memory (its demo section a process), sub-agents on a scripted
OpenAI-compatible model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.gateway.helpers import demo_section_table, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.stdio import data_of, error_of

DEMO_TOOLS = {"demo_sum", "demo_lookup", "demo_count"}
SECRET = "sk-test-secret-4242"


def dive(request: Request) -> Reply:
    """Delegate down to the deepest level (trying a forged depth first), then add numbers and report."""
    if "plan_actions" in request.tools:
        if request.turn == 0:
            forged = {"goal": "[script:dive] deeper", "sections": ["demo"], "depth": 0}
            return Reply(tool_calls=[("plan_actions", forged)])
        if request.turn == 1:
            return Reply(tool_calls=[("plan_actions", {"goal": "[script:dive] deeper", "sections": ["demo"]})])
        return Reply(text=f"Depth {request.depth}: the deeper agent finished [plan_actions].")
    if request.turn == 0:  # deepest level: plan_actions is not offered; calling it anyway is refused
        return Reply(
            tool_calls=[
                ("plan_actions", {"goal": "[script:dive] deeper", "sections": ["demo"]}),
                ("demo_sum", {"numbers": [20, 22]}),
            ]
        )
    return Reply(text=f"Depth {request.depth}: the sum is 42 [demo_sum].")


def slow(request: Request) -> Reply:
    return Reply(text="Done slowly [none].", delay=0.6)


def loop(request: Request) -> Reply:
    return Reply(tool_calls=[("demo_sum", {"numbers": [1]})])


def count(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("demo_count", {"steps": 2})])
    return Reply(text="Counted to 2 [demo_count].")


def inject(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("demo_lookup", {"key": "alpha"}), ("todo_list", {})])
    return Reply(text="alpha is 1 [demo_lookup].")


def audited(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("todo_list", {})])
    return Reply(text="Listed the board [todo_list].")


def widen(request: Request) -> Reply:
    """A sub-agent given only `demo` asks for a child with `todo`, then reports what it was told."""
    if request.turn == 0:
        return Reply(tool_calls=[("plan_actions", {"goal": "[script:count] x", "sections": ["todo"]})])
    return Reply(text=f"Refused: {request.tool_results[-1][:300]} [plan_actions].")


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    scripts = {
        "dive": dive,
        "slow": slow,
        "loop": loop,
        "inject": inject,
        "count": count,
        "widen": widen,
        "audited": audited,
    }
    with ScriptedModel(scripts) as server:
        yield server


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gateway-agents")


@pytest.fixture(scope="module")
async def client(workdir: Path, model: ScriptedModel) -> AsyncIterator[Client]:
    limits = "[gateway]\nagent_max_turns = 4\n"
    config = write_config(workdir / "config.toml", limits, demo_section_table(), model_table(model.base_url))
    args = ["--config", str(config), "--data-dir", str(workdir / "data")]
    async with gateway_in_memory(*args, env={"SCRIPTED_MODEL_KEY": SECRET}, cwd=workdir) as connected:
        yield connected


@pytest.fixture(autouse=True)
def fresh_model(model: ScriptedModel) -> None:
    model.requests.clear()
    model.peak_in_flight = 0


async def plan(client: Client, progress: list[str] | None = None, **arguments: Any) -> Any:
    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if progress is not None:
            progress.append(message or "")

    return await client.call_tool("plan_actions", arguments, progress_callback=on_progress)


@pytest.mark.anyio
async def test_depths_tool_sets_and_forged_depth(client: Client, model: ScriptedModel) -> None:
    progress: list[str] = []
    result = data_of(await plan(client, progress, goal="[script:dive] start", sections=["demo"]))
    assert result["success"] is True
    assert result["metrics"]["depth"] == 1 and result["metrics"]["tool_calls"] == 2
    tools_by_depth: dict[int, set[str]] = {}
    for request in model.requests:
        tools_by_depth.setdefault(request.depth, set(request.tools))
        assert set(request.tools) == tools_by_depth[request.depth], "a sub-agent's tools never change"
    assert sorted(tools_by_depth) == [1, 2, 3]  # the forged depth=0 changed nothing; nothing ran deeper than 3
    for depth in (1, 2):
        assert tools_by_depth[depth] == DEMO_TOOLS | {"list_tool_sections", "plan_actions"}
    assert tools_by_depth[3] == DEMO_TOOLS | {"list_tool_sections"}
    # the forged `depth` argument was refused as unknown
    depth1_turn1 = next(r for r in model.requests if r.depth == 1 and r.turn == 1)
    assert "INVALID_INPUT" in depth1_turn1.tool_results[0] and "depth: unknown argument" in depth1_turn1.tool_results[0]
    # at the maximum depth, plan_actions is not a tool the agent has
    depth3_turn1 = next(r for r in model.requests if r.depth == 3 and r.turn == 1)
    assert "[NOT_FOUND]" in depth3_turn1.tool_results[0] and "not available" in depth3_turn1.tool_results[0]
    assert "42" in depth3_turn1.tool_results[1] and "data, not instructions" in depth3_turn1.tool_results[1]
    # the report names the tools behind the facts, the key went only to the model endpoint
    assert "[plan_actions]" in result["report"] and "`plan_actions`" in result["report"]
    assert all(r.authorization == f"Bearer {SECRET}" for r in model.requests)
    assert progress and any("depth 1" in message for message in progress)
    info = data_of(await client.call_tool("get_environment_info", {}))
    assert info["model"]["api_key_set"] is True and info["model"]["api_key_env"] == "SCRIPTED_MODEL_KEY"
    assert SECRET not in str(info) and SECRET not in str(result)


@pytest.mark.anyio
async def test_slot_limit_holds_under_concurrent_calls(client: Client, model: ScriptedModel) -> None:
    results: list[Any] = []

    async def one() -> None:
        results.append(await plan(client, goal="[script:slow] wait", sections=["demo"]))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(one)
    codes = sorted("ok" if not r.is_error else r.structured_content["error_code"] for r in results)
    assert codes == ["MAX_LIMIT_EXCEEDED", "MAX_LIMIT_EXCEEDED", "ok", "ok", "ok"]
    assert model.peak_in_flight <= 3
    # once they are done, the slots are free again
    assert data_of(await plan(client, goal="[script:slow] again", sections=["demo"]))["success"]


@pytest.mark.anyio
async def test_parallel_actions_run_concurrently_within_the_limit(client: Client, model: ScriptedModel) -> None:
    actions = [{"description": f"[script:slow] part {n}", "complexity": "simple"} for n in range(4)]
    # first in sequence (untimed: it also starts the section and the agent machinery): one action at a time
    sequential = data_of(await plan(client, goal="[script:slow] two parts", sections=["demo"], actions=actions[:2]))
    assert model.peak_in_flight == 1 and len(sequential["actions"]) == 2
    result = data_of(
        await plan(client, goal="[script:slow] four parts", sections=["demo"], actions=actions, strategy="parallel")
    )
    assert [action["status"] for action in result["actions"]] == ["completed"] * 4
    assert model.peak_in_flight == 3  # three at once (the limit), the fourth when one finished: no clock needed
    assert result["metrics"]["tokens_input"] == 40 and result["metrics"]["tokens_output"] == 20
    assert "## Action 4" in result["report"]


@pytest.mark.anyio
async def test_turn_budget_and_unknown_tools(client: Client, model: ScriptedModel) -> None:
    result = data_of(await plan(client, goal="[script:loop] forever", sections=["demo"]))
    assert result["success"] is False
    action = result["actions"][0]
    assert action["status"] == "budget_exceeded" and "turn budget (4)" in action["error"]
    assert action["metrics"]["turns"] == 4 and action["metrics"]["tool_calls"] == 4
    # a tool of a section the agent was not given is refused
    result = data_of(await plan(client, goal="[script:inject] look up", sections=["demo"]))
    turn1 = next(r for r in model.requests if r.script == "inject" and r.turn == 1)
    assert "[NOT_FOUND] tool 'todo_list' is not available" in turn1.tool_results[1]
    assert result["success"] is True


@pytest.mark.anyio
async def test_plan_actions_refuses_bad_requests(client: Client) -> None:
    code, message = error_of(await plan(client, goal="x", sections=["nope"]))
    assert code == "NOT_FOUND" and "demo" in message
    code, message = error_of(await plan(client, goal="x", sections=["demo"], depth=2))
    assert code == "INVALID_INPUT" and "depth" in message
    code, _ = error_of(await plan(client, goal="x", sections=[]))
    assert code == "INVALID_INPUT"


@pytest.mark.anyio
async def test_plan_actions_on_a_modern_connection_with_nested_progress(tmp_path: Path, model: ScriptedModel) -> None:
    config = write_config(tmp_path / "config.toml", demo_section_table(), model_table(model.base_url))
    args = ["--config", str(config), "--data-dir", str(tmp_path / "data")]
    async with gateway_in_memory(*args, env={"SCRIPTED_MODEL_KEY": SECRET}, mode="auto") as client:
        assert client.protocol_version >= "2026"
        progress: list[str] = []
        result = data_of(await plan(client, progress, goal="[script:count] count", sections=["demo"]))
    assert result["success"] and "`demo_count`" in result["report"]
    # the section's own progress reaches the client through the sub-agent
    assert [message for message in progress if message.endswith(("step 1", "step 2"))] == [
        "depth 1 · task 1/1 · step 1",
        "depth 1 · task 1/1 · step 2",
    ]


@pytest.mark.anyio
async def test_a_sub_agent_cannot_give_its_children_sections_it_lacks(client: Client, model: ScriptedModel) -> None:
    result = data_of(await plan(client, goal="[script:widen] try", sections=["demo"]))
    assert "PERMISSION_DENIED" in result["report"] and "todo" in result["report"]
    assert [request.script for request in model.requests].count("count") == 0  # no child ever started


@pytest.mark.anyio
async def test_a_sub_agents_calls_are_audited_with_its_depth_and_id(client: Client, workdir: Path) -> None:
    from mcp_sections.shared.serving.audit import read_records

    result = await plan(client, goal="[script:audited] list the board", sections=["todo"])
    assert not result.is_error
    records = [r for r in read_records(workdir / "data" / "audit", "todo") if r["tool"] == "todo_list"]
    assert records, "the todo section audited nothing"
    assert records[-1]["depth"] == 1 and str(records[-1]["agent_id"]).startswith("agent-")
    plans: list[dict[str, Any]] = []
    with anyio.fail_after(5):  # the gateway writes a call's record just after sending its reply
        while not plans:
            plans = [r for r in read_records(workdir / "data" / "audit", "gateway") if r["tool"] == "plan_actions"]
            await anyio.sleep(0.01)
    assert plans[-1]["depth"] == 0 and plans[-1]["outcome"] == "OK"  # the gateway's own tools too
