"""Whole entries: exists, info, create directory, delete, move, copy."""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input
from mcp_sections.shared.ground.locations import is_inside
from mcp_sections.shared.text.walking import walk

from . import descriptors
from .journal import Change
from .reading import SNIFF_BYTES, detect_encoding, guess_mime
from .states import ABSENT
from .temporary import TEMP_PREFIX, staged_file, temp_name
from .writing import make_directories, missing_directories


def kind_of(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def iso(timestamp: float) -> str:
    """A POSIX time as ISO 8601 UTC to the second (`2026-11-23T08:45:00Z`)."""
    return _iso_second(math.floor(timestamp))


@functools.lru_cache(maxsize=4096)  # files written together share their second: a listing formats few
def _iso_second(second: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))


def link_target_shown(guard: PathGuard, link: Path | str) -> str | None:
    """A symlink's target as written, or a placeholder when it leads outside the roots."""
    try:
        target = os.readlink(link)
    except OSError:
        return None
    if guard.contains(os.path.join(os.path.dirname(os.fspath(link)), target)):
        return target
    return "(outside the allowed roots)"


@dataclass
class Exists:
    path: str
    exists: bool
    type: str | None


def file_exists(guard: PathGuard, path: str) -> Exists:
    try:
        real = guard.resolve(path, purpose="read")
    except ToolFailure as failure:
        if failure.code is ErrorCode.NOT_FOUND:
            return Exists(path=path, exists=False, type=None)
        raise
    return Exists(path=str(real), exists=True, type=kind_of(os.stat(real).st_mode))


@dataclass
class Info:
    path: str
    type: str
    size_bytes: int
    modified: str
    created: str
    accessed: str
    permissions: str
    mode: str
    hard_links: int
    is_symlink: bool
    link_target: str | None
    mime_type: str | None
    is_binary: bool | None
    entries: int | None


def get_file_info(guard: PathGuard, path: str) -> Info:
    real = guard.resolve(path, purpose="read")
    named = _named_entry(guard, path)
    is_link = named is not None and os.path.islink(named)
    info = os.stat(real)
    binary = None
    mime = None
    entries = None
    if stat.S_ISREG(info.st_mode):
        sample = b""
        if not guard.is_denied(real):
            fd = guard.open_file(real)
            with os.fdopen(fd, "rb") as handle:
                sample = handle.read(SNIFF_BYTES)
        mime = guess_mime(str(real), sample)
        binary = detect_encoding(sample, complete=info.st_size <= len(sample)) is None
    elif stat.S_ISDIR(info.st_mode):
        try:
            with os.scandir(real) as iterator:
                entries = sum(1 for _ in iterator)
        except OSError:
            entries = None
    return Info(
        path=str(real),
        type=kind_of(info.st_mode),
        size_bytes=info.st_size,
        modified=iso(info.st_mtime),
        created=iso(getattr(info, "st_birthtime", info.st_ctime)),
        accessed=iso(info.st_atime),
        permissions=stat.filemode(info.st_mode),
        mode=oct(stat.S_IMODE(info.st_mode)),
        hard_links=info.st_nlink,
        is_symlink=is_link,
        link_target=link_target_shown(guard, named) if is_link and named is not None else None,
        mime_type=mime,
        is_binary=binary,
        entries=entries,
    )


def _named_entry(guard: PathGuard, path: str) -> Path | None:
    """The entry the caller named (not following a final symlink), when it lies inside the roots."""
    try:
        return guard.resolve(path, purpose="delete")
    except ToolFailure:
        return None


@dataclass
class Created:
    path: str
    created: bool
    change_id: int | None = None


def create_directory(guard: PathGuard, path: str, *, parents: bool, change: Change | None = None) -> Created:
    change = change or Change.off("create_directory")
    target = guard.resolve(path, purpose="create")
    if target.exists():
        if not target.is_dir():
            raise invalid_input(f"{path!r} exists and is not a directory.")
        return Created(path=str(target), created=False)
    if not parents and not target.parent.is_dir():
        raise ToolFailure(
            ErrorCode.NOT_FOUND, f"the parent of {path!r} does not exist; pass parents=true to create it too."
        )
    missing = missing_directories(guard, target)
    for directory in missing:
        change.replace(directory)
    with change.applying():
        make_directories(guard, missing)
    return Created(path=str(target), created=True, change_id=change.id)


@dataclass
class Deleted:
    path: str
    type: str
    entries_deleted: int
    change_id: int | None = None


def delete_path(guard: PathGuard, path: str, *, recursive: bool, change: Change | None = None) -> Deleted:
    """Delete a file, a symlink (never its target) or, with recursive=true, a directory tree; `change` keeps
    what it held for undo (the whole tree, within the journal's limits)."""
    change = change or Change.off("delete_path")
    target = guard.resolve(path, purpose="delete")
    info = os.lstat(target)
    kind = kind_of(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        if not recursive:
            raise invalid_input(f"{path!r} is a directory; pass recursive=true to delete it and everything in it.")
        _refuse_own_state(guard, target, path)
        count = _count_entries(target)
        # removed by its parent's descriptor, with rmtree on descriptors below: a swapped symlink cannot redirect it
        if not descriptors.SAFE_TREE_REMOVAL:  # pragma: no cover - non-Linux platforms
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "recursive delete is not safe on this platform.")
        change.replace(target, deep=True)
        with change.applying():
            _remove(guard, target, directory=True)
        return Deleted(path=str(target), type=kind, entries_deleted=count + 1, change_id=change.id)
    change.replace(target)
    with change.applying():
        _remove(guard, target, directory=False)
    return Deleted(path=str(target), type=kind, entries_deleted=1, change_id=change.id)


def _remove(guard: PathGuard, target: Path, *, directory: bool) -> None:
    """Delete the checked entry `target` by name relative to its parent's descriptor; refused when it is no longer
    the kind of entry that was checked (a file became a directory, or the other way round)."""
    with _parent(guard, target) as parent_fd:
        try:
            descriptors.remove(parent_fd, target.name, directory=directory)
        except descriptors.Changed:
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"{guard.relative(target)!r} was replaced by another kind of entry meanwhile; nothing was deleted. "
                "Look at it again (get_file_info), then delete it.",
            ) from None


def _refuse_own_state(guard: PathGuard, directory: Path, path: str) -> None:
    """A directory that holds the suite's own state (a root at the home directory, the data directory below it)
    is never deleted or moved: the audit log and the undo journal live there."""
    if any(is_inside(os.fspath(private), os.fspath(directory)) for private in guard.private_inside_roots()):
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"{path!r} holds mcp-sections' own state (its data, cache or config directory), which tools never "
            "delete or move; choose the entries beside it instead.",
        )


@contextlib.contextmanager
def _parent(guard: PathGuard, path: Path) -> Iterator[int]:
    """The checked parent directory of `path` as a descriptor (O_NOFOLLOW, real path re-checked), so the
    operation on `path.name` relative to it cannot be redirected by a component swapped for a symlink."""
    fd = guard.open_directory(path.parent)
    try:
        yield fd
    finally:
        os.close(fd)


def _count_entries(directory: Path) -> int:
    """The entries below `directory` (the one walker: links counted, never followed)."""
    return sum(1 for _ in walk(os.fspath(directory)))


@dataclass
class Moved:
    source: str
    destination: str
    type: str
    overwritten: bool
    change_id: int | None = None


def _destination(guard: PathGuard, source: Path, destination: str, overwrite: bool) -> tuple[Path, bool]:
    target = guard.resolve(destination, purpose="create")
    exists = os.path.lexists(target)
    if exists:
        if target.is_dir() and not target.is_symlink():
            raise invalid_input(
                f"the destination {destination!r} is an existing directory; give the full new path "
                "(directory plus name) instead."
            )
        if not overwrite:
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"the destination {destination!r} already exists; pass overwrite=true to replace it.",
            )
        if source.is_dir() and not source.is_symlink():
            raise invalid_input(f"the destination {destination!r} is a file; a directory cannot replace it.")
    if not target.parent.is_dir():
        raise ToolFailure(
            ErrorCode.NOT_FOUND,
            f"the directory of {destination!r} does not exist; create it first (create_directory).",
        )
    if os.fspath(target) == os.fspath(source):
        raise invalid_input("the source and the destination are the same entry.")
    if source.is_dir() and not source.is_symlink() and is_inside(os.fspath(target), os.fspath(source)):
        raise invalid_input("a directory cannot be moved or copied into itself.")
    return target, exists


def move_file(
    guard: PathGuard, source: str, destination: str, *, overwrite: bool, change: Change | None = None
) -> Moved:
    """Rename a file, directory or symlink (the link itself) to a new path inside the roots; `change` records
    the move (and keeps a file it replaces)."""
    change = change or Change.off("move_file")
    try:
        origin = guard.resolve(source, purpose="delete")
    except ToolFailure as failure:
        if failure.code is ErrorCode.NOT_FOUND and _arrived(guard, destination):  # a call repeated finds its result
            moved = f" The destination {destination!r} exists: an earlier call may have moved it there."
            raise ToolFailure(failure.code, failure.message + moved, **failure.details) from None
        raise
    target, exists = _destination(guard, origin, destination, overwrite)
    kind = kind_of(os.lstat(origin).st_mode)
    if kind == "directory":
        _refuse_own_state(guard, origin, source)
    if exists:
        change.replace(target, after=ABSENT)  # the replaced file, then the entry moved in
    change.rename(origin, target, kind)
    with change.applying():
        rename_entry(guard, origin, target, replace=exists)
    return Moved(source=str(origin), destination=str(target), type=kind, overwritten=exists, change_id=change.id)


def _arrived(guard: PathGuard, destination: str) -> bool:
    """Whether `destination` exists (`file_exists`); False where it may not be looked at."""
    try:
        return file_exists(guard, destination).exists
    except ToolFailure:
        return False


def rename_entry(guard: PathGuard, origin: Path, target: Path, *, replace: bool) -> None:
    """Move the entry `origin` to `target` (both checked) relative to their parents' descriptors, opened once;
    across file systems, copy then delete by those descriptors (`_move_across`). Without `replace`, an entry that
    appeared at `target` meanwhile is never replaced (VALIDATION_FAILED)."""
    with _parent(guard, origin) as source_fd, _parent(guard, target) as target_fd:
        try:
            try:
                descriptors.rename(source_fd, origin.name, target_fd, target.name, replace=replace)
                return
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
            _move_across(guard, source_fd, origin, target_fd, target, replace=replace)
        except FileExistsError:
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"{guard.relative(target)!r} appeared while the move was being made; it was not replaced and "
                f"{guard.relative(origin)!r} was not moved. Look at both, then move again (overwrite=true replaces).",
            ) from None


def _move_across(
    guard: PathGuard, source_fd: int, origin: Path, target_fd: int, target: Path, *, replace: bool
) -> None:
    """A move to another file system: the entry is copied from the source directory's descriptor to a temporary
    name of the destination's (a file: an anonymous one), put in place in one step, then deleted from the source
    directory's descriptor if it is still the entry that was copied."""
    info = os.stat(origin.name, dir_fd=source_fd, follow_symlinks=False)
    try:
        if stat.S_ISREG(info.st_mode):
            source = descriptors.open_file(source_fd, origin.name)
            try:
                if not descriptors.same_entry(os.fstat(source), info):
                    raise descriptors.Changed(origin.name)
                _stream_into(source, target_fd, target.name, info, replace=replace, times=True)
            finally:
                os.close(source)
        else:
            temporary = temp_name()
            try:
                descriptors.copy_into(source_fd, origin.name, target_fd, temporary)
                descriptors.rename(target_fd, temporary, target_fd, target.name, replace=replace)
            except BaseException:
                with contextlib.suppress(OSError):
                    descriptors.remove(target_fd, temporary)
                raise
    except descriptors.SpecialFile as special:
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            f"{guard.relative(origin)!r} holds a special file ({special}: FIFO, socket or device), which cannot be "
            "copied to another file system; nothing was moved. Remove it first, or move the entries beside it.",
        ) from None
    except descriptors.Changed:
        raise _changed_meanwhile(guard, origin) from None
    if not descriptors.same_entry(os.stat(origin.name, dir_fd=source_fd, follow_symlinks=False), info):
        raise _changed_meanwhile(guard, origin, copied=target)
    descriptors.remove(source_fd, origin.name)


def _changed_meanwhile(guard: PathGuard, origin: Path, copied: Path | None = None) -> ToolFailure:
    done = f"; the copy is at {guard.relative(copied)!r} and the source was left" if copied else "; nothing was moved"
    return ToolFailure(
        ErrorCode.VALIDATION_FAILED,
        f"{guard.relative(origin)!r} was replaced by another entry while it was being moved{done}. Look at both, "
        "then move again.",
    )


def _stream_into(
    source: int, directory_fd: int, name: str, info: os.stat_result, *, replace: bool, times: bool
) -> None:
    """Copy the open file `source` (stat `info`) to the entry `name` of a directory descriptor, atomically: an
    anonymous file there, filled and synced, then named (replacing what is there only with `replace`); its mode
    is kept, and its times with `times`."""
    with staged_file(directory_fd, 0o600) as staged:
        descriptors.copy_data(source, staged.fd)
        descriptors.copy_metadata(staged.fd, info, times=times)
        os.fsync(staged.fd)
        staged.place(name, replace=replace)


@dataclass
class Copied:
    source: str
    destination: str
    type: str
    files_copied: int
    overwritten: bool
    change_id: int | None = None


def copy_file(
    guard: PathGuard,
    source: str,
    destination: str,
    *,
    overwrite: bool,
    recursive: bool,
    change: Change | None = None,
) -> Copied:
    """Copy a file (atomically, never writing through a link) or, with recursive=true, a directory tree;
    `change` records the copy (and keeps a file it replaces)."""
    change = change or Change.off("copy_file")
    change.source = origin = guard.resolve(source, purpose="read")
    target, exists = _destination(guard, origin, destination, overwrite)
    if origin.is_dir():
        if not recursive:
            raise invalid_input(f"{source!r} is a directory; pass recursive=true to copy the whole tree.")
        if exists:
            raise ToolFailure(ErrorCode.VALIDATION_FAILED, f"the destination {destination!r} already exists.")
        change.expect_fits(origin)  # undoing the copy keeps the tree it deletes: it must fit the journal
        change.replace(target, deep=True)
        with change.applying():
            copied = _copy_tree(guard, origin, target)
        return Copied(
            source=str(origin),
            destination=str(target),
            type="directory",
            files_copied=copied,
            overwritten=False,
            change_id=change.id,
        )
    change.replace(target)
    with change.applying():
        _copy_file_contents(guard, origin, target)
    return Copied(
        source=str(origin),
        destination=str(target),
        type="file",
        files_copied=1,
        overwritten=exists,
        change_id=change.id,
    )


def _copy_file_contents(guard: PathGuard, origin: Path, target: Path) -> None:
    """Copy a file by descriptors: the source opened and checked by the guard, the copy made in the target's
    checked parent (never writing through a link at the target)."""
    source = guard.open_file(origin)
    try:
        with _parent(guard, target) as target_fd:
            _stream_into(source, target_fd, target.name, os.fstat(source), replace=True, times=False)
    finally:
        os.close(source)


def _copy_tree(guard: PathGuard, origin: Path, target: Path) -> int:
    """Copy a tree by descriptors (`descriptors.copy_into`) to a temporary name beside `target`, then rename it into
    place. Links are copied as links, never followed, and left out when they lead outside the roots; protected
    files, the suite's own state, special files and temporary files are left out."""
    private = [os.fspath(path) for path in guard.private_inside_roots()]

    def keep(directory_fd: int, name: str, info: os.stat_result) -> bool:
        if name.startswith(TEMP_PREFIX) or guard.is_denied_name(name):
            return False
        if not (stat.S_ISLNK(info.st_mode) or stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            return False  # FIFOs, sockets, devices
        here = descriptors.path_of(directory_fd)  # the directory being copied, wherever it is now
        if here is None:
            return not stat.S_ISLNK(info.st_mode) and not private
        full = os.path.join(here, name)
        if any(is_inside(full, p) for p in private):  # the own state itself (what holds it is copied)
            return False
        return not (stat.S_ISLNK(info.st_mode) and guard.entry_escapes(full))

    with _parent(guard, origin) as source_fd, _parent(guard, target) as target_fd:
        temporary = temp_name()
        try:
            copied = descriptors.copy_into(source_fd, origin.name, target_fd, temporary, keep=keep)
            descriptors.rename(target_fd, temporary, target_fd, target.name, replace=False)
        except BaseException:
            with contextlib.suppress(OSError):
                descriptors.remove(target_fd, temporary)
            raise
    return copied
