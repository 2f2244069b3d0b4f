"""The OS sandbox around every program shell_ops runs: what an allowed program does cannot leave the roots.

The attack the argument rules could not stop: write a script with file_ops, run it with python3. Inside the
bubblewrap sandbox it sees only the system directories (read-only), the roots and a private /tmp.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_sections.shared.confinement import sandbox as sandbox_module
from mcp_sections.shared.ground.errors import ToolFailure
from tests.in_memory import section_in_memory
from tests.stdio import call

pytestmark = pytest.mark.skipif(
    sandbox_module.shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap); shell_ops refuses commands without it",
)

SECRET = "sandbox-canary-7f3a9c"
SCRIPT = """
import os, pathlib, socket, sys
outside, home = pathlib.Path(OUTSIDE), pathlib.Path(HOME)  # written into the script: no argument to check
for probe in (outside / "secret.txt", home / ".ssh" / "id_rsa", pathlib.Path("/root")):
    print("read", probe, "visible" if probe.exists() else "absent")
try:
    (outside / "planted.txt").write_text("x")
    print("write outside: ok")
except OSError as exc:
    print("write outside: refused", type(exc).__name__)
pathlib.Path("inside.txt").write_text("x")
print("write inside: ok")
try:
    socket.create_connection(("127.0.0.1", 9), timeout=1)
    print("network: reachable")
except OSError as exc:
    print("network: none", type(exc).__name__)
print("pid", os.getpid())
print("capabilities", open("/proc/self/status").read().split("CapEff:")[1].split()[0])
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("sandbox-world")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    script = SCRIPT.replace("OUTSIDE", repr(str(outside))).replace("HOME", repr(str(Path.home())))
    (root / "attack.py").write_text(script, encoding="utf-8")  # what file_ops' write_file would have written
    return {"base": base, "root": root, "outside": outside}


@pytest.fixture(scope="module")
async def shell(world: dict[str, Path]) -> AsyncIterator[Client]:
    async with section_in_memory("shell_ops", "--root", str(world["root"])) as client:
        yield client


@pytest.mark.anyio
async def test_a_script_written_in_the_roots_cannot_leave_them(shell: Client, world: dict[str, Path]) -> None:
    result = await call(shell, "run_command", command=["python3", "attack.py"])
    out = result["stdout"]
    assert result["sandbox"] == "bubblewrap" and result.get("warning") is None
    assert f"read {world['outside'] / 'secret.txt'} absent" in out and SECRET not in out
    assert "/.ssh/id_rsa absent" in out and "read /root absent" in out
    assert "write outside: refused" in out and not (world["outside"] / "planted.txt").exists()
    assert "write inside: ok" in out and (world["root"] / "inside.txt").exists()
    assert "network: none" in out
    pid = int(out.split("pid ")[1].split()[0])
    assert pid < 10  # a fresh PID namespace
    assert "capabilities 0000000000000000" in out  # none, even when the server runs as root (CI does)


@pytest.mark.anyio
async def test_list_safe_commands_shows_the_sandbox(shell: Client) -> None:
    listing = await call(shell, "list_safe_commands")
    assert listing["sandbox"]["kind"] == "bubblewrap" and listing["sandbox"]["executable"].endswith("bwrap")


def test_without_bubblewrap_commands_are_refused_unless_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda *args, **kwargs: None)
    with pytest.raises(ToolFailure) as caught:
        sandbox_module.detect("auto")
    assert caught.value.code.value == "DEPENDENCY_ERROR" and "apt-get install bubblewrap" in caught.value.message
    unconfined = sandbox_module.detect("off")
    assert unconfined.kind == "off" and unconfined.warning and "sandbox is off" in unconfined.warning


@pytest.mark.anyio
async def test_sandbox_off_says_so_in_every_result(world: dict[str, Path]) -> None:
    env = {"MCP_SECTIONS_SHELL_OPS_SANDBOX": "off"}
    async with section_in_memory("shell_ops", "--root", str(world["root"]), env=env) as client:
        result = await call(client, "run_command", command=["ls"])
    assert result["sandbox"] == "off" and "sandbox is off" in result["warning"]


def test_programs_outside_the_system_directories_see_their_install_prefix(tmp_path: Path) -> None:
    tool = tmp_path / "opt" / "tool" / "bin" / "tool"
    tool.parent.mkdir(parents=True)
    shutil.copy("/bin/true", tool)
    assert sandbox_module.install_prefixes(str(tool)) == [str(tmp_path / "opt" / "tool")]
    assert sandbox_module.install_prefixes("/usr/bin/git") == []


@pytest.mark.anyio
async def test_an_installer_sees_the_project_and_nothing_else_of_the_machine(tmp_path: Path) -> None:
    """install_package runs registry code (an sdist's setup.py, npm scripts): inside the sandbox it can write the
    project, but neither read nor write the rest of the machine — through the real file_ops server."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    project = root / "proj"
    (project / ".venv" / "bin").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    installer = project / ".venv" / "bin" / "python"  # the project's "interpreter": what pip would run
    installer.write_text(
        f"#!/bin/sh\ncat {outside}/secret.txt 2>&1 || echo 'secret: absent'\n"
        f"touch {outside}/planted 2>&1 || echo 'outside: read-only'\n"
        "touch installed.txt && echo 'project: writable'\necho \"home=$HOME\"\n"
    )
    installer.chmod(0o755)
    async with section_in_memory("file_ops", "--root", str(root), "--data-dir", str(tmp_path / "data")) as files:
        data = await call(files, "install_package", manager="pip", packages=["requests"], path=str(project))
    assert data["sandbox"] == "bubblewrap" and data["warning"] is None
    assert SECRET not in data["output"] and "secret: absent" in data["output"]
    assert not (outside / "planted").exists()
    assert "project: writable" in data["output"] and (project / "installed.txt").exists()
    assert "home=/tmp" in data["output"]


def test_the_seatbelt_profile_denies_by_default_and_names_only_what_the_program_may_touch(tmp_path: Path) -> None:
    root = tmp_path / "project"
    profile = sandbox_module.seatbelt_profile("/opt/homebrew/bin/rg", sandbox_module.Confinement(writable=(root,)))
    assert profile.startswith("(version 1)\n(deny default)\n")
    assert profile.count("(") == profile.count(")")
    writes = next(line for line in profile.splitlines() if line.startswith("(allow file-write*"))
    assert f'(subpath "{root}")' in writes and '(subpath "/usr")' not in writes
    assert '(subpath "/opt/homebrew")' in profile  # the program's install prefix is readable
    assert "network" not in profile
    networked = sandbox_module.seatbelt_profile("/usr/bin/true", sandbox_module.Confinement(network=True))
    assert "(allow network* system-socket)" in networked


def test_a_hostile_root_name_cannot_end_the_profile_string() -> None:
    hostile = Path('/work/x") (allow default) ("')
    profile = sandbox_module.seatbelt_profile("/usr/bin/true", sandbox_module.Confinement(writable=(hostile,)))
    assert '(subpath "/work/x\\") (allow default) (\\"")' in profile
    assert "\n(allow default)" not in profile
    with pytest.raises(ValueError):
        sandbox_module.seatbelt_profile("/usr/bin/true", sandbox_module.Confinement(writable=(Path("/a\nb"),)))


def test_seatbelt_outside_macos_is_refused_with_a_dependency_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "SANDBOX_EXEC", "/nonexistent/sandbox-exec")
    with pytest.raises(ToolFailure) as failure:
        sandbox_module.detect("seatbelt")
    assert failure.value.code.value == "DEPENDENCY_ERROR" and "sandbox-exec" in failure.value.message
