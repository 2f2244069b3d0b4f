"""Project toolchains: a project's virtual environment or `node_modules/.bin`, and the interpreter it needs.

A command run in a project directory uses the project's environment first, as an activated venv, `uv run` or
`npm run` would: its `bin` directory leads the search path. A venv's interpreter usually lives outside the roots
(pyenv, uv-managed Pythons, asdf, Homebrew), where the sandbox shows nothing; it is made visible read-only only once
verified to be an interpreter installation — never because a link inside a root points there:

- the venv's `pyvenv.cfg` names its base interpreter's directory (`home = /…/bin`); the prefix above it must be a
  real directory holding a Python standard library (`lib/pythonX.Y/os.py`) and a `bin/python3*`;
- the prefix must not be `/`, nor contain a root, the home directory or the suite's own state (binding it would
  show them), and it is bound read-only.

Everything here reads files inside the roots (untrusted): `pyvenv.cfg` is read with a size limit, and only its
`home` key is used, to find a directory that is then checked on its own merits.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.guards.paths import PathGuard, is_inside

VENV_MARKER = "pyvenv.cfg"
PREFERRED_VENV_NAMES = (".venv", "venv", "env")
MAX_CONFIG_BYTES = 16 * 1024
_STDLIB = re.compile(r"^python3\.\d+$")
SYSTEM_PREFIXES = ("/usr", "/bin", "/lib", "/lib64", "/sbin")


@dataclass(frozen=True)
class ProjectToolchain:
    """What a command in one directory gets: search-path entries first, and read-only interpreter prefixes."""

    path_entries: tuple[str, ...] = ()
    readable: tuple[Path, ...] = ()
    venv: Path | None = None

    def search_path(self, base: str) -> str:
        """`base` (the fixed search path) with the project's entries in front."""
        return os.pathsep.join([*self.path_entries, base]) if self.path_entries else base


def venv_base_prefix(venv: Path, forbidden: Sequence[Path]) -> Path | None:
    """The verified installation prefix of a venv's base interpreter, when it lies outside the system directories
    and must be made visible (None: nothing to bind, or it cannot be trusted)."""
    home = _pyvenv_home(venv / VENV_MARKER)
    if home is None:
        return None
    real_home = os.path.realpath(home)
    prefix = os.path.dirname(real_home) if os.path.basename(real_home) == "bin" else real_home
    if any(is_inside(prefix, system) for system in SYSTEM_PREFIXES):
        return None  # visible in every sandbox already
    if not is_python_installation(Path(prefix)):
        return None
    if prefix == "/" or any(is_inside(os.path.realpath(os.fspath(p)), prefix) for p in forbidden):
        return None
    return Path(prefix)


def is_python_installation(prefix: Path) -> bool:
    """A real directory holding a Python standard library and an interpreter (`lib/python3.X/os.py`, `bin/python3*`)."""
    if os.path.islink(prefix) or not prefix.is_dir():
        return False
    try:
        libraries = [entry for entry in os.listdir(prefix / "lib") if _STDLIB.match(entry)]
        interpreters = [entry for entry in os.listdir(prefix / "bin") if entry.startswith("python3")]
    except OSError:
        return False
    return bool(interpreters) and any((prefix / "lib" / name / "os.py").is_file() for name in libraries)


def find_venv(directory: Path, guard: PathGuard) -> Path | None:
    """The project venv for a command in `directory`: the nearest directory (this one, then its parents up to its
    root) holding a venv — `.venv`, `venv`, or any child directory with a `pyvenv.cfg` — that lies inside the roots
    and is not a symbolic link."""
    root = guard.root_of(os.path.realpath(directory))
    if root is None:
        return None
    current = Path(os.path.realpath(directory))
    while True:
        found = _venv_in(current, guard)
        if found is not None:
            return found
        if current == root or not is_inside(str(current.parent), str(root)):
            return None
        current = current.parent


def find_node_bin(directory: Path, guard: PathGuard) -> Path | None:
    """The nearest `node_modules/.bin` at or above `directory`, inside the roots."""
    root = guard.root_of(os.path.realpath(directory))
    if root is None:
        return None
    current = Path(os.path.realpath(directory))
    while True:
        candidate = current / "node_modules" / ".bin"
        if candidate.is_dir() and not os.path.islink(candidate) and guard.contains(candidate):
            return candidate
        if current == root or not is_inside(str(current.parent), str(root)):
            return None
        current = current.parent


def project_toolchain(directory: Path, guard: PathGuard, forbidden: Sequence[Path]) -> ProjectToolchain:
    """The toolchain a command in `directory` gets (see the module docstring). `forbidden`: what a bound interpreter
    prefix may not contain (the roots, the home directory, the suite's own state)."""
    entries: list[str] = []
    readable: list[Path] = []
    venv = find_venv(directory, guard)
    if venv is not None:
        entries.append(str(venv / "bin"))
        prefix = venv_base_prefix(venv, forbidden)
        if prefix is not None and not guard.contains(prefix):
            readable.append(prefix)
    node_bin = find_node_bin(directory, guard)
    if node_bin is not None:
        entries.append(str(node_bin))
    return ProjectToolchain(path_entries=tuple(entries), readable=tuple(readable), venv=venv)


def forbidden_prefixes(guard: PathGuard) -> tuple[Path, ...]:
    """What an interpreter prefix made visible must not contain: the roots, the home directory, the own state."""
    return (*guard.roots, Path.home(), *guard.private)


def _venv_in(directory: Path, guard: PathGuard) -> Path | None:
    for name in PREFERRED_VENV_NAMES:
        candidate = directory / name
        if _is_venv(candidate, guard):
            return candidate
    try:
        children = sorted(
            (entry for entry in os.scandir(directory) if entry.is_dir(follow_symlinks=False)), key=lambda e: e.name
        )
    except OSError:
        return None
    for entry in children[:200]:  # bounded: a directory with thousands of children is not scanned whole
        candidate = Path(entry.path)
        if entry.name not in PREFERRED_VENV_NAMES and _is_venv(candidate, guard):
            return candidate
    return None


def _is_venv(candidate: Path, guard: PathGuard) -> bool:
    if os.path.islink(candidate) or not (candidate / VENV_MARKER).is_file() or not (candidate / "bin").is_dir():
        return False
    return guard.contains(candidate) and not guard.is_denied(os.path.realpath(candidate))


def _pyvenv_home(config: Path) -> str | None:
    """The `home` key of a pyvenv.cfg (read bounded; None when absent or unreadable)."""
    try:
        with open(config, "rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip().lower() == "home" and value.strip():
            home = value.strip()
            return home if os.path.isabs(home) else None
    return None
