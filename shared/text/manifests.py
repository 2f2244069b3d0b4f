"""What a project's manifests declare: its name, version (and where the version comes from) and description.

Read statically: a file is read, never imported, executed or built. A version a build backend computes is followed
where a file holds it (hatch and pdm `path`, setuptools `attr:` and `file:`, flit's module) and read with the
backend's own pattern (`__version__ = "0.6.1"`); one computed at build time (setuptools_scm, hatch-vcs, pdm scm,
poetry-dynamic-versioning) is reported as `version: None` with a `version_source` saying so. The brain names a
project after its manifest (`servers/rag_ops`); get_project_info reports all of it.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Allowed = Callable[[Path], bool]
"""Whether a file may be read (the gateway and rag_ops: `PathGuard.allows`, inside the roots and no secret)."""

MAX_MANIFEST_BYTES = 1_000_000

#: The manifests read, in the order their declarations win (the gateway's order of project types).
MANIFEST_FILES: tuple[str, ...] = (
    "pyproject.toml",
    "setup.cfg",
    "package.json",
    "Cargo.toml",
    "go.mod",
    "pom.xml",
    "composer.json",
    "deno.json",
)

#: hatch's default version pattern (hatchling/version/source/regex.py), which pdm's `file` source shares.
VERSION_PATTERN = r"(?i)^(__version__|VERSION) *= *([\'\"])v?(?P<version>.+?)\2"

#: Build-time version computers, by what names them in pyproject.toml's build requirements or tool tables.
COMPUTED = (
    ("setuptools_scm", "setuptools_scm: from the git tags at build time"),
    ("setuptools-scm", "setuptools_scm: from the git tags at build time"),
    ("hatch-vcs", "hatch-vcs: from the git tags at build time"),
    ("poetry-dynamic-versioning", "poetry-dynamic-versioning: from the git tags at build time"),
    ("versioneer", "versioneer: from the git tags at build time"),
)


@dataclass(frozen=True)
class Declared:
    """What the manifests of one directory declare (None: none says)."""

    name: str | None = None
    version: str | None = None
    version_source: str | None = None  # the file the version was read from, or "dynamic (...)" when none holds it
    description: str | None = None
    manifests: tuple[str, ...] = ()  # the manifest files found and readable


def _anywhere(path: Path) -> bool:
    return True


def declared(directory: Path, allowed: Allowed = _anywhere) -> Declared:
    """The name, version and description the manifests in `directory` declare, the first manifest saying each
    winning (a version with the file it was read from; when none holds one, where the first dynamic one comes from).
    A manifest, or a file it names, that is not `allowed` or lies outside `directory` is not read."""
    found = [directory / name for name in MANIFEST_FILES if (directory / name).is_file() and allowed(directory / name)]
    merged: dict[str, str] = {}
    dynamic: str | None = None
    for path in found:
        meta = manifest_metadata(path, allowed)
        for key in ("name", "description"):
            if key in meta:
                merged.setdefault(key, meta[key])
        if "version" in meta and "version" not in merged:
            merged["version"], merged["version_source"] = meta["version"], meta["version_source"]
        dynamic = dynamic or meta.get("version_source")
    return Declared(
        name=merged.get("name"),
        version=merged.get("version"),
        version_source=merged.get("version_source", dynamic),
        description=merged.get("description"),
        manifests=tuple(path.name for path in found),
    )


def manifest_metadata(path: Path, allowed: Allowed = _anywhere) -> dict[str, str]:
    """Name, version, version_source and description one manifest declares ({} when unreadable or unknown)."""
    text = read_small_text(path)
    reader = _READERS.get(path.name)
    if text is None or reader is None:
        return {}
    try:
        if path.name == "pyproject.toml":
            data = tomllib.loads(text)
            found = _strings(_toml_tables(data))
            if "version" not in found:
                found.update(_pyproject_version(path.parent, data, allowed))
        else:
            found = _strings(reader(text))
    except (tomllib.TOMLDecodeError, ValueError, AttributeError, TypeError):
        return {}
    version = found.get("version", "")
    if version.startswith(("attr:", "file:")):  # setup.cfg's setuptools directives
        found.pop("version")
        kind, _, value = version.partition(":")
        found.update(_setuptools_version(path.parent, kind, value.strip(), {}, allowed))
    elif version and "version_source" not in found:
        found["version_source"] = path.name
    return found


# ---- pyproject.toml's dynamic version --------------------------------------------------------------


def _pyproject_version(directory: Path, data: dict[str, Any], allowed: Allowed) -> dict[str, str]:
    """The version of a pyproject.toml whose [project] declares it dynamic: read from the file its backend names, or
    only where it comes from ({} when nothing says the version is dynamic)."""
    project = _table(data.get("project"))
    dynamic = project.get("dynamic")
    if not (isinstance(dynamic, list) and "version" in dynamic):
        return {}
    tool = _table(data.get("tool"))
    requires = " ".join(str(item) for item in _table(data.get("build-system")).get("requires", []) or [])
    backend = str(_table(data.get("build-system")).get("build-backend") or "")
    for table, file_key, computed_sources in (
        (_table(_table(tool.get("hatch")).get("version")), "path", ("vcs",)),
        (_table(_table(tool.get("pdm")).get("version")), "path", ("scm", "call")),
    ):
        if str(table.get("source", "")) in computed_sources:
            return {"version_source": f"dynamic ({table['source']}: computed at build time)"}
        if isinstance(table.get(file_key), str):
            pattern = table.get("pattern") if isinstance(table.get("pattern"), str) else VERSION_PATTERN
            return _version_from(directory, table[file_key], str(pattern), allowed)
    setuptools = _table(_table(_table(tool.get("setuptools")).get("dynamic")).get("version"))
    if setuptools:
        files = setuptools.get("file")
        kind, value = ("attr", setuptools.get("attr")) if "attr" in setuptools else ("file", files)
        value = value[0] if isinstance(value, list) and value else value
        return _setuptools_version(directory, kind, str(value or ""), _table(tool.get("setuptools")), allowed)
    for marker, why in COMPUTED:
        if marker in requires or marker.replace("-", "_") in tool or marker in tool:
            return {"version_source": f"dynamic ({why})"}
    if backend.startswith("flit_core"):
        module = _table(_table(tool.get("flit")).get("module")).get("name") or str(project.get("name", ""))
        return _module_version(directory, str(module).replace("-", "_"), "__version__", {}, allowed)
    return {"version_source": f"dynamic (pyproject.toml: computed by {backend or 'its build backend'})"}


def _setuptools_version(
    directory: Path, kind: str, value: str, setuptools: dict[str, Any], allowed: Allowed
) -> dict[str, str]:
    """setuptools' `attr: package.module.NAME` (the file read, never imported) or `file: VERSION`."""
    if kind == "file":
        relative = value.split(",")[0].strip()
        text = _read_inside(directory, relative, allowed)
        if text is not None and 0 < len(text.strip()) <= 100:
            return {"version": text.strip(), "version_source": relative}
        return {"version_source": f"dynamic (file {relative}: not readable)"}
    module, _, attribute = value.rpartition(".")
    return _module_version(directory, module, attribute or "__version__", setuptools, allowed)


def _module_version(
    directory: Path, module: str, attribute: str, setuptools: dict[str, Any], allowed: Allowed
) -> dict[str, str]:
    """`attribute = "1.2"` in the file of `module`, found as setuptools and flit find it (also under src/)."""
    package_dir = _table(setuptools.get("package-dir")).get("", "")
    bases = dict.fromkeys([str(package_dir) if isinstance(package_dir, str) else "", "", "src"])
    stem = module.replace(".", "/")
    pattern = rf"^{re.escape(attribute)} *(?::[^=\n]*)?= *([\'\"])v?(?P<version>.+?)\1"
    for base in bases:
        for candidate in (f"{stem}/__init__.py", f"{stem}.py"):
            relative = f"{base}/{candidate}" if base else candidate
            found = _version_from(directory, relative, pattern, allowed)
            if "version" in found:
                return found
    return {"version_source": f"dynamic ({module}.{attribute}: not found as a literal string)"}


def _version_from(directory: Path, relative: str, pattern: str, allowed: Allowed) -> dict[str, str]:
    """The `version` group of `pattern` in `directory/relative` (a file inside `directory` only)."""
    text = _read_inside(directory, relative, allowed)
    if text is None:
        return {"version_source": f"dynamic ({relative}: not readable)"}
    try:
        match = re.search(pattern, text, re.MULTILINE)
    except re.error:
        match = None
    if match is None or "version" not in match.groupdict():
        return {"version_source": f"dynamic ({relative}: no version found in it)"}
    return {"version": match.group("version").strip(), "version_source": relative}


# ---- the manifests' readers ------------------------------------------------------------------------


def _toml_manifest(text: str) -> dict[str, Any]:
    return _toml_tables(tomllib.loads(text))


def _toml_tables(data: dict[str, Any]) -> dict[str, Any]:
    """pyproject.toml's [project] (or [tool.poetry]), Cargo.toml's [package]."""
    return _table(data.get("project") or data.get("package") or _table(data.get("tool")).get("poetry"))


def _json_manifest(text: str) -> dict[str, Any]:
    return _table(json.loads(text))


def _go_mod(text: str) -> dict[str, Any]:
    match = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
    return {"name": match.group(1)} if match else {}


def _setup_cfg(text: str) -> dict[str, Any]:
    found = {key: re.search(rf"^{key}\s*=\s*(.+)$", text, re.MULTILINE) for key in ("name", "version", "description")}
    return {key: match.group(1).strip() for key, match in found.items() if match}


def _pom(text: str) -> dict[str, Any]:
    found = {
        key: re.search(rf"<{tag}>([^<]+)</{tag}>", text)
        for key, tag in (("name", "artifactId"), ("version", "version"))
    }
    return {key: match.group(1).strip() for key, match in found.items() if match}


_READERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "pyproject.toml": _toml_manifest,
    "Cargo.toml": _toml_manifest,
    "package.json": _json_manifest,
    "composer.json": _json_manifest,
    "deno.json": _json_manifest,
    "go.mod": _go_mod,
    "setup.cfg": _setup_cfg,
    "pom.xml": _pom,
}


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(table: dict[str, Any]) -> dict[str, str]:
    return {key: table[key] for key in ("name", "version", "description") if isinstance(table.get(key), str)}


def _read_inside(directory: Path, relative: str, allowed: Allowed) -> str | None:
    """A file a manifest names, read only when its real path lies inside `directory` and it is `allowed`."""
    path = directory / relative
    real = os.path.realpath(path)
    inside = os.path.realpath(directory)
    if os.path.commonpath([real, inside]) != inside or not allowed(Path(real)):
        return None
    return read_small_text(Path(real))


def read_small_text(path: Path) -> str | None:
    """A regular file's text (undecodable bytes replaced), or None when it is missing, no regular file, larger than
    MAX_MANIFEST_BYTES or unreadable."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_MANIFEST_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
