"""The suite's temporary files in the user's directories: anonymous where the file system allows it, otherwise named
so that any later writer can tell a dead writer's leftover from a live one's file and remove it.

A file being written (`staged_file`) is created with `O_TMPFILE` in the directory it will land in: it has no name
until it is complete, so a kill -9 (or a power cut) leaves nothing behind. It gets its name with `linkat` through
`/proc/self/fd`: straight at the target when nothing may be replaced, else at a temporary name renamed over the target
at once (a kill in that instant leaves a named file). Where `O_TMPFILE` is refused (a file system without it, no
`/proc`), the file is named from the start.

A name is `.mcp-sections-tmp-<boot>-<pid namespace>-<pid>-<start>-<random>`: the machine's boot id, the writer's
PID namespace, its pid and its start time (so a reused pid is not taken for the writer). `sweep(directory)` removes
those whose writer is gone: same boot and namespace, and no process with that pid and start time. One it cannot check
(another boot id: a directory shared over the network, another PID namespace: a container, or a name from before
this scheme) is removed only when unmodified for `UNVERIFIABLE_STALE_SECONDS`. A live writer's file is never removed.
Every write sweeps the directory it writes in, at most once every `SWEEP_INTERVAL_SECONDS` per directory and process.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import secrets
import shutil
import stat
import threading
import time
from collections.abc import Iterator

from .descriptors import rename

TEMP_PREFIX = ".mcp-sections-tmp-"
UNVERIFIABLE_STALE_SECONDS = 3600.0
SWEEP_INTERVAL_SECONDS = 60.0
_MAX_REMEMBERED = 4096  # directories whose last sweep is remembered (then the memory starts again)

_NAME = re.compile(re.escape(TEMP_PREFIX) + r"([0-9a-f]{12})-(\d+)-(\d+)-(\d+)-[0-9a-f]+")
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_swept: dict[tuple[int, int], float] = {}
_swept_lock = threading.Lock()


# -- who writes ----------------------------------------------------------------------------------------------------


@functools.cache
def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip().replace("-", "")[:12].ljust(12, "0")
    except OSError:
        return "0" * 12


@functools.cache
def _namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _start_time(pid: int) -> int | None:
    """A process's start time (clock ticks after boot, /proc/<pid>/stat field 22), None when it does not run."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    try:
        return int(text[text.rindex(b")") + 2 :].split()[19])
    except (ValueError, IndexError):
        return None


@functools.cache
def _owner(pid: int) -> str:
    return f"{_boot_id()}-{_namespace()}-{pid}-{_start_time(pid) or 0}"


def temp_name() -> str:
    """A new temporary name for this process (its pid is read each time: a forked child names its own)."""
    return f"{TEMP_PREFIX}{_owner(os.getpid())}-{secrets.token_hex(4)}"


def is_stale(name: str, modified: float, *, now: float | None = None) -> bool:
    """Whether the temporary entry `name` (last modified at `modified`) was left by a writer that is gone."""
    if not name.startswith(TEMP_PREFIX):
        return False
    found = _NAME.fullmatch(name)
    if found is not None and found[1] == _boot_id() != "0" * 12 and int(found[2]) == _namespace() != 0:
        pid, started = int(found[3]), int(found[4])
        return _start_time(pid) != started  # gone, or the pid now belongs to another process
    return (time.time() if now is None else now) - modified > UNVERIFIABLE_STALE_SECONDS


# -- sweeping ------------------------------------------------------------------------------------------------------


def sweep(directory_fd: int, *, force: bool = False) -> list[str]:
    """Remove the stale temporary entries of the directory open at `directory_fd` (files, links, trees; nothing is
    followed); returns their names. Unless `force`, a directory swept by this process in the last
    `SWEEP_INTERVAL_SECONDS` is not read again."""
    try:
        info = os.fstat(directory_fd)
    except OSError:
        return []
    key, now = (info.st_dev, info.st_ino), time.monotonic()
    with _swept_lock:
        if not force and now - _swept.get(key, -SWEEP_INTERVAL_SECONDS) < SWEEP_INTERVAL_SECONDS:
            return []
        if len(_swept) >= _MAX_REMEMBERED:
            _swept.clear()
        _swept[key] = now
    removed: list[str] = []
    try:
        with os.scandir(directory_fd) as entries:
            candidates = [entry for entry in entries if entry.name.startswith(TEMP_PREFIX)]
    except OSError:
        return []
    for entry in candidates:
        with contextlib.suppress(OSError):
            entry_stat = entry.stat(follow_symlinks=False)
            if not is_stale(entry.name, entry_stat.st_mtime):
                continue
            if stat.S_ISDIR(entry_stat.st_mode):
                shutil.rmtree(entry.name, dir_fd=directory_fd)
            else:
                os.unlink(entry.name, dir_fd=directory_fd)
            removed.append(entry.name)
    return removed


# -- writing -------------------------------------------------------------------------------------------------------


class Staged:
    """A regular file being written in a directory (`fd`, opened for writing), with no name (`name` None) or a
    temporary one, until `place` gives it its name."""

    def __init__(self, directory_fd: int, fd: int, name: str | None) -> None:
        self.directory_fd = directory_fd
        self.fd = fd
        self.name = name
        self.placed = False

    def place(self, target: str, *, replace: bool = True) -> None:
        """Make the file the entry `target` of its directory in one step: replacing what is there (a rename), or
        never (`replace=False`: a link, or `renameat2(RENAME_NOREPLACE)`; FileExistsError when `target` exists)."""
        directory_fd = self.directory_fd
        if self.name is None:
            source = f"/proc/self/fd/{self.fd}"
            if not replace:
                os.link(source, target, dst_dir_fd=directory_fd, follow_symlinks=True)
                self.placed = True
                return
            self.name = temp_name()
            os.link(source, self.name, dst_dir_fd=directory_fd, follow_symlinks=True)
        rename(directory_fd, self.name, directory_fd, target, replace=replace)
        self.placed = True

    def discard(self) -> None:
        if self.name is not None and not self.placed:
            with contextlib.suppress(OSError):
                os.unlink(self.name, dir_fd=self.directory_fd)


@functools.cache
def _proc_fd_available() -> bool:
    return os.path.isdir(f"/proc/{os.getpid()}/fd")


@contextlib.contextmanager
def staged_file(directory_fd: int, mode: int = 0o666) -> Iterator[Staged]:
    """A new file in the directory open at `directory_fd`, anonymous where the file system allows it (created with
    `mode`, less the umask). Leaving the block without `place` removes it; the descriptor is closed either way."""
    sweep(directory_fd)
    fd = -1
    name = None
    if _O_TMPFILE and _proc_fd_available():
        try:
            fd = os.open(".", _O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, mode, dir_fd=directory_fd)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    if fd < 0:
        name = temp_name()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        fd = os.open(name, flags, mode, dir_fd=directory_fd)
    staged = Staged(directory_fd, fd, name)
    try:
        yield staged
    finally:
        os.close(fd)
        staged.discard()
