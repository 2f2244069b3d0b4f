"""A section declaration → an `MCPServer` (official SDK), served over stdio or Streamable HTTP."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, ClientCapabilities, RootsCapability, ToolAnnotations
from pydantic import ConfigDict

from mcp_sections.shared.about import package_version
from mcp_sections.shared.calls import failure_result, run_tool
from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.sections import Section, SectionRuntime
from mcp_sections.shared.tools import ToolContext, ToolSpec

logger = logging.getLogger("mcp_sections.server")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class SectionState:
    """The section's state, opened on first use (once, thread-safe) and closed at shutdown."""

    def __init__(self, section: Section, runtime: SectionRuntime) -> None:
        self._section = section
        self._runtime = runtime
        self._lock = threading.Lock()
        self._value: Any = None
        self._opened = False

    def get(self) -> Any:
        if self._section.open_state is None:
            return None
        with self._lock:
            if not self._opened:
                self._value = self._section.open_state(self._runtime)
                self._opened = True
            return self._value

    async def aget(self) -> Any:
        if self._opened or self._section.open_state is None:
            return self._value
        return await anyio.to_thread.run_sync(self.get)

    def start_warm_up(self) -> None:
        """Open the state and run the section's warm-up in a daemon thread (never blocks a request)."""
        if self._section.open_state is None and self._section.warm_up is None:
            return

        def warm() -> None:
            try:
                state = self.get()
                if self._section.warm_up is not None:
                    self._section.warm_up(state)
            except Exception:  # the first real call reports the problem to the client
                logger.warning("warm-up of section %s failed", self._section.id, exc_info=True)

        threading.Thread(target=warm, name=f"warm-up-{self._section.id}", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            if self._opened and hasattr(self._value, "close"):
                self._value.close()
            self._opened = False
            self._value = None


class SdkToolContext:
    """`shared.tools.ToolContext` over the SDK's request context."""

    def __init__(self, context: Context) -> None:
        self._context = context

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        try:
            await self._context.report_progress(progress, total, message)
        except Exception:  # progress is best effort; a closed stream must not fail the call
            logger.debug("progress notification dropped", exc_info=True)

    async def client_roots(self) -> list[str] | None:
        session = self._context.request_context.session
        if not session.check_client_capability(ClientCapabilities(roots=RootsCapability())):
            return None
        result = await session.list_roots()
        return [str(root.uri) for root in result.roots]


class RawArguments(ArgModelBase):
    """Hands the raw arguments through untouched: validation happens in `shared.calls` with error codes."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def raw_tool(
    *,
    name: str,
    title: str,
    description: str,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any] | None,
    annotations: ToolAnnotations,
    call: Callable[[dict[str, Any], ToolContext], Awaitable[CallToolResult]],
) -> Tool:
    """An SDK tool that hands the raw arguments and a `ToolContext` to `call` and returns its result as-is.

    The building block of `sdk_tool`; also used by servers whose results are not a `ToolResult` of their
    own (the gateway forwards other servers' results unchanged, so it publishes no output schema there).
    """

    async def invoke(arguments: dict[str, Any], context: Context) -> CallToolResult:
        return await call(arguments, SdkToolContext(context))

    return Tool(
        fn=invoke,
        name=name,
        title=title,
        description=description,
        parameters=input_schema,
        fn_metadata=FuncMetadata(arg_model=RawArguments, output_schema=output_schema),
        is_async=True,
        context_kwarg="context",
        annotations=annotations,
    )


def sdk_annotations(spec: ToolSpec) -> ToolAnnotations:
    hints = spec.annotations
    return ToolAnnotations(
        title=spec.title,
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )


def sdk_tool(spec: ToolSpec, state: SectionState) -> Tool:
    """The SDK tool of one declared tool; `state` is anything with `async aget()` (the section's state)."""

    async def call(arguments: dict[str, Any], ctx: ToolContext) -> CallToolResult:
        try:
            value = await state.aget()
        except ToolFailure as failure:
            return failure_result(failure)
        except Exception:
            logger.exception("opening the state of tool %s failed", spec.name)
            return failure_result(
                ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"{spec.name} could not start its backing service (see the server log); "
                    "check the section's configuration and data directory, then retry.",
                )
            )
        return await run_tool(spec, arguments, value, ctx)

    return raw_tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_model.model_json_schema(),
        output_schema=spec.output_model.model_json_schema(mode="serialization"),
        annotations=sdk_annotations(spec),
        call=call,
    )


_sdk_tool = sdk_tool


def build_server(section: Section, runtime: SectionRuntime) -> tuple[MCPServer, SectionState]:
    """The MCP server of one section, and its lazily opened state."""
    state = SectionState(section, runtime)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(state.close)

    server = MCPServer(
        name=f"mcp-sections-{section.id}",
        title=section.name,
        description=section.description,
        instructions=section.instructions,
        version=package_version(),
        tools=[sdk_tool(spec, state) for spec in section.specs],
        lifespan=lifespan,
        log_level=runtime.settings.log_level,
    )
    server.middleware.append(UnknownToolAsNotFound({spec.name for spec in section.specs}))
    if runtime.settings.warm_up and (section.open_state is not None or section.warm_up is not None):
        server.middleware.append(_WarmUpAfterListing(state))
    return server, state


class UnknownToolAsNotFound:
    """A call to a tool this section does not have gets a NOT_FOUND tool error listing the real names."""

    def __init__(self, names: set[str]) -> None:
        self._names = names

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) == "tools/call":
            name = (ctx.params or {}).get("name")
            if isinstance(name, str) and name not in self._names:
                failure = ToolFailure(
                    ErrorCode.NOT_FOUND,
                    f"unknown tool {name[:80]!r}; this server's tools are: {', '.join(sorted(self._names))}.",
                )
                return failure_result(failure).model_dump(mode="json", by_alias=True, exclude_none=True)
        return await call_next(ctx)


class _WarmUpAfterListing:
    """Starts the section's warm-up once `tools/list` has been answered, so start-up is never slowed."""

    def __init__(self, state: SectionState) -> None:
        self._state = state
        self._started = False

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if not self._started and getattr(ctx, "method", None) == "tools/list":
            self._started = True
            self._state.start_warm_up()
        return result


def transport_security(
    host: str, port: int, extra_hosts: list[str], extra_origins: list[str]
) -> TransportSecuritySettings:
    """DNS-rebinding protection: only the bound host (and loopback names) and explicit extras are accepted."""
    names = {host, *LOOPBACK_HOSTS} if host in ("127.0.0.1", "localhost", "::1") else {host}
    hosts = sorted({f"{name}:{port}" for name in names} | set(extra_hosts))
    origins = sorted({f"http://{name}:{port}" for name in names} | set(extra_origins))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def serve(
    server: MCPServer, transport: str, host: str, port: int, extra_hosts: list[str], extra_origins: list[str]
) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (http)."""
    if transport == "stdio":
        from mcp_sections.shared.stdio import run_stdio

        anyio.run(run_stdio, server)
        return
    server.run(
        "streamable-http",
        host=host,
        port=port,
        transport_security=transport_security(host, port, extra_hosts, extra_origins),
    )
