"""The orchestration section (in memory; over stdio through the CLI for its snapshot): sub-agents on a scripted
model, ask_user answered through the client's elicitation callback in both protocol eras; behind the gateway (in
memory, the orchestration section a process)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.gateway.helpers import demo_section_table, write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.orchestration.helpers import User, orchestration_client
from tests.stdio import call, check_tools_snapshot, data_of, error_of, fail
from tests.waiting import cancelled_once

KEY = {"SCRIPTED_MODEL_KEY": "sk-orchestration-test"}
ORCHESTRATION_TOOLS = {
    "spawn_agent",
    "delegate_task",
    "parallel_tasks",
    "list_children",
    "terminate_agent",
    "list_agents",
}
DEMO_TOOLS = {"demo_sum", "demo_lookup", "demo_count"}

SECTION_TABLE = """
[sections.orchestration]
max_depth = 2
agent_max_turns = 6
ask_timeout_seconds = 0.5
ask_cooldown_seconds = 1
default_sections = ["demo"]

[sections.orchestration.agents.db_agent]
name = "Database Agent"
description = "Knows the demo data."
system_prompt = "You are the database agent."
sections = ["demo"]
capabilities = ["sql", "lookup"]

[sections.orchestration.agents.sum_agent]
name = "Sum Agent"
sections = ["demo"]
tools = ["demo_sum"]
model = "scripted-large"
capabilities = ["arithmetic"]
"""


def report(request: Request) -> Reply:
    if request.turn == 0:
        return Reply(tool_calls=[("demo_sum", {"numbers": [20, 22]})])
    return Reply(text=f"The sum is 42 [demo_sum] (depth {request.depth}).")


def slow(request: Request) -> Reply:
    return Reply(text="Done slowly.", delay=1.0)


def hang(request: Request) -> Reply:
    return Reply(tool_calls=[("demo_sum", {"numbers": [1]})], delay=0.3)


def broken(request: Request) -> Reply:
    raise RuntimeError("the model is down")


def escalate(request: Request) -> Reply:
    """A sub-agent that has only demo_sum asks for children with more, then for one with the default tools."""
    if request.turn == 0:
        wider = {"name": "wider", "prompt": "[script:report] x", "sections": ["demo"], "tools": ["demo_lookup"]}
        elsewhere = {"name": "elsewhere", "prompt": "[script:report] x", "sections": ["calculator"]}
        narrower = {"name": "narrower", "prompt": "[script:report] y"}  # default: the parent's own tools
        return Reply(tool_calls=[("spawn_agent", wider), ("spawn_agent", elsewhere), ("spawn_agent", narrower)])
    return Reply(text="Delegated what I could [spawn_agent].")


def selfish(request: Request) -> Reply:
    """A permanent agent tries to delegate to itself, then looks at who it may delegate to."""
    if request.turn == 0:
        again = {"agent_id": "db_agent", "prompt": "[script:report] again"}
        return Reply(tool_calls=[("delegate_task", again), ("list_agents", {})])
    return Reply(text="I did it myself [list_agents].")


def spawner(request: Request) -> Reply:
    """Hands the sum to a sub-agent of its own, then reports."""
    if request.turn == 0:
        return Reply(tool_calls=[("spawn_agent", {"name": "inner", "prompt": "[script:report] add"})])
    return Reply(text="The inner agent found 42 [spawn_agent].")


SCRIPTS = {
    "spawner": spawner,
    "report": report,
    "slow": slow,
    "hang": hang,
    "broken": broken,
    "escalate": escalate,
    "selfish": selfish,
}


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModel]:
    with ScriptedModel(SCRIPTS) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_model(model: ScriptedModel) -> None:
    model.requests.clear()
    model.peak_in_flight = 0


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, model: ScriptedModel) -> Path:
    workdir = tmp_path_factory.mktemp("orchestration")
    write_config(workdir / "config.toml", demo_section_table(), model_table(model.base_url), SECTION_TABLE)
    return workdir


@pytest.fixture(scope="module")
def user() -> User:
    return User()


@pytest.fixture(scope="module")
async def client(workdir: Path, user: User) -> AsyncIterator[Client]:
    async with orchestration_client(workdir / "config.toml", workdir, mode="legacy", user=user, env=KEY) as connected:
        yield connected


# -- listing ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_list_snapshot(workdir: Path) -> None:
    """The stdio smoke test: the CLI's process, its tools/list and a call."""
    async with orchestration_client(workdir / "config.toml", workdir, stdio=True, env=KEY) as client:
        tools = (await client.list_tools()).tools
        assert (await call(client, "list_agents"))["count"] == 2
    assert [tool.name for tool in tools] == [
        "spawn_agent",
        "list_children",
        "terminate_agent",
        "delegate_task",
        "list_agents",
        "parallel_tasks",
        "ask_user",
    ]
    check_tools_snapshot("orchestration", tools)


# -- spawn_agent, depth and tools ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_spawn_agent_reports_with_metrics(client: Client, model: ScriptedModel) -> None:
    result = await call(
        client, "spawn_agent", name="Adder", prompt="[script:report] add", system_prompt="You are careful with sums."
    )
    assert result["success"] is True and result["status"] == "completed" and result["name"] == "Adder"
    assert result["child_id"].startswith("agent-")
    assert "42 [demo_sum]" in result["report"] and "`demo_sum`" in result["report"]
    metrics = result["metrics"]
    assert metrics["tool_calls"] == 1 and metrics["turns"] == 2 and metrics["depth"] == 1
    assert metrics["tokens_input"] == 20 and metrics["tokens_output"] == 10
    first = model.requests[0]
    assert set(first.tools) == DEMO_TOOLS | ORCHESTRATION_TOOLS  # default_sections, depth 1 < max_depth 2
    assert first.authorization == "Bearer sk-orchestration-test"
    # refused before any model call
    await fail(client, "spawn_agent", "INVALID_INPUT", name="x", prompt="y", depth=0)
    await fail(client, "spawn_agent", "NOT_FOUND", name="x", prompt="y", sections=["nope"])
    await fail(client, "spawn_agent", "PERMISSION_DENIED", name="x", prompt="y", sections=["orchestration"])
    await fail(client, "spawn_agent", "INVALID_INPUT", name="x", prompt="y", tools=["todo_list"])
    await fail(client, "spawn_agent", "INVALID_INPUT", name="x", prompt="y", provider="anthropic")


@pytest.mark.anyio
async def test_a_child_never_gets_more_tools_or_depth_than_its_parent(client: Client, model: ScriptedModel) -> None:
    result = await call(
        client, "spawn_agent", name="Parent", prompt="[script:escalate] go", sections=["demo"], tools=["demo_sum"]
    )
    assert result["success"] is True
    parent_turn1 = next(r for r in model.requests if r.script == "escalate" and r.turn == 1)
    wider, elsewhere, allowed = parent_turn1.tool_results
    assert "[PERMISSION_DENIED]" in wider and "demo_lookup" in wider
    assert "[PERMISSION_DENIED]" in elsewhere and "calculator" in elsewhere
    assert "42 [demo_sum] (depth 2)" in allowed
    depths = {r.depth: set(r.tools) for r in model.requests}
    assert depths[1] == {"demo_sum"} | ORCHESTRATION_TOOLS
    assert depths[2] == {"demo_sum"}  # the deepest level gets no orchestration tools


@pytest.mark.anyio
async def test_metrics_count_the_tokens_of_the_sub_agents_started_below(client: Client, model: ScriptedModel) -> None:
    """Each sub-agent answers twice, 10 input / 5 output tokens each time: the depth-1 one and its child alike."""
    result = await call(client, "spawn_agent", name="Outer", prompt="[script:spawner] go")
    assert result["success"] and sorted(request.depth for request in model.requests) == [1, 1, 2, 2]
    metrics = result["metrics"]
    assert (metrics["tokens_input"], metrics["tokens_output"]) == (20, 10)  # its own
    assert (metrics["tokens_input_with_nested"], metrics["tokens_output_with_nested"], metrics["nested_agents"]) == (
        40,
        20,
        1,
    )
    batch = await call(client, "parallel_tasks", tasks=[{"agent_id": "db_agent", "prompt": "[script:spawner] go"}])
    assert batch["success"]
    for metrics in (batch["results"][0]["metrics"], batch["metrics"]):
        assert (metrics["tokens_input"], metrics["tokens_input_with_nested"]) == (20, 40)
    assert (
        "20 input / 10 output tokens by these tasks; 40 input / 20 output with the 1 nested sub-agent"
        in (batch["aggregated_report"])
    )


# -- delegate_task / list_agents -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_delegate_to_a_permanent_agent_and_no_self_delegation(client: Client, model: ScriptedModel) -> None:
    agents = await call(client, "list_agents")
    assert [agent["id"] for agent in agents["agents"]] == ["db_agent", "sum_agent"]
    assert agents["agents"][1]["model"] == "scripted-large" and agents["remaining_slots"] == 3
    result = await call(client, "delegate_task", agent_id="sum_agent", prompt="[script:report] add for me")
    assert result["success"] and result["agent_id"] == "sum_agent" and "42" in result["report"]
    assert set(model.requests[0].tools) == {"demo_sum"} | ORCHESTRATION_TOOLS
    model.requests.clear()
    result = await call(client, "delegate_task", agent_id="db_agent", prompt="[script:selfish] work")
    assert result["success"]
    first = model.requests[0]
    assert first.messages[0]["content"] == "[script:selfish] work"
    turn1 = next(r for r in model.requests if r.script == "selfish" and r.turn == 1)
    assert "[PERMISSION_DENIED]" in turn1.tool_results[0] and "itself" in turn1.tool_results[0]
    assert '"db_agent"' not in turn1.tool_results[1] and "sum_agent" in turn1.tool_results[1]
    message = await fail(client, "delegate_task", "NOT_FOUND", agent_id="nobody", prompt="x")
    assert "db_agent" in message and "sum_agent" in message


# -- parallel_tasks --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_parallel_tasks_report_partial_failure(client: Client, model: ScriptedModel) -> None:
    tasks = [
        {"agent_id": "db_agent", "prompt": "[script:report] first"},
        {"agent_id": "sum_agent", "prompt": "[script:broken] second"},
        {"agent_id": "nobody", "prompt": "[script:report] third"},
    ]
    result = await call(client, "parallel_tasks", tasks=tasks)
    assert result["success"] is False and result["completion"] == "some"
    assert (result["completed"], result["failed"]) == (1, 2)
    first, second, third = result["results"]
    assert first["success"] and "42" in first["report"] and first["metrics"]["tool_calls"] == 1
    assert not second["success"] and second["status"] == "failed" and "DEPENDENCY_ERROR" in second["error"]
    assert not third["success"] and third["status"] == "not_started" and "Agent not found" in third["error"]
    assert "## Task 1: db_agent — completed" in result["aggregated_report"]
    assert "1 of 3 tasks completed" in result["aggregated_report"]
    await fail(client, "parallel_tasks", "INVALID_INPUT", tasks=tasks + tasks[:1])


@pytest.mark.anyio
async def test_parallel_tasks_run_concurrently(client: Client, model: ScriptedModel) -> None:
    tasks = [{"agent_id": agent, "prompt": "[script:slow] wait"} for agent in ("db_agent", "sum_agent", "db_agent")]
    result = await call(client, "parallel_tasks", tasks=tasks)
    assert result["success"] and result["completion"] == "all" and result["completed"] == 3
    assert model.peak_in_flight == 3
    each = [task["metrics"]["duration_ms"] for task in result["results"]]
    assert result["metrics"]["duration_ms"] < sum(each)  # they overlapped (peak 3): the batch is not their sum


# -- the shared slot limit, list_children, terminate_agent ------------------------------------------------


@pytest.mark.anyio
async def test_slot_limit_is_shared_by_spawn_delegate_and_parallel(client: Client, model: ScriptedModel) -> None:
    results: list[Any] = []

    async def run(name: str, arguments: dict[str, Any]) -> None:
        results.append(await client.call_tool(name, arguments))

    async with anyio.create_task_group() as group:
        group.start_soon(run, "spawn_agent", {"name": "one", "prompt": "[script:slow] 1"})
        group.start_soon(run, "spawn_agent", {"name": "two", "prompt": "[script:slow] 2"})
        group.start_soon(run, "delegate_task", {"agent_id": "db_agent", "prompt": "[script:slow] 3"})
        live = await call(client, "list_children")
        for _ in range(100):  # all three hold their slot once their sections are ready
            if live["count"] == 3:
                break
            await anyio.sleep(0.05)
            live = await call(client, "list_children")
        assert live["count"] == 3 and live["remaining_slots"] == 0 and live["max_slots"] == 3
        assert sorted(child["kind"] for child in live["children"]) == ["delegate", "spawn", "spawn"]
        batch = [{"agent_id": "db_agent", "prompt": "[script:slow] 4"}]
        await fail(client, "parallel_tasks", "MAX_LIMIT_EXCEEDED", tasks=batch)
        await fail(client, "spawn_agent", "MAX_LIMIT_EXCEEDED", name="four", prompt="[script:slow] 4")
        await fail(client, "delegate_task", "MAX_LIMIT_EXCEEDED", agent_id="sum_agent", prompt="[script:slow] 4")
    assert all(not result.is_error for result in results)
    assert model.peak_in_flight == 3 and len(model.requests) == 3
    after = await call(client, "list_children")
    assert after["count"] == 0 and after["remaining_slots"] == 3


@pytest.mark.anyio
async def test_terminate_agent_stops_a_running_child(client: Client, model: ScriptedModel) -> None:
    outcome: dict[str, Any] = {}

    async def run() -> None:
        outcome.update(await call(client, "spawn_agent", name="Looper", prompt="[script:hang] forever"))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        children: list[dict[str, Any]] = []
        for _ in range(50):
            children = (await call(client, "list_children"))["children"]
            if children:
                break
            await anyio.sleep(0.05)
        assert [child["name"] for child in children] == ["Looper"]
        await anyio.sleep(0.5)
        stopped = await call(client, "terminate_agent", child_id=children[0]["id"])
        assert stopped["success"] and "Looper" in stopped["message"]
    assert outcome["status"] == "terminated" and outcome["success"] is False
    assert "terminate_agent" in outcome["error"]
    assert outcome["metrics"]["turns"] >= 1 and outcome["metrics"]["tokens_input"] >= 10  # what it spent is counted
    requests = len(model.requests)
    await anyio.sleep(0.5)
    assert len(model.requests) == requests  # nothing more after termination
    assert (await call(client, "list_children"))["remaining_slots"] == 3
    await fail(client, "terminate_agent", "NOT_FOUND", child_id=children[0]["id"])


@pytest.mark.anyio
async def test_cancelling_the_call_stops_the_sub_agent(client: Client, model: ScriptedModel) -> None:
    arguments = {"name": "Abandoned", "prompt": "[script:hang] forever"}
    # cancelled once the sub-agent is at work (one tool call done)
    assert await cancelled_once(lambda: client.call_tool("spawn_agent", arguments), lambda: len(model.requests) >= 2)
    await anyio.sleep(0.5)  # an answer already in flight (0.3 s) may land
    requests = len(model.requests)
    await anyio.sleep(0.8)  # the sub-agent asked the model every ~0.35 s: two would have come
    assert len(model.requests) == requests
    children = await call(client, "list_children")
    assert children["count"] == 0 and children["remaining_slots"] == 3


# -- ask_user --------------------------------------------------------------------------------------------

OPTIONS = [{"id": "pg", "label": "PostgreSQL"}, {"id": "sqlite", "label": "SQLite"}, {"id": "none", "label": "None"}]


@pytest.mark.anyio
async def test_ask_user_question_types_legacy(client: Client, user: User) -> None:
    assert client.protocol_version == "2025-11-25"
    user.will("accept", {"selected": ["pg", "sqlite"]})
    answer = await call(client, "ask_user", question="Which databases?", type="checkbox", options=OPTIONS)
    assert answer["status"] == "answered" and answer["selected"] == ["pg", "sqlite"]
    assert answer["selected_labels"] == ["PostgreSQL", "SQLite"]
    asked = user.questions[-1]
    assert asked.message == "Which databases?"
    selected = asked.requested_schema["properties"]["selected"]
    assert selected["items"]["anyOf"][0] == {"const": "pg", "title": "PostgreSQL"}
    user.will("accept", {"text": "Use port 5433."})
    answer = await call(client, "ask_user", question="Which port?", placeholder="a port", context="Default is 5432.")
    assert answer == {**answer, "status": "answered", "text": "Use port 5433.", "selected": None}
    assert user.questions[-1].message == "Which port?\n\nContext: Default is 5432."
    user.will("accept", {"text": "only this"})
    answer = await call(client, "ask_user", question="Pick or say", type="mixed", options=OPTIONS, multiple=False)
    assert answer["selected"] == [] and answer["text"] == "only this"
    assert user.questions[-1].requested_schema["properties"]["selected"]["maxItems"] == 1
    user.will("decline")
    assert (await call(client, "ask_user", question="Shall I?"))["status"] == "declined"
    user.will("cancel")
    assert (await call(client, "ask_user", question="Shall I?"))["status"] == "cancelled"
    user.will("accept", {"selected": ["mysql"]})
    await fail(client, "ask_user", "VALIDATION_FAILED", question="Which?", type="checkbox", options=OPTIONS)
    await fail(client, "ask_user", "INVALID_INPUT", question="Which?", type="checkbox")
    await fail(client, "ask_user", "INVALID_INPUT", question="x" * 2001)


@pytest.mark.anyio
async def test_ask_user_timeouts_open_the_circuit_breaker(client: Client, user: User) -> None:
    for attempt in range(3):
        user.will("sleep", (4.0, {"text": "too late"}))
        started = time.monotonic()
        message = await fail(client, "ask_user", "TIMEOUT", question=f"Still there? {attempt}")
        assert time.monotonic() - started < 3.0  # the server stopped waiting after 0.5 s
        assert ("paused" in message) == (attempt == 2)
    message = await fail(client, "ask_user", "DEPENDENCY_ERROR", question="And now?")
    assert "circuit breaker" in message and "3 questions" in message
    asked = len(user.questions)
    await anyio.sleep(1.1)  # the cooldown (1 s) ends
    assert len(user.questions) == asked  # nothing was asked while the breaker was open
    user.will("accept", {"text": "back"})
    assert (await call(client, "ask_user", question="Back?"))["text"] == "back"


@pytest.mark.anyio
async def test_ask_user_in_the_2026_era(workdir: Path) -> None:
    user = User()
    async with orchestration_client(workdir / "config.toml", workdir, mode="auto", user=user, env=KEY) as modern:
        assert modern.protocol_version >= "2026"
        user.will("accept", {"selected": ["none"]})
        answer = await call(modern, "ask_user", question="Which?", type="checkbox", options=OPTIONS)
        assert answer["status"] == "answered" and answer["selected_labels"] == ["None"]
        assert len(user.questions) == 1  # asked once (InputRequiredResult, then the retry carries the answer)
        user.will("decline")
        assert (await call(modern, "ask_user", question="Shall I?"))["status"] == "declined"
        user.will("sleep", (0.8, {"text": "late"}))
        message = await fail(modern, "ask_user", "TIMEOUT", question="Quick?")
        assert "within 0.5 s" in message
        user.will("accept", {"text": "in time"})
        assert (await call(modern, "ask_user", question="Now?"))["text"] == "in time"


@pytest.mark.anyio
async def test_without_model_or_elicitation_the_errors_say_what_to_do(tmp_path: Path) -> None:
    config = write_config(tmp_path / "config.toml", demo_section_table(), SECTION_TABLE)
    async with orchestration_client(config, tmp_path, mode="auto", user=None) as bare:
        message = await fail(bare, "spawn_agent", "DEPENDENCY_ERROR", name="x", prompt="y")
        assert "[gateway.model]" in message and "MCP_SECTIONS_GATEWAY_MODEL_PROVIDER" in message
        await fail(bare, "delegate_task", "DEPENDENCY_ERROR", agent_id="db_agent", prompt="y")
        await fail(bare, "parallel_tasks", "DEPENDENCY_ERROR", tasks=[{"agent_id": "db_agent", "prompt": "y"}])
        message = await fail(bare, "ask_user", "DEPENDENCY_ERROR", question="Anyone?")
        assert "elicitation" in message
        assert (await call(bare, "list_agents"))["count"] == 2


@pytest.mark.anyio
async def test_behind_the_gateway(workdir: Path, model: ScriptedModel) -> None:
    args = ["--config", str(workdir / "config.toml"), "--data-dir", str(workdir / "gateway-data")]
    async with gateway_in_memory(*args, env=KEY, cwd=workdir) as gateway:
        forwarded = {"section": "orchestration", "tool": "spawn_agent"}
        arguments = {"name": "Via gateway", "prompt": "[script:report] add"}
        result = data_of(await gateway.call_tool("call_section_tool", {**forwarded, "arguments": arguments}))
        assert result["success"] and "42 [demo_sum]" in result["report"]  # the model key reached the section
        assert model.requests[0].authorization == "Bearer sk-orchestration-test"
        # a gateway sub-agent never gets the orchestration section (its agents would restart at depth 0)
        code, message = error_of(await gateway.call_tool("plan_actions", {"goal": "x", "sections": ["orchestration"]}))
        assert code == "PERMISSION_DENIED" and "orchestration" in message
        # the gateway does not relay elicitation to its own client (yet): a clear error, not a hang
        question = {**forwarded, "tool": "ask_user", "arguments": {"question": "Anyone?"}}
        code, message = error_of(await gateway.call_tool("call_section_tool", question))
        assert code == "DEPENDENCY_ERROR" and "elicitation" in message


@pytest.mark.anyio
async def test_one_slot_pool_behind_the_gateway(workdir: Path, model: ScriptedModel) -> None:
    """3 plan_actions and 3 spawn_agent at once through one gateway: never more than max_subagents (3) run."""
    args = ["--config", str(workdir / "config.toml"), "--data-dir", str(workdir / "gateway-one-pool")]
    async with gateway_in_memory(*args, env=KEY, cwd=workdir) as gateway:
        model.peak_in_flight = 0
        outcomes: list[tuple[str, str | None]] = []

        async def plan(n: int) -> None:
            result = await gateway.call_tool("plan_actions", {"goal": f"[script:slow] plan {n}", "sections": ["demo"]})
            outcomes.append(("plan_actions", None if not result.is_error else error_of(result)[0]))

        async def spawn(n: int) -> None:
            forwarded = {"section": "orchestration", "tool": "spawn_agent"}
            arguments = {"name": f"spawned {n}", "prompt": "[script:slow] spawn", "sections": ["demo"]}
            result = await gateway.call_tool("call_section_tool", {**forwarded, "arguments": arguments})
            outcomes.append(("spawn_agent", None if not result.is_error else error_of(result)[0]))

        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(plan, n)
                group.start_soon(spawn, n)
        assert model.peak_in_flight <= 3, f"{model.peak_in_flight} sub-agents ran at once behind one gateway"
        refused = [code for _, code in outcomes if code is not None]
        assert len(outcomes) == 6 and len(refused) >= 3 and set(refused) == {"MAX_LIMIT_EXCEEDED"}
        listing = data_of(await gateway.call_tool("list_tool_sections", {}))
        states = {section["id"]: section["state"] for section in listing["sections"]}
        assert states.get("demo") == "running"  # one demo process, shared by both kinds of sub-agent
