"""A paid generation asked again is not paid again (servers/media_ops/repeats.py), through the tools, counting the
requests the scripted provider receives: the same call later gets the files it wrote (reused=true) while they are
unchanged; the same call at once waits for the first, which a cancelled caller leaves to the others;
allow_duplicate, other inputs, another image content, a failure, files gone or changed, and a window of 0 generate."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.media_ops.conftest import Connect, configured, needs_renderer
from tests.media_ops.stand_in import MediaStandIn, png_bytes
from tests.stdio import call, data_of, fail
from tests.waiting import cancelled_once, eventually

pytestmark = pytest.mark.anyio
FOX = {"prompt": "A red fox in snow", "size": "512x512"}


async def test_the_same_call_again_returns_its_files_and_pays_once(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    async with media(**configured(provider)) as client:
        first = await call(client, "generate_image", **FOX, output_path="art/fox.png")
        raw = await client.call_tool("generate_image", {**FOX, "output_path": "art/fox.png"})
        default = await call(client, "generate_image", **FOX, n=2)
        default_again = await call(client, "generate_image", **FOX, n=2)
    again = data_of(raw)
    assert provider.paid() == 2  # one for each call, not for its repeat
    assert first["reused"] is False and first["warning"] is None
    assert again["reused"] is True and again["paths"] == first["paths"] == ["art/fox.png"]
    assert "allow_duplicate=true" in again["warning"] and "paid" in again["warning"]
    assert [block.type for block in raw.content].count("image") == 1  # the image comes back too
    assert default_again["reused"] is True and default_again["paths"] == default["paths"]
    assert len(list((tmp_path / "root").rglob("*.png"))) == 3


async def test_allow_duplicate_and_other_inputs_generate(media: Connect, provider: MediaStandIn) -> None:
    async with media(**configured(provider)) as client:
        first = await call(client, "generate_image", **FOX)
        twin = await call(client, "generate_image", **FOX, allow_duplicate=True)  # in the same second, likely
        await call(client, "generate_image", **{**FOX, "size": "256x256"})
        await call(client, "generate_image", **FOX, n=2)
        await call(client, "generate_multiview_images", prompt=FOX["prompt"], views=2)
    assert provider.paid() == 1 + 1 + 1 + 1 + 2
    assert twin["reused"] is False and twin["paths"] != first["paths"]


async def test_a_window_of_zero_remembers_nothing(media: Connect, provider: MediaStandIn) -> None:
    async with media(**configured(provider, reuse_window_seconds="0")) as client:
        first = await call(client, "generate_image", **FOX)
        second = await call(client, "generate_image", **FOX)
    assert provider.paid() == 2 and not second["reused"] and second["paths"] != first["paths"]


async def test_files_gone_or_changed_are_generated_again(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    async with media(**configured(provider)) as client:
        await call(client, "generate_image", **FOX, output_path="fox.png")
        (root / "fox.png").unlink()
        again = await call(client, "generate_image", **FOX, output_path="fox.png")
        assert again["reused"] is False and (root / "fox.png").exists()
        default = await call(client, "generate_image", **FOX)
        (root / default["paths"][0]).write_bytes(png_bytes(color=(0, 0, 255)))
        changed = await call(client, "generate_image", **FOX)
    assert provider.paid() == 4
    assert changed["reused"] is False and changed["paths"] != default["paths"]


async def test_a_failure_is_not_remembered(media: Connect, provider: MediaStandIn) -> None:
    async with media(**configured(provider)) as client:
        provider.failures = [503]
        await fail(client, "generate_image", "EXECUTION_FAILED", **FOX)
        result = await call(client, "generate_image", **FOX)
    assert provider.paid() == 2 and result["reused"] is False


async def test_an_output_path_taken_is_refused_before_the_provider_is_paid(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    (tmp_path / "root" / "fox.png").write_bytes(png_bytes())
    async with media(**configured(provider)) as client:
        message = await fail(client, "generate_image", "VALIDATION_FAILED", **FOX, output_path="fox.png")
    assert provider.paid() == 0 and "nothing was generated" in message


async def calling(client: Client, tool: str, arguments: dict[str, Any], told: list[str]) -> dict[str, Any]:
    """The call's structured result, its progress messages added to `told`."""

    async def progress(done: float, total: float | None, message: str | None) -> None:
        told.append(message or "")

    return data_of(await client.call_tool(tool, arguments, progress_callback=progress))


def waiting_for_the_first(told: list[str]) -> bool:
    return any("already running" in message for message in told)


@pytest.mark.parametrize("window", ["120", "0"])  # a window of 0 still joins the call running
async def test_the_same_call_at_once_waits_for_the_first(media: Connect, provider: MediaStandIn, window: str) -> None:
    provider.held = threading.Event()
    results: dict[str, dict[str, Any]] = {}
    told: list[str] = []

    async def run(name: str) -> None:
        results[name] = await calling(client, "generate_image", FOX, told if name == "second" else [])

    async with media(**configured(provider, reuse_window_seconds=window)) as client, anyio.create_task_group() as group:
        group.start_soon(run, "first")
        await eventually(lambda: provider.paid() == 1)
        group.start_soon(run, "second")
        await eventually(lambda: waiting_for_the_first(told) or provider.paid() == 2)
        provider.held.set()
    assert provider.paid() == 1
    assert results["first"]["reused"] is False and results["second"]["reused"] is True
    assert results["second"]["paths"] == results["first"]["paths"]
    assert "already running" in results["second"]["warning"]


async def cancelled_beside_a_twin(
    client: Client, provider: MediaStandIn, tool: str, arguments: dict[str, Any], started: Any, release: Any
) -> dict[str, Any]:
    """The same call twice at once; the first cancelled (once the server has the second), then `release()` lets the
    provider finish: the second's result."""
    told: list[str] = []
    results: list[dict[str, Any]] = []
    first = anyio.CancelScope()

    async def run_first() -> None:
        with first:
            await client.call_tool(tool, arguments)

    async def run_second() -> None:
        results.append(await calling(client, tool, arguments, told))

    async with anyio.create_task_group() as group:
        group.start_soon(run_first)
        await eventually(started)
        group.start_soon(run_second)
        await eventually(lambda: waiting_for_the_first(told) or provider.paid() == 2)
        first.cancel()
        await call(client, "list_images")  # a round trip: the cancellation has reached the server
        release()
    return results[0]


async def test_a_cancelled_first_caller_leaves_the_generation_to_the_one_waiting(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    held = provider.held = threading.Event()
    async with media(**configured(provider)) as client:
        second = await cancelled_beside_a_twin(
            client, provider, "generate_image", FOX, lambda: provider.paid() == 1, held.set
        )
    assert provider.paid() == 1
    assert second["reused"] is True and (tmp_path / "root" / second["paths"][0]).exists()


@needs_renderer
async def test_a_3d_job_is_not_submitted_again_and_survives_its_first_caller(
    media: Connect, provider: MediaStandIn
) -> None:
    provider.job_outcome = "stall"
    chair = {"prompt": "a wooden chair", "output_path": "chair.glb"}

    def finish() -> None:
        provider.job_outcome = "succeeded"

    async with media(**configured(provider)) as client:
        second = await cancelled_beside_a_twin(
            client, provider, "generate_3d_from_text", chair, lambda: "GET /v1/jobs/job-1" in provider.paths(), finish
        )
        again = await call(client, "generate_3d_from_text", **chair)
    assert provider.paid() == 1 and provider.cancelled == []
    assert second["reused"] is True and second["path"] == again["path"] == "chair.glb"
    assert again["reused"] is True


@needs_renderer
async def test_the_last_caller_cancelled_stops_the_job_and_the_next_call_starts_anew(
    media: Connect, provider: MediaStandIn
) -> None:
    provider.job_outcome = "stall"
    async with media(**configured(provider)) as client:
        chair = {"prompt": "a wooden chair"}
        running = await cancelled_once(
            lambda: client.call_tool("generate_3d_from_text", chair),
            lambda: "GET /v1/jobs/job-1" in provider.paths(),
        )
        await eventually(lambda: provider.cancelled)
        provider.job_outcome = "succeeded"
        result = await call(client, "generate_3d_from_text", **chair)
    assert running and provider.cancelled == ["job-1"]
    assert provider.paid() == 2 and result["reused"] is False


@needs_renderer
async def test_image_to_3d_is_the_same_call_only_for_the_same_image_content(
    media: Connect, provider: MediaStandIn, tmp_path: Path
) -> None:
    reference = tmp_path / "root" / "ref.png"
    reference.write_bytes(png_bytes(200, 100))
    async with media(**configured(provider)) as client:
        first = await call(client, "generate_3d_from_image", path="ref.png")
        same = await call(client, "generate_3d_from_image", path="ref.png")
        reference.write_bytes(png_bytes(200, 100, color=(0, 120, 0)))
        other = await call(client, "generate_3d_from_image", path="ref.png")
    assert same["reused"] is True and same["path"] == first["path"]
    assert other["reused"] is False and other["path"] != first["path"]
    assert provider.paid() == 2
