"""Log messages to the MCP client (`notifications/message`): the logging capability of every server of the suite.

A client's log pane (the Inspector, VS Code, Claude Code) shows what long work is doing: a crawl, an ingest, an
install, a sub-agent. Every call is one `CallLog`, opened by the call pipeline where the audit line is written
(`shared.serving.pipeline.accounted`, on every path a call takes), and says:
- `debug`: that the call started, and how it ended;
- `info`: the progress of a call (at most one line a second, and the last), how a call that reported progress
  ended, and each call a sub-agent makes (its id, depth, tool, outcome and duration);
- `notice`: a call that failed (its error code; the result says the rest);
- `warning`: a call that failed after reporting progress (long work lost).
The same rules as the audit (`shared.serving.audit`): a line names the server, the tool, the caller's depth and agent
id, numbers, an outcome code and durations — never an argument value, never a tool's own text (progress messages and
error messages may quote arguments, paths, URLs or secrets: they go to the client in the progress notifications and
results it already gets, not into logs).

The level is per client connection: `logging/setLevel` (2025-11-25 and older; `DEFAULT_LEVEL` until a client sets
one). On 2026-07-28 a request opts in with its `_meta` log level and the SDK filters by it. A call's lines ride the
stream of its request; a task's work, which outlives its request, logs on the connection's own stream.

Through the gateway, the progress of a forwarded call and the calls of sub-agents are logged by the gateway itself,
from what the sections send back (progress) and what its gate sees: a section's own log messages are not passed on,
as they could not be told apart between the gateway's clients on a shared connection, and a third-party section's
text could carry anything.
"""

from __future__ import annotations

import logging
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import EmptyResult, SetLevelRequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_sections.shared.framework.tools import ToolContext
from mcp_sections.shared.serving.audit import outcome_of
from mcp_sections.shared.serving.sdk_tools import connection_key, lowlevel_server
from mcp_sections.shared.serving.tasks import CURRENT as CURRENT_TASK

logger = logging.getLogger("mcp_sections.client_log")

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LEVEL = "info"
PROGRESS_SECONDS = 1.0  # at most one progress line a second per call (the last one always)
LOGGER_PREFIX = "mcp-sections"

_levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def _rank(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 0


class ClientSink:
    """Where one client request's log lines go: its connection, filtered by the level that client set."""

    def __init__(self, session: Any, request_id: Any, protocol_version: str | None) -> None:
        self._session = session
        self._request_id = request_id
        self._modern = protocol_version in MODERN_PROTOCOL_VERSIONS

    def wants(self, level: str) -> bool:
        if self._modern:
            return True  # the SDK applies the request's own opt-in
        connection = connection_key(self._session)
        wanted = _levels.get(connection, DEFAULT_LEVEL) if connection is not None else DEFAULT_LEVEL
        return _rank(level) >= _rank(wanted)

    async def send(self, level: str, data: dict[str, Any], server: str) -> None:
        if not self.wants(level):
            return
        related = self._request_id if CURRENT_TASK.get() is None else None  # a task's request has been answered
        try:
            with warnings.catch_warnings():  # deprecated by 2026-07-28 (SEP-2577), still the way before it
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self._session.send_log_message(
                    level, data, logger=f"{LOGGER_PREFIX}.{server}", related_request_id=related
                )
        except Exception:  # logs are best effort: a closed stream must not fail the call
            logger.debug("a log message to the client was dropped", exc_info=True)


_sink: ContextVar[ClientSink | None] = ContextVar("mcp_sections_client_log", default=None)
_call: ContextVar[CallLog | None] = ContextVar("mcp_sections_call_log", default=None)


def serve_logging(server: MCPServer) -> None:
    """Give `server` the logging capability: `logging/setLevel` per connection, and a sink for each call's lines."""

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        connection = connection_key(ctx.session)
        if connection is not None:
            _levels[connection] = params.level
        return EmptyResult()

    lowlevel_server(server).add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
    server.middleware.append(_SinkPerCall())


class _SinkPerCall:
    """Middleware: a `tools/call` request's log lines go to its client (`ClientSink`)."""

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if getattr(ctx, "method", None) != "tools/call" or getattr(ctx, "session", None) is None:
            return await call_next(ctx)
        token = _sink.set(ClientSink(ctx.session, getattr(ctx, "request_id", None), ctx.protocol_version))
        try:
            return await call_next(ctx)
        finally:
            _sink.reset(token)


class CallLog:
    """The log lines of one call (see the module docstring): opened by `opened`, ended by `end` or `cancelled`."""

    def __init__(self, sink: ClientSink, server: str, tool: str, caller: tuple[int, str | None], outer: bool) -> None:
        self._sink = sink
        self._server = server
        self._tool = tool
        self._depth, self._agent = caller
        self._outer = outer
        self._started = time.monotonic()
        self._last_progress = 0.0
        self._reported = False

    def _data(self, event: str, text: str, **fields: Any) -> dict[str, Any]:
        who = f"{self._agent} (depth {self._depth}): " if self._agent else ""
        data: dict[str, Any] = {"event": event, "server": self._server, "tool": self._tool, "depth": self._depth}
        if self._agent:
            data["agent"] = self._agent
        return {**data, **fields, "text": f"{who}{self._tool} {text}"}

    async def start(self) -> None:
        await self._sink.send("debug", self._data("start", "started"), self._server)

    def watching(self, ctx: ToolContext | None) -> ToolContext | None:
        """`ctx` whose progress reports also become log lines (only the outermost call's: an inner call's progress
        reaches it)."""
        if ctx is None or not self._outer:
            return ctx
        report = ctx.report_progress

        async def progress(done: float, total: float | None, message: str | None) -> None:
            await report(done, total, message)
            await self.progress(done, total)

        return ctx.derive(progress=progress)

    async def progress(self, done: float, total: float | None) -> None:
        now = time.monotonic()
        last = total is not None and done >= total
        if not last and now - self._last_progress < PROGRESS_SECONDS:
            return
        self._last_progress, self._reported = now, True
        elapsed = now - self._started
        shown = f"{done:g}/{total:g}" if total else f"{done:g}"
        data = self._data("progress", f"at {shown} after {elapsed:.0f} s", progress=done, total=total)
        await self._sink.send("info", {**data, "elapsed_s": round(elapsed, 1)}, self._server)

    async def end(self, result: Any) -> None:
        outcome, _ = outcome_of(result)  # the code only: an error's text may quote the arguments
        await self._ended(outcome)

    async def cancelled(self) -> None:
        await self._ended("CANCELLED")

    async def _ended(self, outcome: str) -> None:
        duration = time.monotonic() - self._started
        subagent = self._depth > 0
        level = "info" if self._reported or subagent else "debug"
        if outcome not in ("OK", "CANCELLED"):
            level = "warning" if self._reported else "notice"
        if not self._outer and not subagent:
            return  # a call inside another one of the client's (an in-process section): the outer one says it
        text = f"ended {outcome} after {_duration(duration)}"
        data = self._data("end", text, outcome=outcome, duration_ms=round(duration * 1000, 1))
        await self._sink.send(level, data, self._server)


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


async def say(server: str, tool: str, level: str, event: str, text: str) -> None:
    """One line about the current call to its client (e.g. where to answer a question): `text` is the server's own
    words, never an argument value."""
    sink = _sink.get()
    if sink is not None:
        await sink.send(level, {"event": event, "server": server, "tool": tool, "text": text}, server)


def opened(server: str, tool: str, caller: tuple[int, str | None]) -> CallLog | None:
    """The log of a call starting now, for the client whose request it serves (None when it has none)."""
    sink = _sink.get()
    if sink is None:
        return None
    return CallLog(sink, server, tool, caller, outer=_call.get() is None)


async def logged(log: CallLog | None, run: Callable[[], Awaitable[Any]]) -> Any:
    """`run()` as the call `log` is about (its inner calls know they are inner); its end logged."""
    if log is None:
        return await run()
    token = _call.set(log)
    try:
        await log.start()
        result = await run()
    except BaseException:
        _call.reset(token)
        await _shielded(log.cancelled)
        raise
    _call.reset(token)
    await log.end(result)
    return result


async def _shielded(send: Callable[[], Awaitable[None]]) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(1):
        await send()
