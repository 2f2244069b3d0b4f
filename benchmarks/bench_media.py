"""media_ops: OCR time per image and per megapixel, render time per view, and the section's peak RSS after both.

Run: python -m benchmarks.bench_media [--runs 5]

Images with rendered text at three sizes and small meshes are generated in a temporary directory; calls go
through the real section over stdio, so the times include what a client waits for.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

from benchmarks.harness import print_table, status_kb
from tests.processes import pids_where
from tests.stdio import section_client

SIZES = ((800, 200), (1600, 900), (3000, 2000))
TEXT = "Invoice 2041 is due on Friday 14 March"


def make_image(path: Path, width: int, height: int) -> None:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    size = max(height // 10, 24)
    font = ImageFont.load_default(size=size)
    for row in range(0, height - size, size * 3):
        draw.text((20, 20 + row), TEXT, fill="black", font=font)
    image.save(path)


def make_mesh(path: Path) -> int:
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=4)
    mesh.export(path)
    return len(mesh.faces)


def rss_mib(pid: int) -> float | None:
    peak = status_kb(pid, "VmHWM:")
    return None if peak is None else peak / 1024


async def timed(client: Client, tool: str, arguments: dict[str, object], runs: int) -> list[float]:
    samples = []
    await client.call_tool(tool, arguments)  # warm-up: model and OpenGL context
    for _ in range(runs):
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        samples.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content[0].text
    return samples


def section_pids() -> list[int]:
    """Processes running `mcp-sections serve media_ops` (the server this benchmark started)."""
    return pids_where(lambda arguments: "serve" in arguments and "media_ops" in arguments)


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for width, height in SIZES:
            make_image(root / f"text-{width}x{height}.png", width, height)
        faces = make_mesh(root / "sphere.glb")
        rows = []
        async with section_client("media_ops", "--root", str(root), "--data-dir", str(root / ".data")) as client:
            started = time.perf_counter()
            await client.call_tool("read_image", {"path": f"text-{SIZES[0][0]}x{SIZES[0][1]}.png"})
            first = (time.perf_counter() - started) * 1000
            rows.append(("OCR, first call (engine load included)", f"{first:,.0f} ms", ""))
            for width, height in SIZES:
                samples = await timed(client, "read_image", {"path": f"text-{width}x{height}.png"}, runs)
                median = statistics.median(samples)
                megapixels = width * height / 1e6
                rows.append(
                    (
                        f"OCR {width}×{height} ({megapixels:.2f} MP)",
                        f"{median:,.0f} ms",
                        f"{median / megapixels:,.0f} ms/MP",
                    )
                )
            for size in (256, 512):
                samples = await timed(client, "render_3d_asset", {"path": "sphere.glb", "views": 4, "size": size}, runs)
                rows.append(
                    (
                        f"render {faces:,}-face mesh, 4 views of {size}²",
                        f"{statistics.median(samples):,.0f} ms",
                        f"{statistics.median(samples) / 4:,.0f} ms/view",
                    )
                )
            peak = max((rss_mib(pid) or 0 for pid in section_pids()), default=None)
            rows.append(("peak RSS of the section after OCR and renders", f"{peak:,.0f} MiB" if peak else "n/a", ""))
    print_table(["measure", "median", "per unit"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    anyio.run(main, parser.parse_args().runs)
