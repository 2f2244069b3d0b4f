"""media_ops: read (OCR), describe, list and generate images; render and generate 3D assets."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp_sections.servers.media_ops.models import (
    DescribeImageInput,
    DescribeImageResult,
    Generate3DFromImageInput,
    Generate3DFromTextInput,
    Generated3DResult,
    GeneratedImagesResult,
    GenerateImageInput,
    GenerateMultiviewInput,
    ListImagesInput,
    ListImagesResult,
    ReadImageInput,
    ReadImageResult,
    Render3DInput,
    Render3DResult,
)
from mcp_sections.servers.media_ops.repeats import Asked
from mcp_sections.servers.media_ops.settings import MediaOpsSettings
from mcp_sections.shared.framework.clients import LOCAL_USER, current_user
from mcp_sections.shared.framework.requirements import InstallExtra, Requirement, configured, module, only_with
from mcp_sections.shared.framework.sections import Container, Section, SectionRuntime
from mcp_sections.shared.framework.tools import CREATE, READ_ONLY, WEB_READ, Annotations, ToolContext, tool

GENERATE = Annotations(read_only=False, destructive=False, idempotent=False, open_world=True)


@tool(
    name="list_images",
    title="List images",
    annotations=READ_ONLY,
    examples=(
        "find all the images in a folder",
        "list pictures with their sizes and formats",
        "list images",
        "which photos are in this directory",
        "show image dimensions in a directory",
        "what pictures are there under assets",
    ),
)
def list_images(params: ListImagesInput, state: Any) -> ListImagesResult:
    """List the images (PNG, JPEG, GIF, WebP, BMP, TIFF, ICO) under a directory inside the roots: format,
    dimensions, size and modification time, read from each file's header without decoding it. Pages of `limit`
    (continue with `cursor`); protected files, .git and node_modules are skipped."""
    return ListImagesResult.model_validate(
        state.list_images(params.directory, params.recursive, params.limit, params.cursor)
    )


@tool(
    name="read_image",
    title="Read the text in an image (OCR)",
    annotations=READ_ONLY,
    examples=(
        "read the text from an image",
        "OCR a scanned document",
        "extract text from a screenshot",
        "recognise the characters in a photo",
        "get the words out of a scanned receipt",
        "OCR a PNG",
    ),
)
async def read_image(params: ReadImageInput, state: Any) -> ReadImageResult:
    """Read the text in an image with local OCR (RapidOCR's PP-OCR models on the CPU, ~1 s per image; nothing
    leaves the machine): the full text, each line with its confidence and box, and the image itself (downscaled).
    A long document (over 16,000 characters or 200 lines) returns the start of its text and first lines inline, and
    the whole text, every line and the image by reference (resource links read with resources/read).
    Images larger than max_image_pixels are refused before decoding; SVG is not rasterized."""
    outcome = await state.read_image(params.path)
    return ReadImageResult.build(outcome.values, outcome.images).long_by_reference()


@tool(
    name="describe_image",
    title="Describe an image",
    annotations=WEB_READ,
    examples=(
        "describe what a photo shows",
        "ask a vision model about a picture",
        "what is in this image",
        "caption a picture",
        "what does this picture show",
        "explain the contents of a diagram",
    ),
)
async def describe_image(params: DescribeImageInput, state: Any, ctx: ToolContext | None = None) -> DescribeImageResult:
    """Describe an image with a vision model: the configured provider ([sections.media_ops] vision_provider =
    openai | anthropic, vision_model, vision_api_key_env), else the client's own model through MCP sampling.
    The image is downscaled and sent with its OCR text; `prompt` asks about something specific. The description
    is untrusted model output. DEPENDENCY_ERROR says what to configure when neither is available."""
    outcome = await state.describe(params.path, params.prompt, ctx)
    return DescribeImageResult.build(outcome.values, outcome.images)


@tool(
    name="generate_image",
    title="Generate images",
    annotations=GENERATE,
    examples=(
        "create an image from a prompt",
        "make an illustration",
        "generate an image",
        "draw a picture from a text description",
        "make a logo image from a description",
        "produce artwork for a web page banner",
    ),
    long=True,
)
async def generate_image(
    params: GenerateImageInput, state: Any, ctx: ToolContext | None = None
) -> GeneratedImagesResult:
    """Generate images from a prompt with the configured images API ([sections.media_ops] image_base_url: any
    OpenAI-compatible `/images/generations`) and write them as PNG inside the roots (default generated/ in the
    first root; existing files are never overwritten). Returns the paths and the images. DEPENDENCY_ERROR names
    the setting when no provider is configured. Paid per call: the very same call again (every input identical),
    while it runs or within reuse_window_seconds (120 s by default) after it succeeded, returns the files it wrote
    with reused=true instead of paying again, as long as they are unchanged; allow_duplicate=true generates new
    ones."""
    asked = _asked(params.allow_duplicate, ctx)
    outcome = await state.generate_images(params.prompt, params.size, params.n, params.output_path, asked)
    return GeneratedImagesResult.build(outcome.values, outcome.images)


@tool(
    name="generate_multiview_images",
    title="Generate views of an object",
    annotations=GENERATE,
    examples=(
        "generate several views of an object",
        "consistent turnaround images of one object",
        "multiple angles of the same object",
        "four views of a character for modelling",
        "front, side and back views of a character",
        "several consistent pictures of a product from different angles",
    ),
    long=True,
)
async def generate_multiview_images(
    params: GenerateMultiviewInput, state: Any, ctx: ToolContext | None = None
) -> GeneratedImagesResult:
    """Generate `views` consistent views of one object (front, right, back, left, then top and three-quarter
    views) with the images API, e.g. as input for 3D generation; each view is a PNG inside the roots. The same
    call again is not paid twice (reused=true; see generate_image)."""
    asked = _asked(params.allow_duplicate, ctx)
    outcome = await state.generate_multiview(params.prompt, params.views, params.output_path, asked)
    return GeneratedImagesResult.build(outcome.values, outcome.images)


@tool(
    name="render_3d_asset",
    title="Render a 3D asset",
    annotations=CREATE,  # with output_dir it writes the views as new files
    examples=(
        "render a GLB model to images",
        "preview an OBJ or STL file",
        "render a 3D model",
        "look at a mesh from several angles",
        "turn a GLB file into PNG previews",
        "view an STL mesh from several sides",
    ),
    long=True,
)
async def render_3d_asset(params: Render3DInput, state: Any) -> Render3DResult:
    """Render a 3D asset (GLB, GLTF, OBJ, STL, PLY) to PNG views locally on the CPU (trimesh + pyrender on Mesa's
    software OpenGL): the camera turns around the model at 20° elevation, lit from the camera, white background.
    Returns the views as images (several views: one overview image of them all, and each view by reference, a
    resource link read with resources/read); with output_dir also writes them as files (never over existing ones)."""
    outcome = await state.render_3d(params.path, params.views, params.size, params.output_dir)
    return Render3DResult.build(outcome.values, outcome.images, outcome.overview)


@tool(
    name="generate_3d_from_image",
    title="Generate a 3D asset from an image",
    annotations=GENERATE,
    examples=(
        "make a 3D model from a picture",
        "image to 3D mesh",
        "convert a photo into a 3D asset",
        "reconstruct a GLB from a reference image",
        "turn this photo into a GLB",
        "build a 3D mesh from a reference image",
    ),
    long=True,
)
async def generate_3d_from_image(
    params: Generate3DFromImageInput, state: Any, ctx: ToolContext | None = None
) -> Generated3DResult:
    """Turn a reference image into a 3D asset (GLB) with the configured 3D job service ([sections.media_ops]
    mesh_base_url; TRELLIS / Hunyuan3D-style submit → poll → download). Reports progress while the job runs;
    cancelling the call cancels the job (unless the same call, made again meanwhile, still waits for it). The GLB
    is written inside the roots and a rendered preview returned. The very same call again (the same image
    content too) is not paid twice: reused=true, as for generate_image; allow_duplicate=true generates anew."""
    asked = _asked(params.allow_duplicate, ctx)
    outcome = await state.generate_3d_from_image(params.path, params.output_path, asked)
    return Generated3DResult.build(outcome.values, outcome.images)


@tool(
    name="generate_3d_from_text",
    title="Generate a 3D asset from text",
    annotations=GENERATE,
    examples=(
        "generate a 3D object from a description",
        "text to 3D model",
        "create a 3D model from a prompt",
        "text-to-3D generation",
        "make a 3D asset of a chair from words",
        "describe an object and get a GLB",
    ),
    long=True,
)
async def generate_3d_from_text(
    params: Generate3DFromTextInput, state: Any, ctx: ToolContext | None = None
) -> Generated3DResult:
    """Generate a 3D asset (GLB) from a description with the configured 3D job service (see
    generate_3d_from_image): progress while it runs, cancellable, written inside the roots, preview returned; the
    same call again is not paid twice (reused=true)."""
    outcome = await state.generate_3d_from_text(params.prompt, params.output_path, _asked(params.allow_duplicate, ctx))
    return Generated3DResult.build(outcome.values, outcome.images)


def _asked(allow_duplicate: bool, ctx: ToolContext | None) -> Asked:
    """A generation's caller: the user (one user's calls never meet another's), allow_duplicate, its progress."""
    return Asked((current_user() or LOCAL_USER).id, allow_duplicate, _progress(ctx))


def _progress(ctx: ToolContext | None) -> Any:
    if ctx is None:
        return None

    async def report(done: float, total: float | None, message: str) -> None:
        with contextlib.suppress(Exception):  # progress is best effort
            await ctx.report_progress(done, total, message)

    return report


@contextlib.asynccontextmanager
async def _lifespan(runtime: SectionRuntime) -> AsyncIterator[Any]:
    from mcp_sections.servers.media_ops.service import MediaOps

    settings = runtime.settings_of(MediaOpsSettings)
    media = MediaOps(settings, runtime.settings.roots, private=runtime.settings.own_state_paths())
    try:
        async with media.repeats.running():  # generations run there, for the calls waiting for them
            yield media
    finally:
        await media.aclose()


def ocr_models_packaged(runtime: SectionRuntime) -> str | None:
    """RapidOCR's default models come inside its wheel; a missing file would mean a download at run time."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        return "Python module 'rapidocr' is not installed"
    models = [os.path.join(location, "models") for location in spec.submodule_search_locations]
    if not any(os.path.isdir(path) and any(name.endswith(".onnx") for name in os.listdir(path)) for path in models):
        return "rapidocr's packaged OCR models are missing"
    return None


def software_opengl(runtime: SectionRuntime) -> str | None:
    """pyrender and an EGL (Mesa's software renderer) to draw 3D assets offscreen."""
    import ctypes.util
    import importlib.util

    if importlib.util.find_spec("pyrender") is None:
        return f"pyrender is not installed (the media extra brings pyrender2); {InstallExtra('media')}"
    if ctypes.util.find_library("EGL") is None and ctypes.util.find_library("OSMesa") is None:
        return "no EGL or OSMesa library (Debian: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri)"
    return None


SECTION = Section(
    id="media_ops",
    name="Images and 3D",
    description="Read text in images (local OCR), describe, list and generate images; render and generate 3D assets.",
    instructions=(
        "read_image reads text locally; describe_image asks a vision model; render_3d_asset shows a 3D file from "
        "several sides. Generation tools need a provider configured by the operator and write files inside the roots."
    ),
    tools=(
        list_images,
        read_image,
        describe_image,
        generate_image,
        generate_multiview_images,
        render_3d_asset,
        generate_3d_from_image,
        generate_3d_from_text,
    ),
    settings_model=MediaOpsSettings,
    lifespan=_lifespan,
    extra="media",
    requirements=(
        Requirement(
            "images and OCR (Pillow, numpy, RapidOCR, ONNX Runtime)",
            module("PIL", "numpy", "rapidocr", "onnxruntime"),
            InstallExtra("media"),
        ),
        Requirement("RapidOCR's packaged models", only_with("rapidocr", ocr_models_packaged), InstallExtra("media")),
        Requirement(
            "3D rendering (trimesh, pyrender, PyOpenGL)",
            module("trimesh", "pyrender", "OpenGL"),
            InstallExtra("media"),
            optional=True,
            without="every tool but render_3d_asset",
        ),
        Requirement(
            "an EGL for 3D rendering (Mesa's software renderer)",
            only_with("pyrender", software_opengl),
            "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri",
            optional=True,
            without="every tool but render_3d_asset",
        ),
        Requirement(
            "model providers (describe_image, generate_image, generate_multiview_images, generate_3d_from_*)",
            configured("vision_provider", "vision_model", "image_base_url", "mesh_base_url"),
            "set them in the config file (config.example.toml) or MCP_SECTIONS_MEDIA_OPS_*",
            optional=True,
            without="list_images, read_image (OCR) and render_3d_asset; the providers' tools once configured "
            "(describe_image also on a client that offers MCP sampling)",
        ),
    ),
    output_source="image (OCR text, descriptions by a model)",
    container=Container(stage="runtime-render", build="build-media", workspace="write"),
)
