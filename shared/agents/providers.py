"""Model providers for sub-agents: OpenAI-compatible Chat Completions and the Anthropic Messages API.

Both speak a small neutral conversation format (`Message`, `ToolCall`, `ToolDef`) and return one
`ModelTurn` per call. The HTTP part (base URL, key header from the variable *named* in the configuration, coded
failures) is `shared.net.model_api`'s.

The key is read at each call, and optional: with `api_key_env` unset, or naming a variable this server's environment
lacks, the endpoint is called without a key (Ollama, vLLM, LM Studio need none). Only when the endpoint then refuses
(HTTP 401/403) is the missing variable the error — and the message says where it must be set: an MCP client that
starts the server over stdio passes it only a few variables (the mcp SDK's `get_default_environment`: HOME, PATH, …),
never the developer's shell exports, so the variable goes in the client entry's `"env"`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from mcp_sections.shared.agents.scope import ConfigFile
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.net.model_api import (
    CHAT_COMPLETIONS,
    MESSAGES,
    Api,
    HttpxSender,
    ModelApiFailure,
    ModelEndpoint,
    call_json,
)

if TYPE_CHECKING:  # pragma: no cover
    import httpx2


def how_to_configure(config_file: ConfigFile | None = None, sampling: bool = True) -> str:
    """How to give sub-agents a model, naming the config file this server reads (`sampling`: also the client's
    model, through MCP sampling)."""
    where = f"the config file {config_file}" if config_file is not None else "the config file"
    text = (
        f"Configure the model sub-agents run on, in {where}:\n"
        "[gateway.model]\n"
        'provider = "openai"        # any OpenAI-compatible Chat Completions endpoint, or "anthropic"\n'
        'model = "qwen2.5:14b"      # the model name the endpoint expects\n'
        'base_url = "http://localhost:11434/v1"   # Ollama, vLLM, LM Studio, OpenRouter, ... '
        "(omit for api.openai.com)\n"
        'api_key_env = "OPENAI_API_KEY"           # NAME of the variable holding the key (unset: no key is sent)\n'
        "or set MCP_SECTIONS_GATEWAY_MODEL_PROVIDER, MCP_SECTIONS_GATEWAY_MODEL_MODEL, "
        "MCP_SECTIONS_GATEWAY_MODEL_BASE_URL and MCP_SECTIONS_GATEWAY_MODEL_API_KEY_ENV, then restart the gateway."
    )
    if not sampling:
        return text
    return text + (
        "\nOr let sub-agents run on the MCP client's own model through MCP sampling (clients that declare sampling "
        'with tools, on 2025-11-25 connections): provider = "sampling" in [gateway.model], or sampling = "prefer" '
        "beside an HTTP model (see get_environment_info)."
    )


class ModelConfig(Protocol):
    """What a provider reads of `[gateway.model]` (read-only, so any settings object with these fields fits)."""

    @property
    def provider(self) -> str | None: ...  # openai | anthropic | sampling (shared.agents.sampling)
    @property
    def model(self) -> str | None: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def max_output_tokens(self) -> int: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def timeout_seconds(self) -> float: ...


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    malformed: str | None = None  # set when the model's arguments were not a JSON object


@dataclass
class Message:
    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ModelTurn:
    text: str
    tool_calls: list[ToolCall]
    tokens_input: int
    tokens_output: int
    stop_reason: str | None = None
    usage_reported: bool = True  # False: the model's host reported no token counts (the tokens above are 0)
    model: str | None = None  # the model that answered, as the endpoint names it


class ModelProvider(Protocol):
    name: str  # the provider: openai, anthropic, sampling
    model: str | None  # the model's configured name (None: the client chooses, through sampling)

    async def complete(self, system: str, messages: list[Message], tools: list[ToolDef]) -> ModelTurn: ...


class ModelError(ToolFailure):
    """The client's model failed through sampling (an HTTP model fails with `model_api.ModelApiFailure`)."""


def provider_from_config(
    config: ModelConfig, transport: httpx2.AsyncBaseTransport | None = None, config_file: ConfigFile | None = None
) -> ModelProvider:
    """The configured provider, or DEPENDENCY_ERROR saying exactly how to configure one (in `config_file`).

    `transport` replaces the network (tests).
    """
    if not config.provider or not config.model:
        missing = "provider" if not config.provider else "model"
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"No model is configured for sub-agents ({missing} is unset). " + how_to_configure(config_file),
        )
    if config.provider == "anthropic":
        return AnthropicProvider(config, transport)
    if config.provider == "openai":
        return OpenAIChatProvider(config, transport)
    raise ToolFailure(
        ErrorCode.DEPENDENCY_ERROR, f"Unknown model provider {config.provider!r}. " + how_to_configure(config_file)
    )


class _HttpProvider:
    """A model API through `shared.net.model_api` (base URL rule, key header, coded failures naming [gateway.model])."""

    name: str
    api: Api

    def __init__(self, config: ModelConfig, transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self.model = config.model
        self.endpoint = ModelEndpoint(
            self.api,
            config.base_url,
            config.api_key_env,
            settings="[gateway.model] ",
            timeout_seconds=config.timeout_seconds,
            timeout_setting="[gateway.model] timeout_seconds",
            key_required=False,  # an unset key variable sends no key: a local endpoint needs none
        )
        self._sender = HttpxSender(transport)

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await call_json(self.endpoint, self._sender, "POST", path, body)
        except ModelApiFailure as failure:
            variable = self.config.api_key_env
            if failure.status not in (401, 403) or not variable or self.endpoint.api_key() is not None:
                raise
            message = key_missing(self.endpoint, variable, failure.status)
            raise ModelApiFailure(failure.code, message, status=failure.status) from None


def key_missing(endpoint: ModelEndpoint, variable: str, status: int | None) -> str:
    """The endpoint refused a call sent without a key because `variable` is unset here: where to set it."""
    return (
        f"{endpoint.what} at {endpoint.shown_base} refused the call without a key (HTTP {status}): "
        f"{endpoint.setting('api_key_env')} names {variable}, which is not set in this server's environment. MCP "
        "clients that start servers over stdio pass them only a few variables (HOME, PATH, ...), not your shell's "
        f'exports: put {variable} in the client entry\'s "env" (e.g. {{"env": {{"{variable}": "..."}}}}; in an agent '
        "framework, the stdio server's env argument), or set it where the server is started; then restart the server."
    )


class OpenAIChatProvider(_HttpProvider):
    """`POST {base_url}/chat/completions` with function tools (OpenAI, Ollama, vLLM, LM Studio, OpenRouter...)."""

    name = "openai"
    api: Api = "openai"

    def request_body(self, system: str, messages: list[Message], tools: list[ToolDef]) -> dict[str, Any]:
        wire: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for message in messages:
            if message.role == "tool":
                wire.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content})
            elif message.role == "assistant":
                item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
                if message.tool_calls:
                    item["tool_calls"] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                        }
                        for call in message.tool_calls
                    ]
                wire.append(item)
            else:
                wire.append({"role": "user", "content": message.content})
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": wire,
            "max_tokens": self.config.max_output_tokens,
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema},
                }
                for tool in tools
            ]
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        return body

    async def complete(self, system: str, messages: list[Message], tools: list[ToolDef]) -> ModelTurn:
        data = await self._post(CHAT_COMPLETIONS, self.request_body(system, messages, tools))
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(ErrorCode.DEPENDENCY_ERROR, "the model endpoint returned no choices.") from None
        calls = []
        for index, raw in enumerate(message.get("tool_calls") or []):
            function = raw.get("function") or {}
            arguments, malformed = _parse_arguments(function.get("arguments"))
            calls.append(
                ToolCall(
                    id=str(raw.get("id") or f"call_{index}"),
                    name=str(function.get("name") or ""),
                    arguments=arguments,
                    malformed=malformed,
                )
            )
        usage = data.get("usage") or {}
        return ModelTurn(
            text=message.get("content") or "",
            tool_calls=calls,
            tokens_input=int(usage.get("prompt_tokens") or 0),
            tokens_output=int(usage.get("completion_tokens") or 0),
            stop_reason=choice.get("finish_reason"),
            model=_named(data.get("model")),
        )


class AnthropicProvider(_HttpProvider):
    """`POST {base_url}/v1/messages` with tools (Anthropic Messages API; base_url with or without `/v1`)."""

    name = "anthropic"
    api: Api = "anthropic"

    def request_body(self, system: str, messages: list[Message], tools: list[ToolDef]) -> dict[str, Any]:
        wire: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "tool":
                block = {
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id,
                    "content": message.content,
                    "is_error": message.is_error,
                }
                if wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], list):
                    wire[-1]["content"].append(block)
                else:
                    wire.append({"role": "user", "content": [block]})
            elif message.role == "assistant":
                blocks: list[dict[str, Any]] = []
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                blocks += [
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
                    for call in message.tool_calls
                ]
                wire.append({"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]})
            else:
                wire.append({"role": "user", "content": message.content})
        body: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": self.config.max_output_tokens,
            "system": system,
            "messages": wire,
        }
        if tools:
            body["tools"] = [
                {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}
                for tool in tools
            ]
        if self.config.temperature is not None:
            body["temperature"] = self.config.temperature
        return body

    async def complete(self, system: str, messages: list[Message], tools: list[ToolDef]) -> ModelTurn:
        data = await self._post(MESSAGES, self.request_body(system, messages, tools))
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in data.get("content") or []:
            if block.get("type") == "text":
                texts.append(block.get("text") or "")
            elif block.get("type") == "tool_use":
                raw = block.get("input")
                calls.append(
                    ToolCall(
                        id=str(block.get("id") or f"toolu_{len(calls)}"),
                        name=str(block.get("name") or ""),
                        arguments=raw if isinstance(raw, dict) else {},
                        malformed=None if isinstance(raw, dict) else "tool input is not an object",
                    )
                )
        usage = data.get("usage") or {}
        return ModelTurn(
            text="\n".join(texts),
            tool_calls=calls,
            tokens_input=int(usage.get("input_tokens") or 0),
            tokens_output=int(usage.get("output_tokens") or 0),
            stop_reason=data.get("stop_reason"),
            model=_named(data.get("model")),
        )


def _named(value: Any) -> str | None:
    """A model name an answer gives (a short string), else None."""
    return value[:200] if isinstance(value, str) and value.strip() else None


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(raw, dict):
        return raw, None
    if raw in (None, ""):
        return {}, None
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        return {}, "the tool arguments are not valid JSON"
    if not isinstance(parsed, dict):
        return {}, "the tool arguments are not a JSON object"
    return parsed, None
