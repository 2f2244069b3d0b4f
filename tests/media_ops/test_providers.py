"""Generation and description through the provider interfaces, against a scripted stand-in on 127.0.0.1: the
requests sent, the files written, polling with progress, failures, timeouts and cancellation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.media_ops.conftest import KEY, Connect, configured, needs_renderer
from tests.media_ops.stand_in import MediaStandIn, png_bytes
from tests.stdio import call, fail

pytestmark = pytest.mark.anyio


async def test_without_providers_generation_says_what_to_configure(media: Connect) -> None:
    async with media() as client:
        assert "image_base_url" in await fail(client, "generate_image", "DEPENDENCY_ERROR", prompt="a red fox")
        assert "mesh_base_url" in await fail(client, "generate_3d_from_text", "DEPENDENCY_ERROR", prompt="a chair")


async def test_generate_image_sends_the_request_and_writes_new_files(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    async with media(**configured(provider)) as client:
        result = await call(
            client, "generate_image", prompt="A red fox in snow", size="512x512", n=2, output_path="art/fox"
        )
        assert result["paths"] == ["art/fox-1.png", "art/fox-2.png"]
        assert (root / "art" / "fox-2.png").read_bytes().startswith(b"\x89PNG")
        await fail(client, "generate_image", "VALIDATION_FAILED", prompt="again", n=2, output_path="art/fox")
        default = await call(client, "generate_image", prompt="A red fox in snow")
    request = provider.requests[0]
    assert request["path"] == "/v1/images/generations" and request["authorization"] == f"Bearer {KEY}"
    assert request["body"] == {
        "model": "gpt-image-1",
        "prompt": "A red fox in snow",
        "n": 2,
        "size": "512x512",
        "response_format": "b64_json",
    }
    assert default["paths"][0].startswith("generated/a-red-fox-in-snow-")


async def test_image_urls_are_downloaded_through_the_url_guard(media: Connect, provider: MediaStandIn) -> None:
    provider.answer_with_url = True
    async with media(**configured(provider)) as client:
        result = await call(client, "generate_image", prompt="url please")
    assert result["count"] == 1 and "GET /files/image.png" in provider.paths()


async def test_provider_failures_are_coded_and_write_nothing(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    async with media(**configured(provider)) as client:
        provider.failures = [503]
        assert "retry later" in await fail(client, "generate_image", "EXECUTION_FAILED", prompt="x")
        provider.failures = [401]
        await fail(client, "generate_image", "DEPENDENCY_ERROR", prompt="x")
    assert not (tmp_path / "root" / "generated").exists() or not any((tmp_path / "root" / "generated").iterdir())


async def test_multiview_asks_one_view_at_a_time(media: Connect, provider: MediaStandIn) -> None:
    async with media(**configured(provider)) as client:
        result = await call(client, "generate_multiview_images", prompt="a teapot", views=4, output_path="views/teapot")
    prompts = [request["body"]["prompt"] for request in provider.requests]
    assert [label["label"] for label in result["images"]] == ["front", "right side", "back", "left side"]
    assert all(prompt.startswith("a teapot") for prompt in prompts) and "back view" in prompts[2]
    assert result["paths"] == [f"views/teapot-{index}.png" for index in range(1, 5)]


async def test_describe_image_sends_the_image_and_its_ocr_text(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (600, 120), "white")
    ImageDraw.Draw(image).text((20, 30), "Exit 12 Lyon", fill="black", font=ImageFont.load_default(size=40))
    image.save(tmp_path / "root" / "sign.png")
    settings = {
        "vision_provider": "openai",
        "vision_model": "vision-test",
        "vision_base_url": provider.base_url,
        "vision_api_key_env": "MEDIA_TEST_KEY",
    }
    async with media(**settings) as client:
        result = await call(client, "describe_image", path="sign.png", prompt="Where does this sign point?")
    assert result["description"] == "A red rectangle." and result["model"] == "openai:vision-test"
    content = provider.requests[0]["body"]["messages"][0]["content"]
    assert content[0]["type"] == "text" and "Exit 12 Lyon" in content[0]["text"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_describe_image_asks_the_clients_model_through_sampling(media: Connect, tmp_path: Path) -> None:
    from mcp_types import CreateMessageResult, ImageContent, SamplingCapability, TextContent

    seen: list[Any] = []

    async def client_model(context: Any, params: Any) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(text="A red square."), model="client-model")

    (tmp_path / "root" / "p.png").write_bytes(png_bytes())
    options = {"sampling_callback": client_model, "sampling_capabilities": SamplingCapability()}
    async with media(client_options=options) as client:
        result = await call(client, "describe_image", path="p.png")
    assert result["description"] == "A red square." and result["model"] == "sampling:client-model"
    blocks = seen[0].messages[0].content_as_list
    assert isinstance(blocks[0], ImageContent) and isinstance(blocks[1], TextContent)


async def test_describe_image_without_a_model_or_sampling_says_how_to_configure(media: Connect, tmp_path: Path) -> None:
    (tmp_path / "root" / "p.png").write_bytes(png_bytes())
    async with media() as client:
        message = await fail(client, "describe_image", "DEPENDENCY_ERROR", path="p.png")
    assert "vision_provider" in message and "sampling" in message


@needs_renderer
async def test_text_to_3d_polls_with_progress_and_writes_a_previewed_glb(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with media(**configured(provider)) as client:
        raw = await client.call_tool(
            "generate_3d_from_text",
            {"prompt": "a wooden chair", "output_path": "chair.glb"},
            progress_callback=on_progress,
        )
    assert not raw.is_error, raw.content[0].text
    result = raw.structured_content
    assert result is not None and result["path"] == "chair.glb"
    assert (tmp_path / "root" / "chair.glb").read_bytes()[:4] == b"glTF"
    assert [block.type for block in raw.content].count("image") == 1
    assert progress and progress[-1] == 1.0
    assert provider.paths()[:2] == ["POST /v1/jobs", "GET /v1/jobs/job-1"]
    assert provider.requests[0]["body"] == {"prompt": "a wooden chair", "format": "glb"}


@needs_renderer
async def test_image_to_3d_sends_the_checked_image(media: Connect, provider: MediaStandIn, tmp_path: Path) -> None:
    (tmp_path / "root" / "ref.png").write_bytes(png_bytes(200, 100))
    async with media(**configured(provider)) as client:
        result = await call(client, "generate_3d_from_image", path="ref.png")
    assert result["path"].startswith("generated/ref-png-") and result["path"].endswith(".glb")
    assert provider.requests[0]["body"]["image"].startswith("data:image/png;base64,")


async def test_failed_jobs_bad_results_and_timeouts(media: Connect, provider: MediaStandIn, tmp_path: Path) -> None:
    async with media(**configured(provider, mesh_job_timeout_seconds="0.5")) as client:
        provider.job_outcome = "failed"
        assert "gave up" in await fail(client, "generate_3d_from_text", "EXECUTION_FAILED", prompt="a")
        provider.job_outcome, provider.result_bytes = "succeeded", b"<html>not a model</html>"
        assert "GLB" in await fail(client, "generate_3d_from_text", "EXECUTION_FAILED", prompt="b")
        provider.job_outcome = "stall"
        await fail(client, "generate_3d_from_text", "TIMEOUT", prompt="c")
    assert provider.cancelled == ["job-3"]  # the stalled job was cancelled at the provider
    assert not list((tmp_path / "root").rglob("*.glb"))


async def test_cancelling_the_call_cancels_the_job(media: Connect, provider: MediaStandIn) -> None:
    provider.job_outcome = "stall"
    async with media(**configured(provider)) as client:
        with anyio.move_on_after(1.0):
            await client.call_tool("generate_3d_from_text", {"prompt": "never finishes"})
        for _ in range(50):
            if provider.cancelled:
                break
            await anyio.sleep(0.05)
    assert provider.cancelled == ["job-1"]


@pytest.mark.parametrize(
    "elsewhere",
    ["http://127.0.0.1:{other}/secret.png", "http://169.254.169.254/latest/meta-data/", "file:///etc/passwd"],
)
async def test_urls_a_provider_points_to_go_through_the_url_guard(
    media: Connect, provider: MediaStandIn, tmp_path: Path, elsewhere: str
) -> None:
    provider.image_url = elsewhere.format(other=provider.port + 1)
    async with media(**configured(provider)) as client:
        code = (await client.call_tool("generate_image", {"prompt": "x"})).structured_content["error_code"]
    assert code in ("PERMISSION_DENIED", "INVALID_INPUT")
    assert not (tmp_path / "root" / "generated").exists()
