"""Model providers for sub-agents: OpenAI-compatible Chat Completions and the Anthropic Messages API.

Both speak a small neutral conversation format (`Message`, `ToolCall`, `ToolDef`) and return one
`ModelTurn` per call. The API key is read from the environment variable *named* in the configuration;
it is sent only in the request header and never appears in errors, logs or results.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import httpx2

from mcp_sections.shared.errors import ErrorCode, ToolFailure

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

HOW_TO_CONFIGURE_HTTP = (
    "Configure the model sub-agents run on, in the config file:\n"
    "[gateway.model]\n"
    'provider = "openai"        # any OpenAI-compatible Chat Completions endpoint, or "anthropic"\n'
    'model = "qwen2.5:14b"      # the model name the endpoint expects\n'
    'base_url = "http://localhost:11434/v1"   # Ollama, vLLM, LM Studio, OpenRouter, ... (omit for api.openai.com)\n'
    'api_key_env = "OPENAI_API_KEY"           # NAME of the environment variable holding the key (omit if none)\n'
    "or set MCP_SECTIONS_GATEWAY_MODEL_PROVIDER, MCP_SECTIONS_GATEWAY_MODEL_MODEL, "
    "MCP_SECTIONS_GATEWAY_MODEL_BASE_URL and MCP_SECTIONS_GATEWAY_MODEL_API_KEY_ENV, then restart the gateway."
)
HOW_TO_CONFIGURE = HOW_TO_CONFIGURE_HTTP + (
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


class ModelProvider(Protocol):
    name: str

    async def complete(self, system: str, messages: list[Message], tools: list[ToolDef]) -> ModelTurn: ...


class ModelError(ToolFailure):
    """The model endpoint failed: DEPENDENCY_ERROR (or TIMEOUT) with what to check."""


def provider_from_config(config: ModelConfig, transport: httpx2.AsyncBaseTransport | None = None) -> ModelProvider:
    """The configured provider, or DEPENDENCY_ERROR saying exactly how to configure one.

    `transport` replaces the network (tests).
    """
    if not config.provider or not config.model:
        missing = "provider" if not config.provider else "model"
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"No model is configured for sub-agents ({missing} is unset). " + HOW_TO_CONFIGURE,
        )
    api_key = None
    if config.api_key_env:
        api_key = os.environ.get(config.api_key_env)
        if not api_key:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"The model API key variable {config.api_key_env} is not set in the gateway's environment; "
                f"set it where the gateway is started (or change [gateway.model] api_key_env), then restart it.",
            )
    if config.provider == "anthropic":
        return AnthropicProvider(config, api_key, transport)
    if config.provider == "openai":
        return OpenAIChatProvider(config, api_key, transport)
    raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, f"Unknown model provider {config.provider!r}. " + HOW_TO_CONFIGURE)


class _HttpProvider:
    name = "http"

    def __init__(
        self,
        config: ModelConfig,
        api_key: str | None,
        default_base_url: str,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.config = config
        self._api_key = api_key
        self._transport = transport
        self.base_url = (config.base_url or default_base_url).rstrip("/")

    async def _post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        try:
            async with httpx2.AsyncClient(timeout=self.config.timeout_seconds, transport=self._transport) as client:
                response = await client.post(url, json=body, headers=headers)
        except httpx2.TimeoutException:
            raise ModelError(
                ErrorCode.TIMEOUT,
                f"the model endpoint {self.base_url} did not answer within {self.config.timeout_seconds:.0f} s; "
                "retry, use a faster model, or raise [gateway.model] timeout_seconds.",
            ) from None
        except httpx2.HTTPError as exc:
            raise ModelError(
                ErrorCode.DEPENDENCY_ERROR,
                f"cannot reach the model endpoint {self.base_url} ({type(exc).__name__}); check that it runs and "
                "[gateway.model] base_url.",
            ) from None
        if response.status_code in (401, 403):
            raise ModelError(
                ErrorCode.DEPENDENCY_ERROR,
                f"the model endpoint refused the credentials (HTTP {response.status_code}); check the key in "
                f"${self.config.api_key_env or '<api_key_env unset>'}.",
            )
        if response.status_code >= 400:
            raise ModelError(
                ErrorCode.DEPENDENCY_ERROR,
                f"the model endpoint answered HTTP {response.status_code}: {_error_text(response)}; check "
                "[gateway.model] (model name, base_url).",
            )
        try:
            data = response.json()
        except ValueError:
            raise ModelError(ErrorCode.DEPENDENCY_ERROR, "the model endpoint returned a non-JSON answer.") from None
        if not isinstance(data, dict):
            raise ModelError(ErrorCode.DEPENDENCY_ERROR, "the model endpoint returned an unexpected answer.")
        return data


class OpenAIChatProvider(_HttpProvider):
    """`POST {base_url}/chat/completions` with function tools (OpenAI, Ollama, vLLM, LM Studio, OpenRouter...)."""

    name = "openai"

    def __init__(
        self, config: ModelConfig, api_key: str | None, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(config, api_key, OPENAI_DEFAULT_BASE_URL, transport)

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
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        data = await self._post("/chat/completions", self.request_body(system, messages, tools), headers)
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
        )


class AnthropicProvider(_HttpProvider):
    """`POST {base_url}/v1/messages` with tools (Anthropic Messages API)."""

    name = "anthropic"

    def __init__(
        self, config: ModelConfig, api_key: str | None, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        super().__init__(config, api_key, ANTHROPIC_DEFAULT_BASE_URL, transport)

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
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        data = await self._post("/v1/messages", self.request_body(system, messages, tools), headers)
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
        )


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


def _error_text(response: httpx2.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:200]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:200]
    return str(error or data)[:200]
