"""The calculator section in memory, with an empty config and its own data directory, for a test module."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from mcp import Client

from tests.in_memory import section_in_memory


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    base = tmp_path_factory.mktemp("calculator")
    (base / "config.toml").write_text("", encoding="utf-8")
    environment = {"MCP_SECTIONS_CONFIG": str(base / "config.toml"), "MCP_SECTIONS_DATA_DIR": str(base / "data")}
    async with section_in_memory("calculator", env=environment) as connected:
        yield connected
