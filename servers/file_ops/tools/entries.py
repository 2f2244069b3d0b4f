"""The tools on entries: file_exists, get_file_info, and the recorded changes create_directory, delete_path,
move_file and copy_file."""

from __future__ import annotations

from mcp_sections.servers.file_ops.models import (
    CopyFileInput,
    CopyFileResult,
    CreateDirectoryInput,
    CreateDirectoryResult,
    DeletePathInput,
    DeletePathResult,
    FileExistsResult,
    FileInfoResult,
    MoveFileInput,
    MoveFileResult,
    PathInput,
)
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.servers.file_ops.tools.calls import MOVE, changed, guarded, within_roots
from mcp_sections.shared.framework.tools import OVERWRITE, READ_ONLY, WRITE, ToolContext, tool


@tool(
    name="file_exists",
    title="Check whether a path exists",
    annotations=READ_ONLY,
    examples=(
        "check whether a path exists before writing to it",
        "is there a file at this location",
        "does this file exist",
        "verify a folder or file is present",
        "is there already a .gitignore",
        "check if a directory is there",
    ),
)
async def file_exists(params: PathInput, state: FileOpsState, ctx: ToolContext) -> FileExistsResult:
    """Tell whether a path inside the allowed roots exists, and its type (file, directory, other).

    Paths outside the roots are refused (PERMISSION_DENIED) rather than answered, so nothing is revealed
    about the rest of the machine. A dangling symlink counts as not existing.
    """
    from mcp_sections.servers.file_ops import entries

    outcome = await guarded(state, ctx, entries.file_exists, params.path)
    return FileExistsResult.model_validate(outcome)


@tool(
    name="get_file_info",
    title="Get file metadata",
    annotations=READ_ONLY,
    examples=(
        "how large is this file and when was it modified",
        "is this path a symlink and where does it point",
        "file size, timestamps and permissions",
        "metadata of a file",
        "when was this file last modified",
        "what MIME type is this file, and is it binary",
    ),
)
async def get_file_info(params: PathInput, state: FileOpsState, ctx: ToolContext) -> FileInfoResult:
    """Metadata of a file or directory: type, size, times (ISO 8601 UTC), permissions, hard-link count,
    whether the path is a symlink (and its target), MIME type and whether a file looks binary; for a
    directory the number of entries. Does not return content."""
    from mcp_sections.servers.file_ops import entries

    outcome = await guarded(state, ctx, entries.get_file_info, params.path)
    return FileInfoResult.model_validate(outcome)


@tool(
    name="create_directory",
    title="Create a directory",
    annotations=WRITE,
    examples=(
        "mkdir -p a new output folder",
        "make a directory for the new module",
        "create a new folder",
        "add an empty directory",
        "create nested folders a/b/c",
        "set up an empty folder for logs",
    ),
)
async def create_directory(
    params: CreateDirectoryInput, state: FileOpsState, ctx: ToolContext
) -> CreateDirectoryResult:
    """Create a directory (and, by default, its missing parents, like mkdir -p). Succeeds without change if
    it already exists (`created=false`); fails if a file is in the way. Recorded (`change_id`):
    undo_file_change removes the directories it created while they are empty."""
    from mcp_sections.servers.file_ops import entries

    outcome = await changed(
        state,
        ctx,
        "create_directory",
        True,
        entries.create_directory,
        params.path,
        parents=params.parents,
    )
    return CreateDirectoryResult.model_validate(outcome)


@tool(
    name="delete_path",
    title="Delete a file or directory",
    annotations=OVERWRITE,
    preflight=lambda params, state: within_roots(state, (params.path, "delete")),
    examples=(
        "remove a file I no longer need",
        "delete a directory and everything inside it",
        "erase a file",
        "rm -r a folder",
        "delete the build directory",
        "get rid of a temporary file",
    ),
)
async def delete_path(params: DeletePathInput, state: FileOpsState, ctx: ToolContext) -> DeletePathResult:
    """Delete a file, a symlink (the link itself, never its target) or a directory tree.

    Directories need `recursive=true`; recursive deletion never follows symlinks. The allowed roots
    themselves cannot be deleted, nor protected files. What is deleted is kept in the undo journal
    (`change_id`; undo_file_change puts it back): a file up to 10 MiB, a tree up to 10,000 entries and
    200 MiB by default. A tree beyond the limits, or holding protected files (.env, keys) or special
    files, is refused unless `undoable=false`, which deletes it without a way back.
    """
    from mcp_sections.servers.file_ops import entries

    outcome = await changed(
        state,
        ctx,
        "delete_path",
        params.undoable,
        entries.delete_path,
        params.path,
        recursive=params.recursive,
    )
    return DeletePathResult.model_validate(outcome)


@tool(
    name="move_file",
    title="Move or rename",
    annotations=MOVE,
    preflight=lambda params, state: within_roots(state, (params.source, "delete"), (params.destination, "create")),
    examples=(
        "rename a file",
        "move a folder somewhere else in the project",
        "relocate a file to another directory",
        "mv a file to a new name",
        "rename src/utils.py to src/helpers.py",
        "move these logs into an archive folder",
    ),
)
async def move_file(params: MoveFileInput, state: FileOpsState, ctx: ToolContext) -> MoveFileResult:
    """Move or rename a file, directory or symlink to a new full path inside the allowed roots.

    Fails if the destination exists unless `overwrite=true` (which replaces a file, never a directory);
    a directory cannot move into itself; the roots cannot be moved. Recorded (`change_id`):
    undo_file_change moves it back and restores a file it replaced.
    """
    from mcp_sections.servers.file_ops import entries

    outcome = await changed(
        state,
        ctx,
        "move_file",
        params.undoable,
        entries.move_file,
        params.source,
        params.destination,
        overwrite=params.overwrite,
    )
    return MoveFileResult.model_validate(outcome)


@tool(
    name="copy_file",
    title="Copy a file or directory",
    annotations=OVERWRITE,
    examples=(
        "duplicate a file under a new name",
        "copy a whole directory to a new location",
        "make a copy of a file",
        "back up a folder by copying it",
        "copy config.yaml to config.backup.yaml",
        "clone a directory tree to another path",
    ),
)
async def copy_file(params: CopyFileInput, state: FileOpsState, ctx: ToolContext) -> CopyFileResult:
    """Copy a file (atomically) or, with `recursive=true`, a directory tree to a new full path inside the roots.

    Fails if the destination exists unless `overwrite=true` (files only). Symlinks in a copied tree are copied
    as links; links leading outside the roots, special files and protected files are left out. Recorded
    (`change_id`): undo_file_change deletes the copy and restores a file it replaced.
    """
    from mcp_sections.servers.file_ops import entries

    outcome = await changed(
        state,
        ctx,
        "copy_file",
        params.undoable,
        entries.copy_file,
        params.source,
        params.destination,
        overwrite=params.overwrite,
        recursive=params.recursive,
    )
    return CopyFileResult.model_validate(outcome)
