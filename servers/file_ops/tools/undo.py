"""The undo tools: list_file_changes and undo_file_change, over the undo journal."""

from __future__ import annotations

from mcp_sections.servers.file_ops.models import (
    ListFileChangesInput,
    ListFileChangesResult,
    UndoFileChangeInput,
    UndoFileChangeResult,
)
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.servers.file_ops.tools.calls import EDIT, guard_of, journal_of, work
from mcp_sections.shared.framework.tools import READ_ONLY, ToolContext, tool


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

    guard = await guard_of(state, ctx)
    outcome = await work(
        lambda: undoing.list_changes(journal_of(state), guard, limit=params.limit, before_id=params.before_id)
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

    guard = await guard_of(state, ctx)
    outcome = await work(lambda: undoing.undo_change(journal_of(state), guard, params.change_id, force=params.force))
    return UndoFileChangeResult.model_validate(
        {**vars(outcome), "actions": [vars(action) for action in outcome.actions]}
    )
