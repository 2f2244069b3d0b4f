"""The gateway's restart policy (issue #44): calls wait while a section restarts, through starts that crash, and fail
at once with the reason only when the section keeps crashing. The gateway runs in memory; its sections are real
processes (the framework's demo section behind a wrapper that crashes, or kills, the starts a plan names)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_sections.servers.pool.launchers import CRASH_LOOP_FAILURES
from tests.gateway.helpers import write_config
from tests.in_memory import gateway_in_memory
from tests.processes import running_with
from tests.stdio import REPO, data_of, error_of
from tests.waiting import eventually

pytestmark = pytest.mark.anyio

WRAPPER = """
import os, sys
counter, plan = sys.argv[1], sys.argv[2]
start = int(open(counter).read() or 0) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(start))
plan = open(plan).read().split()
if f"kill{start}" in plan:  # as a kill -9 from outside would
    os.kill(os.getpid(), 9)
if "always" in plan or str(start) in plan:
    sys.stderr.write(f"flaky wrapper: start {start} crashes on purpose\\n")
    sys.exit(3)
os.execv(sys.executable, [sys.executable, "-m", "tests.gateway.serve_module", "tests.framework.demo_section", counter])
"""


def section_table(section: str, wrapper: Path, counter: Path, plan: Path) -> str:
    return (
        f"[gateway.sections.{section}]\n"
        f'command = "{sys.executable}"\n'
        f'args = ["{wrapper}", "{counter}", "{plan}"]\n'
        f'cwd = "{REPO}"\n'
        'description = "The demo section behind a wrapper that crashes some starts."\n'
    )


@pytest.fixture(scope="module")
async def gateway(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Client, Path]]:
    workdir = tmp_path_factory.mktemp("restarts")
    wrapper = workdir / "wrapper.py"
    wrapper.write_text(WRAPPER)
    tables = [section_table(name, wrapper, workdir / f"{name}.count", workdir / f"{name}.plan") for name in SECTIONS]
    for name in SECTIONS:
        (workdir / f"{name}.plan").write_text("")
    backoff = "[gateway]\nrestart_backoff_seconds = 0.1\nidle_watch_seconds = 600\n"
    config = write_config(workdir / "config.toml", backoff, *tables)
    args = ["--config", str(config), "--data-dir", str(workdir / "data"), "--root", str(workdir)]
    async with gateway_in_memory(*args, cwd=workdir) as client:
        yield client, workdir


SECTIONS = ("flaky", "crashing", "killed")


async def total(client: Client, section: str, *numbers: float) -> Any:
    arguments = {"section": section, "tool": "demo_sum", "arguments": {"numbers": list(numbers)}}
    return await client.call_tool("call_section_tool", arguments)


def starts(workdir: Path, section: str) -> int:
    counter = workdir / f"{section}.count"
    return int(counter.read_text()) if counter.exists() else 0


async def test_calls_wait_while_a_section_restarts_through_crashing_starts(gateway: tuple[Client, Path]) -> None:
    client, workdir = gateway
    assert data_of(await total(client, "flaky", 1, 2))["total"] == 3
    assert starts(workdir, "flaky") == 1
    (workdir / "flaky.plan").write_text("2 3 4")  # the next three starts crash, as a kill during start-up would
    [pid] = running_with(str(workdir / "flaky.count"))
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: not running_with(str(workdir / "flaky.count")))
    results: list[Any] = []

    async def caller(n: int) -> None:
        results.append(await total(client, "flaky", n, 1))

    async with anyio.create_task_group() as callers:  # 8 calls at once, queued behind the restarts
        for n in range(8):
            callers.start_soon(caller, n)
    assert sorted(data_of(result)["total"] for result in results) == [n + 1 for n in range(8)]
    assert starts(workdir, "flaky") == 5  # the killed process, three crashed starts, the one that serves
    listed = data_of(await client.call_tool("list_tool_sections", {}))
    assert next(s for s in listed["sections"] if s["id"] == "flaky")["state"] == "running"


async def test_kills_during_start_up_are_no_crash_loop(gateway: tuple[Client, Path]) -> None:
    """Killed from outside (SIGKILL) more often in a row than a crash loop takes: still restarted, calls served."""
    client, workdir = gateway
    assert data_of(await total(client, "killed", 1))["total"] == 1
    kills = range(2, CRASH_LOOP_FAILURES + 3)
    (workdir / "killed.plan").write_text(" ".join(f"kill{start}" for start in kills))
    [pid] = running_with(str(workdir / "killed.count"))
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: not running_with(str(workdir / "killed.count")))
    results: list[Any] = []

    async def caller(n: int) -> None:
        results.append(await total(client, "killed", n))

    async with anyio.create_task_group() as callers:
        for n in range(8):
            callers.start_soon(caller, n)
    assert sorted(data_of(result)["total"] for result in results) == list(range(8))
    assert starts(workdir, "killed") == kills.stop


async def test_a_section_that_keeps_crashing_fails_at_once_with_the_reason(gateway: tuple[Client, Path]) -> None:
    client, workdir = gateway
    (workdir / "crashing.plan").write_text("always")
    code, message = error_of(await total(client, "crashing", 1))
    assert code == "DEPENDENCY_ERROR"
    assert "start 5 crashes on purpose" in message and f"{CRASH_LOOP_FAILURES} failures in a row" in message
    assert "it exited with status 3" in message
    assert "could not be started" in message and "[gateway.sections.crashing]" in message
    assert starts(workdir, "crashing") == CRASH_LOOP_FAILURES
    code, again = error_of(await total(client, "crashing", 2))  # during the cool-down: no new start, the reason
    assert code == "DEPENDENCY_ERROR" and "crashes on purpose" in again and "tries it again in" in again
    assert starts(workdir, "crashing") == CRASH_LOOP_FAILURES
    (workdir / "crashing.plan").write_text("")  # mended: after the cool-down a call starts it again

    async def served() -> bool:
        return not (await total(client, "crashing", 2)).is_error

    await eventually(served, timeout=30, interval=0.5)
    assert starts(workdir, "crashing") == CRASH_LOOP_FAILURES + 1
