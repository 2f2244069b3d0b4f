"""The one call pipeline of a section: its state, the call, the audit — whichever way the call came in.

A section's tools run here whether the section is served on its own (stdio, Streamable HTTP: `shared.serving.server`),
inside the gateway's process (`in_process`), or hosted by the gateway (orchestration):

1. the intent line goes to the audit log before anything runs (`shared.serving.audit`);
2. the suite's own state is checked to be where the server found it (`shared.confinement.own_state`), and the section's
state
   is opened (once, lazily);
3. the arguments are validated and the tool runs (`shared.serving.calls.run_tool`: every failure becomes a coded
result);
4. secret values are masked (sections that show file contents), and the result's text is put in a provenance
   envelope that names its source (`shared.serving.provenance`): whatever a model reads of a result is data, an error's
   details included;
5. the outcome line goes to the audit log — `CANCELLED` if the call was cancelled on the way.
Around it all, a span when traces are exported (`shared.serving.telemetry`), and the call's log lines to the client:
its progress and how it ended (`shared.serving.client_log`).
Approval is asked before step 1 by the transport that can ask (`shared.serving.server`, the gateway's gate).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.to_thread
from mcp_types import CallToolResult

from mcp_sections.shared.framework.requirements import MissingModules
from mcp_sections.shared.framework.sections import Section, SectionRuntime
from mcp_sections.shared.framework.tools import ToolContext, ToolSpec, UserAnswer
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.serving import client_log, telemetry
from mcp_sections.shared.serving.audit import AuditLog, audit_log
from mcp_sections.shared.serving.calls import failure_result, missing_dependency, run_tool
from mcp_sections.shared.serving.provenance import wrap_result
from mcp_sections.shared.serving.telemetry import CallSpan
from mcp_sections.shared.settings import served

logger = logging.getLogger("mcp_sections.pipeline")


class SectionState:
    """The section's state, opened on first use (once, thread-safe) and closed at shutdown."""

    def __init__(self, section: Section, runtime: SectionRuntime) -> None:
        self._section = section
        self._runtime = runtime
        self._own_state = runtime.settings.own_state()
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

    async def for_call(self, tool_name: str) -> Any:
        """The state a call of `tool_name` runs on; a failure to open it becomes an actionable ToolFailure. Refused
        once the suite's own state was moved or replaced under the server (`shared.confinement.own_state`)."""
        self._own_state.verify()
        try:
            return await self.aget()
        except ToolFailure:
            raise
        except ModuleNotFoundError as exc:
            raise missing_dependency(tool_name, exc, self._section.extra) from exc
        except Exception as exc:
            logger.exception("opening the state of tool %s failed", tool_name)
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"{tool_name} could not start its backing service (see the server log); "
                "check the section's configuration and data directory, then retry.",
            ) from exc

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
            except Exception as exc:  # the first real call reports the problem to the client
                missing = missing_dependency_of(self._section, self._runtime, exc)
                if missing is None:
                    logger.warning("warm-up of section %s failed", self._section.id, exc_info=True)
                else:  # the "degraded" state doctor describes, no crash: what is missing and its fix, in one line
                    logger.warning("warm-up of section %s skipped: %s", self._section.id, missing)

        threading.Thread(target=warm, name=f"warm-up-{self._section.id}", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            if self._opened and hasattr(self._value, "close"):
                self._value.close()
            self._opened = False
            self._value = None


def missing_dependency_of(section: Section, runtime: SectionRuntime, exc: BaseException) -> str | None:
    """What is missing and the command that installs it, when `exc` comes from a missing dependency: a
    DEPENDENCY_ERROR, or an import of a module that one of the section's requirements finds missing (as doctor does;
    also when the import failed in a process of the section's, whose error came back as text). None: a real crash."""
    chain: list[BaseException] = []
    error: BaseException | None = exc
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    for error in chain:
        if isinstance(error, ToolFailure):
            return error.message if error.code is ErrorCode.DEPENDENCY_ERROR else None
    text = " ".join(str(error) for error in chain)
    for requirement in section.requirements:
        try:
            problem = requirement.probe(runtime)
        except Exception:  # a probe that fails says nothing of this error: it is logged whole
            return None
        if isinstance(problem, MissingModules) and any(_import_failed(name, text) for name in problem.names):
            until = f"; until then: {requirement.without}" if requirement.without else ""
            return f"{problem} — {requirement.fix}{until}"
    for error in chain:
        if isinstance(error, ModuleNotFoundError) and error.name:
            return missing_dependency(f"section {section.id}", error, section.extra).message
    return None


def _import_failed(module: str, text: str) -> bool:
    """Whether `text` (an error, maybe from another process) says that `module` or one of its submodules is missing."""
    return re.search(rf"No module named '{re.escape(module)}[.']", text) is not None


async def accounted(
    audit: AuditLog,
    tool: str,
    arguments: dict[str, Any],
    caller: Any,
    failure: ToolFailure | None,
    run: Callable[[CallSpan | None, ToolContext | None], Awaitable[CallToolResult]],
    ctx: ToolContext | None = None,
) -> CallToolResult:
    """One call between its audit lines, inside its trace span and with its log lines to the client, for every path
    a call takes (a section's server, in-process, an agent host's gate): the intent is written before `run`, the
    outcome after it (CANCELLED when it is interrupted); `run` gets the span, to name where the call went, and `ctx`
    with its progress also logged. `failure`: the call was refused before it could run; only that is recorded and
    returned."""
    record = audit.start(tool, arguments, caller)
    traced = telemetry.current()
    span = traced.start(audit.server, tool, caller) if traced is not None else None
    log = client_log.opened(audit.server, tool, caller)
    watched = log.watching(ctx) if log is not None else ctx

    async def attempt() -> CallToolResult:
        return failure_result(failure) if failure is not None else await run(span, watched)

    try:
        result = await client_log.logged(log, attempt)
    except BaseException:
        record.cancelled()
        if span is not None:
            span.cancelled()
        raise
    record.end(result)
    if span is not None:
        span.end(result)
    return result


class SectionCalls:
    """The pipeline of one section in one process (see the module docstring)."""

    def __init__(self, section: Section, runtime: SectionRuntime) -> None:
        self.section = section
        self.runtime = runtime
        served.note(
            section.id, runtime.settings
        )  # the process's servers: shared.settings.endpoints, shared.confinement.published_ports
        self.state = SectionState(section, runtime)
        self.audit = audit_log(runtime.settings.data_dir / "audit", section.id)
        self.specs: dict[str, ToolSpec] = {spec.name: spec for spec in section.specs}

    async def call(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        ctx: ToolContext,
        answer: UserAnswer | None = None,
        failure: ToolFailure | None = None,
    ) -> CallToolResult:
        """One call, audited from its start; `failure`: the call was refused before it could run (the user did not
        approve it, or could not be asked), and only that refusal is recorded and returned."""
        return await accounted(
            self.audit,
            spec.name,
            arguments,
            ctx.caller,
            failure,
            lambda _span, watched: self._run(spec, arguments, watched or ctx, answer),
            ctx,
        )

    async def _run(
        self, spec: ToolSpec, arguments: dict[str, Any], ctx: ToolContext, answer: UserAnswer | None
    ) -> CallToolResult:
        section = self.section
        try:
            value = await self.state.for_call(spec.name)
        except ToolFailure as failure:
            return failure_result(failure)
        result = await run_tool(spec, arguments, value, ctx, section.extra, answer, section.masks_secrets)
        return wrap_result(result, section.output_source, spec.name, own_errors=True)

    def close(self) -> None:
        self.state.close()
