"""servers/calculator/workers.py: the generic killable worker process (targets from the standard library)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator

import pytest

from mcp_sections.servers.calculator.workers import (
    WorkerCrashed,
    WorkerError,
    WorkerMemoryError,
    WorkerProcess,
    WorkerStartError,
    WorkerTimeout,
)
from mcp_sections.shared.ground.errors import ToolFailure


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerProcess]:
    process = WorkerProcess("test", timeout_seconds=5.0, memory_limit_bytes=512 * 1024 * 1024)
    yield process
    process.close()


def test_runs_functions_by_name_and_by_reference(worker: WorkerProcess) -> None:
    assert worker.run("math:factorial", 10) == 3628800
    assert worker.run(math.gcd, 12, 18) == 6
    assert worker.run("builtins:sorted", [3, 1, 2], reverse=True) == [3, 2, 1]
    assert worker.run("os:getpid") == worker.pid != os.getpid()


def test_stdout_of_the_child_does_not_break_the_protocol(worker: WorkerProcess) -> None:
    assert worker.run("builtins:print", "noise on stdout") is None
    assert worker.run("math:sqrt", 16.0) == 4.0


def test_exceptions_travel_back(worker: WorkerProcess) -> None:
    pid = worker.pid
    with pytest.raises(ValueError, match="math domain error"):
        worker.run("math:sqrt", -1.0)
    with pytest.raises(ToolFailure) as caught:
        worker.run("mcp_sections.servers.calculator.operations:unary", "sqrt", -1.0)
    assert caught.value.code.value == "VALIDATION_FAILED"
    with pytest.raises(ModuleNotFoundError):
        worker.run("no_such_module_here:f")
    assert worker.pid == pid  # the child survives ordinary exceptions


def test_timeout_kills_and_replaces_the_child(worker: WorkerProcess) -> None:
    before, restarts = worker.pid, worker.restarts
    started = time.monotonic()
    with pytest.raises(WorkerTimeout) as caught:
        worker.run("time:sleep", 30, timeout=0.5)
    assert isinstance(caught.value, TimeoutError)
    assert time.monotonic() - started < 5
    assert worker.restarts == restarts + 1
    assert worker.run("os:getpid") not in (before, None)


def test_crash_is_reported_and_recovered(worker: WorkerProcess) -> None:
    before = worker.pid
    with pytest.raises(WorkerCrashed, match="exit status 3"):
        worker.run("os:_exit", 3)
    assert worker.run("math:factorial", 5) == 120
    assert worker.pid != before


def test_memory_cap(worker: WorkerProcess) -> None:
    with pytest.raises(WorkerMemoryError):
        worker.run("builtins:bytearray", 2 * 1024 * 1024 * 1024)
    assert worker.run("math:factorial", 4) == 24


def test_start_error_and_close() -> None:
    broken = WorkerProcess("broken", preload=("no_such_module_here",), start_timeout_seconds=30)
    with pytest.raises(WorkerStartError, match="ModuleNotFoundError"):
        broken.run("math:factorial", 3)
    broken.close()
    with pytest.raises(WorkerError, match="closed"):
        broken.run("math:factorial", 3)

    process = WorkerProcess("closing")
    process.start(wait=True)
    pid = process.pid
    assert pid is not None
    process.close()
    assert process.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_close_does_not_wait_for_a_running_call() -> None:
    import threading

    process = WorkerProcess("busy", timeout_seconds=30)
    process.start(wait=True)
    errors: list[BaseException] = []

    def busy() -> None:
        try:
            process.run("time:sleep", 20)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=busy)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    process.close()
    thread.join(timeout=5)
    assert time.monotonic() - started < 5 and not thread.is_alive()
    assert errors and isinstance(errors[0], WorkerCrashed)
    assert process.pid is None
