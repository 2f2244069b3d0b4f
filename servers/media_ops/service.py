"""media_ops' work: images listed, read (OCR) and described, generated and written inside the roots, 3D assets
rendered and generated. No MCP imports except the sampling request describe_image may send."""

from __future__ import annotations

import hashlib
import io
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from mcp_sections.servers.media_ops import images, ocr, providers, render
from mcp_sections.servers.media_ops.repeats import Asked, Repeats
from mcp_sections.servers.media_ops.settings import MediaOpsSettings
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.framework.paging import fingerprint, page
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.text.walking import walk

if TYPE_CHECKING:
    from mcp_sections.shared.net.fetch import GuardedHttp

USER_AGENT = "mcp-sections-media_ops/0.1"
ALLOW_SETTING = "`[sections.media_ops] allow` (or MCP_SECTIONS_MEDIA_OPS_ALLOW)"
MAX_LISTED = 20_000
VIEW_NAMES = ("front", "right side", "back", "left side", "top", "three-quarter front", "three-quarter back", "bottom")
DESCRIBE_PROMPT = "Describe this image precisely: subject, layout, visible text, colours and anything notable."
OVERVIEW_SIDE = 768  # a render's views are shown inline as one overview this size; each view goes by reference


@dataclass
class Rendered:
    """An image to return to the client (preview) and, when it was written, where."""

    data: str
    mime: str
    width: int
    height: int
    path: str | None = None
    label: str | None = None


@dataclass
class Outcome:
    values: dict[str, Any]
    images: list[Rendered] = field(default_factory=list)
    overview: Rendered | None = None  # one image standing for `images`, which then go by reference
    written: list[Path] = field(default_factory=list)  # the files a generation wrote (real paths)

    def weight(self) -> int:
        """Its size in memory: its images' data."""
        return sum(len(image.data) for image in [*self.images, *([self.overview] if self.overview else [])])


class MediaOps:
    def __init__(self, settings: MediaOpsSettings, roots: Sequence[Path], private: Sequence[Path] = ()) -> None:
        self.settings = settings
        self.paths = PathGuard(list(roots), private=private)
        self._http: GuardedHttp | None = None
        self.repeats: Repeats[Outcome] = Repeats(
            settings.reuse_window_seconds, files=lambda outcome: outcome.written, weight=Outcome.weight
        )

    @property
    def http(self) -> GuardedHttp:
        """The guarded HTTP client for providers, made on first use (local tools never load it)."""
        if self._http is None:
            from mcp_sections.shared.confinement.guards.urls import AllowList, UrlGuard
            from mcp_sections.shared.net.fetch import GuardedHttp

            settings = self.settings
            allow = AllowList.parse(settings.allow)
            endpoints = [settings.vision_base_url, settings.image_base_url, settings.mesh_base_url]
            hosts = {_host_port(url) for url in endpoints if url}
            self._http = GuardedHttp(
                UrlGuard(AllowList(allow.hosts | hosts, allow.networks), allow_setting=ALLOW_SETTING),
                user_agent=USER_AGENT,
                max_bytes=providers.MAX_PROVIDER_JSON,
                timeout_seconds=settings.provider_timeout_seconds,
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    # ---- local work ------------------------------------------------------------------------------
    def _image_path(self, path: str) -> tuple[Path, str]:
        real = self.paths.resolve(path, purpose="read")
        if real.is_dir():
            raise ToolFailure(ErrorCode.INVALID_INPUT, f"{path!r} is a directory; give an image file.")
        return real, self.paths.relative(real)

    def list_images(self, directory: str, recursive: bool, limit: int, cursor: str | None) -> dict[str, Any]:
        base = self.paths.resolve(directory or ".", purpose="list")
        if not base.is_dir():
            raise ToolFailure(ErrorCode.INVALID_INPUT, f"{directory!r} is not a directory.")
        found: list[dict[str, Any]] = []
        skipped = 0
        entries = walk(
            str(base),
            skip=lambda name, rel, is_dir: self.paths.is_denied_name(name) or name in (".git", "node_modules"),
            escapes=lambda path: not self.paths.contains(os.path.realpath(path)),
            hidden=self.paths.private_inside_roots(),
            max_depth=None if recursive else 1,
            max_entries=MAX_LISTED * 5,
        )
        for entry in entries:
            if entry.is_dir or not images.is_image_name(entry.name):
                continue
            shown = self.paths.relative(entry.path)
            try:
                info = images.probe(
                    Path(entry.path), shown, self.settings.max_image_pixels, self.settings.max_image_bytes
                )
            except (ToolFailure, OSError):
                skipped += 1
                continue
            found.append(
                {
                    "path": info.path,
                    "format": info.format,
                    "width": info.width,
                    "height": info.height,
                    "size_bytes": info.size_bytes,
                    "modified": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.modified)),
                }
            )
            if len(found) >= MAX_LISTED:
                break
        print_ = fingerprint("list_images", {"directory": str(base), "recursive": recursive})
        items, next_cursor = page(found, cursor, limit, print_)
        return {
            "directory": self.paths.relative(base),
            "images": items,
            "total": len(found),
            "next_cursor": next_cursor,
            "unreadable": skipped,
        }

    async def read_image(self, path: str) -> Outcome:
        real, shown = self._image_path(path)

        def work() -> tuple[Any, list[ocr.TextLine], images.ImageInfo]:
            info = images.probe(real, shown, self.settings.max_image_pixels, self.settings.max_image_bytes)
            image = images.load_rgb(real, shown, self.settings.max_image_pixels, self.settings.max_image_bytes)
            return image, ocr.read_text(image), info

        image, lines, info = await anyio.to_thread.run_sync(work)
        data, mime = images.preview(image, self.settings.preview_max_side)
        values = {
            "path": shown,
            "format": info.format,
            "width": info.width,
            "height": info.height,
            "text": "\n".join(line.text for line in lines),
            "lines": [{"text": line.text, "confidence": line.confidence, "box": line.box} for line in lines],
        }
        return Outcome(values, [Rendered(data, mime, info.width, info.height, shown)])

    async def render_3d(self, path: str, views: int, size: int, output_dir: str | None) -> Outcome:
        real = self.paths.resolve(path, purpose="read")
        shown = self.paths.relative(real)
        if real.stat().st_size > self.settings.max_mesh_bytes:
            raise ToolFailure(
                ErrorCode.MAX_LIMIT_EXCEEDED,
                f"{shown!r} is larger than [sections.media_ops] max_mesh_bytes ({self.settings.max_mesh_bytes:,}).",
            )
        target = self._output_dir(output_dir) if output_dir else None

        def work() -> list[render.View]:
            return render.render_views(render.load_mesh(real, shown, self.paths), views, size)

        started = time.perf_counter()
        rendered = await anyio.to_thread.run_sync(work)
        seconds = time.perf_counter() - started
        results = []
        for index, view in enumerate(rendered):
            written = None
            if target is not None:
                written = self.paths.relative(
                    self._write_new(target / f"{real.stem}-view{index + 1}.png", _png(view.image))
                )
            data, mime = images.preview(view.image, self.settings.preview_max_side)
            label = f"azimuth {view.azimuth_degrees:.0f}°, elevation {view.elevation_degrees:.0f}°"
            results.append(Rendered(data, mime, size, size, written, label))
        values = {"path": shown, "views": len(results), "size": size, "seconds": round(seconds, 3)}
        if len(rendered) == 1:
            return Outcome(values, results)
        sheet = images.contact_sheet([view.image for view in rendered], OVERVIEW_SIDE)
        data, mime = images.preview(sheet, OVERVIEW_SIDE)
        width, height = sheet.size  # type: ignore[attr-defined]
        overview = Rendered(data, mime, width, height, None, f"the {len(results)} views, left to right, top to bottom")
        return Outcome(values, results, overview)

    # ---- providers -------------------------------------------------------------------------------
    async def describe(self, path: str, prompt: str | None, ctx: Any) -> Outcome:
        read = await self.read_image(path)
        preview = read.images[0]
        text = read.values["text"]
        question = prompt or DESCRIBE_PROMPT
        if text:
            question += f"\n\nText found in the image by OCR (may contain errors):\n{text[:4000]}"
        model = providers.vision_model(self.settings)
        if model is not None:
            description = await model.describe(self.http, question, preview.data, preview.mime, 1024)
            used = f"{model.provider}:{model.model}"
        else:
            description, used = await _sample(ctx, question, preview)
        values = {"path": read.values["path"], "description": description, "model": used, "ocr_text": text}
        return Outcome(values, [preview])

    # Each generation is asked through `repeats` (repeats.py): the same call again, while it runs or within
    # reuse_window_seconds after, gets its result instead of paying the provider again.
    async def generate_images(self, prompt: str, size: str, n: int, output_path: str | None, asked: Asked) -> Outcome:
        generator = providers.image_generator(self.settings)

        async def work(progress: providers.Progress) -> Outcome:
            self._refuse_existing(output_path, ".png", n)
            blobs = await generator.generate(self.http, prompt, size, n, self.settings.max_image_bytes)
            return self._save_generated(blobs, prompt, output_path, [None] * len(blobs), n)

        return await self._once(("generate_image", prompt, size, n, output_path), work, asked)

    async def generate_multiview(self, prompt: str, views: int, output_path: str | None, asked: Asked) -> Outcome:
        generator = providers.image_generator(self.settings)

        async def work(progress: providers.Progress) -> Outcome:
            self._refuse_existing(output_path, ".png", views)
            blobs: list[bytes] = []
            labels: list[str | None] = []
            for name in VIEW_NAMES[:views]:
                view_prompt = f"{prompt}\n\n{name} view of the same object, same style, plain background, centred."
                blobs += await generator.generate(self.http, view_prompt, "1024x1024", 1, self.settings.max_image_bytes)
                labels.append(name)
            return self._save_generated(blobs, prompt, output_path, labels, views)

        return await self._once(("generate_multiview_images", prompt, views, output_path), work, asked)

    async def generate_3d_from_text(self, prompt: str, output_path: str | None, asked: Asked) -> Outcome:
        jobs = providers.mesh_jobs(self.settings)

        async def work(progress: providers.Progress) -> Outcome:
            return await self._generate_3d(jobs, {"prompt": prompt, "format": "glb"}, prompt, output_path, progress)

        return await self._once(("generate_3d_from_text", prompt, output_path), work, asked)

    async def generate_3d_from_image(self, path: str, output_path: str | None, asked: Asked) -> Outcome:
        """The same call is the same path and output_path, and the image's very content (its digest)."""
        jobs = providers.mesh_jobs(self.settings)
        real, shown = self._image_path(path)
        digest = await anyio.to_thread.run_sync(self._digest, real, shown)

        async def work(progress: providers.Progress) -> Outcome:
            request = await self.image_request(path)
            return await self._generate_3d(jobs, request, path.rsplit("/", 1)[-1], output_path, progress)

        return await self._once(("generate_3d_from_image", path, digest, output_path), work, asked)

    async def _once(self, call: tuple[Any, ...], work: Any, asked: Asked) -> Outcome:
        """`work`'s outcome, or the same call's (running, or made within the window): then reused, with the warning."""
        outcome, warning = await self.repeats.once(call, work, asked)
        if warning is None:
            return outcome
        return replace(outcome, values={**outcome.values, "reused": True, "warning": warning})

    async def _generate_3d(
        self,
        jobs: providers.MeshJobs,
        request: dict[str, Any],
        what: str,
        output_path: str | None,
        progress: providers.Progress,
    ) -> Outcome:
        self._refuse_existing(output_path, ".glb", 1)
        glb = await jobs.run(self.http, request, self.settings.max_mesh_bytes, progress)
        real = self._write_new(self._targets(output_path, what, ".glb", 1)[0], glb)
        rendered = await self.render_3d(str(real), 1, 512, None)
        values = {"path": self.paths.relative(real), "size_bytes": len(glb), "preview": rendered.images[0].label}
        return Outcome(values, rendered.images, written=[real])

    def _digest(self, real: Path, shown: str) -> str:
        """An input image's content digest, once its header was checked (size and pixel limits, not an SVG)."""
        images.probe(real, shown, self.settings.max_image_pixels, self.settings.max_image_bytes)
        with open(real, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()

    async def image_request(self, path: str) -> dict[str, Any]:
        """A 3D job's input image: read and checked locally, sent inline as a data URI."""
        real, shown = self._image_path(path)
        image = await anyio.to_thread.run_sync(
            lambda: images.load_rgb(real, shown, self.settings.max_image_pixels, self.settings.max_image_bytes)
        )
        data, mime = images.preview(image, 1024)
        return {"image": f"data:{mime};base64,{data}", "format": "glb"}

    # ---- writing ---------------------------------------------------------------------------------
    def _save_generated(
        self, blobs: list[bytes], prompt: str, output_path: str | None, labels: Sequence[str | None], count: int
    ) -> Outcome:
        """The images checked and written (no await in between: two calls at once never pick one name)."""
        results = []
        written: list[Path] = []
        for index, (blob, target) in enumerate(
            zip(blobs, self._targets(output_path, prompt, ".png", count), strict=False)
        ):
            image = images.decode_untrusted(blob, "a generated image", self.settings.max_image_pixels)
            written.append(self._write_new(target, _png(image)))
            data, mime = images.preview(image, self.settings.preview_max_side)
            width, height = image.size  # type: ignore[attr-defined]
            results.append(Rendered(data, mime, width, height, self.paths.relative(written[-1]), labels[index]))
        return Outcome({"count": len(results), "paths": [r.path for r in results]}, results, written=written)

    def _targets(self, output_path: str | None, what: str, suffix: str, count: int) -> list[Path]:
        """The files a generation of `count` writes: output_path's name, or generated/<what>-<time> in the first
        root (another name when a call in the same second took that one); numbered -1, -2... when `count` > 1."""
        extras = [f"-{index}" for index in range(1, count + 1)] if count > 1 else [""]
        if output_path:
            target = Path(self.paths.resolve(output_path, purpose="create"))
            if target.suffix and target.suffix.lower() != suffix:
                raise ToolFailure(ErrorCode.INVALID_INPUT, f"output_path must end with {suffix} (or have no suffix).")
            return [target.with_name(f"{target.stem}{extra}{suffix}") for extra in extras]
        slug = re.sub(r"[^a-z0-9]+", "-", what.lower()).strip("-")[:40] or "generated"
        stem = f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}"
        directory = self._output_dir("generated")
        for again in range(1, 100):
            numbered = f"{stem}-{again}" if again > 1 else stem
            targets = [directory / f"{numbered}{extra}{suffix}" for extra in extras]
            if not any(os.path.lexists(target) for target in targets):
                break
        return targets  # (still taken after 99 tries: _write_new refuses)

    def _refuse_existing(self, output_path: str | None, suffix: str, count: int) -> None:
        """Before the provider is paid: output_path's files must not exist (they are never overwritten)."""
        if output_path:
            taken = [target for target in self._targets(output_path, "", suffix, count) if os.path.lexists(target)]
            if taken:
                shown = self.paths.relative(taken[0])
                raise ToolFailure(
                    ErrorCode.VALIDATION_FAILED,
                    f"{shown!r} already exists: nothing was generated (when an earlier call wrote it, it is there to "
                    "use); choose another output_path (files are never overwritten).",
                )

    def _output_dir(self, directory: str) -> Path:
        target = self.paths.resolve(directory, purpose="create")
        if not target.exists():
            os.makedirs(target, exist_ok=True)
            target = self.paths.resolve(directory, purpose="list")
        if not target.is_dir():
            raise ToolFailure(ErrorCode.INVALID_INPUT, f"{directory!r} is not a directory.")
        return Path(target)

    def _write_new(self, target: Path, data: bytes) -> Path:
        """`data` written as a new file (its real path); VALIDATION_FAILED when one is there."""
        self._output_dir(str(target.parent))  # missing directories are created, each inside the roots
        checked = self.paths.resolve(str(target), purpose="create")
        try:
            with open(checked, "xb") as handle:  # never over an existing file
                handle.write(data)
        except FileExistsError:
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"{self.paths.relative(checked)!r} already exists; choose another output_path (files are never "
                "overwritten).",
            ) from None
        return checked


def _png(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _host_port(url: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    return (parts.hostname or "").lower(), parts.port


async def _sample(ctx: Any, question: str, preview: Rendered) -> tuple[str, str]:
    """Ask the client's own model (MCP sampling) when no vision provider is configured."""
    reason = ctx.sampling_unavailable() if ctx is not None else "no client session"
    if reason:
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            "describe_image needs a vision model: set [sections.media_ops] vision_provider and vision_model (and "
            f"vision_api_key_env), or use a client that offers MCP sampling ({reason}).",
        )
    from mcp_types import CreateMessageRequestParams, ImageContent, SamplingMessage, TextContent

    params = CreateMessageRequestParams(
        messages=[
            SamplingMessage(
                role="user",
                content=[
                    ImageContent(type="image", data=preview.data, mime_type=preview.mime),
                    TextContent(type="text", text=question),
                ],
            )
        ],
        max_tokens=1024,
    )
    result = await ctx.sample(params)
    blocks = result.content if isinstance(result.content, list) else [result.content]
    text = "\n".join(block.text for block in blocks if isinstance(block, TextContent)).strip()
    if not text:
        raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the client's model returned no text for the image.")
    return text, f"sampling:{result.model}"
