"""`mcp-sections doctor`: can each section run on this machine, and if not, what to install.

Checks are cheap and import nothing heavy: Python modules are looked up (`importlib.util.find_spec`), programs
found on PATH (or at their known Debian paths), shared libraries found by name, and two probes actually run:
bubblewrap creating its namespaces (shell_ops' sandbox) and, when rag_ops is configured for Neo4j, a Bolt
connection with a short timeout. A *required* miss makes the section unusable; an *optional* one degrades it
(a slower engine, a feature off) and is shown as a hint.
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from mcp_sections.shared.install_hints import install_hint
from mcp_sections.shared.sandbox import sandbox_problem

Status = Literal["ready", "degraded", "unavailable"]


@dataclass(frozen=True)
class Requirement:
    """One thing a section needs; `probe` returns None when satisfied, else what is wrong."""

    what: str
    probe: Callable[[], str | None]
    fix: str
    optional: bool = False


@dataclass
class SectionReport:
    section: str
    status: Status = "ready"
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"section": self.section, "status": self.status, "problems": self.problems, "hints": self.hints}


def module(name: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        return None if found else f"Python module {name!r} is not installed"

    return probe


def program(name: str, *known_paths: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        if shutil.which(name) or any(os.access(path, os.X_OK) for path in known_paths):
            return None
        return f"program {name!r} not found"

    return probe


def library(name: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        return None if ctypes.util.find_library(name) else f"shared library lib{name} not found"

    return probe


def neo4j_reachable() -> str | None:
    """Only when rag_ops is configured for Neo4j: the backend's own connection (credentials from the environment
    or NEO4J_PASSWORD_FILE) reaches the Bolt server."""
    if os.environ.get("MCP_SECTIONS_RAG_OPS_BACKEND", "sqlite") != "neo4j":
        return None
    if not os.environ.get("NEO4J_URI"):
        return "backend = neo4j but NEO4J_URI is not set"
    if importlib.util.find_spec("neo4j") is None:
        return "backend = neo4j but the neo4j driver is not installed"
    from mcp_sections.shared.brain.neo4j_backend import Neo4jBrainStore
    from mcp_sections.shared.errors import ToolFailure

    try:
        Neo4jBrainStore.from_env().close()
    except ToolFailure as failure:
        return failure.message
    return None


def ocr_models_packaged() -> str | None:
    """RapidOCR's default models come inside its wheel; a missing file would mean a download at run time."""
    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        return "Python module 'rapidocr' is not installed"
    models = [os.path.join(location, "models") for location in spec.submodule_search_locations]
    if not any(os.path.isdir(path) and any(name.endswith(".onnx") for name in os.listdir(path)) for path in models):
        return "rapidocr's packaged OCR models are missing"
    return None


def software_opengl() -> str | None:
    """pyrender (the media extra's pyrender2) and an EGL (Mesa's software renderer) to draw 3D assets offscreen."""
    if importlib.util.find_spec("pyrender") is None:
        return f"pyrender is not installed; {install_hint('media')}"
    if ctypes.util.find_library("EGL") is None and ctypes.util.find_library("OSMesa") is None:
        return "no EGL or OSMesa library (Debian: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri)"
    return None


def packaged_model() -> str | None:
    """The default embedding model's files, from the package the memory extra brings."""
    from mcp_sections.shared.embeddings.embedder import bundled_model_dir

    return None if bundled_model_dir() is not None else "the packaged embedding model is not installed"


def browser_ready() -> str | None:
    """A Chromium that Playwright can drive (the system's, or Playwright's own)."""
    try:
        from mcp_sections.servers.web_ops.browser import browser_problem
    except ImportError as exc:  # pragma: no cover - the section's own modules are always importable
        return str(exc)
    return browser_problem()


def embeddings(extra: str) -> list[Requirement]:
    """What the default embedding model needs (no torch: it runs on ONNX Runtime), fixed by `extra`."""
    return [
        Requirement(name, module(name), install_hint(extra))
        for name in ("numpy", "onnxruntime", "tokenizers", "onnx", "safetensors")
    ] + [Requirement("the packaged embedding model", packaged_model, install_hint(extra))]


REQUIREMENTS: dict[str, list[Requirement]] = {
    "calculator": [Requirement("sympy", module("sympy"), install_hint("calculator"))],
    "todo": [],
    "file_ops": [
        Requirement("ripgrep (fast search_files engine)", program("rg"), "apt-get install ripgrep", optional=True),
        Requirement(
            "OS sandbox (install_package): bubblewrap, or Seatbelt on macOS",
            sandbox_problem,
            "apt-get install bubblewrap (or sandbox = 'off')",
            optional=True,
        ),
    ],
    "shell_ops": [
        Requirement(
            "OS sandbox: bubblewrap, or Seatbelt on macOS",
            sandbox_problem,
            "apt-get install bubblewrap (or sandbox = 'off')",
        ),
        Requirement("git", program("git"), "apt-get install git", optional=True),
    ],
    "memory": embeddings("memory"),
    "rag_ops": [
        *embeddings("rag"),
        Requirement("tree-sitter grammars", module("tree_sitter"), install_hint("rag")),
        Requirement("Neo4j (backend = neo4j)", neo4j_reachable, "start Neo4j 5 and set NEO4J_URI/USERNAME/PASSWORD"),
    ],
    "orchestration": [],
    "media_ops": [
        Requirement("Pillow", module("PIL"), install_hint("media")),
        Requirement("OCR (rapidocr and its packaged models)", ocr_models_packaged, install_hint("media")),
        Requirement("onnxruntime", module("onnxruntime"), install_hint("media")),
        Requirement(
            "3D rendering (trimesh, pyrender, EGL)", software_opengl, "then retry render_3d_asset", optional=True
        ),
    ],
    "web_ops": [
        Requirement("playwright", module("playwright"), install_hint("web")),
        Requirement("trafilatura (main-content extraction)", module("trafilatura"), install_hint("web")),
        Requirement("html-to-markdown", module("html_to_markdown"), install_hint("web")),
        Requirement("protego (robots.txt)", module("protego"), install_hint("web")),
        Requirement(
            "Chromium (pages that need JavaScript)",
            browser_ready,
            "apt-get install chromium (or set [sections.web_ops] browser_executable)",
            optional=True,
        ),
        Requirement("pypdf (PDF text)", module("pypdf"), install_hint("web"), optional=True),
        Requirement(
            "ddgs (search without a key)",
            module("ddgs"),
            f"{install_hint('web')}; or configure SearXNG/Brave",
            optional=True,
        ),
    ],
}


def check_section(section_id: str) -> SectionReport:
    report = SectionReport(section_id)
    for requirement in REQUIREMENTS.get(section_id, []):
        problem = requirement.probe()
        if problem is None:
            continue
        line = f"{problem} — {requirement.fix}"
        if requirement.optional:
            report.hints.append(line)
            if report.status == "ready":
                report.status = "degraded"
        else:
            report.problems.append(line)
            report.status = "unavailable"
    return report


def check_all(section_ids: list[str]) -> list[SectionReport]:
    return [check_section(section_id) for section_id in section_ids]


def render(reports: list[SectionReport]) -> str:
    lines = [f"{'SECTION':<14} {'STATUS':<12} WHAT TO DO"]
    for report in reports:
        todo = report.problems + report.hints
        lines.append(f"{report.section:<14} {report.status:<12} {todo[0] if todo else '-'}")
        lines.extend(f"{'':<27} {item}" for item in todo[1:])
    return "\n".join(lines)
