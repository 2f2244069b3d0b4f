"""Project toolchains: a project's virtual environment or `node_modules/.bin`, and the interpreters they need.

A command run in a project directory uses the project's environment first, as an activated venv, `uv run` or
`npm run` would: its `bin` directory leads the search path (and `VIRTUAL_ENV` names the venv). A venv's
interpreter usually lives outside the roots (pyenv, uv-managed Pythons, asdf, Homebrew), where the sandbox shows
nothing; it is made visible read-only only once verified to be an interpreter installation — never because a link
inside a root points there:

- the venv's `pyvenv.cfg` names its base interpreter's directory (`home = /…/bin`); the prefix above its real path
  must be a real directory holding a Python standard library (`lib/pythonX.Y/os.py`) and a `bin/python3*`;
- the prefix must not be `/`, nor contain a root, the home directory or the suite's own state (binding it would
  show them), and it is bound read-only;
- when the venv names that prefix through a link (uv's minor-version directories `cpython-3.12-linux…` link to
  the patch release, Homebrew's `opt/python@3.12` to its keg), the same verified directory is also shown at the
  name the venv uses, so its `bin/python` link resolves inside the sandbox.

Interpreters the operator put on the trusted search path (`node` from nvm, `python3` from pyenv or Homebrew,
found through `search_path` or a link in `/usr/local/bin`) are verified the same way (`trusted_interpreters`): a
Python installation as above, or a Node installation (`bin/node` and its headers or bundled npm) — so a project
script whose first line is `#!/usr/bin/env node` finds them inside the sandbox.

Everything here reads files inside the roots (untrusted): `pyvenv.cfg` is read with a size limit, and only its
`home` key is used, to find a directory that is then checked on its own merits.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.installations import is_node_installation, is_python_installation
from mcp_sections.shared.confinement.sandbox import SYSTEM_DIRECTORIES
from mcp_sections.shared.ground.locations import is_inside

VENV_MARKER = "pyvenv.cfg"
PREFERRED_VENV_NAMES = (".venv", "venv", "env")
MAX_CONFIG_BYTES = 16 * 1024
INTERPRETERS = ("python3", "python", "node")


@dataclass(frozen=True)
class ProjectToolchain:
    """What a command in one directory gets: search-path entries first, and read-only interpreter prefixes."""

    path_entries: tuple[str, ...] = ()
    readable: tuple[Path, ...] = ()
    venv: Path | None = None
    node_bin: Path | None = None

    def search_path(self, base: str) -> str:
        """`base` (the fixed search path) with the project's entries in front."""
        return os.pathsep.join([*self.path_entries, base]) if self.path_entries else base

    def environment(self) -> dict[str, str]:
        """What an activated venv sets besides PATH (tools such as uv and tox look at it)."""
        return {"VIRTUAL_ENV": str(self.venv)} if self.venv is not None else {}

    def showing(self, prefixes: Iterable[Path]) -> ProjectToolchain:
        """This toolchain, also showing `prefixes` (verified installations)."""
        return replace(self, readable=tuple(dict.fromkeys((*self.readable, *prefixes))))

    def shows(self, path: str) -> bool:
        """Whether `path` (real) lies inside one of the verified installations made visible."""
        return any(is_inside(path, os.fspath(prefix)) for prefix in self.readable)


def venv_base_prefix(venv: Path, forbidden: Sequence[Path]) -> Path | None:
    """The verified installation prefix of a venv's base interpreter, when it lies outside the system directories
    and must be made visible (None: nothing to bind, or it cannot be trusted)."""
    home = _pyvenv_home(venv / VENV_MARKER)
    return None if home is None else verified_prefix(_prefix_of(os.path.realpath(home)), forbidden, node=False)


def venv_interpreter_prefixes(venv: Path, forbidden: Sequence[Path]) -> tuple[Path, ...]:
    """The verified prefix of a venv's base interpreter, then the names the venv reaches it by (the `home` of
    `pyvenv.cfg` and the first hop of its `bin/python` link) when they are links to that very directory."""
    home = _pyvenv_home(venv / VENV_MARKER)
    if home is None:
        return ()
    prefix = verified_prefix(_prefix_of(os.path.realpath(home)), forbidden, node=False)
    if prefix is None:
        return ()
    names = [_prefix_of(os.path.normpath(home))]
    for link in ("python3", "python"):
        try:
            target = os.readlink(venv / "bin" / link)
        except OSError:
            continue
        if os.path.isabs(target):
            names.append(_prefix_of(os.path.dirname(os.path.normpath(target))))
        break
    aliases = [
        Path(name)
        for name in dict.fromkeys(names)
        if name != str(prefix) and os.path.realpath(name) == str(prefix) and _bindable_name(name, forbidden)
    ]
    return (prefix, *aliases)


def verified_prefix(prefix: str, forbidden: Sequence[Path], *, node: bool) -> Path | None:
    """`prefix` (real) if it is an interpreter installation that may be shown read-only: outside the system
    directories (visible anyway), not `/`, containing nothing `forbidden`, and a Python installation (or a Node
    one, with `node`)."""
    if prefix in ("", "/") or any(is_inside(prefix, system) for system in SYSTEM_DIRECTORIES):
        return None
    if any(is_inside(os.path.realpath(os.fspath(place)), prefix) for place in forbidden):
        return None
    candidate = Path(prefix)
    verified = is_node_installation(candidate) if node else is_python_installation(candidate)
    return candidate if verified else None


def trusted_interpreters(search_path: str, forbidden: Sequence[Path]) -> tuple[Path, ...]:
    """The verified installations of the interpreters (`python3`, `python`, `node`) the trusted search path leads
    to outside the system directories: shown to every program, since any of them may start one by name."""
    found: list[Path] = []
    for name in INTERPRETERS:
        executable = shutil.which(name, path=search_path)
        if executable is None:
            continue
        real = os.path.dirname(os.path.realpath(executable))
        prefix = verified_prefix(_prefix_of(real), forbidden, node=name == "node")
        if prefix is not None and prefix not in found:
            found.append(prefix)
    return tuple(found)


def program_venv_prefixes(program: Path, guard: PathGuard, forbidden: Sequence[Path]) -> tuple[Path, ...]:
    """The verified interpreter installations of the venv a program given by path lives in (`app/.venv/bin/python`
    run from elsewhere), when its folder is a venv's `bin` inside the roots."""
    venv = program.parent.parent
    if program.parent.name != "bin" or not _is_venv(venv, guard):
        return ()
    return tuple(prefix for prefix in venv_interpreter_prefixes(venv, forbidden) if _outside_roots(prefix, guard))


def find_venv(directory: Path, guard: PathGuard) -> Path | None:
    """The project venv for a command in `directory`: the nearest directory (this one, then its parents up to its
    root) holding a venv — `.venv`, `venv`, or any child directory with a `pyvenv.cfg` — that lies inside the roots
    and is not a symbolic link."""
    for current in _upwards(directory, guard):
        found = _venv_in(current, guard)
        if found is not None:
            return found
    return None


def find_node_bin(directory: Path, guard: PathGuard) -> Path | None:
    """The nearest `node_modules/.bin` at or above `directory`, inside the roots."""
    for current in _upwards(directory, guard):
        candidate = current / "node_modules" / ".bin"
        if candidate.is_dir() and not os.path.islink(candidate) and guard.contains(candidate):
            return candidate
    return None


def project_toolchain(
    directory: Path, guard: PathGuard, forbidden: Sequence[Path], trusted: Iterable[Path] = ()
) -> ProjectToolchain:
    """The toolchain a command in `directory` gets (see the module docstring). `forbidden`: what a bound interpreter
    prefix may not contain (the roots, the home directory, the suite's own state); `trusted`: the verified
    interpreters of the trusted search path (`trusted_interpreters`), shown to every command."""
    entries: list[str] = []
    readable: list[Path] = list(trusted)
    venv = find_venv(directory, guard)
    if venv is not None:
        entries.append(str(venv / "bin"))
        readable += [prefix for prefix in venv_interpreter_prefixes(venv, forbidden) if _outside_roots(prefix, guard)]
    node_bin = find_node_bin(directory, guard)
    if node_bin is not None:
        entries.append(str(node_bin))
    return ProjectToolchain(
        path_entries=tuple(entries), readable=tuple(dict.fromkeys(readable)), venv=venv, node_bin=node_bin
    )


def forbidden_prefixes(guard: PathGuard) -> tuple[Path, ...]:
    """What an interpreter prefix made visible must not contain: the roots, the home directory, the own state."""
    return (*guard.roots, Path.home(), *guard.private)


def _outside_roots(prefix: Path, guard: PathGuard) -> bool:
    """Whether a prefix (or the name it is shown at) lies outside the roots, by name and by real path: inside, it
    is visible already, and a mount there would cover the project's own files."""
    return guard.root_of(prefix) is None and not guard.contains(prefix.parent) and not guard.contains(prefix)


def _prefix_of(bin_directory: str) -> str:
    """The installation prefix of an interpreter's directory (`/x/bin` → `/x`)."""
    return os.path.dirname(bin_directory) if os.path.basename(bin_directory) == "bin" else bin_directory


def _bindable_name(name: str, forbidden: Sequence[Path]) -> bool:
    """Whether the verified directory may also be shown at `name`: an absolute path outside the system
    directories (shown as they are, links included) that contains nothing forbidden (`project_toolchain` also
    keeps it out of the roots, where a mount would cover the project's own files)."""
    if not os.path.isabs(name) or name == "/" or any(is_inside(name, system) for system in SYSTEM_DIRECTORIES):
        return False
    places = {os.fspath(place) for place in forbidden} | {os.path.realpath(os.fspath(p)) for p in forbidden}
    return not any(is_inside(place, name) for place in places)


def _upwards(directory: Path, guard: PathGuard) -> list[Path]:
    """`directory` (real) and its parents up to its root."""
    root = guard.root_of(os.path.realpath(directory))
    if root is None:
        return []
    current = Path(os.path.realpath(directory))
    found = [current]
    while current != root and is_inside(str(current.parent), str(root)):
        current = current.parent
        found.append(current)
    return found


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
    return guard.allows(candidate)


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
            return home if os.path.isabs(home) and "\x00" not in home else None
    return None
