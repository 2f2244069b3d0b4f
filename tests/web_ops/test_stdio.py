"""web_ops over stdio through the real CLI: its tools/list snapshot, annotations, and a fetch with the browser."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.stdio import annotation_hints, call, check_tools_snapshot, fail, section_client
from tests.web_ops.site import Site

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def client(site: Site, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    data_dir: Path = tmp_path_factory.mktemp("web-stdio") / "data"
    env = {"MCP_SECTIONS_WEB_OPS_ALLOW": f"127.0.0.1:{site.port}", "MCP_SECTIONS_WEB_OPS_EMBEDDINGS": "false"}
    async with section_client("web_ops", "--data-dir", str(data_dir), env=env) as connected:
        yield connected


async def test_tools_list_matches_the_snapshot_and_annotations_are_truthful(client: Client) -> None:
    tools = (await client.list_tools()).tools
    check_tools_snapshot("web_ops", tools)
    assert annotation_hints(tools) == {
        "search_web": (True, False, True, True),
        "fetch_web_page": (False, False, True, True),
        "ingest_web_page": (False, False, True, True),
    }


async def test_a_script_page_is_rendered_and_the_canary_stays_silent(client: Client, site: Site) -> None:
    page = await call(client, "fetch_web_page", url=site.url("/js.html"))
    assert page["rendered_with"] == "browser" and "Rendered by script" in page["text"]
    await fail(client, "fetch_web_page", "PERMISSION_DENIED", url=f"{site.canary}/direct")
    assert site.canary_hits == []
