"""The task board: workflow-scoped tasks, their dependencies and their timing, in one SQLite file.

Plain Python, no MCP: every public method is one transaction on `shared.store.sqlite.Database`
(WAL, `synchronous=FULL`, `BEGIN IMMEDIATE` for writes), so several server processes can share a
file: every rule that reads before it writes (dependencies exist, no cycle, dependencies finished,
the per-workflow cap) is checked inside the write transaction that applies the change.

Rules
- A task belongs to one workflow; no call ever sees or references another workflow's tasks, nor learns whether an
  id is one of them or which workflow it is in (`_load`).
- Dependencies are tasks of the same workflow, at most `MAX_DEPENDENCIES` per task, and never form a cycle.
- Starting (`in_progress`) or completing a task whose dependencies are not all `completed` is refused
  (VALIDATION_FAILED naming them) unless `force`; likewise reopening a completed task while a task that
  depends on it is `in_progress` or `completed`.
- Deleting a task that others depend on is refused (VALIDATION_FAILED listing the dependents) unless
  `cascade`, which deletes every task that depends on it, directly or transitively.
- A deleted task leaves a tombstone (`tombstones.py`): a later call on its id (a delete repeated after its answer was
  lost) is still NOT_FOUND, saying when it was deleted and by which cascade.
- `next` is the `pending` task whose dependencies are all `completed`, with the best priority
  (1 first), the oldest first among equal priorities.
- `add` without `allow_duplicate` returns a `pending` task with the very same fields instead of creating its twin: a
  call retried after its answer was lost (a DATABASE_ERROR whose commit landed, a dropped connection) or an agent
  planning the same step again must not double it. MCP has no idempotency key; the fields are the call.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from mcp_sections.servers.todo import tombstones
from mcp_sections.shared.ground.errors import invalid_input, limit_exceeded, not_found, validation_failed
from mcp_sections.shared.ground.workflows import check_workflow_id
from mcp_sections.shared.store.postgres import PostgresDatabase, SqlConnection, StoreBackendSettings
from mcp_sections.shared.store.sqlite import Database

Status = Literal["pending", "in_progress", "completed", "blocked"]

STATUSES: tuple[Status, ...] = ("pending", "in_progress", "completed", "blocked")
MAX_NAME_LENGTH = 128
MAX_DESCRIPTION_LENGTH = 1000
PRIORITY_MIN, PRIORITY_MAX, DEFAULT_PRIORITY = 1, 5, 3
MAX_DEPENDENCIES = 100
MAX_LIST_LIMIT = 1000
DEFAULT_LIST_LIMIT = 1000
MAX_TASKS_PER_WORKFLOW = 10_000
MAX_DURATION_MS = 366 * 24 * 3600 * 1000
DEFAULT_WORKFLOW = "default"
TASK_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
AGENT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}$"
FILE_NAME = "todo.sqlite3"
MAX_NAMED = 20  # how many ids an error message lists before "and N more"

_TASK_ID = re.compile(TASK_ID_PATTERN)
_AGENT_ID = re.compile(AGENT_ID_PATTERN)

MIGRATIONS = (
    """
    CREATE TABLE tasks (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        workflow_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed', 'blocked')),
        priority INTEGER NOT NULL CHECK (priority BETWEEN 1 AND 5),
        assigned_agent TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        started_at TEXT,
        completed_at TEXT,
        duration_ms INTEGER,
        UNIQUE (workflow_id, id)
    );
    CREATE INDEX tasks_by_workflow ON tasks (workflow_id, status, priority, seq);
    CREATE TABLE dependencies (
        workflow_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        depends_on TEXT NOT NULL,
        PRIMARY KEY (workflow_id, task_id, depends_on),
        CHECK (task_id <> depends_on),
        FOREIGN KEY (workflow_id, task_id) REFERENCES tasks (workflow_id, id) ON DELETE CASCADE,
        FOREIGN KEY (workflow_id, depends_on) REFERENCES tasks (workflow_id, id)
    ) WITHOUT ROWID;
    CREATE INDEX dependencies_by_target ON dependencies (workflow_id, depends_on);
    """,
    # The tombstones of deleted tasks (`tombstones.py`); `n` orders them, the newest kept.
    """
    CREATE TABLE deleted_tasks (
        n INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        workflow_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        deleted_with TEXT
    );
    CREATE INDEX deleted_tasks_by_workflow ON deleted_tasks (workflow_id, n);
    CREATE INDEX deleted_tasks_by_root ON deleted_tasks (workflow_id, deleted_with);
    """,
)
#: The same schema on a PostgreSQL server (`store = "postgres"`). What differs: the spelling of the row counter, and
#: the check that a dependency exists waits for the end of the transaction (PostgreSQL checks it before the cascade
#: of a multi-task delete has removed the dependent rows, where SQLite checks it at the end of the statement).
POSTGRES_MIGRATIONS = (
    MIGRATIONS[0]
    .replace("seq INTEGER PRIMARY KEY", "seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    .replace(") WITHOUT ROWID;", ");")
    .replace(
        "REFERENCES tasks (workflow_id, id)\n", "REFERENCES tasks (workflow_id, id) DEFERRABLE INITIALLY DEFERRED\n"
    ),
    MIGRATIONS[1].replace("n INTEGER PRIMARY KEY", "n BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
)


@dataclass(frozen=True)
class Task:
    """One task, as stored, with its dependencies (ids, oldest first)."""

    id: str
    workflow_id: str
    name: str
    description: str
    status: Status
    priority: int
    assigned_agent: str | None
    dependencies: list[str]
    created_at: str
    updated_at: str
    started_at: str | None
    completed_at: str | None
    duration_ms: int | None


@dataclass(frozen=True)
class Added:
    """What `Board.add` did: the task, and whether it was created now (False: its pending twin, returned)."""

    task: Task
    created: bool


@dataclass(frozen=True)
class TaskDetail:
    """A task plus what the graph says about it."""

    task: Task
    dependents: list[str]
    unfinished_dependencies: list[str]


@dataclass(frozen=True)
class StatusChange:
    task: Task
    previous_status: Status
    changed: bool
    forced_past: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TaskPage:
    tasks: list[Task]
    total: int
    offset: int
    limit: int


@dataclass(frozen=True)
class NextPick:
    task: Task | None
    pending: int
    waiting: int


@dataclass(frozen=True)
class Deletion:
    deleted: list[str]


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds and a `Z` suffix."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def check_task_id(value: str, what: str = "task_id") -> str:
    if not _TASK_ID.match(value):
        raise invalid_input(
            f"{what} must be 1-64 characters of letters, digits, '_' or '-' (e.g. 'task_1a2b3c4d5e6f')."
        )
    return value


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:MAX_NAMED])
    return shown + (f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else "")


def _depend_on_it(ids: Sequence[str]) -> str:
    """'task a depends on it' or 'tasks a, b depend on it'."""
    return f"task {ids[0]} depends on it" if len(ids) == 1 else f"tasks {_named(ids)} depend on it"


class Board:
    """All tasks of all workflows in `<data_dir>/todo.sqlite3`, or on a PostgreSQL server the replicas of a team
    share (`postgres_url`): the same queries on either (`shared.store.postgres`)."""

    def __init__(
        self,
        path: Path | None,
        max_tasks_per_workflow: int = MAX_TASKS_PER_WORKFLOW,
        *,
        postgres_url: str | None = None,
        postgres_password: str | None = None,
    ) -> None:
        self.path = path
        self.max_tasks_per_workflow = max_tasks_per_workflow
        self.tombstones_kept = tombstones.KEEP_PER_WORKFLOW  # deleted ids remembered per workflow
        self.db: Database | PostgresDatabase
        if postgres_url is not None:
            self.db = PostgresDatabase(postgres_url, POSTGRES_MIGRATIONS, name="todo", password=postgres_password)
        else:
            assert path is not None
            self.db = Database(path, MIGRATIONS)

    @classmethod
    def in_data_dir(
        cls,
        data_dir: Path,
        max_tasks_per_workflow: int = MAX_TASKS_PER_WORKFLOW,
        backend: StoreBackendSettings | None = None,
    ) -> Board:
        """The board of this data directory, or of the PostgreSQL server `backend` names."""
        server = backend.postgres_server() if backend is not None else {}
        return cls(None if server else Path(data_dir) / FILE_NAME, max_tasks_per_workflow, **server)

    def close(self) -> None:
        self.db.close()

    # ----------------------------------------------------------------------------------- writes

    def create(
        self,
        workflow_id: str,
        name: str,
        description: str = "",
        priority: int = DEFAULT_PRIORITY,
        dependencies: Iterable[str] = (),
        assigned_agent: str | None = None,
    ) -> Task:
        """A new `pending` task, whatever the board holds already."""
        return self.add(
            workflow_id, name, description, priority, dependencies, assigned_agent, allow_duplicate=True
        ).task

    def add(
        self,
        workflow_id: str,
        name: str,
        description: str = "",
        priority: int = DEFAULT_PRIORITY,
        dependencies: Iterable[str] = (),
        assigned_agent: str | None = None,
        *,
        allow_duplicate: bool = False,
    ) -> Added:
        """A new `pending` task; without `allow_duplicate`, the `pending` task that has the very same fields when
        there is one (see the module docstring)."""
        check_workflow_id(workflow_id)
        name = _check_name(name)
        _check_description(description)
        _check_priority(priority)
        _check_agent(assigned_agent)
        wanted = _check_dependency_ids(dependencies)
        with self.db.write() as conn:
            if not allow_duplicate:  # before the cap: a call repeated on a full workflow gets what it made
                twin = _pending_twin(conn, workflow_id, name, description, priority, wanted, assigned_agent)
                if twin is not None:
                    return Added(twin, created=False)
            count = conn.execute("SELECT COUNT(*) FROM tasks WHERE workflow_id = ?", (workflow_id,)).fetchone()[0]
            if count >= self.max_tasks_per_workflow:
                raise limit_exceeded(
                    f"workflow {workflow_id!r} already holds {count} tasks (the maximum is "
                    f"{self.max_tasks_per_workflow}); delete finished tasks with todo_delete "
                    "or use another workflow_id.",
                    limit=self.max_tasks_per_workflow,
                )
            _require_existing(conn, workflow_id, wanted)
            task_id = _new_task_id(conn)
            now = now_iso()
            conn.execute(
                "INSERT INTO tasks (id, workflow_id, name, description, status, priority, assigned_agent,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)",
                (task_id, workflow_id, name, description, priority, assigned_agent, now, now),
            )
            conn.executemany(
                "INSERT INTO dependencies (workflow_id, task_id, depends_on) VALUES (?, ?, ?)",
                [(workflow_id, task_id, dep) for dep in wanted],
            )
            return Added(_load(conn, workflow_id, task_id), created=True)

    def update(
        self,
        workflow_id: str,
        task_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        priority: int | None = None,
        assigned_agent: str | None = None,
        unassign: bool = False,
        dependencies: Iterable[str] | None = None,
        force: bool = False,
    ) -> Task:
        """Edit a task's fields; `dependencies` replaces the whole list (checked for existence and cycles)."""
        check_workflow_id(workflow_id)
        check_task_id(task_id)
        if name is not None:
            name = _check_name(name)
        if description is not None:
            _check_description(description)
        if priority is not None:
            _check_priority(priority)
        _check_agent(assigned_agent)
        if unassign and assigned_agent is not None:
            raise invalid_input("give either assigned_agent or unassign=true, not both.")
        wanted = None if dependencies is None else _check_dependency_ids(dependencies)
        with self.db.write() as conn:
            task = _load(conn, workflow_id, task_id)
            if wanted is not None:
                _replace_dependencies(conn, task, wanted, force=force)
            changes: dict[str, object] = {
                column: value
                for column, value in (
                    ("name", name),
                    ("description", description),
                    ("priority", priority),
                    ("assigned_agent", assigned_agent),
                )
                if value is not None
            }
            if unassign:
                changes["assigned_agent"] = None
            if changes or wanted is not None:
                changes["updated_at"] = now_iso()
                assignments = ", ".join(f"{column} = ?" for column in changes)
                conn.execute(
                    f"UPDATE tasks SET {assignments} WHERE workflow_id = ? AND id = ?",
                    (*changes.values(), workflow_id, task_id),
                )
            return _load(conn, workflow_id, task_id)

    def set_status(
        self,
        workflow_id: str,
        task_id: str,
        status: Status,
        *,
        force: bool = False,
        duration_ms: int | None = None,
    ) -> StatusChange:
        """Move a task to `status` under the dependency rules (see the module docstring).

        Setting the status a task already has changes nothing (`changed=False`). `started_at` is set the
        first time the task enters `in_progress` and kept afterwards; `completed_at` and `duration_ms` are
        set on completion (duration measured from `started_at` when not given) and cleared on reopening.
        """
        check_workflow_id(workflow_id)
        check_task_id(task_id)
        if status not in STATUSES:
            raise invalid_input(f"status must be one of {', '.join(STATUSES)}.")
        if duration_ms is not None and not 0 <= duration_ms <= MAX_DURATION_MS:
            raise invalid_input(f"duration_ms must be between 0 and {MAX_DURATION_MS}.")
        with self.db.write() as conn:
            task = _load(conn, workflow_id, task_id)
            if task.status == status:
                return StatusChange(task=task, previous_status=task.status, changed=False)
            forced_past: list[str] = []
            if status in ("in_progress", "completed"):
                unfinished = _unfinished(conn, workflow_id, task.dependencies)
                if unfinished and not force:
                    verb = "start" if status == "in_progress" else "complete"
                    raise validation_failed(
                        f"cannot {verb} task {task_id}: its dependencies {_named(unfinished)} are not completed. "
                        "Complete them first (todo_next shows what is ready), or pass force=true to override.",
                        unfinished_dependencies=unfinished,
                    )
                forced_past = unfinished
            if task.status == "completed" and not force:
                active = _active_dependents(conn, workflow_id, task_id)
                if active:
                    raise validation_failed(
                        f"cannot reopen task {task_id}: {_depend_on_it(active)}, already in_progress or completed; "
                        "reopen those first, or pass force=true to override.",
                        active_dependents=active,
                    )
            now = now_iso()
            started_at = task.started_at or (now if status == "in_progress" else None)
            completed_at, duration = None, None
            if status == "completed":
                completed_at = now
                duration = duration_ms
                if duration is None and started_at is not None:
                    elapsed = _parse_iso(now) - _parse_iso(started_at)
                    duration = max(0, round(elapsed.total_seconds() * 1000))
            conn.execute(
                "UPDATE tasks SET status = ?, started_at = ?, completed_at = ?, duration_ms = ?, updated_at = ?"
                " WHERE workflow_id = ? AND id = ?",
                (status, started_at, completed_at, duration, now, workflow_id, task_id),
            )
            return StatusChange(
                task=_load(conn, workflow_id, task_id),
                previous_status=task.status,
                changed=True,
                forced_past=forced_past,
            )

    def complete(
        self, workflow_id: str, task_id: str, duration_ms: int | None = None, *, force: bool = False
    ) -> StatusChange:
        return self.set_status(workflow_id, task_id, "completed", force=force, duration_ms=duration_ms)

    def delete(self, workflow_id: str, task_id: str, *, cascade: bool = False) -> Deletion:
        """Delete the task (and with `cascade` its dependents), leaving their tombstones (`tombstones.py`)."""
        check_workflow_id(workflow_id)
        check_task_id(task_id)
        with self.db.write() as conn:
            _load(conn, workflow_id, task_id, deleting=True)
            direct = _dependents(conn, workflow_id, task_id)
            if direct and not cascade:
                raise validation_failed(
                    f"cannot delete task {task_id}: {_depend_on_it(direct)}. Remove it from their "
                    "dependencies with todo_update, or pass cascade=true to delete them too "
                    "(and their own dependents).",
                    dependents=direct,
                )
            dependents: list[str] = []
            if not direct:
                conn.execute("DELETE FROM tasks WHERE workflow_id = ? AND id = ?", (workflow_id, task_id))
            else:
                closure = """
                    WITH RECURSIVE doomed(id) AS (
                        SELECT ?
                        UNION
                        SELECT d.task_id FROM dependencies d JOIN doomed ON d.depends_on = doomed.id
                        WHERE d.workflow_id = ?
                    )"""
                rows = conn.execute(
                    f"{closure} SELECT t.id FROM tasks t JOIN doomed ON t.id = doomed.id"
                    " WHERE t.workflow_id = ? ORDER BY t.seq",
                    (task_id, workflow_id, workflow_id),
                ).fetchall()
                # One statement, so the foreign keys are checked once the whole set is gone.
                conn.execute(
                    f"{closure} DELETE FROM tasks WHERE workflow_id = ? AND id IN (SELECT id FROM doomed)",
                    (task_id, workflow_id, workflow_id),
                )
                dependents = [row[0] for row in rows if row[0] != task_id]
            tombstones.record(conn, workflow_id, task_id, dependents, now_iso(), self.tombstones_kept)
            return Deletion(deleted=[task_id, *dependents])

    # ------------------------------------------------------------------------------------ reads

    def get(self, workflow_id: str, task_id: str) -> TaskDetail:
        check_workflow_id(workflow_id)
        check_task_id(task_id)
        with self.db.read() as conn:
            task = _load(conn, workflow_id, task_id)
            return TaskDetail(
                task=task,
                dependents=_dependents(conn, workflow_id, task_id),
                unfinished_dependencies=_unfinished(conn, workflow_id, task.dependencies),
            )

    def list(
        self,
        workflow_id: str,
        status: Status | None = None,
        assigned_agent: str | None = None,
        limit: int = DEFAULT_LIST_LIMIT,
        offset: int = 0,
    ) -> TaskPage:
        """Tasks by priority (1 first), then oldest first."""
        check_workflow_id(workflow_id)
        if status is not None and status not in STATUSES:
            raise invalid_input(f"status_filter must be one of {', '.join(STATUSES)}.")
        _check_agent(assigned_agent)
        if not 1 <= limit <= MAX_LIST_LIMIT:
            raise invalid_input(f"limit must be between 1 and {MAX_LIST_LIMIT}.")
        if offset < 0:
            raise invalid_input("offset must be 0 or more.")
        where, args = ["workflow_id = ?"], [workflow_id]
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if assigned_agent is not None:
            where.append("assigned_agent = ?")
            args.append(assigned_agent)
        clause = " AND ".join(where)
        with self.db.read() as conn:
            total = conn.execute(f"SELECT COUNT(*) FROM tasks WHERE {clause}", args).fetchone()[0]
            rows = conn.execute(
                f"SELECT * FROM tasks WHERE {clause} ORDER BY priority, seq LIMIT ? OFFSET ?", [*args, limit, offset]
            ).fetchall()
            deps = _dependencies_of(conn, workflow_id, [row["id"] for row in rows])
            return TaskPage(
                tasks=[_task(row, deps.get(row["id"], [])) for row in rows], total=total, offset=offset, limit=limit
            )

    def next(self, workflow_id: str, assigned_agent: str | None = None) -> NextPick:
        """The pending task to do next: dependencies all completed, best priority, then oldest.

        With `assigned_agent`, only tasks assigned to that agent or to nobody are considered.
        """
        check_workflow_id(workflow_id)
        _check_agent(assigned_agent)
        agent_clause = "" if assigned_agent is None else " AND (t.assigned_agent IS NULL OR t.assigned_agent = ?)"
        agent_args = [] if assigned_agent is None else [assigned_agent]
        waiting_clause = """
            EXISTS (
                SELECT 1 FROM dependencies d JOIN tasks p ON p.workflow_id = d.workflow_id AND p.id = d.depends_on
                WHERE d.workflow_id = t.workflow_id AND d.task_id = t.id AND p.status <> 'completed'
            )"""
        with self.db.read() as conn:
            counts = conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {waiting_clause} THEN 1 ELSE 0 END), 0) FROM tasks t"
                f" WHERE t.workflow_id = ? AND t.status = 'pending'{agent_clause}",
                [workflow_id, *agent_args],
            ).fetchone()
            row = conn.execute(
                f"SELECT t.* FROM tasks t WHERE t.workflow_id = ? AND t.status = 'pending'{agent_clause}"
                f" AND NOT {waiting_clause} ORDER BY t.priority, t.seq LIMIT 1",
                [workflow_id, *agent_args],
            ).fetchone()
            if row is None:
                return NextPick(task=None, pending=counts[0], waiting=counts[1])
            task = _task(row, _dependencies_of(conn, workflow_id, [row["id"]]).get(row["id"], []))
            return NextPick(task=task, pending=counts[0], waiting=counts[1])


# ---------------------------------------------------------------------------------------- helpers


def _check_name(name: str) -> str:
    stripped = name.strip()
    if not stripped:
        raise invalid_input("name must not be empty.")
    if len(name) > MAX_NAME_LENGTH:
        raise invalid_input(f"name is {len(name)} characters; the maximum is {MAX_NAME_LENGTH}.")
    return stripped


def _check_description(description: str) -> None:
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise invalid_input(f"description is {len(description)} characters; the maximum is {MAX_DESCRIPTION_LENGTH}.")


def _check_priority(priority: int) -> None:
    if isinstance(priority, bool) or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise invalid_input(
            f"priority must be an integer from {PRIORITY_MIN} (critical) to {PRIORITY_MAX} (nice-to-have)."
        )


def _check_agent(agent: str | None) -> None:
    if agent is not None and not _AGENT_ID.match(agent):
        raise invalid_input(
            "assigned_agent must be 1-64 characters: letters, digits, '_', '.', '@', ':', '-', "
            "starting with a letter or digit."
        )


def _check_dependency_ids(dependencies: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(dependencies))  # de-duplicated, order kept
    for dep in wanted:
        check_task_id(dep, "each dependency")
    if len(wanted) > MAX_DEPENDENCIES:
        raise invalid_input(f"a task may have at most {MAX_DEPENDENCIES} dependencies; got {len(wanted)}.")
    return wanted


def _pending_twin(
    conn: SqlConnection,
    workflow_id: str,
    name: str,
    description: str,
    priority: int,
    dependencies: Sequence[str],
    assigned_agent: str | None,
) -> Task | None:
    """The oldest `pending` task of the workflow with these very fields (dependencies as a set), if any."""
    rows = conn.execute(
        "SELECT * FROM tasks WHERE workflow_id = ? AND status = 'pending' AND name = ? AND description = ? "
        "AND priority = ? AND COALESCE(assigned_agent, '') = ? ORDER BY seq",  # an agent id is never empty
        (workflow_id, name, description, priority, assigned_agent or ""),
    ).fetchall()
    found = _dependencies_of(conn, workflow_id, [row["id"] for row in rows]) if rows else {}
    wanted = set(dependencies)
    return next((_task(row, found.get(row["id"], [])) for row in rows if set(found.get(row["id"], [])) == wanted), None)


def _new_task_id(conn: SqlConnection) -> str:
    """A fresh id: no task's, and no remembered deleted task's (its tombstone would describe the new task)."""
    while True:
        candidate = "task_" + secrets.token_hex(6)
        taken = "SELECT 1 FROM tasks WHERE id = ? UNION ALL SELECT 1 FROM deleted_tasks WHERE id = ?"
        if conn.execute(taken, (candidate, candidate)).fetchone() is None:
            return candidate


def _task(row: Any, dependencies: list[str]) -> Task:
    return Task(
        id=row["id"],
        workflow_id=row["workflow_id"],
        name=row["name"],
        description=row["description"],
        status=row["status"],
        priority=row["priority"],
        assigned_agent=row["assigned_agent"],
        dependencies=dependencies,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        started_at=row["started_at"],
        completed_at=row["completed_at"],
        duration_ms=row["duration_ms"],
    )


def _replace_dependencies(conn: SqlConnection, task: Task, wanted: list[str], *, force: bool) -> None:
    """The task's dependencies become `wanted`: existing tasks, no cycle, and (unless `force`) none unfinished once
    the task is started or completed."""
    workflow_id, task_id = task.workflow_id, task.id
    if task_id in wanted:
        raise validation_failed(f"task {task_id} cannot depend on itself; remove it from dependencies.")
    _require_existing(conn, workflow_id, wanted)
    added = [dep for dep in wanted if dep not in task.dependencies]
    cycle = _find_cycle(conn, workflow_id, task_id, added)
    if cycle:
        raise validation_failed(
            "these dependencies would form a cycle: "
            + " → ".join(cycle)
            + " (each task depends on the next); drop the dependency that closes the loop.",
            cycle=cycle,
        )
    if task.status in ("in_progress", "completed") and not force:
        unfinished = _unfinished(conn, workflow_id, added)
        if unfinished:
            raise validation_failed(
                f"task {task_id} is {task.status} but the new dependencies {_named(unfinished)} are not "
                "completed; complete them first, or pass force=true to record them anyway.",
                unfinished_dependencies=unfinished,
            )
    conn.execute("DELETE FROM dependencies WHERE workflow_id = ? AND task_id = ?", (workflow_id, task_id))
    conn.executemany(
        "INSERT INTO dependencies (workflow_id, task_id, depends_on) VALUES (?, ?, ?)",
        [(workflow_id, task_id, dep) for dep in wanted],
    )


def _load(conn: SqlConnection, workflow_id: str, task_id: str, *, deleting: bool = False) -> Task:
    """The task; NOT_FOUND otherwise, saying when it was deleted if it was (`deleting`: and that a repeated delete
    has nothing left to do)."""
    row = conn.execute("SELECT * FROM tasks WHERE workflow_id = ? AND id = ?", (workflow_id, task_id)).fetchone()
    if row is None:
        tombstone = tombstones.find(conn, workflow_id, task_id)
        if tombstone is not None:
            raise tombstones.already_deleted(tombstone, _named(tombstone.dependents), deleting=deleting)
        # The same answer whether or not the id is a task of another workflow, and never that workflow's name. On a
        # team's gateway every user shares this board (`shared.framework.clients`: users are told apart, workflows
        # have no owner), so a workflow's id is all it takes to read and change its tasks: naming it here would hand
        # one user's workflow to anyone holding one of its task ids, and answering differently would still tell them
        # that the id lives somewhere. Hence the hint is for the caller who knows the other workflow's id already.
        raise not_found(
            f"no task {task_id!r} in workflow {workflow_id!r}; a task of another workflow is only visible with that "
            "workflow's workflow_id: pass it if you know it, or call todo_list with this workflow_id to see its tasks."
        )
    return _task(row, _dependencies_of(conn, workflow_id, [task_id]).get(task_id, []))


def _dependencies_of(conn: SqlConnection, workflow_id: str, task_ids: list[str]) -> dict[str, list[str]]:
    """Dependency ids of each task, oldest dependency first."""
    result: dict[str, list[str]] = {}
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT d.task_id, d.depends_on FROM dependencies d JOIN tasks p"
            f" ON p.workflow_id = d.workflow_id AND p.id = d.depends_on"
            f" WHERE d.workflow_id = ? AND d.task_id IN ({marks}) ORDER BY p.seq",
            (workflow_id, *chunk),
        ).fetchall()
        for task_id, depends_on in rows:
            result.setdefault(task_id, []).append(depends_on)
    return result


def _dependents(conn: SqlConnection, workflow_id: str, task_id: str, condition: str = "") -> list[str]:
    """The tasks that depend on `task_id` (and meet `condition`, an SQL clause on `t`), oldest first."""
    rows = conn.execute(
        "SELECT d.task_id FROM dependencies d JOIN tasks t ON t.workflow_id = d.workflow_id AND t.id = d.task_id"
        f" WHERE d.workflow_id = ? AND d.depends_on = ? {condition} ORDER BY t.seq",
        (workflow_id, task_id),
    ).fetchall()
    return [row[0] for row in rows]


def _active_dependents(conn: SqlConnection, workflow_id: str, task_id: str) -> list[str]:
    return _dependents(conn, workflow_id, task_id, "AND t.status IN ('in_progress', 'completed')")


def _unfinished(conn: SqlConnection, workflow_id: str, task_ids: Sequence[str]) -> list[str]:
    return _tasks_among(conn, workflow_id, task_ids, "AND status <> 'completed'")


def _tasks_among(conn: SqlConnection, workflow_id: str, task_ids: Sequence[str], condition: str = "") -> list[str]:
    """The ids of `task_ids` that are tasks of the workflow (and meet `condition`, an SQL clause), oldest first."""
    if not task_ids:
        return []
    marks = ", ".join("?" * len(task_ids))
    rows = conn.execute(
        f"SELECT id FROM tasks WHERE workflow_id = ? AND id IN ({marks}) {condition} ORDER BY seq",
        (workflow_id, *task_ids),
    ).fetchall()
    return [row[0] for row in rows]


def _require_existing(conn: SqlConnection, workflow_id: str, task_ids: Sequence[str]) -> None:
    found = set(_tasks_among(conn, workflow_id, task_ids))
    missing = [task_id for task_id in task_ids if task_id not in found]
    if missing:
        raise not_found(
            f"dependencies {_named(missing)} are not tasks of workflow {workflow_id!r}; "
            "create them first (dependencies must exist in the same workflow) or fix the ids.",
            missing=missing,
        )


def _find_cycle(conn: SqlConnection, workflow_id: str, task_id: str, added: Sequence[str]) -> list[str]:
    """If `task_id` gained dependencies `added`, the cycle it would close (task_id, ..., task_id), else []."""
    parent: dict[str, str] = {}
    frontier = []
    for dep in added:
        if dep not in parent:
            parent[dep] = task_id
            frontier.append(dep)
    while frontier:
        current = frontier.pop()
        if current == task_id:
            path = [task_id]
            node = parent[task_id]
            while node != task_id:
                path.append(node)
                node = parent[node]
            path.append(task_id)
            # path walks back from the end of the loop; reverse it so each task depends on the next
            return [path[0], *reversed(path[1:-1]), path[-1]]
        for (dep,) in conn.execute(
            "SELECT depends_on FROM dependencies WHERE workflow_id = ? AND task_id = ?", (workflow_id, current)
        ).fetchall():
            if dep not in parent:
                parent[dep] = current
                frontier.append(dep)
    return []
