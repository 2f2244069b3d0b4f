"""With the sandbox off, every descendant of a program ends as the sandbox would end it (issue #44): when the call
ends, when the process is stopped, and when the server is killed with SIGKILL. Children that start a session of
their own and double-forked daemons included (they were left to PID 1). Real programs, the real server."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.processes import RawServer, gone, running, unique_seconds
from tests.stdio import call

pytestmark = pytest.mark.anyio

# a child, a child in a session of its own, and a daemon (double fork, own session, reparented): three `sleep MARK`
SPAWNER = """
import os, subprocess, sys, time
mark = sys.argv[1]
subprocess.Popen(["sleep", mark])
subprocess.Popen(["sleep", mark], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", mark])
    os._exit(0)
def sleeping():
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            count += open(f"/proc/{pid}/cmdline").read() == f"sleep\\0{mark}\\0"
        except OSError:
            pass
    return count
while sleeping() < 3:
    time.sleep(0.01)
print("ready", flush=True)
if sys.argv[2:] == ["stay"]:
    time.sleep(600)
"""
REPORT = "import json, os, sys\nprint(json.dumps(dict(os.environ)))\nsys.exit(3)\n"
OFF = {"MCP_SECTIONS_SHELL_OPS_SANDBOX": "off"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("keeper")
    (root / "spawner.py").write_text(SPAWNER)
    (root / "report.py").write_text(REPORT)
    return root


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    env = {**OFF, "MCP_SECTIONS_DATA_DIR": str(root.parent / "data")}
    async with section_in_memory("shell_ops", "--root", str(root), env=env) as connected:
        yield connected


def ended(seconds: str) -> bool:
    """Whether every `sleep <seconds>` ended within 10 s (those left are killed: a failing run leaves nothing)."""
    done = gone(["sleep", seconds], seconds=10)
    for pid in running(["sleep", seconds]):
        os.kill(pid, signal.SIGKILL)
    return done


def mark() -> str:
    """A `sleep` duration no other test uses (its command line finds its processes)."""
    return unique_seconds(500)


async def test_a_commands_descendants_end_with_the_call(client: Client) -> None:
    seconds = mark()
    result = await call(client, "run_command", command=["python3", "spawner.py", seconds])
    assert result["stdout"] == "ready\n" and result["sandbox"] == "off"
    assert ended(seconds), "a descendant of the command outlived the call"


async def test_stopping_a_process_ends_every_descendant(client: Client) -> None:
    seconds = mark()
    started = await call(client, "start_process", command=["python3", "spawner.py", seconds, "stay"], wait_for="ready")
    assert len(running(["sleep", seconds])) == 3
    stopped = await call(client, "stop_process", process_id=started["process"]["process_id"], signal="SIGTERM")
    assert stopped["process"]["state"] == "stopped"
    assert ended(seconds), "a descendant of the process outlived stop_process"


async def test_the_program_keeps_its_environment_and_exit_status(client: Client) -> None:
    result = await call(client, "run_command", command=["python3", "report.py"])
    assert result["exit_code"] == 3
    environment = json.loads(result["stdout"])
    assert environment["LC_ALL"] == "C.UTF-8" and "MCP_SECTIONS_SHELL_OPS_SANDBOX" not in environment
    assert not any(key.startswith("PYTHON") and key != "PYTHONNOUSERSITE" for key in environment)


def test_every_descendant_ends_with_a_server_killed_by_sigkill(root: Path) -> None:
    seconds = mark()
    args = ["shell_ops", "--root", str(root), "--data-dir", str(root.parent / "killed")]
    imports = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}  # what this test runs
    with RawServer(args, {**OFF, **imports}) as server:
        server.initialize()
        arguments = {"command": ["python3", "spawner.py", seconds, "stay"], "wait_for": "ready"}
        server.call_tool(1, "start_process", arguments)
        server.wait_for(lambda responses: 1 in responses)
        assert not server.tool_results()[1].get("isError"), server.tool_results()[1]
        assert len(running(["sleep", seconds])) == 3
        server.kill_9()
    assert ended(seconds), "a descendant of the process outlived its server (SIGKILL)"
    assert not running(["python3", "spawner.py", seconds, "stay"], suffix=True)
