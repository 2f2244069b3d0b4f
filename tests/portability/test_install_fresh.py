"""The command `doctor` names for a missing extra fixes it, run as written, in a fresh environment of each kind.

pip, uv, pipx and uvx each install the base package from this checkout; `doctor calculator` then names the command
for the calculator extra (cheap: sympy), the test runs it through the shell exactly as printed, and `doctor` says
ready. The heavy extras are checked by resolution in test_install_hints.py.
"""

from __future__ import annotations

import os
import re
import sys
import venv
from pathlib import Path

import pytest

from tests.portability.test_install_hints import find_tool, run_command

pytestmark = pytest.mark.slow  # fresh environments filled from the package index: minutes under load


def _fix_from_doctor(output: str) -> str:
    """The command doctor names for the missing sympy (the part after `run:` or `restart the server as:`)."""
    line = next(line for line in output.splitlines() if "'sympy'" in line)
    found = re.search(r"(?:run: |restart the server as: )(.+?)(?:, then restart the server| \(uvx )", line)
    assert found, line
    return found.group(1)


def _doctor_says_ready(output: str) -> bool:
    return any(line.split()[:2] == ["calculator", "ready"] for line in output.splitlines())


def test_pip_the_named_command_fixes_a_fresh_virtual_environment(tmp_path: Path, checkout: Path) -> None:
    venv.create(tmp_path / "env", with_pip=True)
    python = str(tmp_path / "env" / "bin" / "python")
    # the setting up, not the command under test: no byte-compiling (~2 s of CPU)
    run_command([python, "-m", "pip", "install", "--quiet", "--no-compile", str(checkout)], {})
    doctor = [str(tmp_path / "env" / "bin" / "mcp-sections"), "doctor", "calculator"]
    fix = _fix_from_doctor(run_command(doctor, {}, cwd=tmp_path, check=False))  # exit 1: a section is unavailable
    assert fix == f"{python} -m pip install '{checkout}[calculator]'"
    run_command(fix, {}, cwd=tmp_path)
    assert _doctor_says_ready(run_command(doctor, {}, cwd=tmp_path))


def test_uv_the_named_command_fixes_a_uv_environment(tmp_path: Path, checkout: Path, uv_cache: Path) -> None:
    uv = find_tool("uv")
    env = {"UV_CACHE_DIR": str(uv_cache), "PATH": f"{Path(uv).parent}:{os.environ['PATH']}"}
    run_command([uv, "venv", "--quiet", "--python", sys.executable, str(tmp_path / "env")], env)
    python = str(tmp_path / "env" / "bin" / "python")
    run_command([uv, "pip", "install", "--quiet", "--python", python, str(checkout)], env)
    doctor = [str(tmp_path / "env" / "bin" / "mcp-sections"), "doctor", "calculator"]
    fix = _fix_from_doctor(run_command(doctor, env, cwd=tmp_path, check=False))
    assert fix.startswith("uv pip install --python ")
    run_command(fix, env, cwd=tmp_path)
    assert _doctor_says_ready(run_command(doctor, env, cwd=tmp_path))


def test_pipx_the_named_command_fixes_the_pipx_app(tmp_path: Path, checkout: Path, uv_cache: Path) -> None:
    pipx = find_tool("pipx")
    env = {
        "PIPX_HOME": str(tmp_path / "home"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PATH": f"{Path(pipx).parent}:{os.environ['PATH']}",
        "UV_CACHE_DIR": str(uv_cache),  # pipx installs with uv when uv is there (the dev extra brings both)
    }
    run_command([pipx, "install", "--quiet", str(checkout)], env)
    doctor = [str(tmp_path / "bin" / "mcp-sections"), "doctor", "calculator"]
    fix = _fix_from_doctor(run_command(doctor, env, cwd=tmp_path, check=False))
    assert fix == f"pipx runpip mcp-sections install '{checkout}[calculator]'"
    run_command(fix, env, cwd=tmp_path)
    assert _doctor_says_ready(run_command(doctor, env, cwd=tmp_path))


def test_uvx_the_named_command_starts_a_complete_environment(checkout: Path, uv_cache: Path) -> None:
    uvx = find_tool("uvx")
    env = {"UV_CACHE_DIR": str(uv_cache), "PATH": f"{Path(uvx).parent}:{os.environ['PATH']}"}
    fix = _fix_from_doctor(
        run_command([uvx, "--from", str(checkout), "mcp-sections", "doctor", "calculator"], env, check=False)
    )
    assert fix == f"uvx --from '{checkout}[calculator]' mcp-sections"  # a new environment, not `pip install`
    assert _doctor_says_ready(run_command(f"{fix} doctor calculator", env))
