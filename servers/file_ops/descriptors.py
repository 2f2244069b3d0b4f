"""Renaming, copying and removing entries relative to directory descriptors, never by path after a check.

The callers open the parent directories once (`PathGuard.open_directory`: O_DIRECTORY|O_NOFOLLOW, the descriptor's
real path checked inside the roots) and name entries only relative to them. A directory swapped for a symbolic link
afterwards cannot redirect anything: the descriptors still lead to the directories that were checked. Below them,
every directory is entered with `openat(O_DIRECTORY|O_NOFOLLOW)`, every file opened with `O_NOFOLLOW`, and a
symbolic link is copied as a link (its target as written), never followed.

- `rename`: `renameat`; where nothing may be replaced, `renameat2(RENAME_NOREPLACE)` (through ctypes), and where the
  kernel or file system lacks it, a link then unlink for files and links (a link never replaces) or, for a directory,
  a check then a rename (the only window left, documented in the README).
- `copy_into`: a file, link or whole tree to a new name of another directory descriptor (`mkdirat`, `openat`
  with O_EXCL, `symlinkat`), modes and times kept; special files are refused (or left out by `keep`).
- `remove`: `unlinkat`, or `shutil.rmtree(name, dir_fd=...)` for a tree (descriptor-based on Linux).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import shutil
import stat
from collections.abc import Callable
from typing import Any

from mcp_sections.shared.ground.errors import SuiteError

RENAME_NOREPLACE = 1
SAFE_TREE_REMOVAL = bool(shutil.rmtree.avoids_symlink_attacks)
"""Whether `shutil.rmtree(name, dir_fd=...)` works on descriptors all the way down (Linux)."""
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CHUNK = 1 << 20

Keep = Callable[[int, str, os.stat_result], bool]
"""`keep(directory_fd, name, stat)`: whether the entry `name` (lstat `stat`) of the directory being copied, open at
`directory_fd`, is copied."""


class SpecialFile(SuiteError):
    """A FIFO, socket or device where a file, link or directory was expected (its path relative to the copy)."""


class Changed(SuiteError):
    """An entry is not the one that was looked at a moment before (it was replaced meanwhile)."""


@functools.cache
def _renameat2() -> Any:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # pragma: no cover - glibc before 2.28, other C libraries
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


def rename(source_fd: int, source: str, target_fd: int, target: str, *, replace: bool) -> None:
    """Rename the entry `source` of one directory descriptor to `target` of another (EXDEV across file systems).
    Without `replace`, an entry at `target` is never replaced: FileExistsError."""
    if replace:
        os.rename(source, target, src_dir_fd=source_fd, dst_dir_fd=target_fd)
        return
    function = _renameat2()
    if function is not None:
        if function(source_fd, os.fsencode(source), target_fd, os.fsencode(target), RENAME_NOREPLACE) == 0:
            return
        number = ctypes.get_errno()
        if number not in (errno.ENOSYS, errno.EINVAL):  # EINVAL: this file system has no RENAME_NOREPLACE
            raise OSError(number, os.strerror(number), target)
    info = os.stat(source, dir_fd=source_fd, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        os.link(source, target, src_dir_fd=source_fd, dst_dir_fd=target_fd, follow_symlinks=False)
        os.unlink(source, dir_fd=source_fd)
        return
    if exists(target_fd, target):  # pragma: no cover - kernels before 3.15, file systems without RENAME_NOREPLACE
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)
    os.rename(source, target, src_dir_fd=source_fd, dst_dir_fd=target_fd)  # pragma: no cover - as above


def path_of(fd: int) -> str | None:
    """Where an open file or directory is now (its real path, from /proc), or None where that cannot be known."""
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return path if path.startswith("/") and not path.endswith(" (deleted)") else None


def same_entry(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def exists(directory_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def open_file(directory_fd: int, name: str) -> int:
    """The regular file `name` of a directory descriptor, opened for reading without following a link."""
    fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=directory_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpecialFile(name)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_directory(directory_fd: int, name: str) -> int:
    return os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=directory_fd)


def copy_data(source_fd: int, target_fd: int) -> int:
    """Copy the rest of one file to another, by descriptors (in the kernel where it can); returns the bytes."""
    total = 0
    with contextlib.suppress(OSError):  # sendfile refused between these two files: read and write instead
        while sent := os.sendfile(target_fd, source_fd, None, _CHUNK):
            total += sent
        return total
    while chunk := os.read(source_fd, _CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(target_fd, view) :]
        total += len(chunk)
    return total


def copy_metadata(fd: int, info: os.stat_result, *, times: bool = True) -> None:
    """Permission bits (and access/modification times) of `info` onto an open file or directory."""
    os.fchmod(fd, stat.S_IMODE(info.st_mode))
    if times:
        with contextlib.suppress(OSError):
            os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))


def copy_into(source_fd: int, name: str, target_fd: int, new_name: str, *, keep: Keep | None = None) -> int:
    """Copy the entry `name` of the directory `source_fd` (a file, a link as a link, or a whole tree) to `new_name`,
    which must not exist, in `target_fd`; returns the number of files and links copied. `keep` filters the entries
    below the top (never the top itself). Raises SpecialFile for a FIFO, socket or device it is not told to skip."""
    return _copy(source_fd, name, target_fd, new_name, keep, "")


def _copy(source_fd: int, name: str, target_fd: int, new_name: str, keep: Keep | None, relative: str) -> int:
    """`copy_into` of the entry at `relative` below the copy's top ("": the top itself)."""
    info = os.stat(name, dir_fd=source_fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(name, dir_fd=source_fd), new_name, dir_fd=target_fd)
        return 1
    if stat.S_ISREG(info.st_mode):
        source = open_file(source_fd, name)
        try:
            if not same_entry(os.fstat(source), info):
                raise Changed(relative or name)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
            target = os.open(new_name, flags, 0o600, dir_fd=target_fd)
            try:
                copy_data(source, target)
                copy_metadata(target, info)
            finally:
                os.close(target)
        finally:
            os.close(source)
        return 1
    if not stat.S_ISDIR(info.st_mode):
        raise SpecialFile(relative or name)
    source_directory = open_directory(source_fd, name)
    try:
        os.mkdir(new_name, 0o700, dir_fd=target_fd)
        target_directory = open_directory(target_fd, new_name)
        try:
            with os.scandir(source_directory) as iterator:
                children = sorted((entry.name, entry.stat(follow_symlinks=False)) for entry in iterator)
            copied = 0
            for child, child_info in children:
                if keep is None or keep(source_directory, child, child_info):
                    below = f"{relative}/{child}" if relative else child
                    copied += _copy(source_directory, child, target_directory, child, keep, below)
            copy_metadata(target_directory, info)
        finally:
            os.close(target_directory)
    finally:
        os.close(source_directory)
    return copied


def remove(directory_fd: int, name: str, *, directory: bool | None = None) -> None:
    """Delete the entry `name` of a directory descriptor: a link itself, a file, or a directory with all it holds.
    `directory`: what the entry must be (True: a directory, False: anything else); Changed when it is not."""
    info = os.stat(name, dir_fd=directory_fd, follow_symlinks=False)
    if directory is not None and directory != stat.S_ISDIR(info.st_mode):
        raise Changed(name)
    if stat.S_ISDIR(info.st_mode):
        if not SAFE_TREE_REMOVAL:  # pragma: no cover - not Linux
            raise OSError(errno.ENOTSUP, "a tree is removed only where rmtree works on descriptors")
        shutil.rmtree(name, dir_fd=directory_fd)
    else:
        os.unlink(name, dir_fd=directory_fd)
