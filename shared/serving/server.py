"""A section declaration → an `MCPServer` (official SDK), served over stdio or Streamable HTTP."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp_types import CallToolResult

from mcp_sections.shared.framework.resources import ServeResults, serve_as
from mcp_sections.shared.framework.sections import Section, SectionRuntime
from mcp_sections.shared.framework.tools import ToolContext, ToolSpec, UserAnswer
from mcp_sections.shared.ground.about import package_version
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving import telemetry
from mcp_sections.shared.serving.approval import Approvals
from mcp_sections.shared.serving.audit import audit_log
from mcp_sections.shared.serving.calls import failure_result
from mcp_sections.shared.serving.client_log import serve_logging
from mcp_sections.shared.serving.completions import serve_completions
from mcp_sections.shared.serving.event_store import RETRY_MS, SessionEventStores, StreamResumption
from mcp_sections.shared.serving.http_auth import HttpGuard
from mcp_sections.shared.serving.pipeline import SectionCalls, SectionState
from mcp_sections.shared.serving.replica_secret import ReplicaSecret, replica_secret
from mcp_sections.shared.serving.sdk_tools import (
    ForgetRootsOnChange,
    resumable_sessions,
    spec_tool,
    without_sdk_tracing,
)
from mcp_sections.shared.serving.tasks import SpecPolicy, TaskCalls, TasksExtension, TaskStore

logger = logging.getLogger("mcp_sections.server")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def sdk_tool(spec: ToolSpec, calls: SectionCalls, approvals: Approvals) -> Tool:
    """The SDK tool of one declared tool, run through the section's pipeline (`shared.serving.pipeline`), as
    `approvals` publishes it: asking first where a call needs the user's approval, or the tool asks its own question
    (`shared.serving.approval`)."""

    async def call(
        arguments: dict[str, Any],
        ctx: ToolContext,
        answer: UserAnswer | None = None,
        failure: ToolFailure | None = None,
    ) -> CallToolResult:
        return await calls.call(spec, arguments, ctx, answer, failure)

    return approvals.tool(spec, spec_tool(spec, call), call, state=calls.state)


def build_server(section: Section, runtime: SectionRuntime) -> tuple[MCPServer, SectionState]:
    """The MCP server of one section, and its lazily opened state. Long tools may run as MCP tasks
    (`shared.serving.tasks`); bulky parts of results are served by `resources/read` (`shared.framework.resources`)."""
    runtime.settings.own_state().prepare(runtime.settings.roots)
    calls = SectionCalls(section, runtime)
    state = calls.state
    settings = runtime.settings
    tasks = TaskStore(settings.task_ttl_seconds, settings.max_tasks_per_client)
    approvals = Approvals(settings.approval, audit_log(settings.data_dir / "audit", f"{section.id}.approvals"))
    serve_as(section.id)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        try:
            async with AsyncExitStack() as stack:
                if section.lifespan is not None:
                    state.provide(await stack.enter_async_context(section.lifespan(runtime)))
                await stack.enter_async_context(tasks.running())  # left first: tasks stop before the state closes
                yield
        finally:
            await anyio.to_thread.run_sync(state.close)

    server = MCPServer(
        name=f"mcp-sections-{section.id}",
        title=section.name,
        description=section.description,
        instructions=section.instructions,
        version=package_version(),
        tools=[sdk_tool(spec, calls, approvals) for spec in section.specs],
        lifespan=lifespan,
        log_level=runtime.settings.log_level,
        extensions=[TasksExtension(tasks)],
    )
    server.middleware.append(UnknownToolAsNotFound({spec.name for spec in section.specs}))
    server.middleware.append(ForgetRootsOnChange())
    server.middleware.append(ServeResults())
    serve_logging(server)  # before TaskCalls: a task's work logs to the client that started it
    serve_completions(server)  # nothing of a section's has known values: an empty answer
    approvals.serve(server)  # before TaskCalls too
    server.middleware.append(TaskCalls(tasks, SpecPolicy(calls.specs), approvals.asks))
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
    """DNS-rebinding protection: the bound `host:port` (with the loopback names when bound to loopback) and the
    explicit extras are accepted; nothing else — not a loopback name on another port (a load balancer's), nor a
    container name."""
    names = {host, *LOOPBACK_HOSTS} if host in ("127.0.0.1", "localhost", "::1") else {host}
    hosts = sorted({f"{name}:{port}" for name in names} | set(extra_hosts))
    origins = sorted({f"http://{name}:{port}" for name in names} | set(extra_origins))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class ExplainedTransportSecurity(TransportSecurityMiddleware):
    """The SDK's Host/Origin check, whose refusals (421 Invalid Host header, 403 Invalid Origin header) also say which
    flag or setting accepts the name refused — a server reached through a load balancer, a container name or a public
    name must be told that name."""

    async def validate_request(self, request: Any, is_post: bool = False) -> Any:
        from starlette.responses import PlainTextResponse

        refused = await super().validate_request(request, is_post)
        if refused is None or refused.status_code not in (403, 421):
            return refused
        if refused.status_code == 421:
            host = request.headers.get("host", "")[:200]
            text = (
                f"Invalid Host header {host!r}: this server accepts only the names it was told. If {host!r} is how "
                f"it is reached (a load balancer, a container or public name), start it with --allowed-host {host} "
                "(or allowed_hosts in the config file, MCP_SECTIONS_ALLOWED_HOSTS)."
            )
        else:
            origin = request.headers.get("origin", "")[:200]
            text = (
                f"Invalid Origin header {origin!r}: pages of that site may not call this server. If it is this "
                f"server's own page (its /status) reached by that address, start it with --allowed-origin {origin} "
                "(or allowed_origins in the config file, MCP_SECTIONS_ALLOWED_ORIGINS)."
            )
        return PlainTextResponse(text, status_code=refused.status_code)


class CheckedHostAndOrigin:
    """ASGI: `app` behind `ExplainedTransportSecurity` (the SDK's own check behind it then always passes)."""

    def __init__(self, app: Any, security: TransportSecuritySettings) -> None:
        self._app = app
        self._security = ExplainedTransportSecurity(security)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            from starlette.requests import Request

            refused = await self._security.validate_request(Request(scope, receive))
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self._app(scope, receive, send)


def seal_request_state(server: MCPServer, secret: ReplicaSecret) -> None:
    """Seal `server`'s 2026-07-28 `requestState` with `secret`'s keys instead of the SDK's key of this process alone,
    so that the round that answers a question may reach any replica (`shared.serving.replica_secret`)."""
    security = RequestStateSecurity(keys=secret.keys("request-state"))
    boundary = RequestStateBoundary(security, default_audience=server.name)
    chain = server.middleware
    found = [index for index, item in enumerate(chain) if isinstance(item, RequestStateBoundary)]
    if len(found) != 1:
        raise RuntimeError(f"the SDK's request-state boundary is not where it was ({len(found)} found)")
    chain[found[0]] = boundary


def serve(
    server: MCPServer,
    transport: str,
    host: str,
    port: int,
    extra_hosts: list[str],
    extra_origins: list[str],
    guard: HttpGuard | None = None,
    pages: Mapping[str, Any] | None = None,
    beside: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run until the client disconnects (stdio) or the process is stopped (http).

    Over HTTP, `guard` (the single bearer token or a team's OAuth resource server, required by the caller beyond
    loopback, see `shared.serving.http_auth`) guards `/mcp`; `/health` (`shared.serving.http_pages`) and the guard's own
    pages (the protected-resource metadata) are served without it; `pages` are a host's own ASGI pages by path prefix
    (they guard themselves). With no trace exporter configured (`shared.serving.telemetry`), the SDK's per-request span
    is taken out: nothing is paid. Over stdio, `beside` runs in the same loop for as long as the client is connected
    (the gateway's status page: `servers/gateway/status_beside.py`). Over HTTP, `requestState` is sealed with the
    secret the replicas of a team share (`seal_request_state`), and a Host or Origin refused says which flag accepts it.
    """
    if telemetry.current() is None:
        without_sdk_tracing(server)
    if transport == "stdio":
        anyio.run(_stdio_and, server, beside)
        return
    secret = replica_secret()
    seal_request_state(server, secret)
    security = transport_security(host, port, extra_hosts, extra_origins)
    anyio.run(serve_http, server, host, port, security, guard, pages)


async def _stdio_and(server: MCPServer, beside: Callable[[], Awaitable[None]] | None) -> None:
    """The stdio server, and `beside` until the client goes (an error in it is logged; the server goes on)."""
    from mcp_sections.shared.serving.stdio import run_stdio

    async def guarded(work: Callable[[], Awaitable[None]]) -> None:
        try:
            await work()
        except Exception:
            logger.exception("what ran beside the stdio server failed; the server goes on without it")

    async with anyio.create_task_group() as group:
        if beside is not None:
            group.start_soon(guarded, beside)
        await run_stdio(server)
        group.cancel_scope.cancel()


async def serve_http(
    server: MCPServer,
    host: str,
    port: int,
    security: TransportSecuritySettings,
    guard: HttpGuard | None,
    pages: Mapping[str, Any] | None = None,
) -> None:
    """Streamable HTTP on `host:port` at `/mcp`, behind `guard` when one is given;
    `/health` for probes. Streams are resumable: each session keeps its events a while, replayed after `Last-Event-ID`;
    an unknown or expired id gets 400 (`shared.serving.event_store`).

    The line saying where it serves is printed once the port is bound (a taken port fails without it)."""
    import uvicorn

    from mcp_sections.shared.serving.http_pages import WithPages

    stores = SessionEventStores()
    app: Any = server.streamable_http_app(transport_security=security, host=host, retry_interval=RETRY_MS)
    resumable_sessions(server, stores)
    app = StreamResumption(app, stores)
    if guard is not None:
        app = guard.wrap(app)
        pages = {**guard.pages(), **(pages or {})}
    app = CheckedHostAndOrigin(app, security)  # before the guard: a refused name is told so, with or without a token
    app = WithPages(app, pages)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", server_header=False)
    shown = f"[{host}]" if ":" in host else host
    auth = guard.description if guard is not None else "no authentication (loopback only)"
    line = f"mcp-sections: serving Streamable HTTP on http://{shown}:{port}/mcp ({auth})"

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                print(line, file=sys.stderr, flush=True)

    await Server(config).serve()
