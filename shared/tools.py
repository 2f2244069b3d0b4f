"""Tool declarations: a typed function plus one frozen metadata object.

A tool is a plain function that takes one pydantic input model (`params`) and returns a
`ToolResult`. It may also ask for the section's state (`state`) and for the call context
(`ctx`), by those parameter names. `@tool` attaches a `ToolSpec` and returns the function
unchanged, so it stays directly callable in tests; registration on a server is a separate step
(`shared.server`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, get_type_hints

from pydantic import BaseModel, ConfigDict

SPEC_ATTRIBUTE = "__mcp_tool_spec__"
ALLOWED_PARAMETERS = ("params", "state", "ctx")


class ToolInput(BaseModel):
    """Base of every tool input model: unknown arguments and non-finite numbers (NaN, ±inf) are refused."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolResult(BaseModel):
    """Base of every tool output model. `render_text` is the short text shown beside the structured data."""

    def render_text(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False)

    def extra_content(self) -> list[Any]:
        """Extra MCP content blocks (e.g. an image) sent after the text rendering."""
        return []


class ToolContext(Protocol):
    """What a running tool may ask of the protocol layer, independent of the MCP SDK."""

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None: ...

    async def client_roots(self) -> list[str] | None:
        """The client's MCP roots as `file://` URIs, or None when the client does not offer roots."""
        ...


@dataclass(frozen=True)
class Annotations:
    """MCP tool annotations, stated for every tool (no defaults hidden in the SDK)."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


READ_ONLY = Annotations(read_only=True, destructive=False, idempotent=True, open_world=False)


@dataclass(frozen=True)
class ToolSpec:
    """Everything the framework needs to publish and call one tool."""

    name: str
    title: str
    description: str
    annotations: Annotations
    input_model: type[BaseModel]
    output_model: type[ToolResult]
    function: Callable[..., Any] = field(repr=False)
    wants_state: bool
    wants_ctx: bool
    is_async: bool

    async def invoke(self, params: BaseModel, state: Any, ctx: ToolContext | None) -> ToolResult:
        """Call the function with what it asked for; sync functions run in a worker thread."""
        kwargs: dict[str, Any] = {"params": params}
        if self.wants_state:
            kwargs["state"] = state
        if self.wants_ctx:
            kwargs["ctx"] = ctx
        if self.is_async:
            return await self.function(**kwargs)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(lambda: self.function(**kwargs))


def tool(
    *,
    name: str,
    title: str,
    annotations: Annotations,
    description: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a function as a tool. The description defaults to the function's docstring."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        setattr(function, SPEC_ATTRIBUTE, _build_spec(function, name, title, annotations, description))
        return function

    return decorate


def spec_of(function: Callable[..., Any]) -> ToolSpec:
    try:
        return getattr(function, SPEC_ATTRIBUTE)
    except AttributeError:
        raise TypeError(f"{function!r} is not declared with @tool") from None


def _build_spec(
    function: Callable[..., Any | Awaitable[Any]],
    name: str,
    title: str,
    annotations: Annotations,
    description: str | None,
) -> ToolSpec:
    parameters = list(inspect.signature(function).parameters)
    unexpected = [p for p in parameters if p not in ALLOWED_PARAMETERS]
    if not parameters or parameters[0] != "params" or unexpected:
        raise TypeError(f"tool {name}: parameters must be (params[, state][, ctx]), got {parameters}")
    hints = get_type_hints(function)
    input_model, output_model = hints.get("params"), hints.get("return")
    if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
        raise TypeError(f"tool {name}: `params` must be annotated with a pydantic model")
    if not (isinstance(output_model, type) and issubclass(output_model, ToolResult)):
        raise TypeError(f"tool {name}: the return annotation must be a ToolResult subclass")
    text = inspect.cleandoc(description or function.__doc__ or "")
    if not text:
        raise TypeError(f"tool {name}: a description (or docstring) is required")
    return ToolSpec(
        name=name,
        title=title,
        description=text,
        annotations=annotations,
        input_model=input_model,
        output_model=output_model,
        function=function,
        wants_state="state" in parameters,
        wants_ctx="ctx" in parameters,
        is_async=inspect.iscoroutinefunction(function),
    )
