"""Where the project's files live by default: the config file and the cache directory (stdlib + platformdirs).

Kept apart from `config.py` (pydantic) so that the start-up preface can find them before anything heavy
is imported.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import platformdirs

APP_NAME = "mcp-sections"
CONFIG_ENV = "MCP_SECTIONS_CONFIG"


def is_inside(path: str, root: str) -> bool:
    """Exact-root or root+separator containment of two real, normalised path strings (never a plain string prefix:
    `/root_evil` is not inside `/root`)."""
    if path == root:
        return True
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path.startswith(prefix)


def outermost(paths: Iterable[str]) -> list[str]:
    """`paths` (real, normalised strings) without duplicates and without those inside another one of them, in their
    first order: what a bind or a protection of each one left covers whole."""
    unique = list(dict.fromkeys(paths))
    return [path for path in unique if not any(other != path and is_inside(path, other) for other in unique)]


def installation_dirs() -> tuple[Path, ...]:
    """Where the running suite's own code lives (real paths): its environment (`sys.prefix`: the interpreter's site
    packages, the `mcp-sections` launcher) and, for an editable install, the checkout's `shared/` and `servers/`. The
    whole trusted base (the base interpreter, `sys.path`, the programs run unconfined, the launch files) is computed
    by `shared.confinement.trusted_base`, which the path guard and the sandboxes protect."""
    import sys

    found = [os.path.realpath(sys.prefix)]
    package = Path(__file__).resolve().parent  # shared/
    for code in (package, package.parent / "servers"):
        real = os.path.realpath(code)
        if not any(real == place or real.startswith(place + os.sep) for place in found):
            found.append(real)
    return tuple(Path(path) for path in found)


def default_data_dir() -> Path:
    """The platform's user data directory of the suite (databases, audit log), when `data_dir` is not set."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def platform_cache_dir() -> Path:
    """The platform's user cache directory of the suite."""
    return Path(platformdirs.user_cache_dir(APP_NAME))


def default_cache_dir() -> Path:
    """`MCP_SECTIONS_CACHE_DIR`, else the platform's user cache directory."""
    if env := os.environ.get("MCP_SECTIONS_CACHE_DIR"):
        return Path(env).expanduser().resolve()
    return platform_cache_dir()


def default_config_dir() -> Path:
    """The platform's user config directory of the suite, where the default config file lives (whether or not it
    exists)."""
    return Path(platformdirs.user_config_dir(APP_NAME))


def default_config_file() -> Path:
    """The config file read when neither `--config` nor MCP_SECTIONS_CONFIG names one (it may not exist)."""
    return default_config_dir() / "config.toml"


def find_config_file(explicit: Path | None) -> Path | None:
    """The config file to read: an explicit path must exist; the default location is optional."""
    if explicit is not None:
        return explicit.expanduser()
    if env := os.environ.get(CONFIG_ENV):
        return Path(env).expanduser()
    default = default_config_file()
    try:
        return default if default.is_file() else None
    except OSError:  # an unreadable home directory: there is no default config to read
        return None
