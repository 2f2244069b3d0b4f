"""Private homes: every program shell_ops runs gets a fresh HOME and TMPDIR of its own, removed afterwards.

A server keeps its programs' homes in one directory of its own, `<tmp>/mcp-sections-homes-<pid ns>-<pid>-…`
(`homes_root`). A server that is killed (SIGKILL, a crash) cannot remove what its programs wrote there; the next
server that makes a home removes the directories of servers that no longer run: same user, same PID namespace,
process gone. A directory that is not exactly that (a symlink, another user's) is never touched.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

HOMES_PREFIX = "mcp-sections-homes-"

_root: tuple[int, Path] | None = None  # (owner pid, directory): a forked child makes its own
_root_lock = threading.Lock()


def home_environment(home: Path) -> dict[str, str]:
    """The variables that name the child's private home: HOME, TMPDIR and npm's files."""
    return {
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "npm_config_userconfig": str(home / "npmrc"),
        "npm_config_globalconfig": str(home / "npmrc-global"),
        "npm_config_cache": str(home / "npm-cache"),
    }


@contextlib.contextmanager
def private_home() -> Iterator[Path]:
    """A fresh private home (mode 0700, with its `tmp`) for one program, removed afterwards: nothing a program does
    to its home or TMPDIR (remove it, replace it by a file, fill it) reaches the next call."""
    home = new_private_home()
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def new_private_home() -> Path:
    """A fresh private home (mode 0700, with its `tmp`) in this server's `homes_root`; the caller removes it (a
    long-running process keeps its own for its life)."""
    home = Path(tempfile.mkdtemp(prefix="call-", dir=homes_root()))
    try:
        (home / "tmp").mkdir()
    except OSError:
        shutil.rmtree(home, ignore_errors=True)
        raise
    return home


def homes_root() -> Path:
    """This process's directory of private homes, made on first use (again if something removed it), and removed
    at exit; making it first removes those of servers that were killed (`remove_stale_homes`)."""
    global _root
    with _root_lock:
        if _root is None or _root[0] != os.getpid() or not _root[1].is_dir():
            remove_stale_homes()
            directory = Path(tempfile.mkdtemp(prefix=f"{HOMES_PREFIX}{pid_namespace()}-{os.getpid()}-"))
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            _root = (os.getpid(), directory)
        return _root[1]


def remove_stale_homes(directory: Path | None = None) -> list[Path]:
    """Remove the homes directories in `directory` (the temporary directory) of servers of this user and PID
    namespace that no longer run; the ones removed."""
    base = Path(directory or tempfile.gettempdir())
    namespace, removed = pid_namespace(), []
    for path in base.glob(f"{HOMES_PREFIX}*"):
        owner = _owner(path.name, namespace)
        if owner is None or _running(owner):
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _owner(name: str, namespace: int) -> int | None:
    """The pid in a homes directory's name, if it was made in this PID namespace."""
    parts = name[len(HOMES_PREFIX) :].split("-")
    if len(parts) < 3 or not (parts[0].isdigit() and parts[1].isdigit()) or int(parts[0]) != namespace:
        return None
    return int(parts[1])


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def pid_namespace() -> int:
    """The identity of this process's PID namespace (0 where the system does not show it): a pid means the same
    process only within one namespace (two containers may share a temporary directory)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0
