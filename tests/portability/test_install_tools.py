"""The README's other ways to install work from a checkout (a copy of it: builds write in the source tree):
`uvx --from . mcp-sections …` and `pipx install .` (each in its own isolated environment, dependencies from the
package index)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stdio import REPO

pytestmark = pytest.mark.slow  # isolated environments filled from the package index


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the dev extra brings it)")
    return found


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env={**os.environ, **env}, cwd=REPO)
    if done.returncode != 0 and "Failed to fetch" in done.stderr + done.stdout:
        pytest.skip(f"the package index cannot be reached: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_uvx_runs_the_cli_from_the_checkout(checkout: Path, uv_cache: Path) -> None:
    uvx = _tool("uvx")
    done = _run(
        [uvx, "--from", f"{checkout}[calculator]", "mcp-sections", "tools", "calculator"],
        {"UV_CACHE_DIR": str(uv_cache)},
    )
    assert len(json.loads(done.stdout)) == 9


def test_pipx_installs_the_command(tmp_path: Path, checkout: Path, uv_cache: Path) -> None:
    pipx = _tool("pipx")
    env = {"PIPX_HOME": str(tmp_path / "home"), "PIPX_BIN_DIR": str(tmp_path / "bin"), "UV_CACHE_DIR": str(uv_cache)}
    _run([pipx, "install", "--quiet", f"{checkout}[calculator]"], env)
    done = _run([str(tmp_path / "bin" / "mcp-sections"), "doctor", "calculator"], env)
    assert "calculator" in done.stdout and "ready" in done.stdout
