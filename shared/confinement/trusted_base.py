"""The suite's trusted base: everything it executes or reads to decide its behaviour, computed at start.

A confined program, and every file it can write, is untrusted, so nothing it can change may decide what the suite
runs next. Instead of a list of protected places, the suite computes the closure of what it depends on:

- **installation** (read-only): the interpreter's prefixes (`sys.prefix`, `exec_prefix`, `base_prefix`,
  `base_exec_prefix`: a venv's base interpreter under pyenv or uv included), the prefix of the real executable, every
  `sys.path` entry and site directory (the user site too, when Python reads it), the suite's own code (an editable
  checkout's `shared/` and `servers/`), the launcher the client starts (`argv[0]`, by its name and its target), and
  the programs the suite runs outside any sandbox (bubblewrap, git, ripgrep, the Python of the sandbox's bridges);
- **launch** (read-only): what decides the flags and the environment the client launches the suite with: the MCP
  clients' user-level config files and the login files of the home directory (`.profile`, `.bashrc`, `.zshenv`, …);
- **state** (hidden): the data directory (databases, audit log), the cache directory, the config directory and the
  config file.

Each part is known by the name the suite uses (which may pass through symbolic links) and by its real path. How it
is protected (`shared.confinement.sandbox`, `shared.confinement.guards.paths`), for CLI roots and client roots alike:

- a part inside a place a program may write (a root) is bound read-only, or hidden (an empty read-only tmpfs, a
  file by /dev/null); inside a place it may only read (an install prefix) state is hidden;
- every directory on the way from a root to a part is *pinned* (bound onto itself: a mount point can be neither
  renamed nor removed, so nothing can move a part aside and put another in its place);
- every symbolic link on the way is pinned *as a link*: the directory holding it has its own entries fixed (bound
  read-only, each of its other entries bound back writable), so the link can be neither replaced nor removed — and
  its target gets a way of its own. The home directory, when a root holds it, is fixed the same way, so a program can
  create no login file (`~/.bash_profile` would take over from `~/.profile`) and no link in its top level, and its
  hidden entries (the configuration of what the user runs, and the targets of those that are links) stay read-only
  (`shared.confinement.sandbox`);
- file tools never write, move, delete or replace a part, a pinned directory or a pinned link.

The state directories are created (0700) at every start, whatever the roots, so that they can be hidden before a
program could create them (`shared.confinement.own_state`). `python -m benchmarks.trusted_base` — or `mcp-sections
trusted-base` — prints the table of this machine.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import site
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import platformdirs

from mcp_sections.shared.ground.locations import is_inside, outermost
from mcp_sections.shared.ground.programs import DEFAULT_SEARCH_PATH

logger = logging.getLogger("mcp_sections.trusted_base")

Kind = Literal["installation", "launch", "state"]
Protection = Literal["read-only", "hidden"]

#: Programs the suite itself runs outside any sandbox (or that start every sandbox), found on the fixed search path.
UNCONFINED_PROGRAMS = ("bwrap", "git", "rg", "python3")
#: The home directory's login files: they set the environment of every program the user starts, MCP clients included.
LOGIN_FILES = (
    ".profile",
    ".bash_profile",
    ".bash_login",
    ".bashrc",
    ".bash_logout",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".pam_environment",
    ".xprofile",
    ".xsessionrc",
    ".config/fish/config.fish",
    ".config/environment.d",
)
#: The user-level config files of the MCP clients the README names: they hold the command, flags and environment
#: the client launches the suite with. Relative to the platform's user config directory (`{config}`) or the home.
CLIENT_CONFIGS = (
    "{config}/Claude/claude_desktop_config.json",
    "~/.claude.json",
    "~/.claude/settings.json",
    "~/.claude/settings.local.json",
    "{config}/Code/User/settings.json",
    "{config}/Code/User/mcp.json",
    "{config}/Code - Insiders/User/mcp.json",
    "~/.cursor/mcp.json",
)
SYSTEM_PREFIXES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


@dataclass(frozen=True)
class Part:
    """One thing the suite depends on: `named` as the suite reaches it, `real` what that name leads to."""

    named: str
    real: str
    kind: Kind
    what: str

    @property
    def protection(self) -> Protection:
        return "hidden" if self.kind == "state" else "read-only"

    @property
    def system(self) -> bool:
        """Inside the system directories, which every sandbox shows read-only anyway."""
        return any(is_inside(self.real, place) for place in SYSTEM_PREFIXES)


@dataclass(frozen=True)
class Way:
    """What keeps the parts inside some places in place: directories pinned, links pinned, directories fixed."""

    pinned: tuple[Path, ...] = ()
    links: tuple[Path, ...] = ()
    fixed: tuple[Path, ...] = ()


@dataclass(frozen=True)
class TrustedBase:
    """The parts of this process's trusted base (see the module docstring)."""

    parts: tuple[Part, ...]

    def read_only(self, roots: Sequence[str] = ()) -> tuple[str, ...]:
        """Real paths of the parts never written (outermost only), leaving out a part that holds one of `roots`: it
        cannot be read-only without the root (`warn_roots_over_the_base`)."""
        return tuple(
            outermost(
                part.real
                for part in self.parts
                if part.protection == "read-only" and not any(is_inside(root, part.real) for root in roots)
            )
        )

    def hidden(self) -> tuple[str, ...]:
        """Real paths of the parts never shown (outermost only)."""
        return tuple(outermost(part.real for part in self.parts if part.protection == "hidden"))

    def with_state(self, state: Iterable[tuple[str, str, str]]) -> TrustedBase:
        """This base plus state parts given as (named, real, what)."""
        extra = tuple(Part(named, real, "state", what) for named, real, what in state)
        return TrustedBase(_unique((*self.parts, *extra)))

    def way(self, places: Sequence[str]) -> Way:
        """How to keep every part inside `places` (real paths where programs may write) where it is: the directories
        on the way pinned, the links on the way pinned as links, the directories holding those links fixed — and the
        home directory fixed when a place holds it."""
        pinned: dict[str, None] = {}
        links: dict[str, None] = {}
        outer = set(outermost(part.real for part in self.parts))  # inside one, a read-only bind holds it
        for part in self.parts:
            if part.real in outer or not any(is_inside(part.real, place) for place in outer):
                for name in dict.fromkeys((part.named, part.real)):
                    _walk_way(name, places, pinned, links, depth=0)
        for directory in list(pinned):
            if any(is_inside(directory, place) and directory != place for place in outer):
                del pinned[directory]
        fixed = dict.fromkeys(os.path.dirname(link) for link in links)
        home = os.path.realpath(os.path.expanduser("~"))
        if any(is_inside(home, place) for place in places) and home != "/":
            fixed.setdefault(home)
        for directory in fixed:
            pinned.pop(directory, None)  # fixed is pinned and more
        return Way(
            pinned=tuple(Path(path) for path in pinned),
            links=tuple(Path(path) for path in links),
            fixed=tuple(Path(path) for path in fixed),
        )


def _walk_way(name: str, places: Sequence[str], pinned: dict[str, None], links: dict[str, None], depth: int) -> None:
    """Record the directories and links between the place holding `name` (lexically) and `name` itself."""
    if depth > 8:
        return
    place = next((place for place in places if is_inside(name, place) and name != place), None)
    if place is None:
        return
    current = place
    for component in Path(os.path.relpath(name, place)).parts:
        current = os.path.join(current, component)
        if current == name:
            if os.path.islink(current):
                links.setdefault(current)
                _walk_way(os.path.realpath(current), places, pinned, links, depth + 1)
            return
        if os.path.islink(current):
            links.setdefault(current)
            target = os.path.realpath(current)
            _walk_way(os.path.join(target, os.path.relpath(name, current)), places, pinned, links, depth + 1)
            return
        if not os.path.isdir(current):
            return
        pinned.setdefault(current)


def hidden_entries(directory: str) -> list[str]:
    """The names of a directory's hidden entries (its configuration, for a home directory)."""
    try:
        return sorted(name for name in os.listdir(directory) if name.startswith("."))
    except OSError:
        return []


def _unique(parts: Iterable[Part]) -> tuple[Part, ...]:
    seen: dict[tuple[str, str], Part] = {}
    for part in parts:
        seen.setdefault((part.named, part.real), part)
    return tuple(seen.values())


def _part(named: str | os.PathLike[str], kind: Kind, what: str) -> Part | None:
    """A part for an existing path (None for a missing one, or one that cannot be named)."""
    text = os.path.abspath(os.fspath(named))
    if not text or "\x00" in text or not os.path.lexists(text):
        return None
    return Part(text, os.path.realpath(text), kind, what)


def _prefix_of(executable: str) -> str:
    parent = os.path.dirname(executable)
    return os.path.dirname(parent) if os.path.basename(parent) == "bin" else parent


def installation_parts() -> list[Part]:
    """The interpreter, its prefixes and path, the suite's code and launcher, and the programs it runs unconfined."""
    parts = [*_interpreter_parts(), *_suite_parts(), *_unconfined_program_parts(), *_variable_parts()]
    return [part for part in parts if part is not None and not _too_wide(part.real)]


def _interpreter_parts() -> list[Part | None]:
    """The interpreter's prefixes, its executable, the absolute entries of sys.path, the site directories."""
    parts: list[Part | None] = [
        _part(sys.prefix, "installation", "interpreter prefix (sys.prefix: the venv)"),
        _part(sys.exec_prefix, "installation", "interpreter prefix (sys.exec_prefix)"),
        _part(sys.base_prefix, "installation", "base interpreter (sys.base_prefix: pyenv, uv, system)"),
        _part(sys.base_exec_prefix, "installation", "base interpreter (sys.base_exec_prefix)"),
    ]
    if sys.executable:
        parts.append(_part(sys.executable, "installation", "interpreter executable"))
        parts.append(_part(_prefix_of(os.path.realpath(sys.executable)), "installation", "real executable's prefix"))
    for entry in sys.path:
        if entry and os.path.isabs(entry):
            parts.append(_part(entry, "installation", "sys.path entry"))
    for directory in site.getsitepackages():
        parts.append(_part(directory, "installation", "site directory"))
    if site.ENABLE_USER_SITE:
        parts.append(_part(site.getusersitepackages(), "installation", "user site directory (read at every start)"))
    return parts


def _suite_parts() -> list[Part | None]:
    """The suite's own code (shared/ and servers/) and the launcher that started this process."""
    code = Path(__file__).resolve().parent
    parts = [_part(code, "installation", "the suite's code (shared/)")]
    parts += [_part(code.parent / "servers", "installation", "the suite's code (servers/)")]
    launcher = sys.argv[0] if sys.argv and os.path.isabs(sys.argv[0]) else shutil.which(sys.argv[0] if sys.argv else "")
    if launcher and os.path.isfile(launcher):
        parts.append(_part(launcher, "installation", "launcher (argv[0])"))
    return parts


def _unconfined_program_parts() -> list[Part | None]:
    """The programs the suite runs outside the sandbox, and their installations outside the system directories."""
    parts: list[Part | None] = []
    for name in UNCONFINED_PROGRAMS:
        found = shutil.which(name, path=DEFAULT_SEARCH_PATH)
        if found:
            parts.append(_part(found, "installation", f"program run outside the sandbox ({name})"))
            prefix = _prefix_of(os.path.realpath(found))
            if not any(is_inside(prefix, place) for place in SYSTEM_PREFIXES):
                parts.append(_part(prefix, "installation", f"{name}'s installation"))
    return parts


def _variable_parts() -> list[Part | None]:
    """The absolute entries of LD_LIBRARY_PATH and PYTHONPATH."""
    return [
        _part(entry, "installation", f"{variable} entry")
        for variable in ("LD_LIBRARY_PATH", "PYTHONPATH")
        for entry in os.environ.get(variable, "").split(os.pathsep)
        if entry and os.path.isabs(entry)
    ]


def launch_parts() -> list[Part]:
    """The login files and the MCP clients' config files that exist."""
    home = os.path.expanduser("~")
    config = platformdirs.user_config_dir()
    parts: list[Part | None] = [_part(os.path.join(home, name), "launch", "login file") for name in LOGIN_FILES]
    for pattern in CLIENT_CONFIGS:
        path = os.path.expanduser(pattern.format(config=config))
        parts.append(_part(path, "launch", "an MCP client's config (the suite's launch command)"))
    return [part for part in parts if part is not None]


def _too_wide(real: str) -> bool:
    """`/` and the home directory are never a part (an interpreter prefix of `/usr` is the system's)."""
    return real in ("/", os.path.realpath(os.path.expanduser("~")))


@functools.cache
def process_base() -> TrustedBase:
    """The installation and launch parts of this process (computed once; state comes per settings)."""
    return TrustedBase(_unique((*installation_parts(), *launch_parts())))


def warn_roots_over_the_base(roots: Iterable[Path | str]) -> None:
    """Log a warning when a root is, or lies inside, a directory of this process's module search path: a program could
    plant modules there that the server imports unconfined, and such a directory cannot be made read-only without
    making the root so. The `mcp-sections` command never has one (`servers.startup` drops the working directory that
    `python -m` puts first on `sys.path`, and the sections the gateway starts run with `-P`); a `PYTHONPATH` can."""
    entries = [part for part in process_base().parts if part.what.endswith("entry")]
    for root in roots:
        real = os.path.realpath(os.fspath(root))
        for part in entries:
            if is_inside(real, part.real):
                logger.warning(
                    "the root %s lies inside %s (%s), a directory Python imports the server's modules from: a program "
                    "could put modules there that this server would run unconfined. Keep roots out of PYTHONPATH and "
                    "start the server with the `mcp-sections` command.",
                    root,
                    part.named,
                    part.what,
                )
