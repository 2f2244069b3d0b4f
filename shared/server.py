"""A section declaration → an `MCPServer` (official SDK), served over stdio or Streamable HTTP."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
import warnings
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.elicitation import AcceptedElicitation, CancelledElicitation, DeclinedElicitation
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve, build_resolver_plans
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    CreateMessageResultWithTools,
    RootsCapability,
    ToolAnnotations,
)
from pydantic import ConfigDict

from mcp_sections.shared.about import package_version
from mcp_sections.shared.calls import failure_result, missing_dependency, parse_arguments, run_tool
from mcp_sections.shared.errors import ErrorCode, ToolFailure
from mcp_sections.shared.sections import Section, SectionRuntime
from mcp_sections.shared.tools import ToolContext, ToolSpec, UserAnswer

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
            return self._value  # None, or what the section's lifespan provided
        with self._lock:
            if not self._opened:
                self._value = self._section.open_state(self._runtime)
                self._opened = True
            return self._value

    async def aget(self) -> Any:
        if self._opened or self._section.open_state is None:
            return self._value
        return await anyio.to_thread.run_sync(self.get)

    def provide(self, value: Any) -> None:
        """The state a section's async `lifespan` yields (used instead of `open_state`)."""
        with self._lock:
            self._value = value
            self._opened = True

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
        connection = getattr(session, "_connection", None)
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

    def sampling_unavailable(self, tools: bool = False) -> str | None:
        """Why this call cannot send `sampling/createMessage` to the client (with tool use if `tools`), or None."""
        context = self._context
        if _uses_input_required(context):
            return (
                f"this connection speaks MCP {context.protocol_version}, where a server cannot send "
                "sampling/createMessage during a tool call (only as an InputRequiredResult, one sample per round "
                "trip of the call)"
            )
        session = context.request_context.session
        if not session.can_send_request:
            return "this connection has no channel for requests from the server to the client (e.g. stateless HTTP)"
        capabilities = context.client_capabilities
        sampling = capabilities.sampling if capabilities is not None else None
        if sampling is None:
            return "the MCP client did not declare the `sampling` capability"
        if tools and sampling.tools is None:
            return "the MCP client declared `sampling` without tool use (`sampling.tools`): its model cannot call tools"
        return None

    async def sample(self, params: CreateMessageRequestParams) -> CreateMessageResult | CreateMessageResultWithTools:
        """One `sampling/createMessage` request, related to this call; ToolFailure when the client refuses or fails."""
        session = self._context.request_context.session
        with warnings.catch_warnings():  # deprecated by 2026-07-28 (SEP-2577), still the way on 2025-11-25
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            request = session.create_message(
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


# The client's roots per connection: fetched once, forgotten on `notifications/roots/list_changed`.
_client_roots_cache: weakref.WeakKeyDictionary[Any, list[str] | None] = weakref.WeakKeyDictionary()
_roots_generation: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_UNKNOWN: Any = object()


class ForgetRootsOnChange:
    """Drops a connection's cached client roots when the client says they changed (re-read on next use)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) == "notifications/roots/list_changed":
            connection = getattr(getattr(ctx, "session", None), "_connection", None)
            if connection is not None:
                _client_roots_cache.pop(connection, None)
                _roots_generation[connection] = _roots_generation.get(connection, 0) + 1
        return await call_next(ctx)


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


def sdk_tool(spec: ToolSpec, state: SectionState, extra: str | None = None) -> Tool:
    """The SDK tool of one declared tool; `state` is anything with `async aget()` (the section's state).

    `extra` is the pip extra named when a library is missing.
    """

    async def call(arguments: dict[str, Any], ctx: ToolContext, answer: UserAnswer | None = None) -> CallToolResult:
        try:
            value = await state.aget()
        except ToolFailure as failure:
            return failure_result(failure)
        except ModuleNotFoundError as exc:
            return failure_result(missing_dependency(spec.name, exc, extra))
        except Exception:
            logger.exception("opening the state of tool %s failed", spec.name)
            return failure_result(
                ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"{spec.name} could not start its backing service (see the server log); "
                    "check the section's configuration and data directory, then retry.",
                )
            )
        return await run_tool(spec, arguments, value, ctx, extra, answer)

    if spec.asks_user is not None:
        return _asking_tool(spec, state, call)
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


# -- tools that ask the user one question first (MCP form elicitation, both protocol eras) -------------------
#
# The question is a resolver (`Annotated[..., Resolve(fn)]` returning `Elicit(...)`), so the SDK carries it
# the way the connection needs: on 2025-11-25 it sends `elicitation/create` mid-call and waits; on 2026-07-28
# it returns an `InputRequiredResult` and the client calls again with the answer. The timeout is enforced
# per era: a cancel scope around the wait (legacy), or the time between handing the question out and the
# client coming back with its answer (2026-07-28: the server holds nothing while the user thinks).

_answer_window: ContextVar[_AnswerWindow | None] = ContextVar("mcp_sections_answer_window", default=None)
ASKED_MEMORY_SECONDS = 3600.0


class _AnswerWindow:
    """One tools/call of an asking tool: the cancel scope the legacy wait runs in, and how long it lasted."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.asked_at: float | None = None
        self.timeout: float | None = None
        self.waited: float | None = None

    def open(self, timeout: float | None) -> None:
        self.asked_at = time.monotonic()
        self.timeout = timeout
        if timeout is not None:
            self.scope.deadline = anyio.current_time() + timeout

    def close(self) -> float:
        """The answer arrived (or no question was needed): stop the clock, return how long the user took."""
        self.scope.deadline = math.inf
        if self.waited is None and self.asked_at is not None:
            self.waited = time.monotonic() - self.asked_at
        return self.waited or 0.0


class _AskedQuestions:
    """2026-07-28: when each question was handed to the client, until the client comes back with its answer."""

    def __init__(self) -> None:
        self._asked: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def asked(self, key: tuple[str, str]) -> None:
        now = time.monotonic()
        with self._lock:
            for other in [k for k, times in self._asked.items() if now - times[-1] > ASKED_MEMORY_SECONDS]:
                del self._asked[other]
            self._asked.setdefault(key, deque()).append(now)

    def answered(self, key: tuple[str, str]) -> float | None:
        """Seconds since the question was handed out (None when this server did not hand it out)."""
        with self._lock:
            times = self._asked.get(key)
            if not times:
                return None
            asked_at = times.popleft()
            if not times:
                del self._asked[key]
        return time.monotonic() - asked_at


class _NotAsked:
    """A resolver outcome that is not the user's answer: a failure to report, or an answer decided here."""

    def __init__(self, failure: ToolFailure | None = None, answer: UserAnswer | None = None) -> None:
        self.failure = failure
        self.answer = answer


def _can_elicit(context: Context) -> bool:
    capabilities = context.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _uses_input_required(context: Context) -> bool:
    from mcp_types.version import is_version_at_least

    version = context.protocol_version
    return version is not None and is_version_at_least(version, "2026-07-28")


class _AskingTool(Tool):
    """An SDK tool whose `answer` parameter is resolved by asking the user; a legacy wait may time out."""

    on_timeout: Any = None

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        window = _AnswerWindow()
        token = _answer_window.set(window)
        try:
            with window.scope:
                return await super().run(arguments, context, convert_result)
        except ToolError:  # raised while resolving the answer (the body itself never raises): a bad answer
            logger.info("tool %s: the client's answer does not fit the question", self.name, exc_info=True)
            return failure_result(
                ToolFailure(
                    ErrorCode.VALIDATION_FAILED,
                    f"the answer to {self.name}'s question does not fit the form (e.g. an unknown option); ask again.",
                )
            )
        finally:
            _answer_window.reset(token)
        # only reached when the window's deadline ended the wait for the answer (legacy era)
        waited = window.timeout or 0.0
        result = await self.on_timeout(dict(arguments), context, UserAnswer(action="timeout", waited_seconds=waited))
        return self.fn_metadata.convert_result(result) if convert_result else result


def _asking_tool(
    spec: ToolSpec,
    state: Any,
    call: Callable[[dict[str, Any], ToolContext, UserAnswer | None], Awaitable[CallToolResult]],
) -> Tool:
    asked = _AskedQuestions()
    assert spec.asks_user is not None
    ask = spec.asks_user

    async def question(arguments: dict[str, Any], context: Context) -> Any:
        try:
            value = await state.aget()
        except Exception:  # the body reports it, as for any tool
            return _NotAsked()
        try:
            params = parse_arguments(spec.input_model, arguments)
            user_question = ask(params, value)
        except ToolFailure as failure:
            return _NotAsked(failure)
        except Exception:
            logger.exception("the question of tool %s could not be built", spec.name)
            return _NotAsked(
                ToolFailure(ErrorCode.EXECUTION_FAILED, f"{spec.name} failed with an internal error (see the log).")
            )
        if not _can_elicit(context):
            return _NotAsked(
                ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"{spec.name} must ask the user, but this MCP client does not support elicitation (form mode). "
                    "Use a client that declares the elicitation capability, or continue without asking the user.",
                )
            )
        window = _answer_window.get()
        timeout = user_question.timeout_seconds
        if _uses_input_required(context):
            # Each round of a 2026-07-28 call is a request of its own (no connection to key on): the same
            # question asked twice at once is told apart only by order, which is close enough for a timeout.
            key = (spec.name, _digest(arguments))
            if context.input_responses:  # the client is back with the answer
                waited = asked.answered(key)
                if waited is not None and timeout is not None and waited > timeout:
                    return _NotAsked(answer=UserAnswer(action="timeout", waited_seconds=waited))
                if window is not None:
                    window.waited = waited or 0.0
            else:
                asked.asked(key)
        elif window is not None:
            window.open(timeout)
        return Elicit(user_question.message, user_question.schema)

    async def invoke(arguments: dict[str, Any], context: Context, answer: Any = None) -> CallToolResult:
        window = _answer_window.get()
        waited = window.close() if window is not None else 0.0
        ctx = SdkToolContext(context)
        if isinstance(answer, AcceptedElicitation) and isinstance(answer.data, _NotAsked):
            decided = answer.data
            if decided.failure is not None:
                return failure_result(decided.failure)
            return await call(arguments, ctx, decided.answer)
        if isinstance(answer, AcceptedElicitation):
            content = answer.data.model_dump(mode="json") if hasattr(answer.data, "model_dump") else answer.data
            return await call(arguments, ctx, UserAnswer(action="accept", content=content, waited_seconds=waited))
        action = "decline" if isinstance(answer, DeclinedElicitation) else "cancel"
        assert isinstance(answer, DeclinedElicitation | CancelledElicitation)
        return await call(arguments, ctx, UserAnswer(action=action, waited_seconds=waited))

    async def on_timeout(arguments: dict[str, Any], context: Context, answer: UserAnswer) -> CallToolResult:
        return await call(arguments, SdkToolContext(context), answer)

    resolved = {"answer": (Resolve(question), True)}
    return _AskingTool(
        fn=invoke,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=spec.input_model.model_json_schema(),
        fn_metadata=FuncMetadata(
            arg_model=RawArguments, output_schema=spec.output_model.model_json_schema(mode="serialization")
        ),
        is_async=True,
        context_kwarg="context",
        resolved_params=resolved,
        resolver_plans=build_resolver_plans(resolved, {"arguments"}),
        annotations=sdk_annotations(spec),
        on_timeout=on_timeout,
    )


def _digest(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def build_server(section: Section, runtime: SectionRuntime) -> tuple[MCPServer, SectionState]:
    """The MCP server of one section, and its lazily opened state."""
    state = SectionState(section, runtime)

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        try:
            async with AsyncExitStack() as stack:
                if section.lifespan is not None:
                    state.provide(await stack.enter_async_context(section.lifespan(runtime)))
                yield
        finally:
            await anyio.to_thread.run_sync(state.close)

    server = MCPServer(
        name=f"mcp-sections-{section.id}",
        title=section.name,
        description=section.description,
        instructions=section.instructions,
        version=package_version(),
        tools=[sdk_tool(spec, state, section.extra) for spec in section.specs],
        lifespan=lifespan,
        log_level=runtime.settings.log_level,
    )
    server.middleware.append(UnknownToolAsNotFound({spec.name for spec in section.specs}))
    server.middleware.append(ForgetRootsOnChange())
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
