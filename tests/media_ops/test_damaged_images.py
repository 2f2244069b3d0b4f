"""Damaged and truncated images, as a user has them (a copy stopped early, `head -c 3000 label.png`, a PNG signature
followed by garbage): every tool that reads an image answers INVALID_INPUT naming the file, its size and the
damage, never an internal error; list_images counts them as unreadable and goes on."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

from tests.media_ops.conftest import Connect, configured, needs_renderer
from tests.media_ops.stand_in import MediaStandIn, png_bytes
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio


def noisy_image(image_format: str) -> bytes:
    """A 200×150 image of random pixels (it does not compress: well over 3,000 bytes) in `image_format`."""
    from PIL import Image

    pixels = random.Random(7).randbytes(200 * 150 * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (200, 150), pixels).save(buffer, format=image_format)
    return buffer.getvalue()


def damaged_files(root: Path) -> dict[str, int]:
    """Damaged images written under `root`: {name: size in bytes}."""
    files = {
        "label.png": noisy_image("PNG")[:3000],  # `head -c 3000 label.png`: the header is whole, the pixels are not
        "garbage.png": b"\x89PNG\r\n\x1a\n" + b"garbage" * 10,  # Pillow: "Truncated File Read" on open
        "broken.png": b"\x89PNG\r\n\x1a\n" + b"not an image at all, only its signature " * 4,  # Pillow: unidentified
        "photo.jpg": noisy_image("JPEG")[:3000],
        "scan.tif": noisy_image("TIFF")[:3000],
    }
    for name, data in files.items():
        (root / name).write_bytes(data)
    return {name: len(data) for name, data in files.items()}


FORMATS = {".png": "PNG", ".jpg": "JPEG", ".tif": "TIFF"}


def says_damaged(message: str, name: str, size: int, root: Path) -> None:
    image_format = FORMATS[Path(name).suffix]
    assert f"'{name}' ({size:,} bytes) is a damaged or truncated {image_format} file" in message, message
    assert "internal error" not in message and str(root) not in message, message  # nor the file's absolute path


async def test_reading_or_describing_a_damaged_image_is_invalid_input(media: Connect, tmp_path: Path) -> None:
    from mcp_types import CreateMessageResult, SamplingCapability, TextContent

    asked: list[Any] = []

    async def client_model(context: Any, params: Any) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(text="A picture."), model="client-model")

    sizes = damaged_files(tmp_path / "root")
    options = {"sampling_callback": client_model, "sampling_capabilities": SamplingCapability()}
    async with media(client_options=options) as client:
        for name, size in sizes.items():
            says_damaged(await fail(client, "read_image", "INVALID_INPUT", path=name), name, size, tmp_path)
            says_damaged(await fail(client, "describe_image", "INVALID_INPUT", path=name), name, size, tmp_path)
        assert "truncated" in await fail(client, "read_image", "INVALID_INPUT", path="label.png")
        (tmp_path / "root" / "notes.png").write_text("plain text, not an image")  # still told apart
        assert "not an image Pillow can read" in await fail(client, "read_image", "INVALID_INPUT", path="notes.png")
    assert asked == []  # nothing was sent to a model


async def test_list_images_counts_damaged_images_as_unreadable(media: Connect, tmp_path: Path) -> None:
    damaged_files(tmp_path / "root")
    (tmp_path / "root" / "good.png").write_bytes(png_bytes(30, 20))
    async with media() as client:
        listed = await call(client, "list_images", directory=".")
    # Headers only: the truncated files whose header is whole are listed; those without one are not
    assert sorted(entry["path"] for entry in listed["images"]) == ["good.png", "label.png", "photo.jpg", "scan.tif"]
    assert listed["unreadable"] == 2


async def test_a_damaged_image_is_refused_before_a_3d_job_is_paid(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    sizes = damaged_files(tmp_path / "root")
    async with media(**configured(provider)) as client:
        for name in ("label.png", "garbage.png", "broken.png"):
            message = await fail(client, "generate_3d_from_image", "INVALID_INPUT", path=name)
            says_damaged(message, name, sizes[name], tmp_path)
    assert provider.paid() == 0


@needs_renderer
async def test_a_3d_asset_with_a_truncated_texture_is_invalid_input(media: Connect, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "wall.png").write_bytes(noisy_image("PNG")[:3000])
    (root / "wall.mtl").write_text("newmtl brick\nKd 1 1 1\nmap_Kd wall.png\n")
    (root / "wall.obj").write_text(
        "mtllib wall.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
        "usemtl brick\nf 1/1 2/2 3/3\nf 1/1 3/3 4/4\n"
    )
    async with media() as client:
        message = await fail(client, "render_3d_asset", "INVALID_INPUT", path="wall.obj", views=1, size=64)
        assert "a texture (image) of 'wall.obj' is a damaged or truncated PNG file" in message, message
        (root / "wall.png").write_bytes(noisy_image("PNG"))  # complete again: it renders
        assert (await call(client, "render_3d_asset", path="wall.obj", views=1, size=64))["views"] == 1
