"""The calculator's settings and state: one worker process for the sympy (and numpy) tools."""

from __future__ import annotations

import logging
from typing import Any

from mcp_sections.servers.calculator.settings import CalculatorSettings
from mcp_sections.servers.calculator.workers import (
    WorkerCrashed,
    WorkerError,
    WorkerMemoryError,
    WorkerProcess,
    WorkerStartError,
    WorkerTaskError,
    WorkerTimeout,
)
from mcp_sections.shared.framework.sections import SectionRuntime
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, limit_exceeded
from mcp_sections.shared.ground.install_hints import install_hint

logger = logging.getLogger("mcp_sections.calculator")

SYMBOLIC = "mcp_sections.servers.calculator.symbolic"


class CalculatorState:
    """Holds the sympy worker; `call` runs one function of `symbolic` in it and maps worker failures to codes."""

    def __init__(self, settings: CalculatorSettings) -> None:
        self.settings = settings
        memory = settings.memory_limit_mb * 1024 * 1024 if settings.memory_limit_mb else None
        self.worker = WorkerProcess(
            "calculator",
            timeout_seconds=settings.timeout_seconds,
            start_timeout_seconds=settings.start_timeout_seconds,
            memory_limit_bytes=memory,
            preload=(SYMBOLIC,),
        )

    def warm_up(self) -> None:
        self.worker.start(wait=True)
        self.worker.run(f"{SYMBOLIC}:warm", timeout=max(self.settings.timeout_seconds, 30.0))

    def call(self, function: str, *, advice: str | None = None, **arguments: Any) -> dict[str, Any]:
        """Run `symbolic.<function>(**arguments)`; `advice` ends the TIMEOUT and memory messages when given."""
        try:
            return self.worker.run(f"{SYMBOLIC}:{function}", **arguments)
        except WorkerTimeout:
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"the computation took longer than {self.settings.timeout_seconds:g} s and was stopped (the worker "
                "was restarted). "
                + (advice or "Simplify the input, split it into smaller steps, or try another method."),
            ) from None
        except WorkerMemoryError:
            raise limit_exceeded(
                f"the computation needed more than the {self.settings.memory_limit_mb} MiB memory cap and was stopped. "
                + (advice or "Use smaller inputs or split the computation.")
            ) from None
        except WorkerCrashed as exc:
            logger.warning("calculator worker crashed: %s", exc)
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED, crash_message(exc.status, self.settings.memory_limit_mb)
            ) from None
        except WorkerStartError as exc:
            logger.error("calculator worker could not start: %s", exc)
            raise ToolFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"the calculator's engine (sympy, and numpy for float64 matrices) could not start; "
                f"{install_hint('calculator')}. The float tools calculator_unary, calculator_binary and "
                "calculator_constant still work.",
            ) from None
        except WorkerTaskError as exc:
            logger.error("calculator %s failed: %s", function, exc)
            raise ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"the computation failed ({exc.type_name}); check the input, or try another formulation.",
            ) from None
        except WorkerError as exc:
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"the computation could not run ({exc}); retry.") from None

    def close(self) -> None:
        self.worker.close()


def open_state(runtime: SectionRuntime) -> CalculatorState:
    return CalculatorState(runtime.settings_of(CalculatorSettings))


def warm_up(state: CalculatorState) -> None:
    state.warm_up()


def crash_message(status: str, memory_limit_mb: int) -> str:
    """What is known about a worker that died mid-call, and what the caller can do."""
    known = f"the computation process ended unexpectedly ({status}) and was restarted"
    if "SIGKILL" in status:
        cause = (
            "; SIGKILL comes from outside the process (the system's out-of-memory killer, a container limit or an "
            f"operator) — the worker's own {memory_limit_mb} MiB cap was not reported as reached"
        )
    elif "SIGSEGV" in status or "SIGABRT" in status:
        cause = "; the math library crashed on this input"
    else:
        cause = ""
    return f"{known}{cause}. Retry once; if it happens again, use smaller inputs or split the computation."
