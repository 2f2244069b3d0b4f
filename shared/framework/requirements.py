"""What a section needs on the machine, declared on its `Section` and checked by `mcp-sections doctor`.

Probes are cheap and import nothing heavy: Python modules are looked up (`importlib.util.find_spec`), programs found
on PATH (or at known paths), shared libraries found by name. A probe receives the section's runtime (its settings,
config file included) and returns None when satisfied, else what is wrong. A *required* miss makes the section
unusable: its first call fails. An *optional* one degrades it, and `without` says what the section still does then
("text search only"): doctor's verdict is what the section's first calls do (tests/doctor/test_first_calls.py).
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
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
    to run or set (doctor shows each fix once per section, after every miss it fixes). An optional need states
    `without`: what the section still does when it is missing."""

    what: str
    probe: Probe
    fix: str | InstallExtra
    optional: bool = False
    without: str = ""


class MissingModules(str):
    """A probe's answer naming the Python modules that are not installed (doctor lists those of one fix at once)."""

    names: tuple[str, ...]

    def __new__(cls, names: Iterable[str]) -> MissingModules:
        listed = tuple(names)
        quoted = ", ".join(repr(name) for name in listed)
        said = f"Python module {quoted} is" if len(listed) == 1 else f"Python modules {quoted} are"
        text = super().__new__(cls, f"{said} not installed")
        text.names = listed
        return text


def installed(name: str) -> bool:
    """Whether the Python module `name` can be imported (looked up, not imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def module(*names: str) -> Probe:
    """Python modules that must be importable (every one a tool of the section imports, `regex` as much as `lxml`)."""

    def probe(runtime: Any = None) -> str | None:
        missing = [name for name in names if not installed(name)]
        return MissingModules(missing) if missing else None

    return probe


def configured(*names: str) -> Probe:
    """Settings of the section that must be set, in its `[sections.<id>]` table or its environment (a provider's
    endpoint, a model's name)."""

    def probe(runtime: Any) -> str | None:
        settings = runtime.section_settings
        unset = [name for name in names if not getattr(settings, name, None)]
        if not unset:
            return None
        return f"[sections.{runtime.section_id}] {', '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set"

    return probe


def only_with(name: str, probe: Probe) -> Probe:
    """`probe`, asked only once the Python module `name` is installed (the requirement naming `name` says how to
    install it; this one then checks what comes after, such as a browser for playwright)."""

    def checked(runtime: Any = None) -> str | None:
        return probe(runtime) if installed(name) else None

    return checked


def degrading(requirements: Iterable[Requirement], without: str) -> tuple[Requirement, ...]:
    """The same needs made optional: without them the section still does `without` (memory: text search only)."""
    return tuple(replace(requirement, optional=True, without=without) for requirement in requirements)


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
