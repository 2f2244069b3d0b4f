"""media_ops tests need its extra (Pillow, RapidOCR, trimesh) and, for renders, pyrender on an EGL."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.media_ops.section import software_opengl
from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings
from tests.media_ops.stand_in import MediaStandIn, media_stand_in

MISSING = [name for name in ("PIL", "rapidocr", "trimesh", "onnxruntime") if importlib.util.find_spec(name) is None]
if MISSING:
    pytest.skip(f"media_ops needs the 'media' extra ({', '.join(MISSING)} missing)", allow_module_level=True)

NO_RENDERER = software_opengl(None)  # type: ignore[arg-type]
needs_renderer = pytest.mark.skipif(NO_RENDERER is not None, reason=f"3D rendering unavailable: {NO_RENDERER}")

Connect = Callable[..., AbstractAsyncContextManager[Client]]
KEY = "media-test-key-0001"


@pytest.fixture
def media(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Connect:
    """`async with media(**settings) as client`: media_ops in memory over `tmp_path / "root"`."""
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)

    @asynccontextmanager
    async def connect(client_options: dict[str, Any] | None = None, **section_settings: str) -> AsyncIterator[Client]:
        for key, value in section_settings.items():
            monkeypatch.setenv(f"MCP_SECTIONS_MEDIA_OPS_{key.upper()}", value)
        section = load_section("media_ops")
        settings = Settings.load({"data_dir": str(tmp_path / "data"), "roots": [str(root)], "warm_up": False})
        server, _ = build_server(section, section.runtime(settings))
        async with Client(server, mode="legacy", **(client_options or {})) as client:  # type: ignore[arg-type]
            yield client

    return connect


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[MediaStandIn]:
    """The scripted images and 3D job API on 127.0.0.1 (stand_in.py), its key in MEDIA_TEST_KEY."""
    monkeypatch.setenv("MEDIA_TEST_KEY", KEY)
    with media_stand_in() as stand_in:
        yield stand_in
        if stand_in.held is not None:
            stand_in.held.set()  # a request still held goes on, so that the server's threads end


def configured(stand_in: MediaStandIn, **extra: str) -> dict[str, str]:
    """media_ops' settings for the stand-in as its images API and 3D job API, and `extra`."""
    return {
        "image_base_url": stand_in.base_url,
        "image_api_key_env": "MEDIA_TEST_KEY",
        "mesh_base_url": stand_in.base_url,
        "mesh_api_key_env": "MEDIA_TEST_KEY",
        "poll_interval_seconds": "0.05",
        **extra,
    }
