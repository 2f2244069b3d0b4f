"""What a section needs on the machine, declared on its `Section` and checked by `mcp-sections doctor`.

Probes are cheap and import nothing heavy: Python modules are looked up (`importlib.util.find_spec`), programs found
on PATH (or at known paths), shared libraries found by name. A probe receives the section's runtime (its settings,
config file included) and returns None when satisfied, else what is wrong. A *required* miss makes the section
unusable; an *optional* one degrades it (a slower engine, a feature off) and is shown as a hint.
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: A probe of one requirement: given the section's runtime (`SectionRuntime`: its settings, config file included),
#: None when satisfied, else what is wrong. (Typed loosely: sections are declared with their requirements.)
Probe = Callable[[Any], str | None]


@dataclass(frozen=True)
class InstallExtra:
    """A fix that installs one of the package's extras, worded when shown for the way this copy was installed
    (`shared.ground.install_hints`: pip, uv, pipx, uv tool, uvx), not when the section is declared."""

    extra: str

    def __str__(self) -> str:
        from mcp_sections.shared.ground.install_hints import install_hint

        return install_hint(self.extra)


@dataclass(frozen=True)
class Requirement:
    """One thing a section needs; `probe(runtime)` returns None when satisfied, else what is wrong; `fix` says what
    to run or set."""

    what: str
    probe: Probe
    fix: str | InstallExtra
    optional: bool = False


def module(name: str) -> Probe:
    """A Python module that must be importable."""

    def probe(runtime: Any = None) -> str | None:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        return None if found else f"Python module {name!r} is not installed"

    return probe


def program(name: str, *known_paths: str) -> Probe:
    """A program on PATH (or at one of `known_paths`)."""

    def probe(runtime: Any = None) -> str | None:
        if shutil.which(name) or any(os.access(path, os.X_OK) for path in known_paths):
            return None
        return f"program {name!r} not found"

    return probe


def library(name: str) -> Probe:
    """A shared library found by the dynamic linker's name (`EGL` for libEGL)."""

    def probe(runtime: Any = None) -> str | None:
        return None if ctypes.util.find_library(name) else f"shared library lib{name} not found"

    return probe


def no_sandbox(runtime: Any = None) -> str | None:
    """Why programs cannot be confined here (bubblewrap on Linux, Seatbelt on macOS), or None."""
    from mcp_sections.shared.confinement.sandbox import sandbox_problem

    return sandbox_problem()
