"""A copy of the checkout's sources for install tests (pip builds in the source tree: build/, *.egg-info, and tests
write only inside their temporary directories), and one uv cache for the run's uv, uvx and pipx commands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.stdio import REPO

_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"
)


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's sources copied to a temporary directory (what `pip install <dir>` reads)."""
    target = tmp_path_factory.mktemp("checkout") / "mcp-sections"
    shutil.copytree(REPO, target, ignore=_NOT_SOURCES, symlinks=True)
    return target


@pytest.fixture(scope="session")
def uv_cache(shared_cache_dir: Path) -> Path:
    """`UV_CACHE_DIR` for every uv, uvx and pipx (uv underneath) command of the run, xdist's workers included: the
    first fills it from the package index, the others read what it already holds (each still resolves and installs
    for itself), as on a developer's machine. uv locks its cache for concurrent use."""
    cache = shared_cache_dir / "uv"
    cache.mkdir(exist_ok=True)
    return cache
