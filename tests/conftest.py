"""Test-wide fixtures: the anyio backend and an isolated data directory and config per test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache directory for the whole run, xdist's workers included: derived files (ONNX exports, each built
    under a file lock and renamed into place) are made once, not per test or per worker."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's own directory, above the workers' (popen-gw0, popen-gw1, …)
    cache = base / "cache"
    cache.mkdir(exist_ok=True)
    return cache


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with slow tests first. `make test` hands whole modules to xdist's workers in this order
    (`--dist loadfile --no-loadscope-reorder`), so the long ones start at once and the run ends on short ones,
    instead of one worker finishing a long module alone while the other waits."""
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow)
