"""Section launchers: start a section on first use, keep one MCP session open, restart it when it dies.

Kinds of launch:
- built-in section: `<python> -m mcp_sections.servers serve <id>` as a stdio subprocess, with the
  gateway's --config/--data-dir/--root/--log-level passed through;
- configured stdio command (`[gateway.sections.<id>] command/args/env`, e.g. `docker run -i --rm ...`);
- Streamable HTTP URL (`[gateway.sections.<id>] url`).

Each live connection is held by one long-lived task of the gateway's task group, which enters and exits
the `mcp.Client` (and so all its anyio cancel scopes) itself; callers only borrow the session. A section
that fails never fails the gateway: its calls get DEPENDENCY_ERROR with what to do.

Restarts: a call that finds its section not running starts it (in the background, in the pool's task group) and
waits; calls arriving meanwhile queue behind the same start, each for at most `RESTART_WAIT_SECONDS`. A failed
start, or a process that ends before it answered a call, is a failure; queued calls keep waiting through the next
attempts. The next attempt follows at once after the first failure, then after a back-off that doubles from
`restart_backoff_seconds`: up to `restart_backoff_max_seconds` when the section failed by itself (it exited, crashed
on a signal of its own, or could not be spawned), up to 4 × `restart_backoff_seconds` when it was only killed from
outside (SIGKILL: a `kill -9`, the OOM killer), which says nothing of its health. After `CRASH_LOOP_FAILURES`
failures of its own in a row (at once when the command cannot be spawned) the section keeps crashing: calls fail at
once with the reason (how the process ended and the last lines of its stderr, `section_process.py`) until the
back-off ends; then one call tries again. An answered call ends the series; a process that ends while idle is no
failure.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT, CallToolResult
from mcp_types.version import is_version_at_least
from opentelemetry import context as otel_context

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint
from mcp_sections.shared.serving import preflight
from mcp_sections.shared.serving.audit import caller_meta, launch_environment, user_named
from mcp_sections.shared.serving.telemetry import passed_environment
from mcp_sections.shared.settings.config import Settings

from .catalog import SectionEntry
from .section_process import SectionProcess, section_stdio
from .settings import GatewaySettings

logger = logging.getLogger("mcp_sections.gateway.launchers")

State = Literal["not_started", "starting", "running", "stopped", "failed"]  # stopped: ended while idle
STARTUP_TIMEOUT_SECONDS = 60.0
RESTART_WAIT_SECONDS = STARTUP_TIMEOUT_SECONDS  # the longest a call waits for its section to (re)start
CRASH_LOOP_FAILURES = 5  # failures of its own in a row (no call answered between them): the section keeps crashing
KILLED_BACKOFF_FACTOR = 4  # a section killed from outside restarts within this × restart_backoff_seconds
DYING_SECONDS = 10.0  # the longest a restart waits for the process of a dropped connection to be reaped
IDLE_CHECK_SECONDS = 1.0  # a call after this much idleness first checks that the section is still there
PING_TIMEOUT_SECONDS = 5.0
PREFLIGHT_TIMEOUT_SECONDS = 30.0  # a preflight reads files and the policy; the first one may detect the sandbox
CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)  # the transport is gone
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]

# Environment a built-in section inherits from the gateway: its own settings, never the gateway's
# (which may name model API keys), plus what Python itself needs.
PASSED_ENVIRONMENT = ("PYTHONPATH", "VIRTUAL_ENV", "LANG", "LC_ALL", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME")


class Launcher(Protocol):
    """How the pool reaches one section: a subprocess (or configured command or URL), in process, or hosted."""

    entry: SectionEntry
    state: State
    last_error: str | None
    starts: int

    @property
    def running_since(self) -> float | None:
        """`time.monotonic()` when the running section started (None: not running)."""
        ...

    def attach(self, task_group: TaskGroup) -> None:
        """The task group the section's connection lives in (the pool's)."""

    def boot(self) -> None:
        """Start the section now in the background, because a call is coming (a no-op where nothing starts)."""

    async def list_tools(self) -> list[dict[str, Any]]: ...

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressCallback | None = None,
        read_only: bool = False,
        caller: Any = None,
    ) -> CallToolResult: ...

    async def preflight(self, name: str, arguments: dict[str, Any]) -> ToolFailure | None:
        """What the section's preflight of this call refuses (`shared.serving.preflight`); None: nothing, or it has
        none. Only ever asked of a built-in section the gateway runs itself."""
        ...

    async def read_resource(self, uri: str) -> dict[str, Any] | None:
        """A resource of the section's results (`shared.framework.resources`), as `resources/read` answers it; None when
        the section is not running (its results went with its process) or does not know the URI."""
        ...

    async def stop(self) -> None: ...


def builtin_parameters(
    section_id: str, settings: Settings, gateway: GatewaySettings | None = None, *, runs_agents: bool = False
) -> StdioServerParameters:
    """`mcp-sections serve <id>` with this interpreter and the gateway's global settings.

    The `OTEL_*` variables go along (the section's spans join the gateway's traces: the SDK's client puts the
    trace context in each request's `_meta`). A section that runs sub-agents (`Section.runs_agents`) also gets the
    model settings and the API-key variable named by `[gateway.model] api_key_env` — and only that one variable.
    Every section learns the suite's own endpoints (`shared.settings.endpoints`: the gateway's HTTP listener, its
    model's and its sections' URLs, which may come from `MCP_SECTIONS_GATEWAY_*` variables it does not get): no program
    it runs may publish a port there.
    """
    from mcp_sections.shared.settings.endpoints import SUITE_ENDPOINTS, passed_on

    # -P: the working directory (often a root) never goes first on the section's module search path
    args = ["-P", "-m", "mcp_sections.servers", "serve", section_id, "--data-dir", str(settings.data_dir)]
    for root in settings.roots:
        args += ["--root", str(root)]
    if settings.config_file is not None:
        args += ["--config", str(settings.config_file)]
    args += ["--log-level", settings.log_level]
    env = {
        key: value
        for key, value in os.environ.items()
        if (key.startswith("MCP_SECTIONS_") and not key.startswith("MCP_SECTIONS_GATEWAY_"))
        or key in PASSED_ENVIRONMENT
    }
    env["MCP_SECTIONS_APPROVAL"] = (
        "off"  # the gateway asks its client before destructive calls (shared.serving.approval)
    )
    env.update(passed_environment())  # OTEL_*: the section exports its spans where the gateway does
    env.update(launch_environment())  # the key it presents with the user of a call (shared.serving.audit)
    urls = [gateway.model.base_url, *(external.url for external in gateway.sections.values())] if gateway else []
    env[SUITE_ENDPOINTS] = passed_on(urls)
    if runs_agents:
        env.update({key: value for key, value in os.environ.items() if key.startswith("MCP_SECTIONS_GATEWAY_MODEL_")})
        key_env = gateway.model.api_key_env if gateway is not None else None
        if key_env and key_env in os.environ:
            env[key_env] = os.environ[key_env]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


@dataclass
class _Connection:
    client: Client
    stop: anyio.Event
    started_at: float
    spawn: SectionProcess | None  # None: a section reached by URL
    ended: anyio.Event  # its task exited the client (the process is reaped: its exit status is known)
    dropped: str | None = None  # why it was dropped, dead, while a call used it (a failure)


class SubprocessLauncher:
    """One section's process (or remote endpoint) and the session the gateway keeps open to it."""

    def __init__(self, entry: SectionEntry, settings: Settings, gateway: GatewaySettings) -> None:
        self.entry = entry
        self._settings = settings
        self._gateway = gateway
        self._task_group: TaskGroup | None = None
        self._connection: _Connection | None = None
        self._attempt: anyio.Event | None = None  # a start under way (set when it ended, started or not)
        self._attempt_scope: anyio.CancelScope | None = None
        self._stopped = False  # the pool is shutting down: a start still under way is stopped
        self._failures = 0  # in a row, since the last answered call
        self._crashes = 0  # of them, failures of the section's own (not kills from outside)
        self._failed_to_start = False  # the last failure was a start (not a process that ended afterwards)
        self._dying: _Connection | None = None  # dropped dead; its failure is counted once its process is reaped
        self._retry_at = 0.0
        self.state: State = "not_started"  # a built-in that cannot be imported shows as failed (Gateway.section_info)
        self.last_error: str | None = None
        self.starts = 0
        self._in_flight = 0
        self._last_used = time.monotonic()

    def attach(self, task_group: TaskGroup) -> None:
        self._task_group = task_group

    @property
    def running_since(self) -> float | None:
        connection = self._connection
        return connection.started_at if connection is not None else None

    # -- lifecycle ---------------------------------------------------------------------------------

    def _target(self) -> StdioServerParameters | str:
        external = self.entry.external
        if external is None:
            return builtin_parameters(self.entry.id, self._settings, self._gateway, runs_agents=self.entry.runs_agents)
        if external.url is not None:
            return external.url
        assert external.command is not None
        env = {key: value for key, value in os.environ.items() if key in PASSED_ENVIRONMENT}
        env.update(external.env)
        return StdioServerParameters(command=external.command, args=external.args, env=env, cwd=external.cwd)

    def _client(self, spawn: SectionProcess | None) -> Client:
        target: Any = self._target()
        mode = self.entry.external.protocol if self.entry.external else "legacy"
        if isinstance(target, str) and self.entry.external:
            headers = self.entry.external.http_headers()
            if headers:
                target = _http_with_headers(target, headers)
        elif spawn is not None:
            target = section_stdio(target, spawn)
        return Client(target, mode=mode, read_timeout_seconds=STARTUP_TIMEOUT_SECONDS)

    def _local(self) -> bool:
        """Whether the section is a process of this machine (not a URL)."""
        return self.entry.external is None or self.entry.external.url is None

    async def _hold(self, spawn: SectionProcess | None, *, task_status: TaskStatus[_Connection]) -> None:
        """The long-lived task: enter the client, hand it out, wait for stop, exit it (same task); a connection
        dropped dead is counted as a failure here, once its process's exit status is known."""
        connection: _Connection | None = None
        try:
            async with self._client(spawn) as client:
                if self.entry.external is None:
                    # A built-in section's structured results are its pydantic output models, dumped: checking
                    # them again with jsonschema here cost more than the rest of the hop. Third-party sections
                    # are still checked; the gateway forwards results unchanged either way.
                    client.session.validate_tool_result = _built_in_result  # type: ignore[method-assign]
                listing = await client.list_tools()
                self.entry.remember_definitions(
                    [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listing.tools]
                )
                connection = _Connection(client, anyio.Event(), time.monotonic(), spawn, anyio.Event())
                task_status.started(connection)
                async with anyio.create_task_group() as watching:
                    if self._local():
                        watching.start_soon(self._watch, client)
                    await connection.stop.wait()
                    watching.cancel_scope.cancel()
        except Exception:
            if connection is None:
                raise
            logger.info("section %s: connection closed with an error", self.entry.id, exc_info=True)
        finally:
            if spawn is not None:
                spawn.spawned()  # never spawned: the reader of its stderr ends
            if connection is not None:
                if self._connection is connection:
                    self._connection = None
                if connection.dropped is not None:
                    with anyio.CancelScope(shield=True):
                        await self._ended(connection.dropped, spawn)
                connection.ended.set()

    async def _ended(self, what: str, spawn: SectionProcess | None, *, start: bool = False, exc: Any = None) -> None:
        """Count a failure, with how the process ended and what it last said."""
        if spawn is not None:
            await spawn.read_all()
        killed = spawn is not None and spawn.killed
        self._failed(spawn.reason(what) if spawn is not None else what, start=start, crashed=not killed)
        if exc is not None and _cannot_spawn(exc):  # no attempt can succeed: calls fail at once from now
            self._crashes = max(self._crashes, CRASH_LOOP_FAILURES)
            self._retry_at = time.monotonic() + self._cool_down()

    def boot(self) -> None:
        """Start the section's process now, in the background, because a call is coming: the gateway builds the
        tool's argument checker meanwhile (imports and schemas on one core, the new process on the other). The
        call that follows waits for this start (and reports its failure)."""
        idle = self._connection is None and self._task_group is not None and self._attempt is None
        if idle and not self._keeps_crashing():
            self._begin()

    async def ensure_running(self, *, check_declaration: bool = True) -> Client:
        """The open session, starting (or restarting) the section first if needed: the call waits for the start
        under way, through the attempts that follow a failure, for at most `RESTART_WAIT_SECONDS`; it fails at
        once while the section keeps crashing (see the module docstring).

        `check_declaration=False` skips importing a built-in's declaration first."""
        if self._connection is not None:
            return self._connection.client
        if check_declaration and self.entry.load_error:
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"section {self.entry.id!r} cannot be loaded ({self.entry.load_error}); "
                f"check that it is installed ({install_hint('all')}) and see the gateway log.",
            )
        if self._task_group is None:
            raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "the gateway is not running; restart it.")
        deadline = time.monotonic() + RESTART_WAIT_SECONDS
        while True:
            if self._connection is not None:
                return self._connection.client
            if self._stopped:
                raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "the gateway is stopping; call again once restarted.")
            attempt = self._attempt
            if attempt is None:
                if self._keeps_crashing():
                    raise self._crashing()
                attempt = self._begin()
            with anyio.move_on_after(deadline - time.monotonic()):
                await attempt.wait()
            if not attempt.is_set():
                failed = f"; the last attempt failed: {self.last_error}" if self._failures else ""
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"section {self.entry.id!r} did not finish starting within {RESTART_WAIT_SECONDS:.0f} s"
                    f"{failed}. Call again in a moment. {self._fix_hint()}",
                )

    def _begin(self) -> anyio.Event:
        """Start an attempt in the background (after the back-off due); its event is set when it ended.

        The attempt, and so the connection it opens and the tasks that serve it (the client's, the idle watch and its
        pings), start outside the trace of the call that asked for it: in an empty OpenTelemetry context, as a task
        copies the context it was started from. A ping of an idle section is then a trace of its own, never a span of
        that call's trace long after it ended."""
        assert self._task_group is not None
        attempt = self._attempt = anyio.Event()
        detached = otel_context.attach(otel_context.Context())
        try:
            self._task_group.start_soon(self._start, attempt, name=f"start section {self.entry.id}")
        finally:
            otel_context.detach(detached)
        return attempt

    async def _start(self, attempt: anyio.Event) -> None:
        assert self._task_group is not None
        try:
            with anyio.CancelScope() as self._attempt_scope:
                dying = self._dying
                if dying is not None:  # its failure is counted once its process is reaped
                    with anyio.move_on_after(DYING_SECONDS):
                        await dying.ended.wait()
                    self._dying = None
                if self._keeps_crashing():
                    return
                wait = self._retry_at - time.monotonic()
                if wait > 0:
                    await anyio.sleep(wait)
                self.state = "starting"
                spawn = SectionProcess() if self._local() else None
                try:
                    connection = await self._task_group.start(self._hold, spawn)
                except Exception as exc:
                    await self._ended(_describe(exc), spawn, start=True, exc=exc)
                    return
                if self._stopped:  # the pool stopped while this process started: it must not outlive the pool
                    connection.stop.set()
                    return
                self._connection = connection
                self.state = "running"
                self.starts += 1
                self.last_error = None
        finally:
            self._attempt_scope = None
            self._attempt = None
            attempt.set()

    def _keeps_crashing(self) -> bool:
        """Whether calls fail at once: the section failed by itself too often in a row, its back-off not over."""
        return self._crashes >= CRASH_LOOP_FAILURES and time.monotonic() < self._retry_at

    def _crashing(self) -> ToolFailure:
        wait = max(0.0, self._retry_at - time.monotonic())
        what = "could not be started" if self._failed_to_start else "keeps stopping before it answers a call"
        return ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"section {self.entry.id!r} {what} ({self._failures} failures in a row; the last: {self.last_error}). "
            f"{self._fix_hint()} The gateway tries it again in {wait:.0f} s.",
        )

    def _cool_down(self) -> float:
        """The back-off of a section that keeps crashing."""
        backoff, most = self._gateway.restart_backoff_seconds, self._gateway.restart_backoff_max_seconds
        return min(backoff * 2 ** (self._crashes - 1), most)

    def _failed(self, reason: str, *, start: bool = False, crashed: bool = True) -> None:
        """One more failure in a row (`crashed`: of the section's own, not a kill from outside); sets when the next
        attempt may begin (see the module docstring)."""
        self.state = "failed"
        self.last_error = reason
        self._failed_to_start = start
        self._failures += 1
        self._crashes += crashed
        backoff, most = self._gateway.restart_backoff_seconds, self._gateway.restart_backoff_max_seconds
        if self._crashes >= CRASH_LOOP_FAILURES:
            delay = self._cool_down()
        elif self._failures == 1:
            delay = 0.0
        else:
            ceiling = most if self._crashes else min(most, backoff * KILLED_BACKOFF_FACTOR)
            delay = min(backoff * 2 ** (self._failures - 2), ceiling)
        self._retry_at = time.monotonic() + delay
        logger.warning("section %s failed (%s); next start in %.1f s", self.entry.id, reason, delay)

    def _drop(self, reason: str, client: Client) -> None:
        """The connection is dead: let its task exit the client (which reaps the process).

        Concurrent calls on the same dead connection count as one failure.
        """
        connection = self._connection
        if connection is None or connection.client is not client:
            return
        self._connection = None
        self.state = "failed"
        self.last_error = reason
        connection.dropped = reason
        self._dying = connection
        connection.stop.set()

    async def _watch(self, client: Client) -> None:
        """While the connection is idle, ping it every `idle_watch_seconds`: a section that died while idle is seen
        (`list_tool_sections` stops showing it as running, and the next call starts a new one)."""
        while True:
            await anyio.sleep(self._gateway.idle_watch_seconds)
            # In flight again after the ping: a call started meanwhile, and a ping slowed by load must not take its
            # connection away (the call itself sees a connection that really closed).
            if self._in_flight == 0 and not await self._alive(client) and self._in_flight == 0:
                self._lost(client)
                return

    async def _alive(self, client: Client) -> bool:
        """A cheap round trip: `ping` on 2025-11-25 connections; 2026-07-28 removed it, so tools/list there."""
        version = client.protocol_version
        try:
            with anyio.fail_after(PING_TIMEOUT_SECONDS), warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                if version is not None and is_version_at_least(version, "2026-07-28"):
                    await client.list_tools(cache_mode="refresh")
                else:
                    await client.send_ping()
        except (
            MCPError,
            TimeoutError,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
            anyio.EndOfStream,
            OSError,
        ):
            return False
        return True

    def _lost(self, client: Client) -> None:
        """The section ended while no call was running: not a start failure, so no restart back-off."""
        connection = self._connection
        if connection is None or connection.client is not client:
            return
        self._connection = None
        connection.stop.set()
        self.state = "stopped"
        self.last_error = "the section's process ended while idle"
        logger.warning("section %s ended while idle; it starts again on the next call", self.entry.id)

    def _fix_hint(self) -> str:
        external = self.entry.external
        if external is None:
            return f"Check `mcp-sections serve {self.entry.id}` runs on its own, and the gateway log."
        if external.url:
            return f"Check that {external.url} is reachable ([gateway.sections.{self.entry.id}] url)."
        return f"Check that `{external.command}` runs on its own ([gateway.sections.{self.entry.id}] command/args)."

    async def stop(self) -> None:
        self._stopped = True
        if self._attempt_scope is not None:  # a start under way (or waiting for its back-off) ends here
            self._attempt_scope.cancel()
        if self._connection is not None:
            self._connection.stop.set()
            self._connection = None
        if self.state == "running":
            self.state = "not_started"

    # -- calls -------------------------------------------------------------------------------------

    async def list_tools(self) -> list[dict[str, Any]]:
        client = await self.ensure_running()
        try:
            listing = await client.list_tools(cache_mode="refresh")
        except MCPError as exc:
            raise self._call_failure(exc, "tools/list", client) from None
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listing.tools]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressCallback | None = None,
        read_only: bool = False,
        caller: Any = None,
    ) -> CallToolResult:
        """Forward one call; the section's result comes back unchanged, transport failures as ToolFailure.
        `caller` (an AgentScope) goes along in `_meta` for the section's audit log.

        A call never reaches a section that died while idle: after `IDLE_CHECK_SECONDS` without calls the
        connection is pinged first, and a new process is started if it is gone. A read-only call whose section
        dies while handling it is sent once more to a new process (it changed nothing); any other call then
        fails with DEPENDENCY_ERROR saying that it may have run.
        """

        forward_progress = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if forward_progress is not None:
                await forward_progress(progress, total, message)

        for attempt in (1, 2):
            client = await self.ensure_running()
            idle = time.monotonic() - self._last_used > IDLE_CHECK_SECONDS and self._in_flight == 0
            if idle and not await self._alive(client):
                self._lost(client)
                client = await self.ensure_running()
            self._in_flight += 1
            try:
                result = await client.call_tool(
                    name,
                    arguments,
                    read_timeout_seconds=self._gateway.call_timeout_seconds,
                    progress_callback=on_progress,
                    meta=_caller_meta(caller, launched=self.entry.external is None),  # type: ignore[arg-type]
                )
            except MCPError as exc:
                failure = self._call_failure(exc, name, client)
                if exc.code == CONNECTION_CLOSED and read_only and attempt == 1:
                    continue
                raise failure from None
            except RuntimeError as exc:  # the client refused the result (e.g. it breaks the tool's output schema)
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"section {self.entry.id!r} returned an invalid result for {name}: {str(exc)[:300]}",
                ) from None
            except CLOSED as exc:
                self._drop(_describe(exc), client)
                if read_only and attempt == 1:
                    continue
                raise self._died(name) from None
            finally:
                self._in_flight -= 1
                self._last_used = time.monotonic()
            self._failures = self._crashes = 0
            return result
        raise self._died(name)

    async def preflight(self, name: str, arguments: dict[str, Any]) -> ToolFailure | None:
        """`mcp-sections/preflight`, asked of the section's process (started now if need be: the call follows); a
        section that cannot answer it refuses nothing (its call is asked about as before)."""
        try:
            client = await self.ensure_running()
            with anyio.fail_after(PREFLIGHT_TIMEOUT_SECONDS):
                answer = await client.session.send_request(
                    preflight.request(name, arguments), preflight.PreflightResult
                )
        except (MCPError, ToolFailure, TimeoutError, *CLOSED):
            return None
        return preflight.refusal_of(answer)

    async def read_resource(self, uri: str) -> dict[str, Any] | None:
        connection = self._connection
        if connection is None:
            return None
        try:
            result = await connection.client.read_resource(uri)
        except MCPError:
            return None
        except CLOSED:
            return None
        return {
            "contents": [
                content.model_dump(mode="json", by_alias=True, exclude_none=True) for content in result.contents
            ]
        }

    def _call_failure(self, exc: MCPError, what: str, client: Client) -> ToolFailure:
        if exc.code == CONNECTION_CLOSED:
            self._drop("the section's process exited or closed the connection", client)
            return self._died(what)
        if exc.code == REQUEST_TIMEOUT:
            return call_timed_out(self.entry.id, what, self._gateway)
        return ToolFailure(
            ErrorCode.EXECUTION_FAILED,
            f"section {self.entry.id!r} refused {what}: {exc.message[:300]} (MCP error {exc.code}).",
        )

    def _died(self, what: str) -> ToolFailure:
        return ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"section {self.entry.id!r} stopped while handling {what} ({self.last_error}); the gateway restarts it "
            "on the next call. If the call was not read-only, check its effect before repeating it.",
        )


def call_timed_out(section_id: str, what: str, gateway: GatewaySettings) -> ToolFailure:
    """The TIMEOUT of a call (`what`: a tool or request) a section did not answer within the gateway's call timeout,
    whether it runs in its own process or in the gateway's (`inprocess.py`)."""
    return ToolFailure(
        ErrorCode.TIMEOUT,
        f"section {section_id!r} did not answer {what} within "
        f"{gateway.call_timeout_seconds:.0f} s; narrow the request and call again.",
    )


@asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with extra headers (e.g. authorization); the HTTP client closes with the transport."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


async def _built_in_result(name: str, result: CallToolResult) -> None:
    """Accepts a built-in section's result as it is (see `_hold`)."""


def _cannot_spawn(exc: BaseException) -> bool:
    """Whether the command itself cannot be run (missing, not executable): no attempt can succeed."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_cannot_spawn(inner) for inner in exc.exceptions)
    return isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions[:3])
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _caller_meta(caller: Any, launched: bool) -> dict[str, Any] | None:
    """The `_meta` naming the caller for the section's audit log: a sub-agent's depth and id, and the user of the call
    when the gateway launched the section itself (`launched`: a built-in, which holds its key,
    `audit.launch_environment`; the user is no other server's business). None: the client itself, no user."""
    user = user_named() if launched else None
    depth, agent = (caller.depth, caller.agent_id) if caller is not None else (0, None)
    if depth == 0 and agent is None and user is None:
        return None
    return caller_meta(depth, agent, user)
