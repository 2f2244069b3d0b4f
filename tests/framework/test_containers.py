"""Static checks of the container files (no Docker engine here): hadolint and `docker-compose config`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return found


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [_tool("hadolint"), str(ROOT / "docker" / "Dockerfile")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_file_is_valid_and_publishes_only_loopback() -> None:
    result = subprocess.run(
        [_tool("docker-compose"), "-f", str(ROOT / "compose.yaml"), "config"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    published = [line.strip() for line in result.stdout.splitlines() if "published" in line or ":8765" in line]
    assert published, "the gateway port should be published"
    assert all("0.0.0.0" not in line for line in published)


def test_every_built_in_section_used_by_compose_exists() -> None:
    from mcp_sections.servers.registry import BUILTIN_SECTIONS

    config = (ROOT / "docker" / "gateway.toml").read_text(encoding="utf-8")
    for line in config.splitlines():
        if line.startswith("[gateway.sections."):
            assert line.removeprefix("[gateway.sections.").rstrip("]") in BUILTIN_SECTIONS
