"""3D assets (GLB/GLTF/OBJ/STL/PLY) rendered to PNG views on the CPU: trimesh loads, pyrender (the `pyrender2`
distribution, from the media extra) draws through Mesa's software EGL (or OSMesa). The camera orbits the model's
bounding sphere; each view is lit from the camera."""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_sections.servers.media_ops import images
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint

MESH_SUFFIXES = frozenset({".glb", ".gltf", ".obj", ".stl", ".ply"})
MAX_REFERENCED_BYTES = 200_000_000
MESA_PACKAGES = "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri"  # Debian/Ubuntu: Mesa's software EGL
_lock = threading.Lock()  # one OpenGL context at a time in this process


@dataclass(frozen=True)
class View:
    azimuth_degrees: float
    elevation_degrees: float
    image: Any  # PIL image


class _WithoutScipy(logging.Filter):
    """Drops trimesh's "unable to use sparse matrix, falling back!" warning when the cause is only that SciPy is not
    installed (it is not in the media extra): trimesh then sums the normals in a loop, with the same result, and the
    warning printed a full traceback to the section's log on every render."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        # trimesh re-raises the import error of its lazy `scipy.sparse` without the module's name: read its message
        return not (isinstance(error, ImportError) and "No module named 'scipy" in str(error))


@functools.cache
def _quiet_without_scipy() -> None:
    for name in ("trimesh", "trimesh.util"):  # most of trimesh logs through trimesh.util's logger
        logging.getLogger(name).addFilter(_WithoutScipy())


def load_mesh(path: Path, shown: str, guard: PathGuard) -> Any:
    """A trimesh Scene of the asset; INVALID_INPUT for a format or file trimesh cannot read. Files the asset
    refers to (glTF buffers, OBJ materials and textures) are read only inside the asset's directory and through the
    path guard: no protected file, no symbolic link out of the roots."""
    import trimesh

    _quiet_without_scipy()

    class GuardedResolver(trimesh.resolvers.FilePathResolver):
        def get(self, name: str) -> bytes:
            target = self.absolute(name.strip())  # trimesh refuses names that leave the asset's directory
            checked = guard.resolve(str(target), purpose="read")
            with open(checked, "rb") as handle:
                return handle.read(MAX_REFERENCED_BYTES + 1)[:MAX_REFERENCED_BYTES]

    if path.suffix.lower() not in MESH_SUFFIXES:
        raise ToolFailure(
            ErrorCode.INVALID_INPUT,
            f"{shown!r} is not a 3D asset this tool renders ({', '.join(sorted(MESH_SUFFIXES))}).",
        )
    try:
        loaded = trimesh.load(str(path), force="scene", resolver=GuardedResolver(str(path)))
    except ToolFailure as failure:
        raise ToolFailure(failure.code, f"{shown!r} refers to a file it may not read: {failure.message}") from None
    except Exception as exc:  # trimesh raises many types for a broken file
        raise ToolFailure(ErrorCode.INVALID_INPUT, f"{shown!r} could not be read as a 3D asset: {exc}"[:400]) from None
    if not getattr(loaded, "geometry", None):
        raise ToolFailure(ErrorCode.INVALID_INPUT, f"{shown!r} holds no geometry to render.")
    _decode_textures(loaded, shown)
    return loaded


# The images trimesh's materials hold: SimpleMaterial's `image`, PBRMaterial's textures
TEXTURES = (
    "image",
    "baseColorTexture",
    "metallicRoughnessTexture",
    "normalTexture",
    "occlusionTexture",
    "emissiveTexture",
)


def _decode_textures(scene: Any, shown: str) -> None:
    """Decodes the images the asset's materials use now (trimesh opens them lazily): a damaged or truncated texture
    is INVALID_INPUT naming the asset, not an error in the middle of the render."""
    for geometry in scene.geometry.values():
        material = getattr(getattr(geometry, "visual", None), "material", None)
        for name in TEXTURES:
            texture = getattr(material, name, None)
            if texture is None or not hasattr(texture, "load"):
                continue
            try:
                texture.load()
            except images.DECODING_ERRORS as exc:
                if not images.is_damage(exc):
                    raise
                reason = str(exc).strip() or type(exc).__name__
                raise images.damaged(f"a texture ({name}) of {shown!r}", None, reason, texture.format) from None


def render_views(scene: Any, views: int, size: int) -> list[View]:
    """`views` images of `size`×`size`, the camera turning around the model at 20° elevation."""
    import numpy as np
    from PIL import Image

    pyrender = _pyrender()

    centroid = np.asarray(scene.centroid, dtype=float)
    radius = float(scene.scale) / 2 or 1.0
    distance = radius / math.sin(math.radians(22.5)) * 1.1
    elevation = 20.0
    with _lock:
        renderer = _offscreen(pyrender, size)
        try:
            rendered = []
            for index in range(views):
                azimuth = 360.0 * index / views
                world = pyrender.Scene.from_trimesh_scene(
                    scene, ambient_light=[0.25, 0.25, 0.25], bg_color=[1.0, 1.0, 1.0, 1.0]
                )
                pose = _camera_pose(centroid, distance, azimuth, elevation)
                world.add(pyrender.PerspectiveCamera(yfov=math.radians(45), znear=distance / 100), pose=pose)
                world.add(pyrender.DirectionalLight(intensity=3.5), pose=pose)
                color, _ = renderer.render(world)
                rendered.append(View(azimuth, elevation, Image.fromarray(color)))
            return rendered
        finally:
            renderer.delete()


def _pyrender() -> Any:
    """pyrender on EGL (unless PYOPENGL_PLATFORM says otherwise); DEPENDENCY_ERROR naming the fix when missing."""
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    try:
        import pyrender
    except ModuleNotFoundError as exc:  # pyrender or one of its Python packages
        raise ToolFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"render_3d_asset needs the Python package {exc.name!r} (the media extra's renderer); "
            f"{install_hint('media')}.",
        ) from None
    except Exception as exc:  # PyOpenGL found no library for its platform
        raise _no_opengl(exc) from None
    return pyrender


def _offscreen(pyrender: Any, size: int) -> Any:
    try:
        return pyrender.OffscreenRenderer(size, size)
    except Exception as exc:  # no EGL/OSMesa library, or it cannot make a context
        raise _no_opengl(exc) from None


def _no_opengl(exc: Exception) -> ToolFailure:
    platform = os.environ.get("PYOPENGL_PLATFORM", "egl")
    return ToolFailure(
        ErrorCode.DEPENDENCY_ERROR,
        f"render_3d_asset found no OpenGL to draw with (PYOPENGL_PLATFORM={platform}: {str(exc)[:200] or type(exc)}); "
        f"install Mesa's software EGL: {MESA_PACKAGES} (as root), then retry.",
    )


def _camera_pose(target: Any, distance: float, azimuth: float, elevation: float) -> Any:
    """A camera at (azimuth, elevation) on a sphere around `target`, looking at it (OpenGL: -z forward, +y up)."""
    import numpy as np

    a, e = math.radians(azimuth), math.radians(elevation)
    eye = target + distance * np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])
    forward = target - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    pose = np.eye(4)
    pose[:3, 0], pose[:3, 1], pose[:3, 2], pose[:3, 3] = right, up, -forward, eye
    return pose
