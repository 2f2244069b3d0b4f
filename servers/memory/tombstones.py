"""Tombstones of deleted memories: a memory_delete repeated after its answer was lost (a 502, a timeout) learns that
the memory is gone, and since when, instead of a bare NOT_FOUND that reads as a failed delete or a wrong id.

`deleted_memories` (the store's third migration, `dialects.py`) holds, per scope (a workflow, or '' for general), the
newest `KEEP_PER_SCOPE` deleted ids: when, and for those memory_clear_by_type took, the type it cleared. Rows are
written in the delete's own transaction. A call on such an id still fails NOT_FOUND (an id deleted long ago, perhaps by
another agent, may be the caller's mistake), with a message and details that say what happened, and only to a call
that could see the memory (a workflow's tombstones stay that workflow's). Memory ids are never created again (`mem_`
and a random UUID4: 122 random bits), so a tombstone never describes a memory that exists.
"""

from __future__ import annotations

from typing import Any

from mcp_sections.shared.ground.errors import ToolFailure, not_found
from mcp_sections.shared.store.keeping import keep_newest

#: How many deleted ids a scope remembers. A count rather than an age: a retry follows its lost answer within seconds
#: or minutes, so only the latest deletions matter; a count bounds the table by the number of workflows whatever their
#: churn, where an age limit lets a busy workflow grow it for the whole window (and memory_clear_by_type may delete
#: any number at once: only its newest `KEEP_PER_SCOPE` are remembered). A row is about 100 bytes.
KEEP_PER_SCOPE = 1000

_COLUMNS = "INSERT INTO deleted_memories (id, workflow_id, deleted_at, cleared_type)"


def record(connection: Any, memory_id: str, workflow: str, deleted_at: str, keep: int) -> None:
    """Remember one deleted memory, then forget all but the scope's newest `keep`."""
    connection.execute(f"{_COLUMNS} VALUES (?, ?, ?, NULL)", (memory_id, workflow, deleted_at))
    keep_newest(connection, "deleted_memories", "workflow_id", workflow, keep)


def record_cleared(connection: Any, workflow: str, memory_type: str, deleted_at: str, keep: int) -> None:
    """Remember the memories of this type and scope (the newest `keep`) before memory_clear_by_type deletes them."""
    connection.execute(
        f"{_COLUMNS} SELECT id, workflow_id, ?, type FROM memories WHERE workflow_id = ? AND type = ? "
        "ORDER BY pk DESC LIMIT ?",
        (deleted_at, workflow, memory_type, keep),
    )
    keep_newest(connection, "deleted_memories", "workflow_id", workflow, keep)


def already_deleted(connection: Any, memory_id: str, visible: tuple[str, ...], *, deleting: bool) -> ToolFailure | None:
    """NOT_FOUND saying when the memory was deleted (on a delete: that a repeated call has nothing left to do), if a
    call that sees the scopes `visible` could have seen it; None when no tombstone of it is remembered."""
    row = connection.execute(
        "SELECT workflow_id, deleted_at, cleared_type FROM deleted_memories WHERE id = ?", (memory_id,)
    ).fetchone()
    if row is None or row["workflow_id"] not in visible:
        return None
    how, details = "", {"deleted_at": row["deleted_at"]}
    if row["cleared_type"] is not None:
        scope = f"workflow {row['workflow_id']}" if row["workflow_id"] else "the general scope"
        how = f" (by memory_clear_by_type, with every {row['cleared_type']} memory of {scope})"
        details["cleared_type"] = row["cleared_type"]
    tail = (
        "if this call repeats an earlier delete, that delete is done — nothing to do."
        if deleting
        else "it can no longer be read or changed; memory_list or memory_search shows what is kept."
    )
    return not_found(f"memory {memory_id} was already deleted at {row['deleted_at']}{how}; {tail}", **details)
