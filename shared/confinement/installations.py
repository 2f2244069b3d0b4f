"""What an interpreter installation is: a directory verified on its own merits before it is shown to a program.

A venv's base interpreter or an interpreter on the trusted search path lives outside the roots (pyenv, uv, nvm,
Homebrew); it is shown read-only only once its directory looks like what it claims to be (`shared.confinement.
toolchains` decides which directories to check, `shared.confinement.sandbox` narrows the prefixes it binds by it).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

_STDLIB = re.compile(r"^python3\.\d+t?$")


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


def is_node_installation(prefix: Path) -> bool:
    """A real directory holding a Node.js installation: an executable `bin/node` file and its headers
    (`include/node/node_version.h`) or its bundled npm (`lib/node_modules/npm/package.json`), as the official
    archives, nvm, asdf, fnm and Homebrew lay them out."""
    if os.path.islink(prefix) or not prefix.is_dir():
        return False
    try:
        node = os.lstat(prefix / "bin" / "node")
    except OSError:
        return False
    if not stat.S_ISREG(node.st_mode) or not node.st_mode & 0o111:
        return False
    return (prefix / "include" / "node" / "node_version.h").is_file() or (
        prefix / "lib" / "node_modules" / "npm" / "package.json"
    ).is_file()
