"""Project toolchains on their own (shared/confinement/toolchains.py) and the guard's use of them: which program a name
means in a project, which programs given by path run, and what interpreter installations are verified (no processes)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.servers.shell_ops.policies.allow_list import DEFAULT_ALLOWED_PROGRAMS
from mcp_sections.servers.shell_ops.policies.guard import CommandGuard
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installations import is_node_installation, is_python_installation
from mcp_sections.shared.confinement.toolchains import (
    forbidden_prefixes,
    project_toolchain,
    trusted_interpreters,
    venv_base_prefix,
    venv_interpreter_prefixes,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

BASE = Path(sys.base_prefix)  # the interpreter these tests run on: a pyenv installation on the dev machine
NEEDS_OUTSIDE_BASE = pytest.mark.skipif(
    str(BASE) == "/usr" or str(BASE).startswith(("/usr/", "/bin")),
    reason="the test interpreter is the system's: there is no installation outside the system directories",
)
NODE = shutil.which("node", path="/usr/local/bin:/usr/bin:/bin")


def make_venv(place: Path, *options: str, base: Path = BASE, home: Path | None = None) -> Path:
    """A real venv of `base` (`python -m venv --without-pip <options>`), its `home` rewritten to `home` if given (its
    interpreter then a link to the one of that name in `home`)."""
    python = next(p for p in (base / "bin" / "python3", base / "bin" / "python") if p.exists())
    subprocess.run([str(python), "-m", "venv", "--without-pip", *options, str(place)], check=True)
    if home is not None:
        config = place / "pyvenv.cfg"
        lines = [f"home = {home}" if line.startswith("home") else line for line in config.read_text().splitlines()]
        config.write_text("\n".join(lines) + "\n")
        for link in ("python3", "python"):
            (place / "bin" / link).unlink(missing_ok=True)
        (place / "bin" / "python3").symlink_to(home / python.name)
        (place / "bin" / "python").symlink_to("python3")
    return place


def fake_node_installation(prefix: Path, *, headers: bool = True) -> Path:
    """A Node installation laid out as nvm and the official archives do (`bin/node`, `include/node/…`)."""
    assert NODE is not None
    (prefix / "bin").mkdir(parents=True)
    shutil.copy2(os.path.realpath(NODE), prefix / "bin" / "node")
    if headers:
        (prefix / "include" / "node").mkdir(parents=True)
        (prefix / "include" / "node" / "node_version.h").write_text("#define NODE_MAJOR_VERSION 18\n")
    return prefix


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "app" / "src").mkdir(parents=True)
    (root / "app" / "scripts").mkdir()
    check = root / "app" / "scripts" / "check.sh"
    check.write_text("#!/bin/sh\necho checked\n")
    check.chmod(0o755)
    return root


def guard_for(root: Path, **options: bool) -> CommandGuard:
    return CommandGuard(PathGuard([root]), [*DEFAULT_ALLOWED_PROGRAMS, "hello"], **options)


def refusal(guard: CommandGuard, command: list[str], cwd: str | None = None) -> ToolFailure:
    with pytest.raises(ToolFailure) as caught:
        guard.check(command, cwd)
    return caught.value


# -- interpreter installations --------------------------------------------------------------------------


@NEEDS_OUTSIDE_BASE
def test_a_venv_of_an_installation_outside_the_system_gets_it_shown_read_only(project: Path) -> None:
    venv = make_venv(project / "app" / ".venv")
    guard = PathGuard([project])
    assert is_python_installation(BASE)
    assert venv_base_prefix(venv, forbidden_prefixes(guard)) == Path(os.path.realpath(BASE))
    toolchain = project_toolchain(project / "app" / "src", guard, forbidden_prefixes(guard))
    assert toolchain.venv == venv and toolchain.path_entries == (str(venv / "bin"),)
    assert toolchain.readable == (Path(os.path.realpath(BASE)),)
    assert toolchain.environment() == {"VIRTUAL_ENV": str(venv)}
    assert toolchain.search_path("/usr/bin:/bin") == f"{venv / 'bin'}:/usr/bin:/bin"


@NEEDS_OUTSIDE_BASE
def test_an_installation_reached_through_a_link_is_also_shown_at_the_linked_name(project: Path, tmp_path: Path) -> None:
    """uv's minor-version directories (`cpython-3.12-linux…` → the patch release) and Homebrew's `opt/python@3.12`:
    the venv names the installation by a link; the verified directory is shown there too."""
    managed = tmp_path / "uv-python"
    managed.mkdir()
    (managed / "cpython-3.x-link").symlink_to(os.path.realpath(BASE))
    venv = make_venv(project / "app" / ".venv", home=managed / "cpython-3.x-link" / "bin")
    guard = PathGuard([project])
    prefixes = venv_interpreter_prefixes(venv, forbidden_prefixes(guard))
    assert prefixes == (Path(os.path.realpath(BASE)), managed / "cpython-3.x-link")


def test_what_is_not_an_installation_is_never_shown(project: Path, tmp_path: Path) -> None:
    guard = PathGuard([project])
    forbidden = forbidden_prefixes(guard)
    fake = tmp_path / "fake"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "python3").write_text("#!/bin/sh\n")
    (fake / "secrets.txt").write_text("do not show\n")
    venv = make_venv(project / "app" / ".venv")
    (venv / "pyvenv.cfg").write_text(f"home = {fake / 'bin'}\n")
    assert venv_base_prefix(venv, forbidden) is None  # no standard library: not an installation
    for home in ("/", str(tmp_path), "relative/bin", str(project / "app"), "/usr/bin"):
        (venv / "pyvenv.cfg").write_text(f"home = {home}\n")
        assert venv_base_prefix(venv, forbidden) is None, home
    (venv / "pyvenv.cfg").write_text(f"home = {Path.home()}/bin\n")  # a prefix that is the home directory
    assert venv_base_prefix(venv, (*forbidden, Path.home())) is None
    link = project / "app" / "linked"
    link.symlink_to(venv)
    assert project_toolchain(project / "app", guard, forbidden).venv == venv  # `.venv`, never the link


def test_a_node_installation_is_verified_like_a_python_one(tmp_path: Path) -> None:
    if NODE is None:
        pytest.skip("node is not installed")
    nvm = fake_node_installation(tmp_path / "nvm" / "versions" / "node" / "v18.0.0")
    bare = fake_node_installation(tmp_path / "bare", headers=False)
    assert is_node_installation(nvm) and not is_node_installation(bare)
    linked = tmp_path / "linked"
    linked.symlink_to(nvm)
    assert not is_node_installation(linked)  # the real directory only
    search_path = f"{nvm / 'bin'}:{bare / 'bin'}:/usr/bin:/bin"
    assert trusted_interpreters(search_path, ()) == (nvm,)
    assert trusted_interpreters(f"{bare / 'bin'}:/usr/bin:/bin", ()) == ()  # not verified: nothing shown
    assert trusted_interpreters(search_path, (nvm / "a-root",)) == ()  # containing what is forbidden


# -- which program a name means ----------------------------------------------------------------------------


def test_in_a_project_python_pip_and_its_tools_are_the_venvs(project: Path) -> None:
    venv = make_venv(project / "app" / ".venv")
    for tool in ("pytest", "pip", "ls", "git"):  # what pip would write, and two planted ones
        script = venv / "bin" / tool
        script.write_text(f"#!{venv / 'bin' / 'python'}\nprint('{tool}')\n")
        script.chmod(0o755)
    guard = guard_for(project)
    for name in ("python", "python3", "pytest", "pip"):
        checked = guard.check([name, "--version"], "app/src")
        assert checked.executable == str(venv / "bin" / name), name
        assert checked.toolchain.venv == venv
    assert guard.check(["ls"], "app").executable == shutil.which("ls", path=guard.search_path)
    assert guard.check(["git", "status"], "app").executable == shutil.which("git", path=guard.search_path)
    assert guard.check(["python3", "--version"]).executable.startswith(("/usr/", "/bin/"))  # no venv at the root


def test_programs_given_by_a_path_inside_the_roots_run_with_the_policy_of_their_name(project: Path) -> None:
    venv = make_venv(project / "app" / ".venv")
    guard = guard_for(project)
    checked = guard.check(["./scripts/check.sh", "--fast"], "app")
    assert checked.executable == str(project / "app" / "scripts" / "check.sh") and checked.project_program
    assert guard.check([".venv/bin/python", "-m", "pytest"], "app").executable == str(venv / "bin" / "python")
    assert guard.check([str(venv / "bin" / "python"), "--version"]).project_program
    assert refusal(guard, [".venv/bin/python", "-c", "1"], "app").code == ErrorCode.PERMISSION_DENIED
    assert "always the system's" in refusal(guard, ["./ls"]).message
    bash = project / "app" / "tool"
    bash.symlink_to("/bin/bash")
    assert "never allowed" in refusal(guard, ["./tool"], "app").message
    python = project / "app" / "pytest"
    python.symlink_to("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
    assert "another program than its name says" in refusal(guard, ["./pytest", "-c", "print(1)"], "app").message
    (project / "app" / "sh").write_text("#!/bin/sh\n")
    assert "never allowed" in refusal(guard, ["./sh"], "app").message
    (project / "app" / "data.txt").write_text("x\n")
    assert "not an executable file" in refusal(guard, ["./data.txt"], "app").message
    assert refusal(guard, ["./missing.sh"], "app").code == ErrorCode.NOT_FOUND
    assert refusal(guard, ["../../outside.sh"], "app").code == ErrorCode.PERMISSION_DENIED


def test_a_program_leading_outside_what_the_sandbox_shows_is_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "bin"
    outside.mkdir(parents=True)
    (outside / "tool").write_text("#!/bin/sh\necho out\n")
    (outside / "tool").chmod(0o755)
    (project / "app" / "tool").symlink_to(outside / "tool")
    message = refusal(guard_for(project), ["./tool"], "app").message
    assert "leads outside the roots" in message and "does not show" in message
    venv = make_venv(project / "app" / ".venv")
    (venv / "bin" / "pytest").symlink_to(outside / "tool")  # a project environment's program: the same rule
    assert "leads outside the roots" in refusal(guard_for(project), ["pytest"], "app").message


def test_project_programs_off_says_how_to_allow_them(project: Path) -> None:
    message = refusal(guard_for(project, project_programs=False), ["./scripts/check.sh"], "app").message
    assert "project_programs = true" in message and "MCP_SECTIONS_SHELL_OPS_PROJECT_PROGRAMS" in message


def test_every_refusal_of_a_program_says_how_to_allow_it(project: Path) -> None:
    guard = CommandGuard(PathGuard([project]), ["ls", "python", "definitely-not-installed-tool"])
    not_listed = refusal(guard, ["cat", "x"]).message
    assert "allowed_programs" in not_listed and "MCP_SECTIONS_SHELL_OPS_ALLOWED_PROGRAMS" in not_listed
    missing = refusal(guard, ["definitely-not-installed-tool"])
    assert missing.code == ErrorCode.NOT_FOUND
    assert "search_path" in missing.message and "MCP_SECTIONS_SHELL_OPS_SEARCH_PATH" in missing.message
    assert "`python3` is" in refusal(guard, ["python", "x.py"]).message
    assert "no setting allows it" in refusal(guard, ["bash"]).message


# -- the policies of the project's tools -------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["pip", "install", "requests"],
        ["pip3", "download", "x"],
        ["pip", "--index-url=http://x", "list"],
        ["python3", "-m", "pip", "install", "x"],
        ["python3", "-m", "timeit", "1+1"],
        ["python3", "-m", "http.server"],
        ["python3", "-m", "http.server", "--bind", "0.0.0.0"],
        ["python3", "-m", "http.server", "-b", "192.168.1.5", "8000"],
        ["python3", "-m", "pydoc", "-p", "8080", "-n", "0.0.0.0"],
        ["python3", "-m", "mypy", "--install-types"],
        ["mypy", "--install-types", "."],
        ["uv", "sync"],
        ["uv", "pip", "install", "x"],
        ["uv", "run", "bash", "-c", "id"],
        ["uv", "run", "--with", "rich", "pytest"],
        ["uv", "run", "python", "-c", "1"],
        ["uv", "run", "-m", "timeit", "1"],
        ["uv", "--cache-dir", "/tmp/x", "run", "pytest"],
        ["npx", "-c", "id"],
        ["npx", "--package=cowsay", "cowsay"],
        ["npx", "cowsay"],
        ["npx", "bash"],
    ],
)
def test_project_tools_refuse_installs_inline_code_and_open_servers(project: Path, command: list[str]) -> None:
    assert refusal(guard_for(project), command).code in (ErrorCode.PERMISSION_DENIED, ErrorCode.NOT_FOUND)


@pytest.mark.parametrize(
    "command",
    [
        ["python3", "-m", "http.server", "--bind", "127.0.0.1", "8000"],
        ["python3", "-m", "http.server", "-b", "::1"],
        ["python3", "-m", "venv", "app/.venv2"],
        ["python3", "-m", "json.tool", "app/scripts/check.sh"],
        ["python3", "-m", "pdb", "app/scripts/check.sh"],
        ["python3", "-m", "pydoc", "-p", "8080"],
        ["python3", "-i"],
    ],
)
def test_python_runs_any_module(project: Path, command: list[str]) -> None:
    guard_for(project).check(command)


def test_uv_run_checks_the_command_it_runs_and_npx_runs_local_tools(project: Path) -> None:
    guard = guard_for(project)
    if guard.executable("uv") is not None:
        assert guard.check(["uv", "run", "--no-sync", "python", "--version"]).program == "uv"
    bin_dir = project / "app" / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "hello").write_text("#!/usr/bin/env node\n")
    (bin_dir / "hello").chmod(0o755)
    if guard.executable("npx") is not None:
        assert guard.check(["npx", "hello", "world"], "app").args == ("--no", "hello", "world")
    assert guard.check(["hello"], "app").executable == str(bin_dir / "hello")  # allow-listed by the operator
