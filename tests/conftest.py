"""Test-wide fixtures: the anyio backend and an isolated data directory and config per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run: derived files (ONNX exports) are made once, not per test."""
    return tmp_path_factory.mktemp("cache")


def isolate(patch: pytest.MonkeyPatch, base: Path, cache_dir: Path) -> Path:
    """Data under `base`, an empty config file there, the shared cache, no roots from the environment."""
    (base / "absent-config.toml").write_text("", encoding="utf-8")
    patch.setenv("MCP_SECTIONS_DATA_DIR", str(base / "data"))
    patch.setenv("MCP_SECTIONS_CACHE_DIR", str(cache_dir))
    patch.setenv("MCP_SECTIONS_CONFIG", str(base / "absent-config.toml"))
    patch.delenv("MCP_SECTIONS_ROOTS", raising=False)
    return base / "data"


@pytest.fixture(scope="session", autouse=True)
def isolated_session_environment(tmp_path_factory: pytest.TempPathFactory, shared_cache_dir: Path) -> Iterator[None]:
    """The same isolation for fixtures wider than a test (module-scoped servers start before `isolated_environment`)."""
    with pytest.MonkeyPatch.context() as patch:
        isolate(patch, tmp_path_factory.mktemp("session"), shared_cache_dir)
        yield


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache_dir: Path) -> Path:
    """No test reads the developer's config or writes to their data or cache directory."""
    return isolate(monkeypatch, tmp_path, shared_cache_dir)
