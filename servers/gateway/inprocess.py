"""In-process sections (`[gateway] in_process`, opt-in): a light built-in section called without a subprocess.

The gateway builds the section from its declaration exactly as `mcp-sections serve <id>` does (the section's
`SectionState`, opened lazily with the same settings, and `run_tool` for every call), so results, error codes
and argument validation are the ones the subprocess would give. What is lost is isolation: see the
`in_process` paragraph of `settings.py` for the trade-off and why only some sections qualify.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp_types import CallToolResult

from mcp_sections.shared.audit import AuditLog
from mcp_sections.shared.calls import failure_result, run_tool
from mcp_sections.shared.config import Settings
from mcp_sections.shared.errors import ErrorCode, ToolFailure, not_found

from .catalog import SectionEntry
from .settings import GatewaySettings

if TYPE_CHECKING:
    from mcp_sections.shared.sections import Section, SectionRuntime
    from mcp_sections.shared.server import SectionState
    from mcp_sections.shared.tools import ToolSpec

    from .launchers import ProgressCallback, State

logger = logging.getLogger("mcp_sections.gateway.inprocess")

# Built-in sections that import torch / sentence-transformers (hundreds of MB, seconds of start-up).
HEAVY_SECTIONS = {"memory": "torch and sentence-transformers", "rag_ops": "torch, sentence-transformers and neo4j"}


def in_process_refusal(entry: SectionEntry) -> str | None:
    """Why `entry` may not run inside the gateway (None: it may)."""
    if not entry.builtin:
        return "only built-in sections can run in process; a third-party server always runs on its own"
    if entry.external is not None:
        return f"it is launched through [gateway.sections.{entry.id}]; remove that table to run it in process"
    if entry.id in HEAVY_SECTIONS:
        return f"it loads {HEAVY_SECTIONS[entry.id]}, too heavy for the gateway's process; it keeps its own subprocess"
    if entry.load_error:
        return f"it cannot be loaded ({entry.load_error})"
    section = entry.declaration
    assert section is not None
    if section.lifespan is not None:
        return "it needs a server event loop of its own (a lifespan: e.g. it runs sub-agents or sessions)"
    asking = [spec.name for spec in section.specs if spec.asks_user is not None]
    if asking:
        return f"its tools ask the user through MCP elicitation ({', '.join(asking)})"
    return None


class _SectionContext:
    """The ToolContext of an in-process call: progress goes to the gateway's caller, as it would be forwarded.

    `client_roots()` answers None, as in the subprocess (the gateway's client connection offers no roots):
    the section uses the gateway's configured roots either way.
    """

    def __init__(self, progress: ProgressCallback | None) -> None:
        self._progress = progress

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self._progress is None:
            return
        try:
            await self._progress(progress, total, message)
        except Exception:  # progress is best effort
            logger.debug("progress notification dropped", exc_info=True)

    async def client_roots(self) -> list[str] | None:
        return None

    def sampling_unavailable(self, tools: bool = False) -> str | None:
        return "the MCP client did not declare the `sampling` capability"  # the gateway's client connection does not

    async def sample(self, params: Any) -> Any:
        raise ToolFailure(ErrorCode.DEPENDENCY_ERROR, "sampling is not available to a section inside the gateway")


class InProcessLauncher:
    """Same surface as `SectionLauncher`, for a built-in section run inside the gateway."""

    def __init__(self, entry: SectionEntry, settings: Settings, gateway: GatewaySettings) -> None:
        self.entry = entry
        self._settings = settings
        self._audit = AuditLog(settings.data_dir / "audit", entry.id)
        self._gateway = gateway
        self._state: SectionState | None = None
        self._specs: dict[str, ToolSpec] | None = None
        self.state: State = "not_started"
        self.last_error: str | None = None
        self.starts = 0

    def attach(self, task_group: Any) -> None:  # nothing to hold open
        pass

    def boot(self) -> None:
        """Nothing to start ahead: the section opens on its first call."""

    def _open(self) -> tuple[SectionState, dict[str, ToolSpec]]:
        if self._state is None or self._specs is None:
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
            self._specs = {spec.name: spec for spec in section.specs}
            self._state = self._build_state(section, runtime)
            self.state = "running"
            self.starts += 1
        return self._state, self._specs

    def _build_state(self, section: Section, runtime: SectionRuntime) -> SectionState:
        """The state tool calls run on: the section's own, opened lazily as `serve` opens it."""
        from mcp_sections.shared.server import SectionState

        state = SectionState(section, runtime)
        if self._settings.warm_up:
            state.start_warm_up()
        return state

    async def list_tools(self) -> list[dict[str, Any]]:
        return self.entry.definitions(self._settings) or []

    async def probe_definitions(self) -> list[dict[str, Any]]:
        return await self.list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        progress: ProgressCallback | None = None,
        read_only: bool = False,
        caller: Any = None,
    ) -> CallToolResult:
        """What `sdk_tool` does in the section's server: open the state, run the tool, audit the call."""
        started = time.perf_counter()
        result = await self._call(name, arguments, progress)
        who = (caller.depth, caller.agent_id) if caller is not None else (0, None)
        self._audit.record(name, arguments, result, (time.perf_counter() - started) * 1000, who)
        return result

    async def _call(self, name: str, arguments: dict[str, Any], progress: ProgressCallback | None) -> CallToolResult:
        state, specs = self._open()
        spec = specs.get(name)
        if spec is None:
            raise not_found(f"unknown tool {name[:80]!r}; this server's tools are: {', '.join(sorted(specs))}.")
        declaration = self.entry.declaration
        extra = declaration.extra if declaration is not None else None
        masks = declaration.masks_secrets if declaration is not None else False
        try:
            value = await state.for_call(spec.name, extra)
        except ToolFailure as failure:
            return failure_result(failure)
        with anyio.move_on_after(self._gateway.call_timeout_seconds) as scope:
            return await run_tool(spec, arguments, value, _SectionContext(progress), extra, mask_secrets=masks)
        assert scope.cancelled_caught
        raise ToolFailure(
            ErrorCode.TIMEOUT,
            f"section {self.entry.id!r} did not answer {name} within "
            f"{self._gateway.call_timeout_seconds:.0f} s; narrow the request and call again.",
        )

    async def stop(self) -> None:
        state, self._state = self._state, None
        if state is not None:
            await anyio.to_thread.run_sync(state.close)
        self.state = "not_started"
