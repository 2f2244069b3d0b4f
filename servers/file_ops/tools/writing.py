"""The writing tools: write_file (a whole content, atomically) and edit_file (exact replacements), both recorded
in the undo journal."""

from __future__ import annotations

from mcp_sections.servers.file_ops.models import EditFileInput, EditFileResult, WriteFileInput, WriteFileResult
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.servers.file_ops.tools.calls import EDIT, changed, within_roots
from mcp_sections.shared.framework.tools import OVERWRITE, ToolContext, tool


@tool(
    name="write_file",
    title="Write a file",
    annotations=OVERWRITE,
    preflight=lambda params, state: within_roots(state, (params.path, "write")),
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

    outcome = await changed(
        state,
        ctx,
        "write_file",
        params.undoable,
        writing.write_file,
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

    edits = [writing.Edit(edit.old_text, edit.new_text, edit.replace_all) for edit in params.edits]
    outcome = await changed(
        state,
        ctx,
        "edit_file",
        params.undoable,
        writing.edit_file,
        params.path,
        edits,
        dry_run=params.dry_run,
        max_bytes=state.settings.max_edit_file_bytes,
    )
    return EditFileResult.model_validate(outcome)
