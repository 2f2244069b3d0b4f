"""media_ops over stdio through the real CLI: its tools/list snapshot, truthful annotations, a listing and a render
(its images through the real transport). OCR is in test_local.py, in memory."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.media_ops.conftest import needs_renderer
from tests.stdio import annotation_hints, call, check_tools_snapshot, section_client

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("media-stdio")


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    async with section_client("media_ops", "--root", str(root), "--data-dir", str(root.parent / "media-data")) as c:
        yield c


async def test_tools_list_matches_the_snapshot_and_annotations_are_truthful(client: Client, root: Path) -> None:
    tools = (await client.list_tools()).tools
    (root / "empty").mkdir()
    assert (await call(client, "list_images", directory="empty"))["images"] == []
    check_tools_snapshot("media_ops", tools)
    generate = (False, False, False, True)
    assert annotation_hints(tools) == {
        "list_images": (True, False, True, False),
        "read_image": (True, False, True, False),
        "describe_image": (True, False, True, True),
        "render_3d_asset": (False, False, False, False),  # with output_dir it writes files
        "generate_image": generate,
        "generate_multiview_images": generate,
        "generate_3d_from_image": generate,
        "generate_3d_from_text": generate,
    }


@needs_renderer
async def test_render_over_stdio(client: Client, root: Path) -> None:
    import trimesh

    trimesh.creation.cone(radius=0.5, height=1.0).export(root / "cone.ply")
    raw = await client.call_tool("render_3d_asset", {"path": "cone.ply", "views": 3, "size": 128})
    assert not raw.is_error and [block.type for block in raw.content] == ["text", "image", *["resource_link"] * 3]
    view = (await client.read_resource(raw.content[2].uri)).contents[0]  # type: ignore[union-attr]
    assert view.mime_type == "image/png" and base64.b64decode(view.blob).startswith(b"\x89PNG")  # type: ignore[union-attr]
