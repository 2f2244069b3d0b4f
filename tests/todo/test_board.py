"""The task board, directly: rules, limits, errors, ordering (no MCP, no subprocess)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.todo.board import MAX_DEPENDENCIES, MIGRATIONS, Board, Task
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
W = "default"


@pytest.fixture
def board(tmp_path: Path) -> Iterator[Board]:
    board = Board.in_data_dir(tmp_path / "data")
    yield board
    board.close()


def fails(code: ErrorCode, function, *args, **kwargs) -> ToolFailure:  # type: ignore[no-untyped-def]
    with pytest.raises(ToolFailure) as caught:
        function(*args, **kwargs)
    assert caught.value.code == code, caught.value.message
    return caught.value


def chain(board: Board, n: int, workflow: str = W) -> list[Task]:
    """n tasks, each depending on the previous one."""
    tasks: list[Task] = []
    for index in range(n):
        deps = [tasks[-1].id] if tasks else []
        tasks.append(board.create(workflow, f"step {index}", dependencies=deps))
    return tasks


def test_create_defaults_and_fields(board: Board) -> None:
    task = board.create(W, "  Analyze schema  ")
    assert re.match(r"^task_[0-9a-f]{12}$", task.id)
    assert task.name == "Analyze schema"
    assert (task.status, task.priority, task.description, task.dependencies) == ("pending", 3, "", [])
    assert task.assigned_agent is None
    assert ISO_UTC.match(task.created_at) and task.updated_at == task.created_at
    assert task.started_at is task.completed_at is task.duration_ms is None
    other = board.create(W, "Auth", "JWT tokens", 1, [task.id, task.id], "db_agent")
    assert (other.priority, other.dependencies, other.assigned_agent) == (1, [task.id], "db_agent")
    assert board.get(W, other.id).task == other
    assert board.db.path == board.path and board.path.name == "todo.sqlite3"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"name": ""}, "name must not be empty"),
        ({"name": "   "}, "name must not be empty"),
        ({"name": "x" * 129}, "maximum is 128"),
        ({"description": "d" * 1001}, "maximum is 1000"),
        ({"priority": 0}, "priority"),
        ({"priority": 6}, "priority"),
        ({"dependencies": ["bad id!"]}, "each dependency"),
        ({"dependencies": [f"t{i}" for i in range(MAX_DEPENDENCIES + 1)]}, "at most 100"),
        ({"assigned_agent": "no spaces"}, "assigned_agent"),
        ({"workflow_id": "../etc"}, "workflow_id"),
        ({"workflow_id": "x" * 129}, "workflow_id"),
    ],
)
def test_create_rejects_bad_input(board: Board, kwargs: dict, fragment: str) -> None:
    arguments = {"workflow_id": W, "name": "ok", **kwargs}
    failure = fails(ErrorCode.INVALID_INPUT, board.create, **arguments)
    assert fragment in failure.message


def test_limits_at_the_edge_are_accepted(board: Board) -> None:
    task = board.create("w" * 64, "n" * 128, "d" * 1000, 5)
    assert (len(task.name), len(task.description), task.priority) == (128, 1000, 5)
    deps = [board.create(W, f"d{i}").id for i in range(MAX_DEPENDENCIES)]
    assert len(board.create(W, "many", dependencies=deps).dependencies) == MAX_DEPENDENCIES


def test_dependencies_must_exist_in_the_same_workflow(board: Board) -> None:
    elsewhere = board.create("other", "elsewhere")
    failure = fails(ErrorCode.NOT_FOUND, board.create, W, "x", dependencies=[elsewhere.id, "task_000000000000"])
    assert elsewhere.id in failure.message and "task_000000000000" in failure.message
    assert failure.details["missing"] == [elsewhere.id, "task_000000000000"]
    assert board.list(W).total == 0


def test_workflow_isolation(board: Board) -> None:
    mine = board.create("alpha", "mine")
    theirs = board.create("beta", "theirs")
    assert [t.id for t in board.list("alpha").tasks] == [mine.id]
    assert [t.id for t in board.list("beta").tasks] == [theirs.id]
    for call in (
        lambda: board.get("alpha", theirs.id),
        lambda: board.set_status("alpha", theirs.id, "in_progress"),
        lambda: board.complete("alpha", theirs.id),
        lambda: board.update("alpha", theirs.id, name="stolen"),
        lambda: board.update("alpha", mine.id, dependencies=[theirs.id]),
        lambda: board.delete("alpha", theirs.id),
    ):
        fails(ErrorCode.NOT_FOUND, call)
    assert board.next("alpha").task == mine
    assert board.get("beta", theirs.id).task == theirs


def test_task_cap_per_workflow(tmp_path: Path) -> None:
    board = Board.in_data_dir(tmp_path, max_tasks_per_workflow=3)
    tasks = [board.create(W, f"t{i}") for i in range(3)]
    failure = fails(ErrorCode.MAX_LIMIT_EXCEEDED, board.create, W, "one too many")
    assert "3" in failure.message
    board.create("another", "other workflows have their own cap")
    board.delete(W, tasks[0].id)
    board.create(W, "room again")
    board.close()


def test_start_and_complete_need_completed_dependencies(board: Board) -> None:
    first, second = chain(board, 2)
    for status in ("in_progress", "completed"):
        failure = fails(ErrorCode.VALIDATION_FAILED, board.set_status, W, second.id, status)
        assert first.id in failure.message and "force" in failure.message
        assert failure.details["unfinished_dependencies"] == [first.id]
    fails(ErrorCode.VALIDATION_FAILED, board.complete, W, second.id)
    board.set_status(W, second.id, "blocked")  # pending and blocked are always allowed
    board.set_status(W, second.id, "pending")
    board.complete(W, first.id)
    assert board.set_status(W, second.id, "in_progress").changed


def test_force_overrides_and_reports(board: Board) -> None:
    first, second = chain(board, 2)
    change = board.set_status(W, second.id, "in_progress", force=True)
    assert change.changed and change.forced_past == [first.id]
    change = board.complete(W, second.id, force=True)
    assert change.task.status == "completed" and change.forced_past == [first.id]


def test_timestamps_and_durations(board: Board) -> None:
    task = board.create(W, "timed")
    started = board.set_status(W, task.id, "in_progress").task
    assert ISO_UTC.match(started.started_at or "")
    board.set_status(W, task.id, "pending")
    again = board.set_status(W, task.id, "in_progress").task
    assert again.started_at == started.started_at  # the first start is kept
    done = board.complete(W, task.id).task
    assert done.status == "completed" and ISO_UTC.match(done.completed_at or "")
    assert done.duration_ms is not None and 0 <= done.duration_ms < 60_000  # measured from started_at
    assert done.completed_at >= done.started_at  # type: ignore[operator]

    given = board.create(W, "given")
    change = board.complete(W, given.id, duration_ms=45_000)
    assert (change.previous_status, change.task.duration_ms, change.task.started_at) == ("pending", 45_000, None)
    assert board.complete(W, board.create(W, "never started").id).task.duration_ms is None

    repeat = board.complete(W, given.id, duration_ms=1)
    assert not repeat.changed and repeat.task.duration_ms == 45_000
    fails(ErrorCode.INVALID_INPUT, board.complete, W, given.id, duration_ms=-1)
    fails(ErrorCode.INVALID_INPUT, board.set_status, W, given.id, "done")  # type: ignore[arg-type]


def test_same_status_is_a_no_op(board: Board) -> None:
    task = board.create(W, "same")
    change = board.set_status(W, task.id, "pending")
    assert not change.changed and change.task == task


def test_reopening_a_completed_task(board: Board) -> None:
    first, second = chain(board, 2)
    board.complete(W, first.id, duration_ms=5)
    reopened = board.set_status(W, first.id, "pending").task
    assert (reopened.status, reopened.completed_at, reopened.duration_ms) == ("pending", None, None)
    board.complete(W, first.id)
    board.set_status(W, second.id, "in_progress")
    failure = fails(ErrorCode.VALIDATION_FAILED, board.set_status, W, first.id, "in_progress")
    assert second.id in failure.message and failure.details["active_dependents"] == [second.id]
    assert board.set_status(W, first.id, "blocked", force=True).task.status == "blocked"


def test_cycles_are_refused(board: Board) -> None:
    a, b, c = chain(board, 3)  # c -> b -> a
    failure = fails(ErrorCode.VALIDATION_FAILED, board.update, W, a.id, dependencies=[c.id])
    assert failure.details["cycle"] == [a.id, c.id, b.id, a.id]
    assert " → ".join(failure.details["cycle"]) in failure.message
    fails(ErrorCode.VALIDATION_FAILED, board.update, W, b.id, dependencies=[c.id])
    self_loop = fails(ErrorCode.VALIDATION_FAILED, board.update, W, a.id, dependencies=[a.id])
    assert "itself" in self_loop.message
    assert board.get(W, a.id).task.dependencies == []  # nothing changed
    # replacing keeps the graph acyclic: c no longer needs b, so b may depend on c
    board.update(W, c.id, dependencies=[a.id])
    assert board.update(W, b.id, dependencies=[a.id, c.id]).dependencies == [a.id, c.id]
    assert board.update(W, b.id, dependencies=[]).dependencies == []


def test_update_fields(board: Board) -> None:
    task = board.create(W, "draft", assigned_agent="a1")
    updated = board.update(W, task.id, name="final", description="desc", priority=1)
    assert (updated.name, updated.description, updated.priority, updated.assigned_agent) == ("final", "desc", 1, "a1")
    assert updated.updated_at >= task.updated_at
    assert board.update(W, task.id, assigned_agent="a2").assigned_agent == "a2"
    assert board.update(W, task.id, unassign=True).assigned_agent is None
    fails(ErrorCode.INVALID_INPUT, board.update, W, task.id, assigned_agent="a3", unassign=True)
    fails(ErrorCode.INVALID_INPUT, board.update, W, task.id, priority=9)


def test_new_unfinished_dependency_of_a_started_task(board: Board) -> None:
    blocker = board.create(W, "blocker")
    running = board.create(W, "running")
    board.set_status(W, running.id, "in_progress")
    failure = fails(ErrorCode.VALIDATION_FAILED, board.update, W, running.id, dependencies=[blocker.id])
    assert blocker.id in failure.message
    assert board.update(W, running.id, dependencies=[blocker.id], force=True).dependencies == [blocker.id]


def test_delete_rules(board: Board) -> None:
    root = board.create(W, "root")
    left = board.create(W, "left", dependencies=[root.id])
    right = board.create(W, "right", dependencies=[root.id])
    join = board.create(W, "join", dependencies=[left.id, right.id])
    keep = board.create(W, "independent")
    failure = fails(ErrorCode.VALIDATION_FAILED, board.delete, W, root.id)
    assert failure.details["dependents"] == [left.id, right.id] and "cascade" in failure.message
    assert board.list(W).total == 5
    deleted = board.delete(W, root.id, cascade=True).deleted
    assert deleted == [root.id, left.id, right.id, join.id]
    assert [t.id for t in board.list(W).tasks] == [keep.id]
    assert board.delete(W, keep.id).deleted == [keep.id]
    fails(ErrorCode.NOT_FOUND, board.delete, W, keep.id)
    with sqlite3.connect(board.path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM dependencies").fetchone()[0] == 0


def test_delete_leaf_and_after_detaching(board: Board) -> None:
    first, second = chain(board, 2)
    board.delete(W, second.id)
    assert board.get(W, first.id).dependents == []
    third = board.create(W, "third", dependencies=[first.id])
    board.update(W, third.id, dependencies=[])
    assert board.delete(W, first.id).deleted == [first.id]


def test_next_picks_priority_then_oldest(board: Board) -> None:
    assert board.next(W).task is None and board.next(W).pending == 0
    low = board.create(W, "low", priority=4)
    old = board.create(W, "old", priority=2)
    new = board.create(W, "new", priority=2)
    gated = board.create(W, "gated", priority=1, dependencies=[low.id])
    pick = board.next(W)
    assert (pick.task.id if pick.task else None, pick.pending, pick.waiting) == (old.id, 4, 1)
    board.set_status(W, old.id, "in_progress")
    assert board.next(W).task.id == new.id  # type: ignore[union-attr]
    board.set_status(W, new.id, "blocked")
    assert board.next(W).task.id == low.id  # type: ignore[union-attr]
    board.complete(W, low.id)
    assert board.next(W).task.id == gated.id  # type: ignore[union-attr]
    board.complete(W, gated.id)
    empty = board.next(W)
    assert (empty.task, empty.pending, empty.waiting) == (None, 0, 0)


def test_next_when_everything_waits_and_by_agent(board: Board) -> None:
    first = board.create(W, "first", assigned_agent="alice")
    board.set_status(W, first.id, "in_progress")
    board.create(W, "waits", dependencies=[first.id])
    pick = board.next(W)
    assert (pick.task, pick.pending, pick.waiting) == (None, 1, 1)
    bob = board.create(W, "bob's", priority=1, assigned_agent="bob")
    free = board.create(W, "anyone", priority=2)
    assert board.next(W).task.id == bob.id  # type: ignore[union-attr]
    assert board.next(W, "alice").task.id == free.id  # type: ignore[union-attr]
    assert board.next(W, "bob").task.id == bob.id  # type: ignore[union-attr]


def test_list_order_filters_and_paging(board: Board) -> None:
    tasks = [board.create(W, f"t{i}", priority=(i % 3) + 1, assigned_agent="x" if i % 2 else None) for i in range(9)]
    listed = board.list(W)
    expected = sorted(tasks, key=lambda t: (t.priority, tasks.index(t)))
    assert [t.id for t in listed.tasks] == [t.id for t in expected] and listed.total == 9
    board.set_status(W, tasks[0].id, "in_progress")
    assert [t.id for t in board.list(W, status="in_progress").tasks] == [tasks[0].id]
    assert board.list(W, status="pending").total == 8
    assert {t.id for t in board.list(W, assigned_agent="x").tasks} == {t.id for t in tasks if t.assigned_agent}
    page = board.list(W, limit=4, offset=4)
    assert [t.id for t in page.tasks] == [t.id for t in expected[4:8]] and page.total == 9
    assert board.list(W, limit=4, offset=8).tasks[0].id == expected[8].id
    fails(ErrorCode.INVALID_INPUT, board.list, W, limit=0)
    fails(ErrorCode.INVALID_INPUT, board.list, W, limit=1001)
    fails(ErrorCode.INVALID_INPUT, board.list, W, status="done")  # type: ignore[arg-type]


def test_unknown_ids(board: Board) -> None:
    for call in (board.get, board.delete, board.complete):
        fails(ErrorCode.NOT_FOUND, call, W, "task_000000000000")
    fails(ErrorCode.INVALID_INPUT, board.get, W, "not an id")


def test_storage_failure_is_a_database_error(board: Board) -> None:
    task = board.create(W, "before")
    with sqlite3.connect(board.path) as conn:
        conn.execute("DROP TABLE dependencies")
    failure = fails(ErrorCode.DATABASE_ERROR, board.get, W, task.id)
    assert "dependencies" in failure.message


def test_data_survives_reopening(tmp_path: Path) -> None:
    board = Board.in_data_dir(tmp_path)
    first, second = chain(board, 2)
    board.complete(W, first.id, duration_ms=7)
    board.close()
    reopened = Board.in_data_dir(tmp_path)
    assert reopened.get(W, first.id).task.duration_ms == 7
    assert reopened.get(W, second.id).task.dependencies == [first.id]
    with sqlite3.connect(reopened.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened.close()


def test_failed_commit_does_not_wedge_the_thread_connection(tmp_path: Path) -> None:
    """Regression (shared.store.sqlite): a COMMIT that fails must roll back, or every later call fails."""
    from mcp_sections.shared.store.sqlite import Database

    schema = (
        "CREATE TABLE parent (id INTEGER PRIMARY KEY);\n"
        "CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);"
    )
    db = Database(tmp_path / "store.sqlite3", [schema])
    with pytest.raises(ToolFailure) as caught, db.write() as conn:
        conn.execute("INSERT INTO child (parent_id) VALUES (42)")  # checked only at COMMIT
    assert caught.value.code == ErrorCode.DATABASE_ERROR
    with db.write() as conn:
        conn.execute("INSERT INTO parent (id) VALUES (1)")
    with db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM parent").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM child").fetchone()[0] == 0
    db.close()


def test_section_settings_set_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_sections.servers.todo.section import SECTION, open_board
    from mcp_sections.shared.settings.config import load_settings

    monkeypatch.setenv("MCP_SECTIONS_TODO_MAX_TASKS_PER_WORKFLOW", "2")
    board = open_board(SECTION.runtime(load_settings(data_dir=tmp_path / "configured")))
    try:
        assert board.path == (tmp_path / "configured" / "todo.sqlite3").resolve()
        assert board.max_tasks_per_workflow == 2
        board.create(W, "one")
        board.create(W, "two")
        fails(ErrorCode.MAX_LIMIT_EXCEEDED, board.create, W, "three")
    finally:
        board.close()


def test_add_returns_the_pending_twin_instead_of_doubling_it(board: Board) -> None:
    base = board.create(W, "base")
    first = board.add(W, "Write the notes", "for 2.0", 2, [base.id], "writer")
    assert first.created and first.task.status == "pending"
    again = board.add(W, " Write the notes ", "for 2.0", 2, [base.id, base.id], "writer")  # the retried call
    assert (again.created, again.task) == (False, first.task)
    assert [task.id for task in board.list(W).tasks].count(first.task.id) == 1 and len(board.list(W).tasks) == 2
    differing = [
        board.add(W, "Write the notes", "for 2.1", 2, [base.id], "writer"),
        board.add(W, "Write the notes", "for 2.0", 1, [base.id], "writer"),
        board.add(W, "Write the notes", "for 2.0", 2, [], "writer"),
        board.add(W, "Write the notes", "for 2.0", 2, [base.id], None),
        board.add("elsewhere", "Write the notes", "for 2.0", 2, [], "writer"),
    ]
    assert all(added.created for added in differing)
    assert board.add(W, "Write the notes", "for 2.0", 2, [base.id], "writer", allow_duplicate=True).created
    unassigned = board.add(W, "Write the notes", "for 2.0", 2, [base.id], None)  # NULL agent equals NULL agent
    assert not unassigned.created and unassigned.task == differing[3].task


def test_a_twin_that_left_pending_no_longer_counts(board: Board) -> None:
    first = board.add(W, "Run the suite")
    board.set_status(W, first.task.id, "in_progress")
    repeated = board.add(W, "Run the suite")  # the same step, planned again once the first run started
    assert repeated.created and repeated.task.id != first.task.id
    assert board.create(W, "Run the suite").id not in (first.task.id, repeated.task.id)  # create: always a new one
