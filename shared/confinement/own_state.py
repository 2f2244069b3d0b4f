"""The suite's own state — data (databases, audit log), cache, config — and what keeps it out of reach.

A confined program, and every file it can write, is untrusted: nothing inside a root may loosen confinement. With a
root at the home directory (the common set-up), the own state lies inside a root, so:

- the path guard treats every own-state path as outside the roots (`PathGuard(private=...)`), and refuses to
  delete, move or replace the directories on the way to it from a root (`PathGuard.pinned_inside_roots()`);
- sandboxes hide the own state (an empty tmpfs, /dev/null for a file) and bind every directory on the way to it onto
  itself: a mount point cannot be renamed or removed, so a program cannot move `~/.local/share` aside and find the
  state unhidden at the next call, nor replace it;
- the own-state directories are created (0700) at every start, whatever the roots (CLI roots or the roots a client
  offers later), so they can be hidden before a program could create them: a script cannot create
  `~/.config/mcp-sections/config.toml` in their place;
- the state is refused when it cannot be trusted: owned by another user, or writable by others;
- the server remembers what its state directories are (device and inode) and refuses every call once one of them was
  moved or replaced, rather than silently going on with another (`OwnState.verify`).

The state is one part of the suite's trusted base (`shared.confinement.trusted_base`), which also holds what the suite
executes; each state path is known by the name the suite uses (through a symbolic link such as a dotfiles `~/.config`)
and by its real path, and both are kept in place. The config file is read by `shared.settings.config`, which refuses one
that a confined program could have written (`check_config_trust`).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_sections.shared.ground.errors import ConfigError, ErrorCode, ToolFailure
from mcp_sections.shared.ground.locations import default_config_dir, default_data_dir, platform_cache_dir

logger = logging.getLogger("mcp_sections.own_state")


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def trust_problem(path: Path) -> str | None:
    """Why an existing own-state entry cannot be trusted (another owner, writable by others), or None."""
    if os.fspath(path) == os.devnull:  # "no config file"
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    if info.st_uid not in (os.getuid(), 0):
        return f"{path} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o022 and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        return f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}); run `chmod go-w {path}`"
    return None


@dataclass
class OwnState:
    """The own-state paths of this process (real paths), the names the suite reaches them by, and what they were
    when the server started."""

    paths: tuple[Path, ...]
    directories: tuple[Path, ...] = ()
    names: tuple[Path, ...] = ()
    described: tuple[tuple[str, str, str], ...] = ()  # (named, real, what) for the trusted base
    _anchors: dict[Path, tuple[int, int] | None] = field(default_factory=dict, repr=False)

    def prepare(self, roots: Sequence[Path]) -> None:
        """At start: create the own-state directories (so they can be hidden before a program could create them,
        whatever roots come later), refuse a state that cannot be trusted, warn of a module search path that a root
        holds, and remember what each directory is."""
        for directory in self.directories:
            if not directory.exists():
                try:
                    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                except OSError as exc:  # an unusable directory fails what needs it, never the start
                    logger.warning("cannot create %s: %s", directory, exc.strerror or exc)
        from mcp_sections.shared.confinement.trusted_base import warn_roots_over_the_base

        warn_roots_over_the_base(roots)
        for path in self.paths:
            problem = trust_problem(path)
            if problem is not None:
                raise ConfigError(f"mcp-sections' own state cannot be trusted: {problem}.")
        self._anchors = {directory: _identity(directory) for directory in self.directories}

    def verify(self) -> None:
        """PERMISSION_DENIED once a state directory was moved, replaced or removed while the server ran."""
        for directory, anchor in self._anchors.items():
            if anchor is None:  # made after the start (e.g. the cache, outside the roots): remembered from now on
                self._anchors[directory] = _identity(directory)
            elif _identity(directory) != anchor:
                raise ToolFailure(
                    ErrorCode.PERMISSION_DENIED,
                    f"mcp-sections' own state at {directory} was moved, replaced or removed while the server ran; the "
                    "server refuses to go on with a state it cannot trust. Find what moved it, put it back, and "
                    "restart the server.",
                )


_LOCK = threading.Lock()
_BY_PATHS: dict[tuple[Path, ...], OwnState] = {}


def _names(path: Path, default: str) -> list[str]:
    """The names a state path is reached by: as configured, and the platform's default when it leads to the same
    place (a configured path arrives resolved; the default keeps the links on its way, e.g. a dotfiles `~/.config`)."""
    named = os.path.abspath(os.fspath(path.expanduser()))
    found = [named]
    if os.path.realpath(default) == os.path.realpath(named):
        found.append(os.path.abspath(default))
    return found


def own_state(data_dir: Path, cache_dir: Path, config_file: Path | None) -> OwnState:
    """The own state of these settings (one object per set of paths in a process)."""
    defaults = (
        (data_dir, os.fspath(default_data_dir()), "data directory (databases, audit log)"),
        (cache_dir, os.fspath(platform_cache_dir()), "cache directory"),
        (default_config_dir(), os.fspath(default_config_dir()), "config directory"),
    )
    described = [
        (name, os.path.realpath(name), what) for path, default, what in defaults for name in _names(path, default)
    ]
    directories = tuple(dict.fromkeys(Path(real) for _, real, _ in described))
    paths = list(directories)
    if config_file is not None:
        named = os.path.abspath(os.fspath(config_file.expanduser()))
        described.append((named, os.path.realpath(named), "config file"))
        paths.append(Path(os.path.realpath(named)))
    key = tuple(dict.fromkeys(paths))
    names = tuple(dict.fromkeys(Path(name) for name, _, _ in described))
    with _LOCK:
        state = _BY_PATHS.get(key)
        if state is None:
            state = _BY_PATHS[key] = OwnState(
                paths=key, directories=directories, names=names, described=tuple(dict.fromkeys(described))
            )
        return state
