"""The SDK adapter: the one module that touches the `mcp` SDK's private API.

Raw-argument SDK tools, annotations, the client channel of a `ToolContext` over the SDK's context, and the stream
pair and low-level server our stdio transport drives. Private SDK names used here, and only here (each is pinned by
`tests/framework/test_sdk_contract.py`, which names the symbol when an SDK release changes it):
- `mcp.shared._context_streams.create_context_streams`: the memory streams the SDK's session reads;
- `MCPServer._lowlevel_server`: the SDK exposes no public way to run an `MCPServer` on given streams;
- `ServerSession._connection`: the per-connection key of the client-roots cache;
- `ArgModelBase.model_dump_one_level`: overridden so raw arguments reach our own validation untouched;
- `mcp.server._otel.OpenTelemetryMiddleware`: the SDK's span per request, taken out when nothing is exported;
- `StreamableHTTPSessionManager._admit_session` / `_discard_session` and `StreamableHTTPServerTransport._event_store`:
  the SDK gives every session one shared event store, where each session needs its own
  (`shared.serving.event_store`);
- `StreamableHTTPServerTransport._request_streams`: whether a call's response stream is still there (its POST's
  connection open, or resumed with `Last-Event-ID`): the SDK says nothing when a client goes without a word
  (`SdkChannel.connected`, for approval questions that must not outlive their client).
"""

from __future__ import annotations

import contextvars
import logging
import warnings
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream, create_context_streams
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import SessionMessage
from mcp_types import (
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    RootsCapability,
    ToolAnnotations,
)
from pydantic import ConfigDict

from mcp_sections.shared.framework.tools import ProgressLine, ToolContext, ToolSpec, UserAnswer, UserQuestion
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving.audit import caller_of
from mcp_sections.shared.serving.event_store import SessionEventStores
from mcp_sections.shared.serving.tasks import CURRENT as CURRENT_TASK
from mcp_sections.shared.serving.tasks import ask_client, asks_through_tasks, task_execution, tracked

logger = logging.getLogger("mcp_sections.sdk_tools")

MessageSendStream = ContextSendStream[Any]
MessageReceiveStream = ContextReceiveStream[Any]


def message_streams() -> tuple[MessageSendStream, MessageReceiveStream]:
    """An unbuffered stream pair of `SessionMessage`s (or exceptions), the kind the SDK's session reads."""
    return create_context_streams[SessionMessage | Exception](0)


def lowlevel_server(server: MCPServer) -> Any:
    """The low-level server inside an `MCPServer` (its `run(read, write, options)` takes our streams)."""
    return server._lowlevel_server


def without_sdk_tracing(server: MCPServer) -> None:
    """Take the SDK's OpenTelemetry middleware (on by default) out of `server`: with no exporter configured its
    span per request is a no-op that still costs ~25 us (`shared.serving.telemetry`)."""
    from mcp.server._otel import OpenTelemetryMiddleware

    server.middleware[:] = [item for item in server.middleware if not isinstance(item, OpenTelemetryMiddleware)]


def resumable_sessions(server: MCPServer, stores: SessionEventStores) -> None:
    """Give each Streamable HTTP session of `server` its own event store (`shared.serving.event_store`), opened when
    the session is admitted and dropped when it ends. Call after `server.streamable_http_app(...)`."""
    manager: Any = server.session_manager
    admit, discard = manager._admit_session, manager._discard_session

    def admit_with_store(requestor: Any) -> Any:
        transport = admit(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            transport._event_store = stores.open(transport.mcp_session_id)
            _http_sessions[transport.mcp_session_id] = transport
        return transport

    async def discard_with_store(session_id: str, transport: Any) -> None:
        stores.close(session_id)
        _http_sessions.pop(session_id, None)
        await discard(session_id, transport)

    manager._admit_session = admit_with_store
    manager._discard_session = discard_with_store


# The Streamable HTTP sessions this process serves (2025-11-25 and older), by session id: their transports know which
# calls still have a response stream.
_http_sessions: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


STDIO_PEER: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("stdio_peer", default=None)
"""Over stdio (`shared.serving.stdio.run_stdio`): whether the client still reads what this server writes."""


def response_stream_open(context: Context) -> bool | None:
    """Whether the response stream of this call is there: its POST's SSE connection, or a GET that resumed it with
    `Last-Event-ID`; over stdio, whether the client still reads the server's output (`STDIO_PEER`: a client killed
    while a call waited left it running until its next write). None where there is no such stream to watch: memory,
    2026-07-28 (the SDK cancels a call whose connection closes), a task (its request was answered already; its ttl
    bounds it)."""
    if CURRENT_TASK.get() is not None:
        return None
    request_context = context.request_context
    peer = STDIO_PEER.get()
    if peer is not None and getattr(request_context, "request", None) is None:
        return peer()
    headers = getattr(request_context.request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    transport = _http_sessions.get(session_id) if session_id else None
    streams = getattr(transport, "_request_streams", None)  # an SDK that renamed it: nothing tells (the contract test)
    if streams is None or request_context.request_id is None:
        return None
    return str(request_context.request_id) in streams


def connection_key(session: Any) -> Any:
    """An object that lives as long as the client's connection (None when the SDK has none to offer)."""
    return getattr(session, "_connection", None)


def uses_input_required(context: Context) -> bool:
    """Whether the connection speaks 2026-07-28 or later (no server→client requests mid-call)."""
    from mcp_types.version import is_version_at_least

    version = context.protocol_version
    return version is not None and is_version_at_least(version, "2026-07-28")


class SdkChannel:
    """`shared.framework.tools.ClientChannel` over the SDK's request context: the client's roots, model and user."""

    def __init__(self, context: Context) -> None:
        self._context = context

    async def roots(self) -> list[str] | None:
        session = self._context.request_context.session
        if not session.check_client_capability(ClientCapabilities(roots=RootsCapability())):
            return None
        connection = connection_key(session)
        cached = _client_roots_cache.get(connection, _UNKNOWN) if connection is not None else _UNKNOWN
        if cached is not _UNKNOWN:
            return None if cached is None else list(cached)
        generation = _roots_generation.get(connection, 0) if connection is not None else 0
        try:
            result = await session.list_roots()
            roots: list[str] | None = [str(root.uri) for root in result.roots]
        except MCPError:  # the client refused, or a 2026-07-28 connection cannot ask the client back
            roots = None
        if connection is not None and _roots_generation.get(connection, 0) == generation:
            _client_roots_cache[connection] = roots  # not if the roots changed while they were being read
        return None if roots is None else list(roots)

    def _no_mid_call_requests(self) -> str | None:
        context = self._context
        if asks_through_tasks():  # a 2025-11-25 task: its requests go through the client's tasks/result
            return None
        if uses_input_required(context):
            return (
                f"this connection speaks MCP {context.protocol_version}, where a server cannot send requests to the "
                "client during a tool call (only as an InputRequiredResult, one round trip of the call)"
            )
        if not context.request_context.session.can_send_request:
            return "this connection has no channel for requests from the server to the client (e.g. stateless HTTP)"
        return None

    def sampling_unavailable(self, tools: bool = False) -> str | None:
        """Why this call cannot send `sampling/createMessage` to the client (with tool use if `tools`), or None."""
        reason = self._no_mid_call_requests()
        if reason is not None:
            return reason
        capabilities = self._context.client_capabilities
        sampling = capabilities.sampling if capabilities is not None else None
        if sampling is None:
            return "the MCP client did not declare the `sampling` capability"
        if tools and sampling.tools is None:
            return "the MCP client declared `sampling` without tool use (`sampling.tools`): its model cannot call tools"
        return None

    async def sample(self, params: CreateMessageRequestParams) -> CreateMessageResult | CreateMessageResultWithTools:
        """One `sampling/createMessage` request, related to this call (or, in a 2025-11-25 task's work, to the task,
        through the client's `tasks/result`); ToolFailure when the client refuses or fails."""
        if asks_through_tasks():
            return await self._sample_through_task(params)
        session = self._context.request_context.session
        with warnings.catch_warnings():  # deprecated by 2026-07-28 (SEP-2577), still the way on 2025-11-25
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            create_message: Any = session.create_message  # its overloads cannot see that `tools` is optional here
            request = create_message(
                params.messages,
                max_tokens=params.max_tokens,
                system_prompt=params.system_prompt,
                temperature=params.temperature,
                stop_sequences=params.stop_sequences,
                metadata=params.metadata,
                model_preferences=params.model_preferences,
                tools=params.tools,
                tool_choice=params.tool_choice,
                related_request_id=self._context.request_id,
            )
        try:
            return await request
        except MCPError as exc:  # the client (or its user) refused, or its model failed
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR, f"the MCP client did not answer the sampling request: {exc.message[:300]}"
            ) from None

    async def _sample_through_task(
        self, params: CreateMessageRequestParams
    ) -> CreateMessageResult | CreateMessageResultWithTools:
        result_type: Any = CreateMessageResultWithTools if params.tools else CreateMessageResult
        waiting = "input required: call tasks/result to receive the sampling request of this task's sub-agent."
        try:
            return await ask_client(CreateMessageRequest(params=params), result_type, waiting)
        except NoBackChannelError:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                "the client's tasks/result cannot carry the sampling request (no channel for requests from the server, "
                "e.g. stateless HTTP); configure [gateway.model] so the server calls a model itself.",
            ) from None
        except MCPError as exc:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR, f"the MCP client did not answer the sampling request: {exc.message[:300]}"
            ) from None

    async def _ask_through_task(self, question: UserQuestion) -> UserAnswer | None:
        import time

        import anyio

        params = ElicitRequestFormParams(
            message=question.message, requested_schema=render_elicitation_schema(question.schema)
        )
        waiting = f"input required: call tasks/result to receive a question for the user. {question.message}"
        started = time.monotonic()
        try:
            with anyio.fail_after(question.timeout_seconds or 3600):
                result = await ask_client(ElicitRequest(params=params), ElicitResult, waiting)
        except NoBackChannelError:
            return None
        except TimeoutError:
            return UserAnswer(action="timeout", waited_seconds=time.monotonic() - started)
        except MCPError:
            return UserAnswer(action="cancel", waited_seconds=time.monotonic() - started)
        return _answer(result, time.monotonic() - started)

    async def ask(self, question: UserQuestion) -> UserAnswer | None:
        """A form elicitation sent mid-call (2025-11-25 connections with elicitation); None where that cannot be."""
        import time

        import anyio

        capabilities = self._context.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        if self._no_mid_call_requests() is not None or elicitation is None:
            return None
        if asks_through_tasks():
            return await self._ask_through_task(question)
        session = self._context.request_context.session
        started = time.monotonic()
        try:
            with anyio.fail_after(question.timeout_seconds or 3600):
                result = await session.elicit_form(
                    question.message, question.schema.model_json_schema(), related_request_id=self._context.request_id
                )
        except TimeoutError:
            return UserAnswer(action="timeout", waited_seconds=time.monotonic() - started)
        except MCPError:
            return UserAnswer(action="cancel", waited_seconds=time.monotonic() - started)
        return _answer(result, time.monotonic() - started)

    def connected(self) -> bool | None:
        return response_stream_open(self._context)


def _answer(result: ElicitResult, waited: float) -> UserAnswer:
    """A form elicitation's result as the tool's `UserAnswer`."""
    if result.action == "accept":
        return UserAnswer(action="accept", content=dict(result.content or {}), waited_seconds=waited)
    return UserAnswer(action="decline" if result.action == "decline" else "cancel", waited_seconds=waited)


def tool_context(context: Context) -> ToolContext:
    """The one `ToolContext` of a call that came in over MCP: progress to the client, its channel, its caller."""

    meta = getattr(context.request_context, "meta", None)
    session = context.request_context.session  # one per request: the key of its progress line
    line = _progress_lines.get(session)
    if line is None:
        line = _progress_lines[session] = ProgressLine()
    return ToolContext(
        progress=line.through(tracked(context.report_progress)),  # a task's progress is also its status message
        channel=SdkChannel(context),
        caller=caller_of(meta if isinstance(meta, dict) else None),
    )


# Each request's progress notifications, strictly increasing whoever reports them (approval, the tool, a section).
_progress_lines: weakref.WeakKeyDictionary[Any, ProgressLine] = weakref.WeakKeyDictionary()
# The client's roots per connection: fetched once, forgotten on `notifications/roots/list_changed`.
_client_roots_cache: weakref.WeakKeyDictionary[Any, list[str] | None] = weakref.WeakKeyDictionary()
_roots_generation: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_UNKNOWN: Any = object()


class ForgetRootsOnChange:
    """Drops a connection's cached client roots when the client says they changed (re-read on next use)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) == "notifications/roots/list_changed":
            connection = connection_key(getattr(ctx, "session", None))
            if connection is not None:
                _client_roots_cache.pop(connection, None)
                _roots_generation[connection] = _roots_generation.get(connection, 0) + 1
        return await call_next(ctx)


class RawArguments(ArgModelBase):
    """Hands the raw arguments through untouched: validation happens in `shared.serving.calls` with error codes."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def add_built_tools(server: MCPServer, tools: list[Tool]) -> None:
    """Tools added to a built server (the SDK's `add_tool` builds one from a function; these are built already).
    Only before the server answers its first request: its tools/list says the list never changes."""
    for tool in tools:
        server._tool_manager._tools[tool.name] = tool


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
        return await call(arguments, tool_context(context))

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


def spec_schemas(spec: ToolSpec, *, lean: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """The input and output JSON Schemas of a declared tool (`lean`: compacted, see `shared.framework.schemas`)."""
    input_schema = spec.input_model.model_json_schema()
    output_schema = spec.output_model.model_json_schema(mode="serialization")
    if not lean:
        return input_schema, output_schema
    from mcp_sections.shared.framework.schemas import lean_schema

    return lean_schema(input_schema), lean_schema(output_schema, descriptions=False)


def spec_tool(
    spec: ToolSpec,
    call: Callable[[dict[str, Any], ToolContext], Awaitable[CallToolResult]],
    *,
    lean: bool = False,
    publish_output: bool = True,
) -> Tool:
    """The one builder of an SDK tool from a declared tool: name, title, description, schemas, annotations.

    `publish_output=False` for a tool whose results are not its own model (the gateway's forwarding tool).
    """
    input_schema, output_schema = spec_schemas(spec, lean=lean)
    return raw_tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=input_schema,
        output_schema=output_schema if publish_output else None,
        annotations=sdk_annotations(spec, with_title=not lean),
        call=call,
    )


def definition(spec: ToolSpec, *, lean: bool = False, publish_output: bool = True) -> dict[str, Any]:
    """The one `tools/list` entry of a declared tool, built as `spec_tool` publishes it. One rule: a section's tools
    are full (as its own server publishes them); a host's own tools shown to a model — the gateway's, orchestration's
    to its sub-agents — are `lean` (compacted schemas, `shared.framework.schemas`). A long tool carries its
    `execution.taskSupport`, as tools/list publishes it on 2025-11-25 (`shared.serving.tasks`)."""
    entry = tool_definition(spec_tool(spec, _definition_only, lean=lean, publish_output=publish_output))
    execution = task_execution(spec.task_support)
    return entry if execution is None else {**entry, "execution": execution}


async def _definition_only(arguments: dict[str, Any], ctx: ToolContext) -> CallToolResult:  # pragma: no cover
    raise AssertionError("a definition is never called")


def tool_definition(tool: Tool) -> dict[str, Any]:
    """A tool's `tools/list` entry, exactly as a server publishes it."""
    entry = {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.parameters,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
        if tool.annotations
        else None,
    }
    return {key: value for key, value in entry.items() if value is not None}


def sdk_annotations(spec: ToolSpec, *, with_title: bool = True) -> ToolAnnotations:
    """MCP annotations of a declared tool (`with_title=False`: the title is the tool's own `title` already)."""
    hints = spec.annotations
    return ToolAnnotations(
        title=spec.title if with_title else None,
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )
