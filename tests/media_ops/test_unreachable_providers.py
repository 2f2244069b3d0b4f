"""A provider that cannot be reached — nothing listens on its port, its host name does not resolve, the URL it
answered with leads nowhere — is DEPENDENCY_ERROR naming where and the setting to check, for the vision model, the
images API and the 3D job API alike (as web_ops' search providers and the sub-agents' models); one that does not
answer in time is TIMEOUT naming provider_timeout_seconds."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from tests.media_ops.conftest import Connect, configured
from tests.media_ops.stand_in import MediaStandIn, png_bytes
from tests.stdio import fail

pytestmark = pytest.mark.anyio


def refusing_port() -> int:
    """A port on 127.0.0.1 where nothing listens: connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def vision(base_url: str) -> dict[str, str]:
    return {"vision_provider": "openai", "vision_model": "vision-test", "vision_base_url": base_url}


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:{port}/v1", "http://vision.invalid/v1"])
async def test_an_unreachable_vision_model_is_a_dependency_error(media: Connect, tmp_path: Path, base_url: str) -> None:
    base_url = base_url.format(port=refusing_port())
    (tmp_path / "root" / "p.png").write_bytes(png_bytes())
    async with media(**vision(base_url)) as client:
        message = await fail(client, "describe_image", "DEPENDENCY_ERROR", path="p.png")
    assert message.startswith(f"cannot reach the vision model at {base_url} ("), message
    assert message.endswith("check that it runs and [sections.media_ops] vision_base_url."), message


async def test_unreachable_generation_providers_are_dependency_errors(media: Connect, tmp_path: Path) -> None:
    nowhere = f"http://127.0.0.1:{refusing_port()}/v1"
    async with media(image_base_url=nowhere, mesh_base_url=nowhere) as client:
        for tool, arguments, setting in (
            ("generate_image", {"prompt": "a fox"}, "image_base_url"),
            ("generate_multiview_images", {"prompt": "a teapot", "views": 2}, "image_base_url"),
            ("generate_3d_from_text", {"prompt": "a chair"}, "mesh_base_url"),
        ):
            message = await fail(client, tool, "DEPENDENCY_ERROR", **arguments)
            assert f"at {nowhere} (could not connect to" in message and setting in message, message
        (tmp_path / "root" / "ref.png").write_bytes(png_bytes())
        message = await fail(client, "generate_3d_from_image", "DEPENDENCY_ERROR", path="ref.png")
        assert "cannot reach the 3D service" in message and "mesh_base_url" in message, message
    assert not (tmp_path / "root" / "generated").exists()


async def test_an_unreachable_url_a_provider_answered_with_is_a_dependency_error(
    media: Connect, provider: MediaStandIn
) -> None:
    port = refusing_port()
    provider.image_url = f"http://127.0.0.1:{port}/signed/image.png?token=s3cret"
    async with media(**configured(provider, allow=f"127.0.0.1:{port}")) as client:
        message = await fail(client, "generate_image", "DEPENDENCY_ERROR", prompt="a fox")
    assert message.startswith(f"cannot reach a generated image at http://127.0.0.1:{port} ("), message
    assert "image_base_url" in message and "s3cret" not in message, message


async def test_a_provider_too_slow_to_answer_is_a_timeout_naming_the_setting(
    media: Connect, provider: MediaStandIn
) -> None:
    provider.held = threading.Event()  # the images API takes the request and does not answer
    async with media(**configured(provider, provider_timeout_seconds="0.5")) as client:
        message = await fail(client, "generate_image", "TIMEOUT", prompt="slow")
    assert message.startswith(f"the images API at {provider.base_url} did not answer in time"), message
    assert "[sections.media_ops] provider_timeout_seconds" in message, message
