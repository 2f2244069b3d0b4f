"""Sub-agents on the MCP client's own model, through MCP sampling with tools (`sampling/createMessage`).

Which model a sub-agent runs on is decided per call, from `[gateway.model]` and what the connection of the
call allows (`ToolContext.sampling_unavailable`):

```toml
[gateway.model]
provider = "sampling"   # sampling only: the client's model, or DEPENDENCY_ERROR where the connection cannot
# or, beside an HTTP model (provider = "openai" / "anthropic", model, base_url, api_key_env):
sampling = "prefer"     # the client's model when the connection allows it, else the HTTP model
sampling = "fallback"   # the HTTP model when one is configured, else the client's model
sampling = "off"        # default: the HTTP model only
```

Sampling needs a connection on which the server may send requests to the client during a tool call (MCP
2025-11-25 and earlier, stdio or stateful HTTP) and a client that declares `sampling` with `sampling.tools`.
On a 2026-07-28 connection a server reaches the client's model only through an `InputRequiredResult`: one
sample per round trip of the tools/call, which cannot drive a sub-agent's multi-turn tool loop inside one
call — there the HTTP model is used (`prefer`, `fallback`) or the call fails with DEPENDENCY_ERROR.

Each model turn is one `sampling/createMessage`: the system prompt, the conversation (tool calls as
`tool_use`, their results as `tool_result`), the sub-agent's tools and `toolChoice: auto`. MCP results carry
no token counts; a client may report them in the result's `_meta.usage` (`inputTokens`/`outputTokens`, or
the Anthropic/OpenAI names), else the turn reports 0 tokens and `usage_reported=False`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mcp_types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)

from mcp_sections.shared.agents.providers import (
    Message,
    ModelConfig,
    ModelError,
    ModelProvider,
    ModelTurn,
    ToolCall,
    ToolDef,
    how_to_configure,
    provider_from_config,
)
from mcp_sections.shared.agents.scope import ConfigFile
from mcp_sections.shared.framework.tools import ToolContext
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

SamplingMode = Literal["only", "prefer", "fallback", "off"]
HTTP_PROVIDERS = ("openai", "anthropic")
NO_CONNECTION = "this call has no MCP client connection to sample through"


@dataclass(frozen=True)
class ModelChoice:
    """The model a sub-agent of this call would run on: `sampling`, `http`, or `none` (with why)."""

    kind: Literal["sampling", "http", "none"]
    mode: SamplingMode
    reason: str | None = None  # why sampling cannot be used on this call, when it was considered


def sampling_mode(config: ModelConfig) -> SamplingMode:
    if config.provider == "sampling":
        return "only"
    mode = getattr(config, "sampling", None) or "off"
    if mode == "prefer":
        return "prefer"
    return "fallback" if mode == "fallback" else "off"


def http_configured(config: ModelConfig) -> bool:
    return config.provider in HTTP_PROVIDERS and bool(config.model)


def sampling_unavailable(ctx: ToolContext | None, tools: bool) -> str | None:
    check = getattr(ctx, "sampling_unavailable", None)
    if ctx is None or check is None or getattr(ctx, "sample", None) is None:
        return NO_CONNECTION
    return check(tools)


def choose_model(config: ModelConfig, ctx: ToolContext | None, tools: bool = True) -> ModelChoice:
    """Which model this call's sub-agents run on (see the module docstring); never raises."""
    mode = sampling_mode(config)
    http: Literal["http", "none"] = "http" if http_configured(config) else "none"
    if mode == "off":
        return ModelChoice(kind=http, mode=mode)
    if mode == "fallback" and http == "http":
        return ModelChoice(kind="http", mode=mode)
    reason = sampling_unavailable(ctx, tools)
    if reason is None:
        return ModelChoice(kind="sampling", mode=mode)
    return ModelChoice(kind=http if mode == "prefer" else "none", mode=mode, reason=reason)


def select_provider(
    config: ModelConfig, ctx: ToolContext | None = None, tools: bool = True, config_file: ConfigFile | None = None
) -> ModelProvider:
    """The provider this call's sub-agents run on, or DEPENDENCY_ERROR saying exactly what to configure (in
    `config_file`)."""
    choice = choose_model(config, ctx, tools)
    if choice.kind == "sampling":
        assert ctx is not None
        return SamplingProvider(ctx, config)
    if choice.kind == "http" or choice.reason is None:
        return provider_from_config(config, config_file=config_file)  # an HTTP model, or how to configure one
    raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, unavailable_message(choice, config_file))


def unavailable_message(choice: ModelChoice, config_file: ConfigFile | None = None) -> str:
    setting = 'provider = "sampling"' if choice.mode == "only" else f'sampling = "{choice.mode}"'
    message = (
        f"Sub-agents are set to run on the MCP client's model through MCP sampling ([gateway.model] {setting}), "
        f"but {choice.reason}. A sub-agent takes many model turns inside one plan_actions call, so it can sample "
        "only where the server may ask the client during a call (MCP 2025-11-25 or earlier, stdio or stateful "
        "HTTP) and the client declares sampling with tools (sampling.tools). Otherwise it runs on an HTTP model"
    )
    if choice.mode == "only":
        message += ' (keep sampling where possible with provider = "openai" or "anthropic" and sampling = "prefer")'
    return f"{message}.\n{how_to_configure(config_file, sampling=False)}"


def describe_choice(config: ModelConfig, ctx: ToolContext | None) -> dict[str, Any]:
    """For get_environment_info: the sampling setting and the model this connection's sub-agents run on."""
    choice = choose_model(config, ctx)
    return {"sampling": choice.mode, "in_use": choice.kind, "sampling_unavailable": choice.reason}


class SamplingProvider:
    """`ModelProvider` over MCP sampling: each turn is one `sampling/createMessage` to the client."""

    name = "sampling"
    model: str | None = None  # the client chooses; each answer names it

    def __init__(self, ctx: ToolContext, config: ModelConfig) -> None:
        self._ctx = ctx
        self.config = config

    def request_params(self, system: str, messages: list[Message], tools: list[ToolDef]) -> CreateMessageRequestParams:
        hint = self.config.model if self.config.provider == "sampling" else None
        return CreateMessageRequestParams(
            messages=sampling_messages(messages),
            system_prompt=system,
            max_tokens=self.config.max_output_tokens,
            temperature=self.config.temperature,
            model_preferences=ModelPreferences(hints=[ModelHint(name=hint)]) if hint else None,
            tools=[Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools] or None,
            tool_choice=ToolChoice(mode="auto") if tools else None,
        )

    async def complete(self, system: str, messages: list[Message], tools: list[ToolDef]) -> ModelTurn:
        reason = sampling_unavailable(self._ctx, bool(tools))
        if reason is not None:
            raise ModelError(ErrorCode.DEPENDENCY_ERROR, f"cannot sample the client's model: {reason}.")
        try:
            result = await self._ctx.sample(self.request_params(system, messages, tools))
        except ToolFailure as failure:
            raise ModelError(failure.code, failure.message) from None
        except ValueError as exc:  # the SDK refused the conversation's tool_use/tool_result structure
            raise ModelError(ErrorCode.EXECUTION_FAILED, f"invalid sampling conversation: {exc}") from None
        return turn_of(result)


def sampling_messages(messages: list[Message]) -> list[SamplingMessage]:
    """The runtime's conversation as sampling messages; consecutive tool results share one user message."""
    wire: list[SamplingMessage] = []
    pending: list[Any] = []  # tool results, sent as one user message
    for message in messages:
        if message.role == "tool":
            pending.append(
                ToolResultContent(
                    tool_use_id=message.tool_call_id or "",
                    content=[TextContent(text=message.content)],
                    is_error=message.is_error or None,
                )
            )
            continue
        if pending:
            wire.append(SamplingMessage(role="user", content=pending))
            pending = []
        if message.role == "assistant":
            blocks: list[Any] = [TextContent(text=message.content)] if message.content else []
            blocks += [ToolUseContent(id=call.id, name=call.name, input=call.arguments) for call in message.tool_calls]
            wire.append(SamplingMessage(role="assistant", content=blocks or TextContent(text="")))
        else:
            wire.append(SamplingMessage(role="user", content=TextContent(text=message.content)))
    if pending:
        wire.append(SamplingMessage(role="user", content=pending))
    return wire


def turn_of(result: CreateMessageResult | CreateMessageResultWithTools) -> ModelTurn:
    blocks = result.content if isinstance(result.content, list) else [result.content]
    texts = [block.text for block in blocks if isinstance(block, TextContent)]
    calls = [
        ToolCall(id=block.id or f"toolu_{index}", name=block.name, arguments=block.input)
        for index, block in enumerate(blocks)
        if isinstance(block, ToolUseContent)
    ]
    tokens = usage_of(result.meta)
    return ModelTurn(
        text="\n".join(texts),
        tool_calls=calls,
        tokens_input=tokens[0] if tokens else 0,
        tokens_output=tokens[1] if tokens else 0,
        stop_reason=result.stop_reason,
        usage_reported=tokens is not None,
        model=result.model or None,
    )


def usage_of(meta: dict[str, Any] | None) -> tuple[int, int] | None:
    """(input, output) tokens from a result's `_meta.usage`, when the client reports them."""
    usage = (meta or {}).get("usage")
    if not isinstance(usage, dict):
        return None
    pairs = (("inputTokens", "outputTokens"), ("input_tokens", "output_tokens"), ("prompt_tokens", "completion_tokens"))
    for inp, out in pairs:
        if inp in usage or out in usage:
            try:
                return max(0, int(usage.get(inp) or 0)), max(0, int(usage.get(out) or 0))
            except (TypeError, ValueError):
                return None
    return None
