"""Tombstones of deleted tasks: a todo_delete repeated after its answer was lost (a 502, a timeout) learns that the
task is gone, and since when, instead of a bare NOT_FOUND that reads as a failed delete or a wrong id.

`deleted_tasks` (the board's second migration) holds, per workflow, the newest `KEEP_PER_WORKFLOW` deleted ids: when,
and for a task a cascade took, the task whose delete took it. Rows are written in the delete's own transaction. A
call on such an id still fails NOT_FOUND (an id deleted long ago, perhaps by another agent, may be the caller's
mistake), with a message and details that say what happened. New task ids never take a tombstoned one
(`Board.add`), so a tombstone never describes a task that exists again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_sections.shared.ground.errors import ToolFailure, not_found
from mcp_sections.shared.store.keeping import keep_newest
from mcp_sections.shared.store.postgres import SqlConnection

#: How many deleted ids a workflow remembers. A count rather than an age: a retry follows its lost answer within
#: seconds or minutes, so only the latest deletions matter; a count bounds the table by the number of workflows
#: whatever their churn (an agent creating and deleting in a loop), where an age limit lets a busy workflow grow it
#: for the whole window. 1,000 rows of about 100 bytes cover the last deletes of any run, and a cascade of up to
#: 1,000 tasks whole (its root is written last: it outlives its dependents' tombstones).
KEEP_PER_WORKFLOW = 1000


@dataclass(frozen=True)
class Tombstone:
    """A deleted task: when, the task whose cascading delete took it (None: deleted by itself), and the dependents
    its own delete took (oldest first, those still remembered)."""

    task_id: str
    deleted_at: str
    deleted_with: str | None
    dependents: list[str] = field(default_factory=list)


def record(
    conn: SqlConnection, workflow_id: str, root: str, dependents: Sequence[str], deleted_at: str, keep: int
) -> None:
    """Remember `root` and the `dependents` its delete took, then forget all but the workflow's newest `keep`."""
    rows = [(task_id, workflow_id, deleted_at, root) for task_id in dependents]
    # REPLACE: a replica still on the old code may have reused a remembered id for a task deleted now
    conn.executemany(
        "INSERT OR REPLACE INTO deleted_tasks (id, workflow_id, deleted_at, deleted_with) VALUES (?, ?, ?, ?)",
        [*rows, (root, workflow_id, deleted_at, None)],
    )
    keep_newest(conn, "deleted_tasks", "workflow_id", workflow_id, keep)


def find(conn: SqlConnection, workflow_id: str, task_id: str) -> Tombstone | None:
    """The tombstone of `task_id` in this workflow (never another workflow's), if it is remembered."""
    row = conn.execute(
        "SELECT deleted_at, deleted_with FROM deleted_tasks WHERE workflow_id = ? AND id = ?", (workflow_id, task_id)
    ).fetchone()
    if row is None:
        return None
    dependents = conn.execute(
        "SELECT id FROM deleted_tasks WHERE workflow_id = ? AND deleted_with = ? ORDER BY n", (workflow_id, task_id)
    ).fetchall()
    return Tombstone(task_id, row[0], row[1], [dependent[0] for dependent in dependents])


def already_deleted(tombstone: Tombstone, dependents_named: str, *, deleting: bool) -> ToolFailure:
    """NOT_FOUND saying when the task was deleted, and with what (`dependents_named`: its dependents, listed); on a
    delete, that a repeated call has nothing left to do."""
    details: dict[str, object] = {"deleted_at": tombstone.deleted_at}
    how = ""
    if tombstone.deleted_with is not None:
        how = f" (by cascade from task {tombstone.deleted_with})"
        details["deleted_with"] = tombstone.deleted_with
    elif tombstone.dependents:
        how = f" (with its dependent{'s' if len(tombstone.dependents) > 1 else ''} {dependents_named})"
        details["dependents_deleted"] = tombstone.dependents
    tail = (
        "if this call repeats an earlier delete, that delete is done — nothing to do."
        if deleting
        else "it can no longer be read or changed; todo_list shows the workflow's tasks."
    )
    return not_found(f"task {tombstone.task_id} was already deleted at {tombstone.deleted_at}{how}; {tail}", **details)
