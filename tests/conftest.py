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


@pytest.fixture(scope="session", autouse=True)
def isolated_session_environment(tmp_path_factory: pytest.TempPathFactory, shared_cache_dir: Path) -> Iterator[None]:
    """The same isolation for fixtures wider than a test (module-scoped servers start before `isolated_environment`)."""
    base = tmp_path_factory.mktemp("session")
    (base / "absent-config.toml").write_text("", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCP_SECTIONS_DATA_DIR", str(base / "data"))
        patch.setenv("MCP_SECTIONS_CACHE_DIR", str(shared_cache_dir))
        patch.setenv("MCP_SECTIONS_CONFIG", str(base / "absent-config.toml"))
        patch.delenv("MCP_SECTIONS_ROOTS", raising=False)
        yield


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_cache_dir: Path) -> Path:
    """No test reads the developer's config or writes to their data or cache directory."""
    data_dir = tmp_path / "data"
    monkeypatch.setenv("MCP_SECTIONS_DATA_DIR", str(data_dir))
    monkeypatch.setenv("MCP_SECTIONS_CACHE_DIR", str(shared_cache_dir))
    monkeypatch.setenv("MCP_SECTIONS_CONFIG", str(tmp_path / "absent-config.toml"))
    monkeypatch.delenv("MCP_SECTIONS_ROOTS", raising=False)
    (tmp_path / "absent-config.toml").write_text("", encoding="utf-8")
    return data_dir
