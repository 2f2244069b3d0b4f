"""Writing files atomically (an anonymous file in the same directory + fsync + rename) and editing them."""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.secrets.masking import MASK, contains_mask
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure, invalid_input, limit_exceeded, not_found

from .journal import Change
from .misses import line_numbers, lines_named, missing_message
from .reading import detect_encoding
from .temporary import staged_file

MAX_DIFF_CHARS = 200_000


def atomic_write(guard: PathGuard, target: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to `target` (a checked path) without ever writing an existing file in place.

    The parent directory is opened with O_DIRECTORY|O_NOFOLLOW and its real path re-checked; the new content is
    written to a file of that directory with no name (`temporary.staged_file`: O_TMPFILE, or a recognisable
    temporary name where the file system has no O_TMPFILE), fsynced, and renamed over the target by name relative
    to that directory descriptor, so a component swapped for a symlink meanwhile cannot redirect the write and a
    killed server leaves nothing behind. A symlink or hard link at the target is replaced, never written through.
    """
    parent_fd = guard.open_directory(target.parent)
    try:
        if mode is None:
            try:
                existing = os.stat(target.name, dir_fd=parent_fd, follow_symlinks=False)
                mode = stat.S_IMODE(existing.st_mode) if stat.S_ISREG(existing.st_mode) else None
            except FileNotFoundError:
                mode = None
        with staged_file(parent_fd, 0o666 if mode is None else 0o600) as staged:
            with os.fdopen(os.dup(staged.fd), "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if mode is not None:
                os.fchmod(staged.fd, mode)
            staged.place(target.name)
        with contextlib.suppress(OSError):  # some file systems refuse directory fsync
            os.fsync(parent_fd)
    except IsADirectoryError:
        raise invalid_input(f"{guard.relative(target)!r} is a directory; give a file path.") from None
    finally:
        os.close(parent_fd)


@dataclass
class WriteOutcome:
    path: str
    bytes_written: int
    created: bool
    change_id: int | None = None


def write_file(
    guard: PathGuard,
    path: str,
    content: str,
    *,
    encoding: str,
    create_parents: bool,
    overwrite: bool,
    max_bytes: int,
    change: Change | None = None,
) -> WriteOutcome:
    """Create or replace a file atomically; `change` records it in the undo journal (with the directories
    it creates)."""
    change = change or Change.off("write_file")
    target = guard.resolve(path, purpose="write")
    try:
        data = content.encode(encoding)
    except UnicodeEncodeError as exc:
        raise invalid_input(
            f"the content cannot be encoded as {encoding} (character {exc.object[exc.start : exc.end]!r} at "
            f"{exc.start}); use utf-8."
        ) from None
    if len(data) > max_bytes:
        raise limit_exceeded(f"the content is {len(data)} bytes; write_file accepts at most {max_bytes}.")
    existed = os.path.lexists(target)
    if existed and target.is_dir():
        raise invalid_input(f"{path!r} is a directory; give a file path.")
    if existed and not overwrite:
        message = f"{path!r} already exists; pass overwrite=true to replace it."
        if _holds(guard, target, data):
            message += " It holds this very content: an earlier call may have written it."
        raise ToolFailure(ErrorCode.VALIDATION_FAILED, message)
    if contains_mask(content):
        refuse_new_masks(content, _current_text(guard, target) if existed else "", path)
    missing: list[Path] = []
    if not target.parent.is_dir():
        if not create_parents:
            raise not_found(
                f"the directory of {path!r} does not exist; pass create_parents=true or create_directory first."
            )
        missing = missing_directories(guard, target.parent)
    for directory in missing:
        change.replace(directory)
    change.replace(target)
    with change.applying():
        make_directories(guard, missing)
        atomic_write(guard, target, data)
    return WriteOutcome(path=str(target), bytes_written=len(data), created=not existed, change_id=change.id)


def missing_directories(guard: PathGuard, directory: Path) -> list[Path]:
    """The directories `mkdir -p directory` would create, outermost first."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        if os.path.lexists(current):
            raise ToolFailure(
                ErrorCode.PERMISSION_DENIED, f"{guard.relative(current)!r} is a dangling symbolic link; refused."
            )
        missing.append(current)
        current = current.parent
    if not current.is_dir():
        raise invalid_input(f"{guard.relative(current)!r} exists and is not a directory.")
    return missing[::-1]


def make_directories(guard: PathGuard, missing: list[Path]) -> None:
    """Create `missing` (outermost first, see `missing_directories`), each re-checked inside the roots."""
    for path in missing:
        checked = guard.resolve(str(path), purpose="create")
        parent_fd = guard.open_directory(checked.parent)
        try:
            os.mkdir(checked.name, dir_fd=parent_fd)
        except FileExistsError:
            if not checked.is_dir():
                raise invalid_input(f"{guard.relative(checked)!r} exists and is not a directory.") from None
        finally:
            os.close(parent_fd)


# -- edit_file ----------------------------------------------------------------------------------


@dataclass
class Edit:
    old_text: str
    new_text: str
    replace_all: bool = False


@dataclass
class EditOutcome:
    path: str
    diff: str
    replacements: int
    applied: bool
    diff_truncated: bool
    change_id: int | None = None


def edit_file(
    guard: PathGuard, path: str, edits: list[Edit], *, dry_run: bool, max_bytes: int, change: Change | None = None
) -> EditOutcome:
    """Apply exact replacements in order, all or nothing; return the unified diff (`change`: the undo record)."""
    change = change or Change.off("edit_file")
    target = guard.resolve(path, purpose="read" if dry_run else "write")
    if target.is_dir():
        raise invalid_input(f"{path!r} is a directory; edit_file edits one text file.")
    fd = guard.open_file(target)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise limit_exceeded(f"{path!r} is {size} bytes; edit_file edits files up to {max_bytes} bytes.")
        data = handle.read()
    encoding = detect_encoding(data, complete=True)
    if encoding is None:
        raise invalid_input(f"{path!r} looks like a binary file; edit_file only edits text.")
    original = data.decode(encoding)
    text, count = _replaced(original, edits, path)
    name = guard.relative(target)
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{name}", f"b/{name}", n=3
        )
    )
    truncated = len(diff) > MAX_DIFF_CHARS
    if truncated:
        diff = diff[:MAX_DIFF_CHARS] + "\n... (diff truncated)\n"
    applied = False
    if not dry_run and text != original:
        change.replace(target)
        with change.applying():
            atomic_write(guard, target, text.encode(encoding))
        applied = True
    return EditOutcome(
        path=str(target),
        diff=diff,
        replacements=count,
        applied=applied,
        diff_truncated=truncated,
        change_id=change.id,
    )


def _replaced(original: str, edits: list[Edit], path: str) -> tuple[str, int]:
    """The text with every edit applied in order, and the number of replacements; an edit whose old text is missing
    or ambiguous fails the whole call (a CRLF file's edits are matched with CRLF)."""
    crlf = "\r\n" in original
    text = original
    count = 0
    for number, edit in enumerate(edits, start=1):
        old, new = edit.old_text, edit.new_text
        if crlf and "\r\n" not in old and "\n" in old:
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        if old == "":
            raise invalid_input(f"edit #{number}: old_text is empty; give the exact text to replace.")
        refuse_new_masks(new, old, path)
        found = text.count(old)
        if found == 0:
            raise ToolFailure(ErrorCode.VALIDATION_FAILED, missing_message(number, text, old, new, path))
        if found > 1 and not edit.replace_all:
            lines = line_numbers(text, old)
            raise ToolFailure(
                ErrorCode.VALIDATION_FAILED,
                f"edit #{number}: old_text occurs {found} times in {path!r} ({lines_named(lines)}); "
                "include more surrounding lines to make it unique, or set replace_all=true. No edit was applied.",
            )
        text = text.replace(old, new) if edit.replace_all else text.replace(old, new, 1)
        count += found if edit.replace_all else 1
    return text, count


def refuse_new_masks(new: str, before: str, path: str) -> None:
    """VALIDATION_FAILED when `new` holds more secret masks than the text it replaces: the mask stands for a
    real value that tool output hid (shared.confinement.secrets.masking), and writing it would destroy that value."""
    if new.count(MASK) > before.count(MASK):
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            f"the new content for {path!r} contains {MASK}, which stands for a secret value hidden from tool output; "
            "writing it would replace the real secret. Leave the lines that hold secrets out of the change "
            "(edit_file with old_text around them), or ask the user to edit those values. Nothing was written.",
        )


def _existing_bytes(guard: PathGuard, target: Path, limit: int = -1) -> bytes | None:
    """The file's bytes (at most `limit`), None when it cannot be read."""
    try:
        fd = guard.open_file(target)
    except (ToolFailure, OSError):
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def _holds(guard: PathGuard, target: Path, data: bytes) -> bool:
    """Whether the file holds exactly `data` (a call repeated after its answer was lost finds its own result); a
    larger file is not read past `data`'s length."""
    return _existing_bytes(guard, target, len(data) + 1) == data


def _current_text(guard: PathGuard, target: Path) -> str:
    return (_existing_bytes(guard, target) or b"").decode("utf-8", errors="replace")
