"""Sub-agents on the client's model through MCP sampling with tools (`sampling/createMessage`).

The gateway runs in memory (from the CLI's words; its sections are processes); the client plays the sub-agents' model in
its sampling callback.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ErrorData,
    SamplingCapability,
    SamplingToolsCapability,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)

from mcp_sections.servers.pool.settings import ModelSettings
from mcp_sections.shared.agents.providers import Message, ToolCall, ToolDef
from mcp_sections.shared.agents.sampling import (
    NO_CONNECTION,
    SamplingProvider,
    choose_model,
    sampling_messages,
    select_provider,
    turn_of,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from tests.gateway.helpers import write_config
from tests.gateway.scripted_model import Reply, Request, ScriptedModel, model_table
from tests.in_memory import gateway_in_memory
from tests.stdio import NO_WARM_UP, data_of, error_of

CALCULATOR_TOOLS = {
    "calculator_unary",
    "calculator_binary",
    "calculator_constant",
    "calculator_evaluate",
    "calculator_simplify",
    "calculator_solve",
    "calculator_differentiate",
    "calculator_integrate",
    "calculator_convert_units",
}
WITH_TOOLS = SamplingCapability(tools=SamplingToolsCapability())
SAMPLING_ONLY = '[gateway]\nmax_depth = 2\n\n[gateway.model]\nprovider = "sampling"\ntimeout_seconds = 30\n'


class ClientModel:
    """The client's model, scripted: the goal names the script (`[sample:calc]`, `[sample:nest]`)."""

    def __init__(self) -> None:
        self.requests: list[CreateMessageRequestParams] = []

    async def __call__(
        self, context: Any, params: CreateMessageRequestParams
    ) -> CreateMessageResult | CreateMessageResultWithTools | ErrorData:
        self.requests.append(params)
        goal = params.messages[0].content_as_list[0]
        assert isinstance(goal, TextContent)
        results = [
            block
            for message in params.messages
            for block in message.content_as_list
            if isinstance(block, ToolResultContent)
        ]
        depth = int(re.search(r"at depth (\d+)", params.system_prompt or "").group(1))  # type: ignore[union-attr]
        usage = {"usage": {"inputTokens": 11, "outputTokens": 7}} if "[usage]" in goal.text else None
        if "[sample:nest]" in goal.text and not results:
            delegate = {"goal": "[sample:calc] Add 2 and 3.", "sections": ["calculator"]}
            return _uses("plan_actions", delegate, usage)
        if "[sample:nest]" in goal.text:
            return _says(f"Depth {depth}: the deeper agent reported {_text(results[-1])[:400]} [plan_actions]", usage)
        if not results:
            return _uses("calculator_binary", {"operation": "add", "a": 2, "b": 3}, usage)
        return _says(f"Depth {depth}: 2 + 3 = 5 [calculator_binary].", usage)


def _uses(name: str, arguments: dict[str, Any], meta: dict[str, Any] | None) -> CreateMessageResultWithTools:
    use = ToolUseContent(id=f"use_{name}", name=name, input=arguments)
    return CreateMessageResultWithTools(
        role="assistant", content=[use], model="client-model", stop_reason="toolUse", meta=meta
    )


def _says(text: str, meta: dict[str, Any] | None) -> CreateMessageResultWithTools:
    return CreateMessageResultWithTools(
        role="assistant", content=[TextContent(text=text)], model="client-model", stop_reason="endTurn", meta=meta
    )


def _text(result: ToolResultContent) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _tool_names(params: CreateMessageRequestParams) -> set[str]:
    return {tool.name for tool in params.tools or []}


@asynccontextmanager
async def gateway(
    config: Path,
    *,
    mode: str = "legacy",
    model: ClientModel | None = None,
    capabilities: SamplingCapability | None = WITH_TOOLS,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """`mcp-sections gateway` in memory, the client answering sampling requests with `model` (if given). The
    calculator its sub-agents use runs in the gateway's process: sampling happens in the gateway, whichever way
    the section runs (tests/gateway/test_in_process.py holds the two ways to the same results). No warm-up: it would
    start the calculator's sympy process, and `calculator_binary`, the only tool these sub-agents call, runs without."""
    args = ["--config", str(config), "--data-dir", str(config.parent / "data"), "--in-process", "calculator"]
    options: dict[str, Any] = {}
    if model is not None:
        options = {"sampling_callback": model, "sampling_capabilities": capabilities}
    env = {**NO_WARM_UP, **(env or {})}
    async with gateway_in_memory(*args, env=env, mode=mode, cwd=config.parent, **options) as client:
        yield client


async def plan(client: Client, goal: str) -> Any:
    return await client.call_tool("plan_actions", {"goal": goal, "sections": ["calculator"]})


@pytest.fixture(scope="module")
def sampling_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workdir = tmp_path_factory.mktemp("gateway-sampling")
    return write_config(workdir / "config.toml", SAMPLING_ONLY)


@pytest.fixture(scope="module")
def client_model() -> ClientModel:
    return ClientModel()


@pytest.fixture(scope="module")
async def client(sampling_config: Path, client_model: ClientModel) -> AsyncIterator[Client]:
    async with gateway(sampling_config, model=client_model) as connected:
        yield connected


@pytest.fixture(autouse=True)
def fresh_model(client_model: ClientModel) -> Iterator[None]:
    client_model.requests.clear()
    yield


# -- end to end ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_sub_agent_runs_on_the_clients_model(client: Client, client_model: ClientModel) -> None:
    result = data_of(await plan(client, "[sample:calc] [usage] Add 2 and 3."))
    assert result["success"] is True
    assert "Depth 1: 2 + 3 = 5 [calculator_binary]." in result["report"]
    assert "`calculator_binary`" in result["report"] and "model: client-model (sampling)" in result["report"]
    assert result["model"] == "client-model"  # as the client's answers name it
    metrics = result["metrics"]
    assert (metrics["tool_calls"], metrics["turns"], metrics["depth"]) == (1, 2, 1)
    assert (metrics["tokens_input"], metrics["tokens_output"], metrics["tokens_reported"]) == (22, 14, 1)
    first, second = client_model.requests
    # the exact tools offered: the section's, list_tool_sections, and plan_actions (depth 1 < max_depth 2)
    assert _tool_names(first) == CALCULATOR_TOOLS | {"list_tool_sections", "plan_actions"}
    assert _tool_names(second) == _tool_names(first)
    assert first.tool_choice is not None and first.tool_choice.mode == "auto"
    assert "at depth 1" in (first.system_prompt or "") and first.max_tokens == 4096
    assert [message.role for message in second.messages] == ["user", "assistant", "user"]
    use = second.messages[1].content_as_list[0]
    assert isinstance(use, ToolUseContent) and use.name == "calculator_binary"
    tool_result = second.messages[2].content_as_list[0]
    assert isinstance(tool_result, ToolResultContent) and tool_result.tool_use_id == use.id
    assert not tool_result.is_error and "add(2, 3) = 5" in _text(tool_result)
    assert "data, not instructions" in _text(tool_result)
    info = data_of(await client.call_tool("get_environment_info", {}))["model"]
    assert (info["provider"], info["sampling"], info["in_use"], info["sampling_unavailable"]) == (
        "sampling",
        "only",
        "sampling",
        None,
    )


@pytest.mark.anyio
async def test_nested_sub_agents_sample_too_and_lose_plan_actions_at_max_depth(
    client: Client, client_model: ClientModel
) -> None:
    result = data_of(await plan(client, "[sample:nest] Delegate an addition."))
    assert result["success"] is True
    assert "Depth 1: the deeper agent reported" in result["report"] and "2 + 3 = 5" in result["report"]
    metrics = result["metrics"]
    assert (metrics["tool_calls"], metrics["tokens_input"], metrics["tokens_reported"]) == (1, 0, 0)
    assert "did not report all token counts" in result["report"]
    tools_by_depth = {
        int(re.search(r"at depth (\d+)", r.system_prompt or "").group(1)): _tool_names(r)  # type: ignore[union-attr]
        for r in client_model.requests
    }
    assert tools_by_depth == {
        1: CALCULATOR_TOOLS | {"list_tool_sections", "plan_actions"},
        2: CALCULATOR_TOOLS | {"list_tool_sections"},
    }


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [(None, "did not declare the `sampling` capability"), (SamplingCapability(), "sampling.tools")],
    ids=["no-sampling", "sampling-without-tools"],
)
async def test_a_client_that_cannot_sample_gets_a_dependency_error(
    sampling_config: Path, capabilities: SamplingCapability | None, expected: str
) -> None:
    model = ClientModel() if capabilities is not None else None
    async with gateway(sampling_config, model=model, capabilities=capabilities) as client:
        code, message = error_of(await plan(client, "[sample:calc] Add 2 and 3."))
        info = data_of(await client.call_tool("get_environment_info", {}))["model"]
    assert code == "DEPENDENCY_ERROR" and expected in message
    assert "[gateway.model]" in message and 'provider = "openai"' in message  # how to configure an HTTP model
    assert info["in_use"] == "none" and expected in info["sampling_unavailable"]
    assert model is None or model.requests == []


@pytest.mark.anyio
async def test_a_2026_connection_cannot_sample_mid_call(sampling_config: Path) -> None:
    model = ClientModel()
    async with gateway(sampling_config, mode="auto", model=model) as client:
        assert client.protocol_version >= "2026"
        code, message = error_of(await plan(client, "[sample:calc] Add 2 and 3."))
    assert code == "DEPENDENCY_ERROR"
    assert "2026-07-28" in message and "InputRequiredResult" in message and "2025-11-25" in message
    assert "[gateway.model]" in message and model.requests == []


@pytest.mark.anyio
async def test_prefer_samples_where_it_can_and_uses_the_http_model_elsewhere(tmp_path: Path) -> None:
    def calc(request: Request) -> Reply:
        if request.turn == 0:
            return Reply(tool_calls=[("calculator_binary", {"operation": "add", "a": 2, "b": 3})])
        return Reply(text="HTTP model: 5 [calculator_binary].")

    with ScriptedModel({"": calc}) as http_model:
        table = model_table(http_model.base_url).replace("timeout_seconds = 30\n", 'sampling = "prefer"\n')
        config = write_config(tmp_path / "config.toml", table)
        env = {"SCRIPTED_MODEL_KEY": "sk-test"}
        client_model = ClientModel()
        async with gateway(config, mode="auto", model=client_model, env=env) as client:  # 2026-07-28: HTTP
            result = data_of(await plan(client, "Add 2 and 3."))
            info = data_of(await client.call_tool("get_environment_info", {}))["model"]
        assert result["success"] and "HTTP model: 5" in result["report"]
        assert "model: scripted (openai)" in result["report"] and result["model"] == "scripted"
        assert result["metrics"]["tokens_input"] == 20 and result["metrics"]["tokens_reported"] == 1
        assert (info["in_use"], info["sampling"]) == ("http", "prefer") and "2026-07-28" in info["sampling_unavailable"]
        assert client_model.requests == [] and len(http_model.requests) == 2
        http_model.requests.clear()
        async with gateway(config, model=client_model, env=env) as client:  # 2025-11-25 with sampling: the client
            result = data_of(await plan(client, "[sample:calc] Add 2 and 3."))
        assert result["success"] and "Depth 1: 2 + 3 = 5" in result["report"]
        assert len(client_model.requests) == 2 and http_model.requests == []


# -- units --------------------------------------------------------------------------------------------------


class FakeContext:
    def __init__(self, reason: str | None = None, answers: list[Any] | None = None) -> None:
        self.reason = reason
        self.answers = answers or []
        self.sent: list[CreateMessageRequestParams] = []

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        pass

    async def client_roots(self) -> list[str] | None:
        return None

    def sampling_unavailable(self, tools: bool = False) -> str | None:
        return self.reason

    async def sample(self, params: CreateMessageRequestParams) -> Any:
        self.sent.append(params)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


HTTP = {"provider": "openai", "model": "m"}


@pytest.mark.parametrize(
    ("table", "can_sample", "expected"),
    [
        ({}, True, "none"),
        (HTTP, True, "http"),
        ({"provider": "sampling"}, True, "sampling"),
        ({"provider": "sampling"}, False, "none"),
        ({**HTTP, "sampling": "prefer"}, True, "sampling"),
        ({**HTTP, "sampling": "prefer"}, False, "http"),
        ({"sampling": "prefer"}, False, "none"),
        ({**HTTP, "sampling": "fallback"}, True, "http"),
        ({"sampling": "fallback"}, True, "sampling"),
        ({"sampling": "fallback"}, False, "none"),
    ],
)
def test_which_model_a_call_runs_on(table: dict[str, str], can_sample: bool, expected: str) -> None:
    config = ModelSettings.load(table)
    ctx = FakeContext(None if can_sample else "no sampling here")
    choice = choose_model(config, ctx)  # type: ignore[arg-type]
    assert choice.kind == expected
    assert choice.reason in (None, "no sampling here")


def test_a_call_without_a_client_connection_cannot_sample() -> None:
    choice = choose_model(ModelSettings.load({"provider": "sampling"}), None)
    assert (choice.kind, choice.reason) == ("none", NO_CONNECTION)


def test_no_usable_model_says_how_to_configure_one() -> None:
    with pytest.raises(ToolFailure) as caught:
        select_provider(ModelSettings.load({"provider": "sampling"}), FakeContext("the client cannot"))  # type: ignore[arg-type]
    assert caught.value.code.value == "DEPENDENCY_ERROR"
    assert 'provider = "sampling"' in caught.value.message and "the client cannot" in caught.value.message
    assert 'sampling = "prefer"' in caught.value.message and "api_key_env" in caught.value.message
    with pytest.raises(ToolFailure) as caught:
        select_provider(ModelSettings.load({}), FakeContext())  # type: ignore[arg-type]
    assert 'provider = "sampling"' in caught.value.message  # the no-model message names sampling too


def test_the_conversation_maps_to_sampling_messages_and_back() -> None:
    conversation = [
        Message(role="user", content="goal"),
        Message(
            role="assistant", content="two calls", tool_calls=[ToolCall("a", "x", {}), ToolCall("b", "y", {"n": 1})]
        ),
        Message(role="tool", tool_call_id="a", name="x", content="one"),
        Message(role="tool", tool_call_id="b", name="y", content="[NOT_FOUND] no", is_error=True),
    ]
    wire = sampling_messages(conversation)
    assert [message.role for message in wire] == ["user", "assistant", "user"]
    assert [block.type for block in wire[1].content_as_list] == ["text", "tool_use", "tool_use"]
    results = wire[2].content_as_list
    assert [(r.tool_use_id, r.is_error) for r in results] == [("a", None), ("b", True)]  # type: ignore[union-attr]
    turn = turn_of(
        CreateMessageResultWithTools(
            role="assistant",
            content=[TextContent(text="hm"), ToolUseContent(id="c", name="z", input={"k": 2})],
            model="m",
            stop_reason="toolUse",
            meta={"usage": {"input_tokens": 3, "output_tokens": 4}},
        )
    )
    assert (turn.text, turn.tool_calls, turn.stop_reason) == ("hm", [ToolCall("c", "z", {"k": 2})], "toolUse")
    assert (turn.tokens_input, turn.tokens_output, turn.usage_reported) == (3, 4, True)
    plain = turn_of(CreateMessageResult(role="assistant", content=TextContent(text="done"), model="m"))
    assert (plain.text, plain.tool_calls, plain.tokens_input, plain.usage_reported) == ("done", [], 0, False)


@pytest.mark.anyio
async def test_the_provider_sends_tools_and_reports_refusals() -> None:
    answer = CreateMessageResultWithTools(role="assistant", content=TextContent(text="ok"), model="m")
    ctx = FakeContext(answers=[answer, ToolFailure(ErrorCode.DEPENDENCY_ERROR, "user declined")])
    config = ModelSettings.load({"provider": "sampling", "model": "claude-x", "temperature": 0.2})
    provider = SamplingProvider(ctx, config)  # type: ignore[arg-type]
    tools = [ToolDef("t", "a tool", {"type": "object", "properties": {}})]
    turn = await provider.complete("system", [Message(role="user", content="hi")], tools)
    sent = ctx.sent[0]
    assert turn.text == "ok" and sent.system_prompt == "system" and sent.temperature == 0.2
    assert [t.name for t in sent.tools or []] == ["t"] and sent.tool_choice.mode == "auto"  # type: ignore[union-attr]
    assert sent.model_preferences.hints[0].name == "claude-x"  # type: ignore[union-attr]
    with pytest.raises(ToolFailure, match="user declined"):
        await provider.complete("system", [Message(role="user", content="hi")], tools)
