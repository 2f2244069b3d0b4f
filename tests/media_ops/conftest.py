"""media_ops tests need its extra (Pillow, RapidOCR, trimesh) and, for renders, pyrender on an EGL."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_sections.servers.media_ops.section import software_opengl
from mcp_sections.servers.registry import load_section
from mcp_sections.shared.serving.server import build_server
from mcp_sections.shared.settings.config import Settings

MISSING = [name for name in ("PIL", "rapidocr", "trimesh", "onnxruntime") if importlib.util.find_spec(name) is None]
if MISSING:
    pytest.skip(f"media_ops needs the 'media' extra ({', '.join(MISSING)} missing)", allow_module_level=True)

NO_RENDERER = software_opengl(None)  # type: ignore[arg-type]
needs_renderer = pytest.mark.skipif(NO_RENDERER is not None, reason=f"3D rendering unavailable: {NO_RENDERER}")

Connect = Callable[..., AbstractAsyncContextManager[Client]]


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
