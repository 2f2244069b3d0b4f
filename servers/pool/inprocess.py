"""In-process sections (`[gateway] in_process`, opt-in): a light built-in section called without a subprocess.

The gateway builds the section from its declaration exactly as `mcp-sections serve <id>` does (the section's own
call pipeline, `shared.serving.pipeline.SectionCalls`, with the same settings and its own audit log), so results, error
codes and argument validation are the ones the subprocess would give. What is lost is isolation: see the
`in_process` paragraph of `settings.py` for the trade-off and why only some sections qualify.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp_types import CallToolResult

from mcp_sections.shared.framework.tools import ToolContext
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, not_found
from mcp_sections.shared.serving.pipeline import SectionCalls
from mcp_sections.shared.serving.preflight import preflight_failure
from mcp_sections.shared.settings.config import Settings

from .catalog import SectionEntry
from .launchers import ProgressCallback, State, call_timed_out
from .settings import GatewaySettings

if TYPE_CHECKING:
    from mcp_sections.shared.framework.sections import Section, SectionRuntime

logger = logging.getLogger("mcp_sections.gateway.inprocess")


def in_process_refusal(entry: SectionEntry) -> str | None:
    """Why `entry` may not run inside the gateway (None: it may)."""
    if not entry.builtin:
        return "only built-in sections can run in process; a third-party server always runs on its own"
    if entry.external is not None:
        return f"it is launched through [gateway.sections.{entry.id}]; remove that table to run it in process"
    if entry.load_error:
        return f"it cannot be loaded ({entry.load_error})"
    section = entry.declaration
    assert section is not None
    if section.heavy:
        return f"it loads {section.heavy}, too heavy for the gateway's process; it keeps its own subprocess"
    if section.lifespan is not None:
        return "it needs a server event loop of its own (a lifespan: e.g. it runs sub-agents or sessions)"
    asking = [spec.name for spec in section.specs if spec.asks_user is not None]
    if asking:
        return f"its tools ask the user through MCP elicitation ({', '.join(asking)})"
    return None


class InProcessLauncher:
    """A built-in section run inside the gateway, on the section's own call pipeline (`shared.serving.pipeline`).

    Its `ToolContext` forwards progress to the gateway's caller and offers no client channel, as the subprocess
    would have none: the gateway's client connection offers the section no roots, sampling or questions.
    """

    def __init__(self, entry: SectionEntry, settings: Settings, gateway: GatewaySettings) -> None:
        self.entry = entry
        self._settings = settings
        self._gateway = gateway
        self._calls: SectionCalls | None = None
        self.state: State = "not_started"
        self.last_error: str | None = None
        self.starts = 0
        self.running_since: float | None = None

    def attach(self, task_group: Any) -> None:  # nothing to hold open
        pass

    def boot(self) -> None:
        """Nothing to start ahead: the section opens on its first call."""

    def _open(self) -> SectionCalls:
        if self._calls is None:
            section = self.entry.declaration
            if section is None:
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"section {self.entry.id!r} cannot be loaded ({self.entry.load_error}); check its install.",
                )
            try:
                runtime = section.runtime(self._settings)  # reads [sections.<id>]: may refuse the configuration
            except Exception as exc:
                self.state, self.last_error = "failed", f"{type(exc).__name__}: {str(exc)[:300]}"
                raise ToolFailure(
                    ErrorCode.DEPENDENCY_ERROR,
                    f"section {self.entry.id!r} could not be started: {self.last_error}. Fix its [sections."
                    f"{self.entry.id}] settings and restart the gateway.",
                ) from None
            self._calls = self._build_calls(section, runtime)
            self.state = "running"
            self.running_since = time.monotonic()
            self.starts += 1
        return self._calls

    def _build_calls(self, section: Section, runtime: SectionRuntime) -> SectionCalls:
        """The section's pipeline, its state opened lazily as `serve` opens it."""
        calls = SectionCalls(section, runtime)
        if self._settings.warm_up:
            calls.state.start_warm_up()
        return calls

    async def list_tools(self) -> list[dict[str, Any]]:
        return self.entry.definitions(self._settings) or []

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressCallback | None = None,
        read_only: bool = False,
        caller: Any = None,
    ) -> CallToolResult:
        """What the section's server does with a call: its pipeline, within the gateway's call timeout."""
        calls = self._open()
        spec = calls.specs.get(name)
        if spec is None:
            raise not_found(f"unknown tool {name[:80]!r}; this server's tools are: {', '.join(sorted(calls.specs))}.")
        ctx = ToolContext(progress=progress, caller=caller.caller if caller is not None else (0, None))
        with anyio.move_on_after(self._gateway.call_timeout_seconds) as scope:
            return await calls.call(spec, arguments, ctx)
        assert scope.cancelled_caught
        raise call_timed_out(self.entry.id, name, self._gateway)

    async def preflight(self, name: str, arguments: dict[str, Any]) -> ToolFailure | None:
        """The section's own preflight of this call, on its state (`shared.serving.preflight`)."""
        try:
            calls = self._open()
        except ToolFailure:
            return None  # the call itself says why the section cannot start
        spec = calls.specs.get(name)
        return await preflight_failure(spec, arguments, calls.state) if spec is not None else None

    async def read_resource(self, uri: str) -> dict[str, Any] | None:
        """None: a section in the gateway's process keeps its results in the gateway's own store."""
        return None

    async def stop(self) -> None:
        calls, self._calls = self._calls, None
        if calls is not None:
            await anyio.to_thread.run_sync(calls.close)
        self.state = "not_started"
        self.running_since = None
