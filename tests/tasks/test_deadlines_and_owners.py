"""A task's work stops at its ttl, and a task belongs to its user and client program, not to a connection (issue #44).

The deadline is checked on real work: shell_ops' run_command as a task (a real sandboxed process), in both protocol
eras, in memory. Ownership across reconnections is checked over Streamable HTTP on the tasks test section
(`tests/framework/tasks_section.py`), where a reconnecting 2025-11-25 client gets a new session."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.framework.test_tasks import SECTION, connect, environment
from tests.in_memory import section_in_memory
from tests.processes import free_port, listening, running_with, unique_seconds
from tests.stdio import REPO
from tests.tasks_client import (
    CreatedTask,
    Tasks,
    call_for_task,
    cancel_task,
    create_legacy_task,
    get_task,
    legacy_cancel,
    legacy_get,
    legacy_list,
    legacy_result,
)
from tests.waiting import eventually

pytestmark = pytest.mark.anyio

TTL_SECONDS = 3
WAITER = "import sys, time\ntime.sleep(float(sys.argv[1]))\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("deadline")
    (root / "wait.py").write_text(WAITER)
    return root


@pytest.fixture(scope="module", params=["2025-11-25", "2026-07-28"])
async def shell(request: pytest.FixtureRequest, root: Path) -> AsyncIterator[Client]:
    """shell_ops in memory whose tasks live TTL_SECONDS, with a client of the era."""
    env = {
        "MCP_SECTIONS_TASK_TTL_SECONDS": str(TTL_SECONDS),
        "MCP_SECTIONS_SHELL_OPS_MAX_TIMEOUT_SECONDS": "300",
        "MCP_SECTIONS_DATA_DIR": str(root.parent / f"data-{request.param}"),
    }
    legacy = request.param == "2025-11-25"
    options = {"mode": "legacy"} if legacy else {"mode": "auto", "extensions": [Tasks()]}
    async with section_in_memory("shell_ops", "--root", str(root), env=env, **options) as client:
        yield client


async def test_a_task_still_working_at_its_ttl_is_stopped_with_its_program(shell: Client) -> None:
    seconds = unique_seconds(200)  # found by its command line
    arguments = {"command": ["python3", "wait.py", seconds], "timeout_seconds": 250}  # over 60 s: long, a task
    legacy = shell.session.protocol_version == "2025-11-25"
    if legacy:
        task_id = (await create_legacy_task(shell, "run_command", arguments, ttl_ms=60_000))["task"]["taskId"]
    else:
        created = await call_for_task(shell, "run_command", arguments)
        assert isinstance(created, CreatedTask)
        task_id = created.task_id
    await eventually(lambda: running_with(f"wait.py {seconds}"), timeout=20)

    async def status() -> tuple[str, str | None]:
        task = await (legacy_get(shell, task_id) if legacy else get_task(shell.session, task_id))
        return task.status, task.status_message

    assert (await status())[0] == "working"
    final, message = await eventually(lambda: _ended(status), timeout=TTL_SECONDS + 20)
    assert final == "failed" and message is not None and f"ttl of {TTL_SECONDS} s ran out" in message
    await eventually(lambda: not running_with(f"wait.py {seconds}"), timeout=10)  # the program went with it
    if legacy:  # tasks/result: the JSON-RPC error of a request that timed out
        with pytest.raises(MCPError) as stopped:
            await legacy_result(shell, task_id)
        assert stopped.value.code == types.REQUEST_TIMEOUT and "task_ttl_seconds" in stopped.value.message
    else:
        detailed = await get_task(shell.session, task_id)
        assert detailed.error is not None and detailed.error["code"] == types.REQUEST_TIMEOUT


async def _ended(status: object) -> tuple[str, str | None] | None:
    state = await status()  # type: ignore[operator]
    return state if state[0] != "working" else None


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The tasks test section over Streamable HTTP (a subprocess importing what this test imports); its URL."""
    data_dir = tmp_path_factory.mktemp("owners")
    port = free_port()
    path = os.pathsep.join(filter(None, (os.environ.get("PYTHONPATH"), str(REPO))))
    command = [sys.executable, "-m", "tests.gateway.serve_module", SECTION, "--http", str(port)]
    with listening(command, port, env={**environment(data_dir), "PYTHONPATH": path}, cwd=REPO):
        yield f"http://127.0.0.1:{port}/mcp", data_dir / "audit"


async def test_a_reconnecting_2025_client_finds_its_tasks_and_no_other_client_does(
    served: tuple[str, Path],
) -> None:
    url, audit = served
    async with connect(url, True, audit, name="desk") as first:
        created = await create_legacy_task(first.client, "slow_compute", {"seconds": 120, "label": "kept"})
        task_id = created["task"]["taskId"]
    # the first connection is gone (its HTTP session ended); the same program connects again, and another one
    async with connect(url, True, audit, name="desk") as again, connect(url, True, audit, name="other") as other:
        assert [task.task_id for task in (await legacy_list(again.client)).tasks] == [task_id]
        assert (await legacy_get(again.client, task_id)).status == "working"
        assert (await legacy_list(other.client)).tasks == []
        with pytest.raises(MCPError) as foreign:
            await legacy_get(other.client, task_id)
        assert foreign.value.code == types.INVALID_PARAMS
        with pytest.raises(MCPError):
            await legacy_cancel(other.client, task_id)
        assert (await legacy_cancel(again.client, task_id)).status == "cancelled"


async def test_a_2026_client_keeps_its_tasks_across_connections_too(served: tuple[str, Path]) -> None:
    url, audit = served
    async with connect(url, False, audit, name="desk-2026") as first:
        created = await call_for_task(first.client, "slow_compute", {"seconds": 120})
        assert isinstance(created, CreatedTask)
    async with connect(url, False, audit, name="desk-2026") as again, connect(url, False, audit) as other:
        assert (await get_task(again.session, created.task_id)).status == "working"
        with pytest.raises(MCPError):
            await get_task(other.session, created.task_id)
        await cancel_task(again.session, created.task_id)
        assert (await get_task(again.session, created.task_id)).status == "cancelled"
