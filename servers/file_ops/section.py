"""The file_ops section: files and directories inside the allowed roots, behind the shared path guard."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from mcp_sections.servers.file_ops.models import (
    CopyFileInput,
    CopyFileResult,
    CreateDirectoryInput,
    CreateDirectoryResult,
    DeletePathInput,
    DeletePathResult,
    DirectoryTreeInput,
    DirectoryTreeResult,
    EditFileInput,
    EditFileResult,
    FileContent,
    FileExistsResult,
    FileInfoResult,
    GlobFilesInput,
    GlobFilesResult,
    InstallPackageInput,
    InstallPackageResult,
    ListDirectoryInput,
    ListDirectoryResult,
    ListFileChangesInput,
    ListFileChangesResult,
    ListRootsResult,
    MoveFileInput,
    MoveFileResult,
    NoInput,
    PathInput,
    ReadFileInput,
    ReadFileResult,
    ReadMultipleInput,
    ReadMultipleResult,
    SearchFilesInput,
    SearchFilesResult,
    UndoFileChangeInput,
    UndoFileChangeResult,
    WriteFileInput,
    WriteFileResult,
)
from mcp_sections.servers.file_ops.state import FileOpsSettings, FileOpsState

if TYPE_CHECKING:
    from mcp_sections.servers.file_ops.journal import Journal
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.framework import paging
from mcp_sections.shared.framework.requirements import Requirement, no_sandbox, program
from mcp_sections.shared.framework.resources import INLINE_CHARS, split_inline
from mcp_sections.shared.framework.sections import Container, Section, SectionRuntime
from mcp_sections.shared.framework.tools import OPEN_WORLD, OVERWRITE, READ_ONLY, WRITE, Annotations, ToolContext, tool
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

logger = logging.getLogger("mcp_sections.file_ops")

T = TypeVar("T")

EDIT = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)
MOVE = Annotations(read_only=False, destructive=True, idempotent=False, open_world=False)


def open_state(runtime: SectionRuntime) -> FileOpsState:
    settings = runtime.settings_of(FileOpsSettings)
    return FileOpsState(
        list(runtime.settings.roots),
        settings,
        private=runtime.settings.own_state_paths(),
        data_dir=runtime.settings.data_dir,
        config=(runtime.settings.config_file, runtime.settings.sections),
    )


async def _guard(state: FileOpsState, ctx: ToolContext | None) -> PathGuard:
    guard, _, _ = await _guard_and_source(state, ctx)
    return guard


async def _guard_and_source(state: FileOpsState, ctx: ToolContext | None) -> tuple[PathGuard, str, list[str] | None]:
    uris: list[str] | None = None
    if ctx is not None and state.settings.use_client_roots:
        try:
            uris = await ctx.client_roots()
        except Exception:  # a client that advertises roots but fails roots/list: use the configured ones
            logger.warning("roots/list failed; using the configured roots", exc_info=True)
            uris = None
    guard, source = state.guard_for(uris)
    return guard, source, uris


_OS_ERRORS = {
    errno.EACCES: (ErrorCode.PERMISSION_DENIED, "the operating system denied access"),
    errno.EPERM: (ErrorCode.PERMISSION_DENIED, "the operating system does not permit this operation"),
    errno.EROFS: (ErrorCode.PERMISSION_DENIED, "the file system is read-only"),
    errno.ENOENT: (ErrorCode.NOT_FOUND, "a file or directory disappeared while the call ran; retry"),
    errno.ENOTEMPTY: (ErrorCode.VALIDATION_FAILED, "the directory is not empty"),
    errno.EEXIST: (ErrorCode.VALIDATION_FAILED, "the entry already exists"),
    errno.ENOSPC: (ErrorCode.EXECUTION_FAILED, "the disk is full"),
    errno.EDQUOT: (ErrorCode.EXECUTION_FAILED, "the disk quota is exceeded"),
    errno.ENAMETOOLONG: (ErrorCode.INVALID_INPUT, "a file name is too long"),
    errno.ENOTDIR: (ErrorCode.INVALID_INPUT, "a path component is not a directory"),
    errno.EISDIR: (ErrorCode.INVALID_INPUT, "the path is a directory"),
    errno.ELOOP: (ErrorCode.PERMISSION_DENIED, "a symbolic link is in the way (links are not followed here)"),
}


async def _work(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run blocking file work in a worker thread; OS errors become coded failures without paths in them."""
    try:
        return await anyio.to_thread.run_sync(partial(function, *args, **kwargs))
    except OSError as exc:
        raise _os_failure(exc) from None


def _os_failure(exc: OSError) -> ToolFailure:
    code, text = _OS_ERRORS.get(exc.errno or 0, (ErrorCode.EXECUTION_FAILED, "the operation failed"))
    return ToolFailure(code, f"{text} ({exc.strerror or type(exc).__name__}).")


def _recorded(
    state: FileOpsState, tool: str, guard: PathGuard, undoable: bool, function: Callable[..., T], *args: Any, **kw: Any
) -> T:
    """Run one change in the undo journal's lock, recorded (`journal.Change`); in a worker thread."""
    from mcp_sections.servers.file_ops.journal import changing

    with changing(state.journal, tool, guard, undoable=undoable) as change:
        return function(*args, change=change, **kw)


def _journal(state: FileOpsState) -> Journal:
    journal = state.journal
    if journal is None:
        raise ToolFailure(
            ErrorCode.VALIDATION_FAILED,
            "the undo journal is off on this server ([sections.file_ops] undo_enabled = false, or no data "
            "directory); file changes are not recorded, so none can be listed or undone.",
        )
    return journal


# -- reading ------------------------------------------------------------------------------------------------


@tool(
    name="read_file",
    title="Read a file",
    annotations=READ_ONLY,
    examples=(
        "show me the contents of a config file",
        "read lines 100 to 150 of app.py",
        "the tail end of a log file",
        "view the first lines of a file",
        "what does this file say",
        "open src/main.py",
    ),
)
async def read_file(params: ReadFileInput, state: FileOpsState, ctx: ToolContext) -> ReadFileResult:
    """Read a text file (or an image) inside the allowed roots.

    Text: the encoding is detected (UTF-8, UTF-16/32 with BOM, Latin-1 fallback) and binary files are
    refused. Choose a window with `offset`+`limit` (1-based line numbers), `head` or `tail`; a whole-file
    read is limited to the server's read cap (4 MiB by default) — larger files must be read in windows.
    Images (PNG, JPEG, GIF, WebP) come back as MCP image content. Returns the text, the encoding and the
    line window (`start_line`, `end_line`, `total_lines`, `truncated`). A text longer than 16,000 characters
    comes back as its first lines up to that size, and whole by reference (`content_uri`, a resource link read
    with resources/read); offset/limit reads on from `end_line`.
    """
    from mcp_sections.servers.file_ops import reading

    guard = await _guard(state, ctx)
    settings = state.settings
    outcome = await _work(
        reading.read_file,
        guard,
        params.path,
        offset=params.offset,
        limit=params.limit,
        head=params.head,
        tail=params.tail,
        encoding=params.encoding,
        max_bytes=settings.max_read_bytes,
        max_image_bytes=settings.max_image_bytes,
    )
    result = ReadFileResult.model_validate(outcome)
    return result.with_image(outcome.image) if outcome.image is not None else _long_text_by_reference(result)


def _long_text_by_reference(result: ReadFileResult) -> ReadFileResult:
    """A text over the inline limit: its first lines inline, the whole of it as a resource
    (`shared.framework.resources`)."""
    whole = result.content
    if whole is None:
        return result
    inline, cut = split_inline(whole, INLINE_CHARS)
    if not cut:
        return result
    shown = inline.count("\n") + (0 if inline.endswith("\n") else 1)
    result.content, result.truncated = inline, True
    if result.start_line is not None:
        result.end_line = result.start_line + shown - 1
    name = result.path.rsplit("/", 1)[-1] or "file.txt"
    result.content_uri = result.attach(
        whole, name=name, mime_type="text/plain", description=f"The text read from {result.path[:300]}."
    )
    return result


@tool(
    name="read_multiple_files",
    title="Read several files",
    annotations=READ_ONLY,
    examples=(
        "read these five source files at once",
        "load several files in one go to review them",
        "show several files side by side",
        "read a list of files in one call",
        "read package.json, tsconfig.json and vite.config.ts",
        "fetch the text of several files in one request",
    ),
)
async def read_multiple_files(params: ReadMultipleInput, state: FileOpsState, ctx: ToolContext) -> ReadMultipleResult:
    """Read up to 50 text files in one call; a file that fails (missing, denied, binary, too large) gets its
    own error entry and does not fail the others.

    Use it to compare or review several files at once. The server's read cap is shared across the batch;
    `max_lines_per_file` keeps each file short. Images are not returned here (use read_file).
    """
    from mcp_sections.servers.file_ops import reading

    guard = await _guard(state, ctx)
    settings = state.settings

    def read_all() -> ReadMultipleResult:
        budget = settings.max_read_bytes
        files: list[FileContent] = []
        for path in params.paths:
            try:
                outcome = reading.read_file(
                    guard,
                    path,
                    head=params.max_lines_per_file,
                    max_bytes=max(budget, 1),
                    max_image_bytes=settings.max_image_bytes,
                    images=False,
                )
            except (ToolFailure, OSError) as error:
                failure = _os_failure(error) if isinstance(error, OSError) else error
                files.append(
                    FileContent(path=path, success=False, error_code=failure.code.value, error=failure.message)
                )
                continue
            if outcome.content is None:
                files.append(
                    FileContent(
                        path=path,
                        success=False,
                        error_code="INVALID_INPUT",
                        error="this is an image; read it with read_file.",
                    )
                )
                continue
            budget -= len(outcome.content)
            files.append(
                FileContent(
                    path=outcome.path,
                    success=True,
                    content=outcome.content,
                    encoding=outcome.encoding,
                    total_lines=outcome.total_lines,
                    truncated=outcome.truncated,
                )
            )
        ok = sum(1 for item in files if item.success)
        return ReadMultipleResult(files=files, succeeded=ok, failed=len(files) - ok)

    return await _work(read_all)


# -- writing ------------------------------------------------------------------------------------------------


@tool(
    name="write_file",
    title="Write a file",
    annotations=OVERWRITE,
    examples=(
        "create a new script file with this content",
        "overwrite notes.txt with new text",
        "save text to a file",
        "create a file from scratch",
        "replace the whole content of a file",
        "dump this output into a new file",
    ),
)
async def write_file(params: WriteFileInput, state: FileOpsState, ctx: ToolContext) -> WriteFileResult:
    """Create a file or replace its whole content, atomically (temp file in the same directory, fsync,
    rename): readers see the old or the new content, never a mix.

    Refuses paths outside the roots, protected names (.env, keys...), dangling symlinks and files with
    several hard links. Missing parent directories are created only with `create_parents=true`; set
    `overwrite=false` to fail if the file exists. For small changes to an existing file prefer edit_file.
    The change is recorded (`change_id`): undo_file_change deletes a new file or restores the old content.
    """
    from mcp_sections.servers.file_ops import writing

    guard = await _guard(state, ctx)
    outcome = await _work(
        _recorded,
        state,
        "write_file",
        guard,
        params.undoable,
        writing.write_file,
        guard,
        params.path,
        params.content,
        encoding=params.encoding,
        create_parents=params.create_parents,
        overwrite=params.overwrite,
        max_bytes=state.settings.max_write_bytes,
    )
    return WriteFileResult.model_validate(outcome)


@tool(
    name="edit_file",
    title="Edit a file",
    annotations=EDIT,
    examples=(
        "swap one line of code for another in a file",
        "rename a variable inside one file and show the diff",
        "patch a function body without rewriting the file",
        "change some text in an existing file",
        "update the version number in setup.cfg",
        "find and replace text in one file",
    ),
)
async def edit_file(params: EditFileInput, state: FileOpsState, ctx: ToolContext) -> EditFileResult:
    """Apply exact text replacements to a text file, all or nothing, and return the unified diff.

    Each edit's `old_text` must occur exactly once (whitespace and indentation count) unless
    `replace_all=true`; a missing or ambiguous text fails the call with where it was (or nearly was)
    found, and nothing is written. Edits apply in order, each on the result of the previous one. The
    encoding, BOM and CRLF line endings of the file are kept. `dry_run=true` only returns the diff.
    The change is recorded (`change_id`) for undo_file_change.
    """
    from mcp_sections.servers.file_ops import writing

    guard = await _guard(state, ctx)
    edits = [writing.Edit(edit.old_text, edit.new_text, edit.replace_all) for edit in params.edits]
    outcome = await _work(
        _recorded,
        state,
        "edit_file",
        guard,
        params.undoable,
        writing.edit_file,
        guard,
        params.path,
        edits,
        dry_run=params.dry_run,
        max_bytes=state.settings.max_edit_file_bytes,
    )
    return EditFileResult.model_validate(outcome)


# -- listing and finding ----------------------------------------------------------------------------------


@tool(
    name="list_directory",
    title="List a directory",
    annotations=READ_ONLY,
    examples=(
        "what files are in this folder",
        "ls the current directory",
        "show hidden files in a folder",
        "directory listing with sizes and dates",
        "list the contents of a directory",
        "what's inside the src folder",
    ),
)
async def list_directory(params: ListDirectoryInput, state: FileOpsState, ctx: ToolContext) -> ListDirectoryResult:
    """List the entries of one directory with their type, size and modification time.

    Symlinks are shown as links with their target (not followed; targets outside the roots are not
    revealed). Hidden entries ('.name') appear only with `show_hidden=true`. Sort by name, size,
    modified or type; at most `limit` entries (2000 by default) are returned, `total_entries` counts all.
    """
    from mcp_sections.servers.file_ops import listing

    guard = await _guard(state, ctx)
    outcome = await _work(
        listing.list_directory,
        guard,
        params.path,
        show_hidden=params.show_hidden,
        sort_by=params.sort_by,
        reverse=params.reverse,
        limit=LISTING_CAP,
    )
    entries, next_cursor = paging.page(outcome.entries, params.cursor, params.limit, _listing(params))
    # validated from plain dicts in one pydantic-core pass (4x faster than building 10,000 models one by one)
    return ListDirectoryResult.model_validate(
        {
            "path": outcome.path,
            "entries": [vars(entry) for entry in entries],
            "total_entries": outcome.total_entries,
            "truncated": outcome.truncated,
            "next_cursor": next_cursor,
        }
    )


LISTING_CAP = 20_000  # entries a directory listing collects before paging


def _listing(params: ListDirectoryInput | DirectoryTreeInput | GlobFilesInput) -> str:
    """The fingerprint a listing's cursors carry (see `shared.framework.paging`)."""
    return paging.fingerprint(type(params).__name__, params.model_dump(mode="json"))


@tool(
    name="directory_tree",
    title="Show a directory tree",
    annotations=READ_ONLY,
    examples=(
        "show the folder structure two levels deep",
        "print a tree of the repo without node_modules",
        "project structure overview",
        "nested folder layout as a tree",
        "show me how the repository is organised",
        "recursive tree view of a folder",
    ),
)
async def directory_tree(params: DirectoryTreeInput, state: FileOpsState, ctx: ToolContext) -> DirectoryTreeResult:
    """Show the tree below a directory, bounded by `max_depth` (3) and `max_entries` (500).

    Entries are listed depth-first, sorted by name, as paths relative to `path` with their depth. Symlinked
    directories are shown but never descended. `exclude` globs and .gitignore rules (on by default) prune
    the walk; hidden entries need `show_hidden=true`. Use it to get an overview of a project's layout.
    """
    from mcp_sections.servers.file_ops import listing

    guard = await _guard(state, ctx)
    outcome = await _work(
        listing.directory_tree,
        guard,
        params.path,
        max_depth=params.max_depth,
        max_entries=params.max_entries,
        exclude=params.exclude,
        show_hidden=params.show_hidden,
        respect_gitignore=params.respect_gitignore,
    )
    entries, next_cursor = paging.page(outcome.entries, params.cursor, params.limit, _listing(params))
    return DirectoryTreeResult.model_validate(
        {
            "path": outcome.path,
            "entries": [vars(node) for node in entries],
            "total_entries": len(outcome.entries),
            "truncated": outcome.truncated,
            "next_cursor": next_cursor,
        }
    )


@tool(
    name="glob_files",
    title="Find files by glob",
    annotations=READ_ONLY,
    examples=(
        "find every *.test.js file",
        "list all the python files recursively",
        "which yaml files are under config",
        "find files by name pattern",
        "find all files ending in .md",
        "locate files matching src/**/*.ts",
    ),
)
async def glob_files(params: GlobFilesInput, state: FileOpsState, ctx: ToolContext) -> GlobFilesResult:
    """Find files whose path (relative to `path`) matches a glob such as '**/*.py' or 'src/*.{ts,tsx}'.

    Never follows symlinked directories (no loops, no escape from the roots); patterns may not contain
    '..' or be absolute. Optional .gitignore awareness, exclude globs, hidden files, directories. Returns
    sorted relative paths, at most `max_results` (1000 by default).
    """
    from mcp_sections.servers.file_ops import listing

    guard = await _guard(state, ctx)
    settings = state.settings
    outcome = await _work(
        listing.glob_files,
        guard,
        params.pattern,
        params.path,
        respect_gitignore=params.respect_gitignore,
        include_hidden=params.include_hidden,
        include_directories=params.include_directories,
        exclude=params.exclude,
        max_results=params.max_results,
        max_entries=settings.walk_max_entries,
        timeout_seconds=settings.search_timeout_seconds,
    )
    matches, next_cursor = paging.page(outcome.matches, params.cursor, params.limit, _listing(params))
    return GlobFilesResult.model_validate(
        {
            **vars(outcome),
            "matches": matches,
            "count": len(matches),
            "total_matches": len(outcome.matches),
            "next_cursor": next_cursor,
        }
    )


@tool(
    name="search_files",
    title="Search file contents",
    annotations=READ_ONLY,
    examples=(
        "grep for a function name across the project",
        "which files contain a certain error message",
        "search the code with a regex",
        "find text inside files",
        "where is this function called in the codebase",
        "find every occurrence of a string in the source",
    ),
)
async def search_files(params: SearchFilesInput, state: FileOpsState, ctx: ToolContext) -> SearchFilesResult:
    """Search the contents of files below a directory for a literal text (default) or a regular expression.

    Returns matching lines with file, line number and optional context lines, at most `max_results`.
    Binary files, files above the size cap and protected files are skipped; .gitignore rules apply by
    default; `include`/`exclude` globs narrow the files. Symlinked directories are not followed. The
    search has a time budget; a partial result says `timed_out`. Regexes run on ripgrep's linear-time engine;
    where Python's engine matches (lookarounds, backreferences, no rg), nested unbounded repetitions and
    backreferences are refused.
    """
    from mcp_sections.servers.file_ops import searching

    guard = await _guard(state, ctx)
    settings = state.settings
    outcome = await _work(
        searching.search_files,
        guard,
        params.pattern,
        params.path,
        regex=params.regex,
        case_sensitive=params.case_sensitive,
        include=params.include,
        exclude=params.exclude,
        context_lines=params.context_lines,
        max_results=params.max_results,
        respect_gitignore=params.respect_gitignore,
        include_hidden=params.include_hidden,
        max_file_bytes=settings.max_search_file_bytes,
        max_entries=settings.walk_max_entries,
        timeout_seconds=settings.search_timeout_seconds,
        engine=settings.search_engine,
    )
    return SearchFilesResult.model_validate({**vars(outcome), "matches": [vars(match) for match in outcome.matches]})


# -- entries ------------------------------------------------------------------------------------------------


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

    guard = await _guard(state, ctx)
    outcome = await _work(entries.file_exists, guard, params.path)
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

    guard = await _guard(state, ctx)
    outcome = await _work(entries.get_file_info, guard, params.path)
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

    guard = await _guard(state, ctx)
    outcome = await _work(
        _recorded,
        state,
        "create_directory",
        guard,
        True,
        entries.create_directory,
        guard,
        params.path,
        parents=params.parents,
    )
    return CreateDirectoryResult.model_validate(outcome)


@tool(
    name="delete_path",
    title="Delete a file or directory",
    annotations=OVERWRITE,
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

    guard = await _guard(state, ctx)
    outcome = await _work(
        _recorded,
        state,
        "delete_path",
        guard,
        params.undoable,
        entries.delete_path,
        guard,
        params.path,
        recursive=params.recursive,
    )
    return DeletePathResult.model_validate(outcome)


@tool(
    name="move_file",
    title="Move or rename",
    annotations=MOVE,
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

    guard = await _guard(state, ctx)
    outcome = await _work(
        _recorded,
        state,
        "move_file",
        guard,
        params.undoable,
        entries.move_file,
        guard,
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

    guard = await _guard(state, ctx)
    outcome = await _work(
        _recorded,
        state,
        "copy_file",
        guard,
        params.undoable,
        entries.copy_file,
        guard,
        params.source,
        params.destination,
        overwrite=params.overwrite,
        recursive=params.recursive,
    )
    return CopyFileResult.model_validate(outcome)


# -- undo -----------------------------------------------------------------------------------------------------


@tool(
    name="list_file_changes",
    title="List recent file changes",
    annotations=READ_ONLY,
    examples=(
        "what did the agent change in my files just now",
        "show the history of edits made by the tools",
        "which files were deleted or overwritten recently",
        "list the recent changes made by the file tools",
        "which edits can I undo",
        "show the journal of file writes and deletions",
    ),
)
async def list_file_changes(
    params: ListFileChangesInput, state: FileOpsState, ctx: ToolContext
) -> ListFileChangesResult:
    """List the changes file tools made (write, edit, move, copy, delete, create directory, undo), newest
    first: id, time, tool, path, bytes of earlier content kept, status. Only changes inside the roots in
    force are shown. The journal keeps the newest changes within its limits (200 MiB, 1000 changes, 30 days
    by default). Use it to find the change_id to pass to undo_file_change."""
    from mcp_sections.servers.file_ops import undoing

    guard = await _guard(state, ctx)
    outcome = await _work(
        lambda: undoing.list_changes(_journal(state), guard, limit=params.limit, before_id=params.before_id)
    )
    return ListFileChangesResult.model_validate({**vars(outcome), "changes": [vars(item) for item in outcome.changes]})


@tool(
    name="undo_file_change",
    title="Undo a file change",
    annotations=EDIT,
    examples=(
        "undo what the agent just did to my file",
        "restore the file that was deleted by mistake",
        "roll back the last edit",
        "revert the last change to a file",
        "undo a specific change by its id",
        "put back the old content of a file that was overwritten",
    ),
)
async def undo_file_change(params: UndoFileChangeInput, state: FileOpsState, ctx: ToolContext) -> UndoFileChangeResult:
    """Undo one change made by the file tools: the newest one not undone yet by default (call again to go
    further back), or `change_id` from list_file_changes or a tool's result.

    A written or edited file gets its earlier content back (a new one is deleted), a moved entry moves
    back, a deleted file or tree comes back, a copy is deleted, created directories are removed while
    empty. It is refused when a path changed since the change (other content, type or link target; a
    moved entry replaced; its old path taken) unless `force=true`, and always for a path now outside the
    roots, protected, or behind a symbolic link planted since. The undo overwrites, so it is itself
    recorded: undo its `change_id` to make the change again.
    """
    from mcp_sections.servers.file_ops import undoing

    guard = await _guard(state, ctx)
    outcome = await _work(lambda: undoing.undo_change(_journal(state), guard, params.change_id, force=params.force))
    return UndoFileChangeResult.model_validate(
        {**vars(outcome), "actions": [vars(action) for action in outcome.actions]}
    )


# -- packages and roots -------------------------------------------------------------------------------------


@tool(
    name="install_package",
    title="Install npm or pip packages",
    annotations=OPEN_WORLD,
    examples=(
        "npm install a library into this project",
        "add a python package to the virtualenv",
        "add a package needed only for development",
        "pip install a package",
        "install requests with pip",
        "add lodash as a dependency",
    ),
)
async def install_package(params: InstallPackageInput, state: FileOpsState, ctx: ToolContext) -> InstallPackageResult:
    """Install packages from the npm or PyPI registry, or the project itself, into a project inside the allowed roots.

    Registry specs are strictly validated (name plus optional version or range; pip extras): no options or URLs. pip
    also installs local projects inside the roots (`packages=[".[test]"]`, with `editable=true` for
    `pip install -e ".[test]"`) and requirements files (`requirements=["requirements.txt"]`); npm with no package
    installs the project's own dependencies. Runs without a shell in the project directory, with a time limit. npm
    installs into the project (install scripts are skipped by default); pip installs into the project's virtual
    environment (the nearest directory with a pyvenv.cfg, .venv first) and is refused if there is none. The installer
    runs inside the OS sandbox (bubblewrap): it sees the project, its venv and the local projects, not the rest of the
    machine, and reaches only the configured package registries (through an egress proxy; `blocked` lists what else
    it tried) — the same way out as an installer started with run_command. Returns the command run and the end of
    its output.
    """
    from mcp_sections.servers.file_ops import packages

    guard = await _guard(state, ctx)
    settings = state.settings
    await ctx.report_progress(0, None, f"{params.manager} install {' '.join(params.packages)[:200]}".rstrip())
    outcome = await _work(
        packages.install_package,
        guard,
        params.manager,
        params.packages,
        params.path,
        dev=params.dev,
        timeout_seconds=settings.install_timeout_seconds,
        npm_ignore_scripts=settings.npm_ignore_scripts,
        pip_allow_server_environment=settings.pip_allow_server_environment,
        sandbox=state.sandbox(),
        registries=settings.install_registries,
        editable=params.editable,
        requirements=params.requirements,
    )
    return InstallPackageResult.model_validate(outcome)


@tool(
    name="list_allowed_roots",
    title="List the allowed roots",
    annotations=READ_ONLY,
    examples=(
        "which folders can the file tools access",
        "what are my allowed root directories",
        "which paths am I permitted to read and write",
        "show the workspace roots",
        "where am I allowed to work",
        "which directories are accessible",
    ),
)
async def list_allowed_roots(params: NoInput, state: FileOpsState, ctx: ToolContext) -> ListRootsResult:
    """List the directories file tools may use right now, and where they come from.

    The server's configured roots (--root) are the limit; when the client offers MCP roots, only client
    roots inside the configured ones are used (or the client's roots alone if none are configured).
    Relative paths resolve against the first root. Also lists the protected (denied) name patterns.
    """
    guard, source, uris = await _guard_and_source(state, ctx)
    return ListRootsResult(
        roots=[str(root) for root in guard.roots],
        source=source,  # type: ignore[arg-type]
        configured_roots=[str(root) for root in state.configured.roots],
        client_roots=uris,
        deny_globs=list(guard.deny_globs),
    )


SECTION = Section(
    id="file_ops",
    requirements=(
        Requirement("ripgrep (fast search_files engine)", program("rg"), "apt-get install ripgrep", optional=True),
        Requirement(
            "OS sandbox (install_package): bubblewrap, or Seatbelt on macOS",
            no_sandbox,
            "apt-get install bubblewrap (or sandbox = 'off')",
            optional=True,
        ),
    ),
    output_source="file",
    container=Container(stage="runtime-tools", workspace="write"),
    name="File operations",
    description="Read, write, edit, list, glob and search files inside allowed root directories; install packages.",
    instructions=(
        "All paths must lie inside the allowed roots (list_allowed_roots); relative paths start at the first "
        "root. Prefer edit_file for changes to existing files and read_file windows (offset/limit, head, tail) "
        "for large files. Secrets (.env, keys) are never readable, and secret values inside other files come back "
        "as ***MASKED***; writes that contain the mask are refused (they would overwrite the real value). Every "
        "change is recorded: list_file_changes shows them, undo_file_change takes the last one (or one by id) back."
    ),
    tools=(
        read_file,
        read_multiple_files,
        write_file,
        edit_file,
        list_directory,
        directory_tree,
        glob_files,
        search_files,
        file_exists,
        get_file_info,
        create_directory,
        delete_path,
        move_file,
        copy_file,
        list_file_changes,
        undo_file_change,
        install_package,
        list_allowed_roots,
    ),
    settings_model=FileOpsSettings,
    open_state=open_state,
    masks_secrets=True,
)
