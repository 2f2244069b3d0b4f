"""The local half of media_ops, for real: OCR of text the test renders, renders of meshes the test builds,
listings, and the limits that keep hostile files out (bombs, SVG, paths outside the roots)."""

from __future__ import annotations

import base64
import io
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.media_ops.conftest import Connect, needs_renderer
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio
FONTS = Path("/usr/share/fonts/truetype/dejavu")
SENTENCES = [
    ("DejaVuSans.ttf", 36, "Invoice 2041 is due on Friday"),
    ("DejaVuSerif.ttf", 28, "Water the tomatoes at seven"),
    ("DejaVuSansMono.ttf", 24, "backup_db --keep 14 --verbose"),
    (None, 32, "The quick brown fox jumps"),  # Pillow's own font
]


def render_text(path: Path, lines: list[tuple[str | None, int, str]]) -> None:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1000, 80 * len(lines) + 40), "white")
    draw = ImageDraw.Draw(image)
    for index, (font_name, size, text) in enumerate(lines):
        font = (
            ImageFont.truetype(str(FONTS / font_name), size)
            if font_name and (FONTS / font_name).exists()
            else ImageFont.load_default(size=size)
        )
        draw.text((30, 30 + 80 * index), text, fill="black", font=font)
    image.save(path)


def bomb_png(width: int, height: int) -> bytes:
    """A valid PNG header announcing `width`×`height` pixels: decoding it would need gigabytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")
    )


async def test_ocr_reads_rendered_sentences_exactly(media: Connect, tmp_path: Path) -> None:
    render_text(tmp_path / "root" / "note.png", SENTENCES)
    async with media() as client:
        result = await client.call_tool("read_image", {"path": "note.png"})
    data = result.structured_content
    assert data is not None and not result.is_error
    assert [line["text"] for line in data["lines"]] == [text for _, _, text in SENTENCES]
    assert all(line["confidence"] > 0.8 and len(line["box"]) == 4 for line in data["lines"])
    images = [block for block in result.content if block.type == "image"]
    assert len(images) == 1 and images[0].mime_type == "image/png"


async def test_ocr_reads_a_receipt(media: Connect, tmp_path: Path) -> None:
    render_text(tmp_path / "root" / "receipt.png", [("DejaVuSans.ttf", 40, "Total 18.50 EUR")])
    async with media() as client:
        result = await call(client, "read_image", path="receipt.png")
    assert result["text"] == "Total 18.50 EUR"


async def test_large_images_are_downscaled_in_results(media: Connect, tmp_path: Path) -> None:
    from PIL import Image

    Image.new("RGB", (3000, 1500), "navy").save(tmp_path / "root" / "wide.jpg")
    async with media() as client:
        result = await client.call_tool("read_image", {"path": "wide.jpg"})
    image = next(block for block in result.content if block.type == "image")
    with Image.open(io.BytesIO(base64.b64decode(image.data))) as preview:
        assert max(preview.size) == 1024 and preview.size == (1024, 512)
    assert result.structured_content is not None and result.structured_content["text"] == ""


async def test_list_images_reads_headers_and_pages(media: Connect, tmp_path: Path) -> None:
    from PIL import Image

    root = tmp_path / "root"
    (root / "sub").mkdir()
    for index in range(5):
        Image.new("RGB", (10 + index, 20), "red").save(root / "sub" / f"img{index}.png")
    (root / "notes.txt").write_text("not an image")
    (root / "broken.png").write_bytes(b"not a png")
    (root / "huge.png").write_bytes(bomb_png(50_000, 50_000))
    async with media() as client:
        first = await call(client, "list_images", directory=".", limit=3)
        second = await call(client, "list_images", directory=".", limit=3, cursor=first["next_cursor"])
        flat = await call(client, "list_images", directory=".", recursive=False)
    assert first["total"] == 5 and first["unreadable"] == 2 and len(first["images"]) == 3
    assert [entry["path"] for entry in first["images"] + second["images"]] == [f"sub/img{i}.png" for i in range(5)]
    assert first["images"][1]["width"] == 11 and first["images"][1]["format"] == "PNG"
    assert second["next_cursor"] is None and flat["total"] == 0


async def test_hostile_images_are_refused_before_decoding(media: Connect, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "bomb.png").write_bytes(bomb_png(40_000, 40_000))
    (root / "logo.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg"><image href="http://169.254.169.254/"/></svg>'
    )
    (tmp_path / "outside.png").write_bytes(bomb_png(10, 10))
    (root / "link.png").symlink_to(tmp_path / "outside.png")
    async with media() as client:
        message = await fail(client, "read_image", "MAX_LIMIT_EXCEEDED", path="bomb.png")
        assert "1600000000 pixels" in message and "40,000,000" in message and "Nothing was decoded" in message
        assert "SVG" in await fail(client, "read_image", "INVALID_INPUT", path="logo.svg")
        await fail(client, "read_image", "PERMISSION_DENIED", path=str(tmp_path / "outside.png"))
        await fail(client, "read_image", "PERMISSION_DENIED", path="link.png")
        await fail(client, "list_images", "PERMISSION_DENIED", directory="..")


@needs_renderer
@pytest.mark.parametrize("suffix", ["glb", "obj", "stl", "ply"])
async def test_render_views_are_shaded_non_blank_and_differ(media: Connect, tmp_path: Path, suffix: str) -> None:
    import numpy as np
    import trimesh
    from PIL import Image

    mesh = trimesh.util.concatenate(
        [
            trimesh.creation.box(extents=[1, 0.5, 2]),
            trimesh.creation.icosphere(radius=0.4).apply_translation([0.9, 0.3, 0]),
        ]
    )
    mesh.export(tmp_path / "root" / f"model.{suffix}")
    async with media() as client:
        result = await client.call_tool("render_3d_asset", {"path": f"model.{suffix}", "views": 4, "size": 256})
        assert not result.is_error, result.content[0].text
        # one overview inline, each view by reference (shared.framework.resources), read back through resources/read
        assert [block.type for block in result.content] == ["text", "image", *["resource_link"] * 4]
        links = [block for block in result.content if block.type == "resource_link"]
        assert [link.uri for link in links] == [image["uri"] for image in result.structured_content["images"]]
        blobs = [(await client.read_resource(link.uri)).contents[0].blob for link in links]  # type: ignore[union-attr]
    views = [np.asarray(Image.open(io.BytesIO(base64.b64decode(blob))).convert("RGB")) for blob in blobs]
    assert len(views) == 4 and all(view.shape == (256, 256, 3) for view in views)
    for view in views:
        covered = (view.min(axis=2) < 245).mean()  # the white background is not everything
        assert 0.03 < covered < 0.9
        assert len(np.unique(view.reshape(-1, 3), axis=0)) > 20  # shaded, not a flat silhouette
    differences = [np.abs(views[0].astype(int) - other.astype(int)).mean() for other in views[1:]]
    assert all(difference > 2 for difference in differences)


@needs_renderer
async def test_render_writes_views_only_when_asked_and_never_over_files(media: Connect, tmp_path: Path) -> None:
    import trimesh

    root = tmp_path / "root"
    trimesh.creation.icosphere().export(root / "ball.stl")
    async with media() as client:
        result = await call(client, "render_3d_asset", path="ball.stl", views=2, size=128, output_dir="renders")
        assert [image["path"] for image in result["images"]] == ["renders/ball-view1.png", "renders/ball-view2.png"]
        assert (root / "renders" / "ball-view2.png").stat().st_size > 0
        await fail(
            client, "render_3d_asset", "VALIDATION_FAILED", path="ball.stl", views=2, size=128, output_dir="renders"
        )
        (root / "broken.glb").write_bytes(b"glTF not really")
        await fail(client, "render_3d_asset", "INVALID_INPUT", path="broken.glb")
        (root / "notes.txt").write_text("not a mesh")
        await fail(client, "render_3d_asset", "INVALID_INPUT", path="notes.txt")


async def test_a_gltf_cannot_pull_protected_or_outside_files(media: Connect, tmp_path: Path) -> None:
    import json

    root = tmp_path / "root"
    (root / ".env").write_bytes(b"\0" * 36)
    (tmp_path / "outside.bin").write_bytes(b"\0" * 36)
    (root / "escape.bin").symlink_to(tmp_path / "outside.bin")
    for name, uri in (("secret.gltf", ".env"), ("link.gltf", "escape.bin"), ("up.gltf", "../outside.bin")):
        gltf = {
            "asset": {"version": "2.0"},
            "buffers": [{"uri": uri, "byteLength": 36}],
            "bufferViews": [{"buffer": 0, "byteLength": 36}],
            "accessors": [
                {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3", "min": [0, 0, 0], "max": [0, 0, 0]}
            ],
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
            "nodes": [{"mesh": 0}],
            "scenes": [{"nodes": [0]}],
        }
        (root / name).write_text(json.dumps(gltf))
    async with media() as client:
        assert "may not read" in await fail(client, "render_3d_asset", "PERMISSION_DENIED", path="secret.gltf")
        for name in ("link.gltf", "up.gltf"):  # trimesh itself refuses names that leave the asset's directory
            result = await client.call_tool("render_3d_asset", {"path": name})
            assert result.is_error and result.structured_content is not None
            assert result.structured_content["error_code"] in ("PERMISSION_DENIED", "INVALID_INPUT")


def test_without_scipy_trimesh_prints_no_traceback(tmp_path: Path) -> None:
    """The media extra does not bring SciPy; trimesh then sums normals in a loop (same result) and logged a full
    traceback on every render (an outside tester, on an `[all]` install)."""
    pytest.importorskip("trimesh")
    script = tmp_path / "normals.py"
    script.write_text(
        "import logging, sys\n"
        "sys.modules['scipy'] = None  # as on an install without SciPy\n"
        "logging.basicConfig(level=logging.WARNING)\n"
        "import trimesh\n"
        "from mcp_sections.servers.media_ops.render import _quiet_without_scipy\n"
        "_quiet_without_scipy()\n"
        "print(trimesh.creation.icosphere().vertex_normals.shape)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "(642, 3)" and "Traceback" not in done.stderr, done.stderr
