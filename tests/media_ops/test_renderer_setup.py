"""What render_3d_asset says when its renderer cannot run: the command that fixes it, for this installation."""

from __future__ import annotations

import ctypes.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_sections.shared.ground.install_hints import install_command
from tests.media_ops.conftest import Connect
from tests.stdio import fail

pytestmark = pytest.mark.anyio


async def test_a_missing_renderer_names_the_install_command(
    media: Connect, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trimesh

    trimesh.creation.box().export(tmp_path / "root" / "box.stl")
    monkeypatch.setitem(sys.modules, "pyrender", None)  # import fails as if pyrender2 were not installed
    async with media() as client:
        message = await fail(client, "render_3d_asset", "DEPENDENCY_ERROR", path="box.stl")
    assert "'pyrender'" in message and install_command("media") in message


@pytest.mark.skipif(ctypes.util.find_library("OSMesa") is not None, reason="OSMesa is installed here")
def test_no_opengl_library_names_the_system_packages(tmp_path: Path) -> None:
    """PyOpenGL picks its platform once per process, so a child asks for OSMesa, which this machine lacks."""
    script = (
        "import json, trimesh\n"
        "from mcp_sections.servers.media_ops.render import render_views\n"
        "from mcp_sections.shared.ground.errors import ToolFailure\n"
        "try:\n"
        "    render_views(trimesh.Scene(trimesh.creation.box()), 1, 64)\n"
        "except ToolFailure as failure:\n"
        "    print(json.dumps([failure.code.value, failure.message]))\n"
    )
    env = {"PYOPENGL_PLATFORM": "osmesa", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    code, message = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == "DEPENDENCY_ERROR"
    assert "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri" in message and "osmesa" in message
