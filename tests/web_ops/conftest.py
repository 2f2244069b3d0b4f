"""A local site and a web_ops server in memory, allowed to reach that site's port only."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.web_ops.site import Site, running_site

pytest.importorskip("playwright", reason="web_ops needs the `web` extra: pip install 'mcp-sections[web]'")
pytest.importorskip("html_to_markdown", reason="web_ops needs the `web` extra: pip install 'mcp-sections[web]'")


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with running_site() as running:
        yield running


def web_settings(site: Site, data_dir: Path, **overrides: Any) -> Settings:
    table = {
        "allow": [f"127.0.0.1:{site.port}"],
        "timeout_seconds": 3,
        "max_page_bytes": 1_000_000,
        "embeddings": False,
        **overrides,
    }
    return Settings.load({"data_dir": str(data_dir), "sections": {"web_ops": table}, "warm_up": False})


@pytest.fixture(scope="module")
async def web(site: Site, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    section = load_section("web_ops")
    server, _ = build_server(section, section.runtime(web_settings(site, tmp_path_factory.mktemp("web") / "data")))
    async with Client(server) as client:
        yield client
