"""The agent's workbench through the real server and the real sandbox (issue #23): project toolchains — the system
Python, a venv of the pyenv interpreter, a uv venv, a venv reaching its interpreter through a link, a Node project
with a local tool and a Node installation on the search path — and long-running processes: a REPL, a dev server
fetched through its published port (by web_ops too), a long run read while it works, limits, stopping."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_sections.servers.shell_ops.policies.allow_list import DEFAULT_ALLOWED_PROGRAMS
from tests.dev_server import start_dev_server
from tests.in_memory import section_in_memory
from tests.processes import free_port, gone, running, unique_seconds
from tests.shell_ops.test_toolchains import BASE, NODE, fake_node_installation, make_venv
from tests.stdio import call, fail, text_of

HAVE_BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is not None
HAVE_NPM = shutil.which("npm", path="/usr/local/bin:/usr/bin:/bin") is not None and NODE is not None
UV = Path(sys.executable).parent / "uv"
BASE_PYTHON = next((p for p in (BASE / "bin" / "python3", BASE / "bin" / "python") if p.exists()), None)
OUTSIDE_BASE = not (str(BASE) == "/usr" or str(BASE).startswith(("/usr/", "/bin")))
MAX_PROCESSES = 4
RING = 64 * 1024

SAMPLE_TEST = "def test_sample():\n    assert 1 + 1 == 2\n"
UNITTEST = (
    "import unittest\n\nclass T(unittest.TestCase):\n    def test_sample(self):\n        self.assertEqual(2, 1 + 1)\n"
)
WHERE = "import sys\nprint(sys.prefix, sys.base_prefix, sys.version_info[:2], sep='|')\n"
PYTEST_SCRIPT = (
    "#!{python}\nimport sys\nfrom pytest import console_main\n"
    "if __name__ == '__main__':\n    sys.exit(console_main())\n"
)
TICKER = """
import sys, time
for i in range(int(sys.argv[1])):
    print("tick", i, flush=True)
    time.sleep(float(sys.argv[2]))
print("done", flush=True)
"""
FLOOD = "import sys\nfor i in range(4000):\n    sys.stdout.write(f'{i:06d} ' + 'x' * 93 + '\\n')\n"
SPAWNER = """
import subprocess, sys, time
subprocess.Popen(["sleep", sys.argv[1]], start_new_session=True)
print("spawned", flush=True)
time.sleep(600)
"""
SECRET = (
    "import time\nprint('export GITHUB_TOKEN=ghp_' + 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8', flush=True)\n"
    "time.sleep(30)\n"
)
NODE_SERVER = """
const http = require("http");
const port = Number(process.env.PORT);
http.createServer((req, res) => res.end("node says hi from " + process.execPath + "\\n"))
  .listen(port, "127.0.0.1", () => console.log("listening on " + port));
"""
HELLO_CLI = "#!/usr/bin/env node\nconsole.log('hello', process.argv.slice(2).join(' '), process.execPath)\n"


def _skip_without_sandbox() -> None:
    if not HAVE_BWRAP:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap)")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("workbench")
    root = base / "root"
    for name in ("sys-proj", "pyenv-proj", "uv-proj", "linked-proj", "node-proj", "srv", "tools"):
        (root / name).mkdir(parents=True)
    (root / "sys-proj" / "test_sample.py").write_text(UNITTEST)
    (root / "srv" / "index.html").write_text("<h1>Dev server</h1><p>served from inside the sandbox</p>\n")
    for name, text in (("ticker.py", TICKER), ("flood.py", FLOOD), ("spawner.py", SPAWNER), ("secret.py", SECRET)):
        (root / "tools" / name).write_text(text)
    (root / "tools" / "where.py").write_text(WHERE)
    check = root / "tools" / "check.sh"
    check.write_text('#!/bin/sh\necho checked "$@" in "$(pwd)"\n')
    check.chmod(0o755)
    odd = root / "tools" / "odd.sh"
    odd.write_text("#!/opt/no-such-interpreter/bin/python\nprint('never')\n")
    odd.chmod(0o755)
    paths = {"base": base, "root": root}
    if BASE_PYTHON is not None and OUTSIDE_BASE:
        venv = make_venv(root / "pyenv-proj" / ".venv", "--system-site-packages")
        pytest_script = venv / "bin" / "pytest"  # what pip writes for pytest's console script
        pytest_script.write_text(PYTEST_SCRIPT.format(python=venv / "bin" / "python"))
        pytest_script.chmod(0o755)
        (root / "pyenv-proj" / "test_sample.py").write_text(SAMPLE_TEST)
        managed = base / "uv-python"
        managed.mkdir()
        (managed / "cpython-3-link").symlink_to(os.path.realpath(BASE))
        make_venv(root / "linked-proj" / ".venv", home=managed / "cpython-3-link" / "bin")
        paths["managed"] = managed
    if UV.exists() and BASE_PYTHON is not None:
        env = {**os.environ, "UV_CACHE_DIR": str(base / "uv-cache"), "UV_OFFLINE": "1", "UV_NO_CONFIG": "1"}
        subprocess.run(
            [str(UV), "venv", "-q", "--system-site-packages", "--python", str(BASE_PYTHON), ".venv"],
            cwd=root / "uv-proj",
            env=env,
            check=True,
        )
        (root / "uv-proj" / "test_sample.py").write_text(SAMPLE_TEST)
    if HAVE_NPM:
        project = root / "node-proj"
        (project / "tools" / "hello").mkdir(parents=True)
        (project / "tools" / "hello" / "package.json").write_text(
            json.dumps({"name": "hello-cli", "version": "1.0.0", "bin": {"hello": "cli.js"}})
        )
        (project / "tools" / "hello" / "cli.js").write_text(HELLO_CLI)
        (project / "tools" / "hello" / "cli.js").chmod(0o755)
        (project / "package.json").write_text(
            json.dumps({"name": "node-proj", "version": "1.0.0", "scripts": {"greet": "hello from-npm"}})
        )
        (project / "server.js").write_text(NODE_SERVER)
        subprocess.run(
            ["npm", "install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "./tools/hello"],
            cwd=project,
            env={**os.environ, "HOME": str(base / "npm-home"), "npm_config_cache": str(base / "npm-cache")},
            check=True,
            capture_output=True,
        )
        paths["nvm"] = fake_node_installation(base / "nvm" / "versions" / "node" / "v18.0.0")
    return paths


@pytest.fixture(scope="module")
async def client(world: dict[str, Path]) -> AsyncIterator[Client]:
    _skip_without_sandbox()
    base = world["base"]
    (base / "absent.toml").write_text("")
    search_path = "/usr/local/bin:/usr/bin:/bin"
    if "nvm" in world:
        search_path = f"{world['nvm'] / 'bin'}:{search_path}"  # an operator's nvm node, first
    if UV.exists():
        (base / "uv-bin").mkdir(exist_ok=True)
        (base / "uv-bin" / "uv").unlink(missing_ok=True)
        (base / "uv-bin" / "uv").symlink_to(UV)  # uv where an operator put it: outside the system directories
        search_path = f"{base / 'uv-bin'}:{search_path}"
    env = {
        "MCP_SECTIONS_CONFIG": str(base / "absent.toml"),
        "MCP_SECTIONS_DATA_DIR": str(base / "data"),
        "MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS": ",".join([*DEFAULT_ALLOWED_PROGRAMS, "hello"]),
        "MCP_SECTIONS_SHELL_OPS_SEARCH_PATH": search_path,
        "MCP_SECTIONS_SHELL_OPS_MAX_PROCESSES": str(MAX_PROCESSES),
        "MCP_SECTIONS_SHELL_OPS_PROCESS_OUTPUT_BYTES": str(RING),
    }
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=env) as connected:
        yield connected


async def stop_all(client: Client) -> None:
    for process in (await call(client, "list_processes"))["processes"]:
        if process["state"] == "running":
            await call(client, "stop_process", process_id=process["process_id"], signal="SIGKILL")


# -- project toolchains ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_system_python_outside_a_project(client: Client) -> None:
    version = await call(client, "run_command", command=["python3", "--version"], cwd="sys-proj")
    assert version["exit_code"] == 0 and version["executable"].startswith(("/usr/", "/bin/"))
    tests = await call(client, "run_command", command=["python3", "-m", "unittest", "-q"], cwd="sys-proj")
    assert tests["exit_code"] == 0 and "OK" in tests["stderr"], tests
    message = await fail(client, "run_command", "NOT_FOUND", command=["pytest", "--version"], cwd="sys-proj")
    assert "search_path" in message and "project environment" in message  # says how to get it
    message = await fail(client, "run_command", "NOT_FOUND", command=["python", "--version"], cwd="sys-proj")
    assert "`python3` is" in message


@pytest.mark.anyio
async def test_a_venv_of_the_pyenv_interpreter_runs_its_tools(client: Client, world: dict[str, Path]) -> None:
    if "managed" not in world:
        pytest.skip("the test interpreter is the system's; no installation outside the system directories")
    venv = world["root"] / "pyenv-proj" / ".venv"
    tests = await call(client, "run_command", command=["pytest", "-q", "-p", "no:cacheprovider"], cwd="pyenv-proj")
    assert tests["exit_code"] == 0 and "1 passed" in tests["stdout"], tests
    assert tests["executable"] == str(venv / "bin" / "pytest")
    by_path = await call(client, "run_command", command=[".venv/bin/pytest", "--version"], cwd="pyenv-proj")
    assert by_path["exit_code"] == 0 and "pytest" in by_path["stdout"] + by_path["stderr"]
    where = await call(client, "run_command", command=["python", "../tools/where.py"], cwd="pyenv-proj")
    prefix, base_prefix, _ = where["stdout"].strip().split("|")
    assert prefix == str(venv) and base_prefix == str(BASE), where
    listed = await call(client, "run_command", command=["python", "-m", "pip", "list"], cwd="pyenv-proj")
    assert listed["exit_code"] == 0 and "pytest" in listed["stdout"]
    # An installer now runs (through the registry-only egress): here one that needs nothing from the network.
    offline = await call(
        client,
        "run_command",
        command=["python", "-m", "pip", "install", "--no-index", "no-such-package-x"],
        cwd="pyenv-proj",
    )
    assert offline["exit_code"] != 0 and "no-such-package-x" in offline["stderr"] and offline["blocked"] == []


@pytest.mark.anyio
async def test_a_uv_venv(client: Client, world: dict[str, Path]) -> None:
    if not (world["root"] / "uv-proj" / ".venv").exists():
        pytest.skip("uv is not installed next to the test interpreter")
    where = await call(client, "run_command", command=["python", "../tools/where.py"], cwd="uv-proj")
    assert where["stdout"].split("|")[0] == str(world["root"] / "uv-proj" / ".venv"), where
    tests = await call(
        client, "run_command", command=["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd="uv-proj"
    )
    assert tests["exit_code"] == 0 and "1 passed" in tests["stdout"], tests
    via_uv = await call(
        client, "run_command", command=["uv", "run", "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd="uv-proj"
    )
    assert via_uv["exit_code"] == 0 and "1 passed" in via_uv["stdout"], via_uv
    await fail(client, "run_command", "PERMISSION_DENIED", command=["uv", "run", "bash"], cwd="uv-proj")
    offline = await call(client, "run_command", command=["uv", "pip", "install", "--offline", "x"], cwd="uv-proj")
    assert offline["exit_code"] != 0 and offline["blocked"] == [], offline  # an installer runs, offline here


@pytest.mark.anyio
async def test_uv_run_serves_behind_a_published_port(client: Client, world: dict[str, Path]) -> None:
    """uv lives outside the system directories and runs behind the relay: its own prefix is shown all the same."""
    if not (world["root"] / "uv-proj" / ".venv").exists():
        pytest.skip("uv is not installed next to the test interpreter")
    port = free_port()
    started = await call(
        client,
        "start_process",
        command=["uv", "run", "python", "-m", "http.server", "--bind", "127.0.0.1", str(port)],
        cwd="uv-proj",
        ports=[port],
        wait_for="Serving HTTP",
        wait_seconds=20,
    )
    assert started["ready"] is True, started
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/test_sample.py", timeout=10) as response:
        assert response.read().decode() == SAMPLE_TEST
    await call(client, "stop_process", process_id=started["process"]["process_id"], signal="SIGINT")


@pytest.mark.anyio
async def test_an_interpreter_reached_through_a_link_runs(client: Client, world: dict[str, Path]) -> None:
    """uv's minor-version directories and Homebrew's `opt/` name the installation by a link: shown there too."""
    if "managed" not in world:
        pytest.skip("the test interpreter is the system's; no installation outside the system directories")
    where = await call(client, "run_command", command=["python", "../tools/where.py"], cwd="linked-proj")
    assert where["exit_code"] == 0 and where["stdout"].split("|")[0] == str(world["root"] / "linked-proj" / ".venv")


@pytest.mark.anyio
async def test_a_node_project_runs_its_local_tools_on_a_verified_node(client: Client, world: dict[str, Path]) -> None:
    if not HAVE_NPM:
        pytest.skip("node and npm are not installed")
    node = str(world["nvm"] / "bin" / "node")
    by_name = await call(client, "run_command", command=["hello", "world"], cwd="node-proj")
    assert by_name["stdout"].strip() == f"hello world {node}", by_name  # `#!/usr/bin/env node` found nvm's node
    assert by_name["executable"].endswith("node_modules/.bin/hello")
    via_npx = await call(client, "run_command", command=["npx", "hello", "again"], cwd="node-proj")
    assert via_npx["stdout"].strip().startswith("hello again"), via_npx
    by_path = await call(client, "run_command", command=["./node_modules/.bin/hello", "path"], cwd="node-proj")
    assert by_path["stdout"].startswith("hello path")
    script = await call(client, "run_npm_script", script="greet", cwd="node-proj")
    assert "hello from-npm" in script["stdout"], script
    await fail(client, "run_command", "PERMISSION_DENIED", command=["npx", "cowsay", "moo"], cwd="node-proj")


@pytest.mark.anyio
async def test_the_projects_own_programs_run_by_path(client: Client, world: dict[str, Path]) -> None:
    ran = await call(client, "run_command", command=["../tools/check.sh", "--fast"], cwd="srv")
    assert ran["stdout"] == f"checked --fast in {world['root'] / 'srv'}\n" and ran["sandbox"] == "bubblewrap", ran
    started = await call(client, "start_process", command=["./tools/check.sh", "bg"], wait_seconds=5)
    assert started["output"].startswith("checked bg") and started["process"]["state"] == "exited"


@pytest.mark.anyio
async def test_a_program_the_sandbox_cannot_start_is_an_error_not_a_result(client: Client) -> None:
    message = await fail(client, "run_command", "EXECUTION_FAILED", command=["./tools/odd.sh"])
    assert "could not be started inside the sandbox" in message and "#!" in message


# -- long-running processes ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_repl_takes_input_and_answers(client: Client, world: dict[str, Path]) -> None:
    cwd = "pyenv-proj" if "managed" in world else "sys-proj"
    started = await call(client, "start_process", command=["python3", "-i"], cwd=cwd, wait_for=">>> ", wait_seconds=10)
    assert started["ready"] is True and started["process"]["state"] == "running"
    assert "Python 3" in started["output"]
    pid = started["process"]["process_id"]
    answer = await call(client, "write_process_input", process_id=pid, input="6 * 7", wait_seconds=5)
    assert answer["output"].startswith("42\n"), answer
    where = await call(
        client, "write_process_input", process_id=pid, input="import sys; print(sys.prefix)", wait_seconds=5
    )
    if cwd == "pyenv-proj":
        assert where["output"].startswith(str(world["root"] / "pyenv-proj" / ".venv")), where
    ended = await call(client, "write_process_input", process_id=pid, input="", close_input=True, wait_seconds=5)
    deadline = time.monotonic() + 10
    while ended["process"]["state"] == "running" and time.monotonic() < deadline:
        ended = await call(client, "read_process_output", process_id=pid, wait_seconds=1)
    assert ended["process"]["state"] == "exited" and ended["process"]["exit_code"] == 0
    message = await fail(client, "write_process_input", "EXECUTION_FAILED", process_id=pid, input="1")
    assert "has ended" in message


@pytest.mark.anyio
async def test_a_dev_server_is_fetched_through_its_published_port(client: Client, world: dict[str, Path]) -> None:
    pytest.importorskip("html_to_markdown", reason="web_ops fetches the page: the web extra")
    port = free_port()
    started = await start_dev_server(client, port)
    pid = started["process"]["process_id"]
    assert started["process"]["ports"] == [{"port": port, "url": f"http://127.0.0.1:{port}/"}]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as response:
        assert b"served from inside the sandbox" in response.read()
    env = {"MCP_SECTIONS_WEB_OPS_ALLOW": f"127.0.0.1:{port}", "MCP_SECTIONS_WEB_OPS_EMBEDDINGS": "false"}
    async with section_in_memory("web_ops", "--data-dir", str(world["base"] / "web-data"), env=env) as web:
        page = await call(web, "fetch_web_page", url=f"http://127.0.0.1:{port}/index.html", render="http")
    assert "served from inside the sandbox" in page["text"], page
    log = await call(client, "read_process_output", process_id=pid, wait_seconds=5)
    assert "GET /index.html" in log["output"]
    message = await fail(
        client, "start_process", "EXECUTION_FAILED", command=["python3", "tools/ticker.py", "1", "0"], ports=[port]
    )
    assert "cannot be published" in message  # the port is taken: by the running server
    stopped = await call(client, "stop_process", process_id=pid, signal="SIGINT")
    assert stopped["process"]["state"] == "stopped" and "Keyboard interrupt" in stopped["output"]
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
    again = await start_dev_server(client, port)  # the port is free again as soon as stop_process returns
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10) as response:
        assert b"served from inside the sandbox" in response.read()
    await call(client, "stop_process", process_id=again["process"]["process_id"], signal="SIGKILL")


@pytest.mark.anyio
async def test_a_node_dev_server_on_an_interpreter_outside_the_system(client: Client, world: dict[str, Path]) -> None:
    """The program behind the relay is not the sandbox's first one: its own installation is shown all the same."""
    if not HAVE_NPM:
        pytest.skip("node and npm are not installed")
    port = free_port()
    started = await call(
        client,
        "start_process",
        command=["node", "server.js"],
        cwd="node-proj",
        env={"PORT": str(port)},
        ports=[port],
        wait_for="listening",
        wait_seconds=15,
    )
    assert started["ready"] is True, started
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
        assert response.read().decode().strip() == f"node says hi from {world['nvm'] / 'bin' / 'node'}"
    stopped = await call(client, "stop_process", process_id=started["process"]["process_id"])
    assert stopped["process"]["state"] == "stopped"


@pytest.mark.anyio
async def test_a_long_run_is_read_while_it_works_and_replayed_from_an_offset(client: Client) -> None:
    started = await call(client, "start_process", command=["python3", "tools/ticker.py", "5", "0.3"], wait_seconds=0.5)
    pid = started["process"]["process_id"]
    seen = started["output"]
    while True:
        page = await call(client, "read_process_output", process_id=pid, wait_seconds=5)
        assert page["offset"] == len(seen.encode())
        seen += page["output"]
        if page["process"]["state"] != "running" and not page["more"]:
            break
    assert seen == "".join(f"tick {i}\n" for i in range(5)) + "done\n"
    assert page["process"]["exit_code"] == 0 and page["process"]["unread_bytes"] == 0
    replay = await call(client, "read_process_output", process_id=pid, offset=0, max_bytes=256)
    assert replay["output"] == seen and replay["dropped_bytes"] == 0


@pytest.mark.anyio
async def test_output_beyond_the_ring_is_dropped_and_counted(client: Client) -> None:
    started = await call(client, "start_process", command=["python3", "tools/flood.py"], wait_seconds=10)
    pid = started["process"]["process_id"]
    total = 4000 * 101
    assert started["process"]["total_bytes"] == total and started["process"]["state"] == "exited"
    assert started["dropped_bytes"] == total - RING and started["offset"] == total - RING
    assert len(started["output"].encode()) <= 16384 and started["more"] is True
    rest = await call(client, "read_process_output", process_id=pid, max_bytes=1024 * 1024)
    assert rest["output"].endswith("003999 " + "x" * 93 + "\n") and rest["next_offset"] == total


@pytest.mark.anyio
async def test_limits_on_processes_lifetime_and_environment(client: Client) -> None:
    await stop_all(client)
    ids = []
    for _ in range(MAX_PROCESSES):  # the same program several times on purpose
        started = await call(
            client,
            "start_process",
            command=["python3", "tools/ticker.py", "100", "1"],
            wait_seconds=0,
            allow_duplicate=True,
        )
        ids.append(started["process"]["process_id"])
    message = await fail(
        client, "start_process", "MAX_LIMIT_EXCEEDED", command=["python3", "tools/ticker.py", "1", "0"]
    )
    assert "max_processes" in message and ids[0] in message
    await stop_all(client)
    brief = await call(
        client,
        "start_process",
        command=["python3", "tools/ticker.py", "100", "0.2"],
        lifetime_seconds=1,
        wait_seconds=3,
    )
    assert brief["process"]["state"] == "expired", brief
    await fail(client, "start_process", "MAX_LIMIT_EXCEEDED", command=["ls"], lifetime_seconds=7200)
    with_port = await call(
        client, "start_process", command=["python3", "tools/where.py"], env={"PORT": "4242", "NODE_ENV": "test"}
    )
    assert with_port["process"]["state"] == "exited"
    for name in ("PATH", "HTTPS_PROXY"):  # the suite's own mechanisms
        message = await fail(client, "start_process", "PERMISSION_DENIED", command=["ls"], env={name: "x"})
        assert "cannot be set by a caller" in message
    for name in ("NODE_OPTIONS", "PYTEST_ADDOPTS", "SOMETHING_ELSE", "LD_PRELOAD", "GLIBC_TUNABLES"):  # inside only
        started = await call(client, "start_process", command=["python3", "tools/where.py"], env={name: "x"})
        assert started["process"]["state"] == "exited", started
    await fail(client, "start_process", "INVALID_INPUT", command=["git", "log"])
    await fail(client, "read_process_output", "NOT_FOUND", process_id="p999")
    listed = await call(client, "list_processes")
    assert listed["max_processes"] == MAX_PROCESSES and "PORT" in listed["environment_names"]


@pytest.mark.anyio
async def test_stopping_kills_the_whole_sandbox(client: Client) -> None:
    seconds = unique_seconds(700)
    started = await call(
        client, "start_process", command=["python3", "tools/spawner.py", seconds], wait_for="spawned", wait_seconds=10
    )
    assert running(["sleep", seconds]), "the grandchild did not start"
    stopped = await call(client, "stop_process", process_id=started["process"]["process_id"], grace_seconds=1)
    assert stopped["process"]["state"] == "stopped" and stopped["process"]["exit_code"] is not None
    assert gone(["sleep", seconds], seconds=5), "a process in its own session survived its sandbox"
    again = await call(client, "stop_process", process_id=started["process"]["process_id"])
    assert again["process"]["state"] == "stopped"


@pytest.mark.anyio
async def test_the_same_start_again_returns_the_process_still_running(client: Client) -> None:
    ticker = ["python3", "tools/ticker.py", "100", unique_seconds(1)]
    first = await call(client, "start_process", command=ticker, wait_for="tick 0", wait_seconds=10)
    pid = first["process"]["process_id"]
    again = await call(client, "start_process", command=ticker, wait_seconds=0)  # as when the answer was lost
    assert (first["already_running"], again["already_running"]) == (False, True)
    assert again["process"]["process_id"] == pid and again["process"]["state"] == "running"
    assert "allow_duplicate=true" in again["warning"] and f"WARNING: {pid} was started" in text_of(
        await client.call_tool("start_process", {"command": ticker, "wait_seconds": 0})
    )
    listed = (await call(client, "list_processes"))["processes"]
    assert [p["process_id"] for p in listed if p["command"][-1] == ticker[-1] and p["state"] == "running"] == [pid]
    others = [
        await call(client, "start_process", command=ticker, wait_seconds=0, allow_duplicate=True),
        await call(client, "start_process", command=ticker, env={"MODE": "b"}, wait_seconds=0),
    ]
    assert [other["already_running"] for other in others] == [False, False]
    assert len({pid, *(other["process"]["process_id"] for other in others)}) == 3
    for process_id in (pid, *(other["process"]["process_id"] for other in others)):
        await call(client, "stop_process", process_id=process_id, signal="SIGKILL")
    restarted = await call(client, "start_process", command=ticker, wait_seconds=0)  # none runs: a new one
    assert restarted["already_running"] is False and restarted["process"]["process_id"] != pid
    await call(client, "stop_process", process_id=restarted["process"]["process_id"], signal="SIGKILL")


@pytest.mark.anyio
async def test_the_same_start_made_at_once_starts_one_process(client: Client) -> None:
    ticker = ["python3", "tools/ticker.py", "100", unique_seconds(1)]
    answers: list[dict[str, Any]] = []

    async def start() -> None:
        answers.append(await call(client, "start_process", command=ticker, wait_seconds=0))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(start)
    assert sorted(answer["already_running"] for answer in answers) == [False, True, True, True]
    assert len({answer["process"]["process_id"] for answer in answers}) == 1
    listed = (await call(client, "list_processes"))["processes"]
    assert len([p for p in listed if p["command"][-1] == ticker[-1] and p["state"] == "running"]) == 1
    await call(client, "stop_process", process_id=answers[0]["process"]["process_id"], signal="SIGKILL")


@pytest.mark.anyio
async def test_process_output_is_masked(client: Client) -> None:
    started = await call(
        client, "start_process", command=["python3", "tools/secret.py"], wait_for="GITHUB", wait_seconds=10
    )
    assert "ghp_a1B2" not in json.dumps(started) and "***MASKED***" in started["output"], started
    replay = await call(client, "read_process_output", process_id=started["process"]["process_id"], offset=0)
    assert "ghp_a1B2" not in json.dumps(replay)
    await call(client, "stop_process", process_id=started["process"]["process_id"], signal="SIGKILL")
