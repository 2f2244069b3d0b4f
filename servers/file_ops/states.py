"""What a path holds, as the undo journal sees it, and how to read, compare and put back such a state.

A state is `absent`, a `file` (its content by SHA-256, size, mode), a `link` (its target, never followed) or a
`directory`: shallow (a directory, its contents not kept) or deep (every entry below it, in walk order). Reading
a state with `keep` collects the files' contents into a `Budget`, which refuses what the journal's limits do
not allow; every path is reached through the path guard's descriptors (no symlink is followed).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, SuiteError, ToolFailure
from mcp_sections.shared.ground.locations import is_inside
from mcp_sections.shared.text.walking import walk

Kind = Literal["absent", "file", "link", "directory"]
CHUNK = 1 << 20


@dataclass(frozen=True)
class State:
    kind: Kind
    hash: str | None = None  # file: SHA-256 of the content
    size: int = 0  # file: bytes
    mode: int | None = None  # file, directory: permission bits
    target: str | None = None  # link: where it points, as written
    entries: tuple[tuple[str, State], ...] | None = None  # deep directory: (relative path, state), parents first

    @property
    def deep(self) -> bool:
        return self.kind == "directory" and self.entries is not None

    def hashes(self) -> set[str]:
        """The contents this state refers to."""
        if self.kind == "file" and self.hash:
            return {self.hash}
        return {h for _, entry in self.entries or () for h in entry.hashes()}

    def describe(self) -> str:
        if self.kind == "file":
            return f"a file of {self.size} bytes"
        if self.kind == "link":
            return f"a symbolic link to {self.target!r}"
        if self.kind == "directory":
            return "a directory" if self.entries is None else f"a directory of {len(self.entries)} entries"
        return "nothing"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        for name in ("hash", "mode", "target"):
            if getattr(self, name) is not None:
                data[name] = getattr(self, name)
        if self.kind == "file":
            data["size"] = self.size
        if self.entries is not None:
            data["entries"] = [[name, entry.to_json()] for name, entry in self.entries]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        entries = data.get("entries")
        return cls(
            kind=data["kind"],
            hash=data.get("hash"),
            size=data.get("size", 0),
            mode=data.get("mode"),
            target=data.get("target"),
            entries=None if entries is None else tuple((name, cls.from_json(entry)) for name, entry in entries),
        )


ABSENT = State("absent")
DIRECTORY = State("directory")  # a directory whose contents are not kept (one a change created)


def same(a: State, b: State) -> bool:
    """Whether two states hold the same thing: kind, content, link target, and for deep directories every
    entry (permission bits aside: a chmod is not a change of content)."""
    if a.kind != b.kind:
        return False
    if a.kind == "file":
        return a.hash == b.hash and a.size == b.size
    if a.kind == "link":
        return a.target == b.target
    if a.kind == "directory" and a.entries is not None and b.entries is not None:
        return len(a.entries) == len(b.entries) and all(
            x[0] == y[0] and same(x[1], y[1]) for x, y in zip(a.entries, b.entries, strict=True)
        )
    return True


class TooLarge(SuiteError):
    """A state the budget does not allow (the message says what and which limit)."""


@dataclass
class Budget:
    """What one change may keep: files up to `max_file_bytes`, `max_total_bytes` of distinct contents,
    `max_entries` entries. `blobs` collects the contents by hash (None: only hash, keep nothing)."""

    max_file_bytes: int
    max_total_bytes: int
    max_entries: int
    blobs: dict[str, bytes] | None = field(default_factory=dict)
    entries: int = 0
    kept_bytes: int = 0

    def count_entry(self, shown: str) -> None:
        self.entries += 1
        if self.entries > self.max_entries:
            raise TooLarge(f"{shown!r} holds more than {self.max_entries} entries (undo_max_entries)")


def read_state(guard: PathGuard, path: Path, *, deep: bool, budget: Budget) -> State:
    """The state at `path` now (a symlink is read as a link). `deep`: a directory with all it holds.
    Raises TooLarge past the budget, ToolFailure for what cannot be kept (special or protected files)."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # a parent that is not a directory: nothing there
        return ABSENT
    return _state_of(guard, path, info, deep=deep, budget=budget, shown=guard.relative(path))


def _state_of(guard: PathGuard, path: Path, info: os.stat_result, *, deep: bool, budget: Budget, shown: str) -> State:
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return State("link", target=os.readlink(path))
    if stat.S_ISREG(info.st_mode):
        digest, size = _read_file(guard, path, info.st_size, budget, shown)
        return State("file", hash=digest, size=size, mode=mode)
    if stat.S_ISDIR(info.st_mode):
        if not deep:
            return State("directory", mode=mode)
        return State("directory", mode=mode, entries=tuple(_walk(guard, path, "", budget)))
    raise ToolFailure(
        ErrorCode.VALIDATION_FAILED,
        f"{shown!r} is a special file (FIFO, socket or device), which the undo journal cannot keep",
    )


def _walk(guard: PathGuard, directory: Path, prefix: str, budget: Budget) -> Iterator[tuple[str, State]]:
    private = [str(p) for p in guard.private_inside_roots()]
    with os.scandir(directory) as iterator:
        items = sorted(iterator, key=lambda item: item.name)
    for item in items:
        relative = f"{prefix}{item.name}"
        full = directory / item.name
        shown = guard.relative(full)
        budget.count_entry(guard.relative(directory))
        if any(is_inside(p, str(full)) for p in private):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED, f"{shown!r} holds mcp-sections' own state (data, cache or config)."
            )
        if guard.is_denied_name(item.name):
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"{shown!r} is a protected file (secrets such as .env files and keys), which the undo journal "
                "never copies",
            )
        state = _state_of(guard, full, item.stat(follow_symlinks=False), deep=False, budget=budget, shown=shown)
        yield relative, state
        if state.kind == "directory":
            yield from _walk(guard, full, relative + "/", budget)


def _read_file(guard: PathGuard, path: Path, size: int, budget: Budget, shown: str) -> tuple[str, int]:
    if size > budget.max_file_bytes:
        raise TooLarge(f"{shown!r} is {size} bytes; the undo journal keeps files up to {budget.max_file_bytes}")
    fd = guard.open_file(path)
    with os.fdopen(fd, "rb") as handle:
        if budget.blobs is None:
            digest = hashlib.sha256()
            total = 0
            while chunk := handle.read(CHUNK):
                total += len(chunk)
                if total > budget.max_file_bytes:
                    raise TooLarge(f"{shown!r} grew past {budget.max_file_bytes} bytes while it was read")
                digest.update(chunk)
            return digest.hexdigest(), total
        data = handle.read(budget.max_file_bytes + 1)
    if len(data) > budget.max_file_bytes:
        raise TooLarge(f"{shown!r} grew past {budget.max_file_bytes} bytes while it was read")
    digest_text = hashlib.sha256(data).hexdigest()
    if digest_text not in budget.blobs:
        if budget.kept_bytes + len(data) > budget.max_total_bytes:
            raise TooLarge(
                f"the contents to keep exceed {budget.max_total_bytes} bytes, the undo journal's total "
                "(undo_max_total_bytes)"
            )
        budget.blobs[digest_text] = data
        budget.kept_bytes += len(data)
    return digest_text, len(data)


def check_fits(guard: PathGuard, directory: Path, budget: Budget) -> None:
    """TooLarge when a copy of the tree at `directory` would not fit the budget (sizes from lstat, nothing read; the
    one walker: links never followed)."""
    total = 0
    for entry in walk(os.fspath(directory), max_entries=budget.max_entries + 1):
        budget.count_entry(guard.relative(directory))
        info = os.lstat(entry.path)
        if stat.S_ISREG(info.st_mode):
            if info.st_size > budget.max_file_bytes:
                raise TooLarge(
                    f"{guard.relative(entry.path)!r} is {info.st_size} bytes; the undo journal keeps files up to "
                    f"{budget.max_file_bytes}"
                )
            total += info.st_size
            if total > budget.max_total_bytes:
                raise TooLarge(
                    f"{guard.relative(directory)!r} holds more than {budget.max_total_bytes} bytes, the undo "
                    "journal's total (undo_max_total_bytes)"
                )


def matches(guard: PathGuard, path: Path, expected: State, budget: Budget) -> tuple[bool, State | None]:
    """Whether `path` holds `expected` now, and what it holds (None when too large to read)."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # a parent that is not a directory: nothing there
        return expected.kind == "absent", ABSENT
    if expected.kind == "file" and stat.S_ISREG(info.st_mode) and info.st_size != expected.size:
        return False, State("file", size=info.st_size)
    try:
        found = read_state(guard, path, deep=expected.deep, budget=budget)
    except (TooLarge, ToolFailure):  # too big, or holding what no state keeps: not what the change left
        return False, None
    return same(found, expected), found


# -- changing the file system -----------------------------------------------------------------------------


def checked_path(guard: PathGuard, path: Path) -> Path:
    """`path` as the guard allows it now, the entry itself (a final symlink is not followed). Refused when it
    left the roots, became protected or private, or when a symbolic link now stands in one of its parents."""
    if os.path.lexists(path):
        resolved = guard.resolve(str(path), purpose="delete")
    else:
        resolved = guard.resolve(str(path), purpose="create")
    if os.fspath(resolved) != os.fspath(path):
        raise ToolFailure(
            ErrorCode.PERMISSION_DENIED,
            f"{guard.relative(path)!r} now leads to {guard.relative(resolved)!r} (a symbolic link stands in its "
            "path since the change); refused. Remove the link first.",
        )
    return resolved


@contextlib.contextmanager
def parent_of(guard: PathGuard, path: Path) -> Iterator[int]:
    fd = guard.open_directory(path.parent)
    try:
        yield fd
    finally:
        os.close(fd)


def remove(guard: PathGuard, path: Path, *, only_if_empty: bool = False) -> bool:
    """Delete the entry at `path` (a link itself, a directory with all it holds). `only_if_empty`: only an
    empty directory is deleted; anything else is kept (False is returned)."""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # a parent that is not a directory: nothing there
        return True
    if only_if_empty and not stat.S_ISDIR(info.st_mode):
        return False
    with parent_of(guard, path) as parent_fd:
        if stat.S_ISDIR(info.st_mode):
            if only_if_empty:
                try:
                    os.rmdir(path.name, dir_fd=parent_fd)
                except OSError as exc:
                    if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                        return False
                    raise
                return True
            shutil.rmtree(path.name, dir_fd=parent_fd)
        else:
            os.unlink(path.name, dir_fd=parent_fd)
    return True


def write_state(guard: PathGuard, path: Path, state: State, blob: Any) -> None:
    """Put `state` at `path`, where nothing is now. `blob(hash)` returns a kept content."""
    if state.kind == "absent":
        return
    if state.kind == "file":
        from .writing import atomic_write  # imported here: writing imports the journal, which imports this module

        data = blob(state.hash)
        atomic_write(guard, path, data, mode=state.mode)
        return
    with parent_of(guard, path) as parent_fd:
        if state.kind == "link":
            os.symlink(state.target or "", path.name, dir_fd=parent_fd)
            return
        os.mkdir(path.name, 0o700, dir_fd=parent_fd)
    directories = [(path, state.mode)]
    for relative, entry in state.entries or ():
        target = checked_path(guard, path / relative)
        if entry.kind == "directory":
            with parent_of(guard, target) as parent_fd:
                os.mkdir(target.name, 0o700, dir_fd=parent_fd)
            directories.append((target, entry.mode))
        else:
            write_state(guard, target, entry, blob)
    for directory, mode in reversed(directories):  # last, so a read-only directory could be filled first
        fd = guard.open_directory(directory)
        try:
            os.fchmod(fd, mode if mode is not None else 0o755)
        finally:
            os.close(fd)
