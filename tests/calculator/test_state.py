"""state.py: settings from the environment, and worker failures mapped to error codes."""

from __future__ import annotations

import pytest

from mcp_sections.servers.calculator.settings import CalculatorSettings
from mcp_sections.servers.calculator.state import CalculatorState
from mcp_sections.servers.calculator.workers import WorkerProcess
from mcp_sections.shared.ground.errors import ToolFailure
from mcp_sections.shared.settings.config import Settings


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SECTIONS_CALCULATOR_TIMEOUT_SECONDS", "2.5")
    monkeypatch.setenv("MCP_SECTIONS_CALCULATOR_MEMORY_LIMIT_MB", "0")
    settings = Settings.load().section_settings(CalculatorSettings, "calculator")
    assert settings.timeout_seconds == 2.5 and settings.memory_limit_mb == 0
    assert CalculatorState(settings).worker.memory_limit_bytes is None
    assert CalculatorSettings.model_fields["timeout_seconds"].default == 10.0


def _state_with(worker: WorkerProcess) -> CalculatorState:
    state = CalculatorState(CalculatorSettings(timeout_seconds=0.5, memory_limit_mb=256))
    state.worker = worker
    return state


def _code(state: CalculatorState, function: str, **arguments: object) -> str:
    with pytest.raises(ToolFailure) as caught:
        state.call(function, **arguments)
    return caught.value.code.value


def test_missing_sympy_is_a_dependency_error() -> None:
    state = _state_with(WorkerProcess("t", preload=("no_such_module_here",)))
    try:
        assert _code(state, "evaluate", expression="1") == "DEPENDENCY_ERROR"
    finally:
        state.close()


def test_timeout_memory_and_crash_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    state = CalculatorState(CalculatorSettings(timeout_seconds=0.5, memory_limit_mb=512))
    try:
        hard = "exp(x**7)*sin(x**5)*log(x)/(1 + x**3)**(1/3)"
        assert _code(state, "integrate", expression=hard) == "TIMEOUT"
        assert state.call("evaluate", expression="2^10")["exact"] == "1024"
        assert state.worker.restarts == 1
        state.worker.close()
        state.worker = WorkerProcess("light", timeout_seconds=5, memory_limit_bytes=256 * 1024 * 1024)
        monkeypatch.setattr("mcp_sections.servers.calculator.state.SYMBOLIC", "builtins")
        assert _code(state, "bytearray", source=1 << 31) == "MAX_LIMIT_EXCEEDED"
        monkeypatch.setattr("mcp_sections.servers.calculator.state.SYMBOLIC", "os")
        assert _code(state, "_exit", status=5) == "EXECUTION_FAILED"
        assert state.worker.restarts == 2
        assert state.worker.run("math:factorial", 5) == 120  # the replacement child answers
    finally:
        state.close()


def test_a_killed_worker_is_described_by_what_is_known() -> None:
    from mcp_sections.servers.calculator.state import crash_message

    killed = crash_message("killed by SIGKILL", 512)
    assert "killed by SIGKILL" in killed and "512 MiB cap was not reported as reached" in killed
    assert "probably" not in killed
    exited = crash_message("exit status 5", 512)
    assert exited.startswith("the computation process ended unexpectedly (exit status 5)")
    assert "out-of-memory" not in exited
