"""The workbench cannot widen the boundary (issue #23): a long-running process is confined like run_command's
programs, gets no network from a published port, and dies with the server — killed with SIGKILL too; a project
environment cannot turn a system tool into the project's code, nor show the sandbox a directory that is not a
verified interpreter installation."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.servers.shell_ops.settings import ShellOpsSettings
from tests.in_memory import section_in_memory
from tests.processes import RawServer, free_port, gone, running, unique_seconds
from tests.stdio import call, fail, section_client

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap); shell_ops refuses commands without it",
)

SECRET = "workbench-canary-31c7"
ATTACK = """
import os, pathlib, socket, sys, time
outside, home = pathlib.Path(OUTSIDE), pathlib.Path(HOME)
for probe in (outside / "secret.txt", home / ".ssh", pathlib.Path("/root")):
    print("read", probe, "visible" if probe.exists() else "absent")
try:
    (outside / "planted.txt").write_text("x")
    print("write outside: ok")
except OSError as exc:
    print("write outside: refused", type(exc).__name__)
for host, port in (("127.0.0.1", HOST_PORT), ("1.1.1.1", 443)):
    try:
        socket.create_connection((host, port), timeout=2)
        print("connect", host, "reachable")
    except OSError as exc:
        print("connect", host, "none")
try:
    socket.getaddrinfo("pypi.org", 443)
    print("dns: resolved")
except OSError:
    print("dns: none")
print("pid", os.getpid(), flush=True)
time.sleep(600)
"""
SPAWNER = """
import subprocess, sys, time
subprocess.Popen(["sleep", sys.argv[1]], start_new_session=True)
print("spawned", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def host_listener() -> AsyncIterator[int]:
    """A server on the host's loopback that a sandboxed program must not reach (counts its connections)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    accepted: list[int] = []
    running = True

    def accept() -> None:
        while running:
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            accepted.append(1)
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    running = False
    thread.join(timeout=2)
    listener.close()
    assert not accepted, "a sandboxed program reached a server on the host's loopback"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, host_listener: int) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("workbench-attacks")
    root, outside = base / "root", base / "outside"
    (root / "tools").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    attack = ATTACK.replace("OUTSIDE", repr(str(outside))).replace("HOME", repr(str(Path.home())))
    (root / "tools" / "attack.py").write_text(attack.replace("HOST_PORT", str(host_listener)))
    (root / "tools" / "spawner.py").write_text(SPAWNER)
    (root / "notes.txt").write_text("the real notes\n")
    (base / "absent.toml").write_text("")
    return {"base": base, "root": root, "outside": outside}


def server_env(world: dict[str, Path], **extra: str) -> dict[str, str]:
    return {
        "MCP_SECTIONS_CONFIG": str(world["base"] / "absent.toml"),
        "MCP_SECTIONS_DATA_DIR": str(world["base"] / "data"),
        **extra,
    }


@pytest.fixture(scope="module")
async def shell(world: dict[str, Path]) -> AsyncIterator[Client]:
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=server_env(world)) as client:
        yield client


@pytest.mark.anyio
async def test_a_long_running_process_is_confined_like_any_program(
    shell: Client, world: dict[str, Path], host_listener: int
) -> None:
    port = free_port()
    started = await call(
        shell, "start_process", command=["python3", "tools/attack.py"], ports=[port], wait_for="pid", wait_seconds=20
    )
    out = started["output"]
    assert started["sandbox"] == "bubblewrap"
    assert f"read {world['outside'] / 'secret.txt'} absent" in out and SECRET not in out
    assert "/.ssh absent" in out and "read /root absent" in out
    assert "write outside: refused" in out and not (world["outside"] / "planted.txt").exists()
    assert "connect 127.0.0.1 none" in out and "connect 1.1.1.1 none" in out and "dns: none" in out, out
    assert "pid " in out, started
    assert int(out.split("pid ")[1].split()[0]) < 10, out  # its own PID namespace (the relay is pid 2)
    await call(shell, "stop_process", process_id=started["process"]["process_id"], signal="SIGKILL")


@pytest.mark.anyio
async def test_a_project_environment_cannot_take_over_system_tools(shell: Client, world: dict[str, Path]) -> None:
    venv = world["root"] / "proj" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    marker = world["root"] / "planted-ran"
    for tool in ("cat", "git", "ls", "grep"):
        (venv / "bin" / tool).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (venv / "bin" / tool).chmod(0o755)
    (world["root"] / "proj" / "notes.txt").write_text("the real notes\n")
    shown = await call(shell, "run_command", command=["cat", "notes.txt"], cwd="proj")
    assert shown["stdout"] == "the real notes\n" and not shown["executable"].startswith(str(venv))
    await call(shell, "run_command", command=["git", "--version"], cwd="proj")
    assert not marker.exists()
    await fail(shell, "run_command", "PERMISSION_DENIED", command=[".venv/bin/cat", "notes.txt"], cwd="proj")
    (venv / "bin" / "pytest").symlink_to("/bin/bash")
    message = await fail(shell, "run_command", "PERMISSION_DENIED", command=["pytest", "-c", "id"], cwd="proj")
    assert "never allowed" in message
    message = await fail(shell, "start_process", "PERMISSION_DENIED", command=["pytest"], cwd="proj")
    assert "never allowed" in message


@pytest.mark.anyio
async def test_a_venv_cannot_show_the_sandbox_what_is_not_an_installation(
    shell: Client, world: dict[str, Path]
) -> None:
    """pyvenv.cfg is the agent's to write: pointing `home` at a directory of secrets shows nothing."""
    venv = world["root"] / "fake" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {world['outside']}/bin\n")
    (world["outside"] / "bin").mkdir(exist_ok=True)
    (world["outside"] / "bin" / "python3").write_text("#!/bin/sh\n")
    (world["outside"] / "bin" / "python3").chmod(0o755)
    (venv / "bin" / "python").symlink_to(world["outside"] / "bin" / "python3")
    message = await fail(shell, "run_command", "PERMISSION_DENIED", command=["python", "x.py"], cwd="fake")
    assert "leads outside the roots" in message
    (venv / "pyvenv.cfg").write_text(f"home = {Path.home()}/bin\n")  # a prefix that is the home directory
    probe = world["root"] / "fake" / "probe.py"
    probe.write_text(
        f"import os; print(os.path.exists({str(world['outside'])!r}), os.path.exists({str(Path.home())!r}))\n"
    )
    seen = await call(shell, "run_command", command=["python3", "probe.py"], cwd="fake")
    assert seen["stdout"].strip() == "False False", seen


@pytest.mark.anyio
async def test_environment_additions_change_only_what_runs_inside_the_sandbox(
    shell: Client, world: dict[str, Path]
) -> None:
    """Issue #38: inside the sandbox a variable changes only the program there, so PYTHONPATH, PYTHONSTARTUP,
    NODE_OPTIONS, PYTEST_ADDOPTS or GIT_DIR are accepted; they were refused because they load code, and what they load
    from outside the roots is not there. The loader's too: bubblewrap gets a caller's variables by `--setenv`, so they
    reach the program inside, never the launcher on the host. The suite's own mechanisms stay refused: the egress
    proxy's variables, PATH and HOME."""
    for name in ("PATH", "HOME", "HTTPS_PROXY", "no_proxy"):
        for tool in ("start_process", "run_command"):
            message = await fail(shell, tool, "PERMISSION_DENIED", command=["ls"], env={name: "/tmp/x"})
            assert "cannot be set by a caller" in message, message
    (world["outside"] / "evil.so").write_bytes(b"not a library")
    for name in ("LD_PRELOAD", "LD_AUDIT"):
        ran = await call(shell, "run_command", command=["ls"], env={name: str(world["outside"] / "evil.so")})
        assert ran["exit_code"] == 0 and "cannot" in ran["stderr"], ran  # the loader inside finds nothing there
    (world["outside"] / "sitecustomize.py").write_text(f"print({SECRET!r})\n")
    (world["outside"] / "evilmod.py").write_text(f"print({SECRET!r})\n")
    (world["outside"] / "startup.py").write_text(f"print({SECRET!r})\n")
    outside = str(world["outside"])
    probe = "import importlib.util as u; print('evilmod', u.find_spec('evilmod') is not None)"
    for env in (
        {"PYTHONPATH": outside},
        {"PYTHONSTARTUP": f"{outside}/startup.py", "PYTHONINSPECT": "1"},
        {"PYTHONPATH": outside, "PYTEST_ADDOPTS": f"-p evilmod --rootdir={outside}"},
        {"NODE_OPTIONS": f"--require {outside}/evil.js", "GIT_DIR": outside},
    ):
        ran = await call(shell, "run_command", command=["python3", "-c", probe], env=env)
        assert "evilmod False" in ran["stdout"] and SECRET not in str(ran), (env, ran)
    (world["root"] / "tools" / "insidemod.py").write_text("print('inside-ok')\n")
    inside = await call(
        shell, "run_command", command=["python3", "-c", "import insidemod"], env={"PYTHONPATH": "tools"}
    )
    assert inside["stdout"] == "inside-ok\n", inside  # PYTHONPATH works, inside the roots
    with pytest.raises(ValueError, match="can never be set"):
        ShellOpsSettings.load(process_environment=["PORT", "LD_PRELOAD"])


def _start_in_raw_server(server: RawServer, arguments: dict[str, object]) -> dict[str, object]:
    server.initialize()
    server.call_tool(1, "start_process", arguments)
    server.wait_for(lambda responses: 1 in responses, timeout=60)
    result = server.tool_results()[1]
    assert not result.get("isError"), result
    return result


@pytest.mark.parametrize("sandbox", ["auto", "off"])
def test_processes_die_with_a_server_killed_with_sigkill(world: dict[str, Path], sandbox: str) -> None:
    seconds = unique_seconds(800)
    port = free_port()
    env = server_env(world, MCP_SECTIONS_SHELL_OPS_SANDBOX=sandbox)
    arguments: dict[str, object] = {"command": ["python3", "tools/spawner.py", seconds], "wait_for": "spawned"}
    if sandbox == "auto":
        arguments["ports"] = [port]
    with RawServer(["shell_ops", "--root", str(world["root"])], env=env) as server:
        _start_in_raw_server(server, {**arguments, "wait_seconds": 20})
        assert running(["sleep", seconds])
        server.kill_9()
    if sandbox == "auto":
        assert gone(["sleep", seconds]), "a process survived the server's SIGKILL"
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0  # the published port went with the server
    else:
        # Unconfined, the program itself gets the parent-death signal; what it started in a session of its own has
        # no PID namespace to die with (README: "With the sandbox off").
        assert gone(["tools/spawner.py", seconds], suffix=True), "the program survived the server's SIGKILL"
        for pid in running(["sleep", seconds]):
            os.kill(pid, 9)


@pytest.mark.anyio
async def test_processes_end_when_the_server_ends(world: dict[str, Path]) -> None:
    seconds = unique_seconds(900)
    async with section_client("shell_ops", "--root", str(world["root"]), env=server_env(world)) as shell:
        await call(
            shell,
            "start_process",
            command=["python3", "tools/spawner.py", seconds],
            wait_for="spawned",
            wait_seconds=20,
        )
        assert running(["sleep", seconds])
    assert gone(["sleep", seconds]), "a process outlived its server"
