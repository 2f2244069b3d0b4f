"""A deleted task's tombstone: a delete repeated after its answer was lost (a 502, a timeout) is still NOT_FOUND, but
says when the task was deleted (and by which cascade), so the caller knows its delete is done. On SQLite and on a
real PostgreSQL server (the team's store), and a board created before tombstones gets their table when opened."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.todo import board as board_module
from mcp_sections.servers.todo.board import MIGRATIONS, POSTGRES_MIGRATIONS, Board
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.store.postgres import PostgresDatabase
from mcp_sections.shared.store.sqlite import Database
from tests.team.engines import Postgres, postgres_server

W = "default"
ISO_UTC = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
_databases = iter(range(1_000_000))
OpenBoard = Callable[..., Board]
#: A task as 965c919's board stored it.
OLD_TASK = (
    "INSERT INTO tasks (id, workflow_id, name, status, priority, created_at, updated_at)"
    " VALUES (?, ?, 'old', 'pending', 3, ?, ?)",
    ("task_00000000000a", W, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"),
)


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    with postgres_server(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture(params=["sqlite", "postgres"])
def open_board(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenBoard]:
    """Opens boards of one store (a file, or a database of the module's PostgreSQL server), closed after the test:
    `open_board(tombstones_kept=...)`."""
    opened: list[Board] = []
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres").create_database(f"tombstones_{next(_databases)}")

    def open_board(tombstones_kept: int | None = None) -> Board:
        board = Board(None, postgres_url=url) if url else Board(tmp_path / "todo.sqlite3")
        if tombstones_kept is not None:
            board.tombstones_kept = tombstones_kept
        opened.append(board)
        return board

    yield open_board
    for board in opened:
        board.close()


@pytest.fixture
def board(open_board: OpenBoard) -> Board:
    return open_board()


def fails(function, *args, **kwargs) -> ToolFailure:  # type: ignore[no-untyped-def]
    with pytest.raises(ToolFailure) as caught:
        function(*args, **kwargs)
    assert caught.value.code == ErrorCode.NOT_FOUND, caught.value.message
    return caught.value


def deleted_at(failure: ToolFailure) -> str:
    """The time the message names, checked against the details."""
    found = re.search(rf"was already deleted at ({ISO_UTC})", failure.message)
    assert found is not None, failure.message
    assert failure.details["deleted_at"] == found.group(1)
    return found.group(1)


def test_a_repeated_delete_says_when_the_first_one_deleted_the_task(board: Board) -> None:
    task = board.create(W, "throwaway")
    assert board.delete(W, task.id).deleted == [task.id]
    again = fails(board.delete, W, task.id)
    assert again.message.startswith(f"task {task.id} was already deleted at ")
    assert "if this call repeats an earlier delete, that delete is done — nothing to do." in again.message
    when = deleted_at(again)
    assert set(again.details) == {"deleted_at"}  # neither cascade nor dependents
    assert fails(board.delete, W, task.id).details == again.details  # and so on, every time
    # the other calls on the id say it too, without the delete's "nothing to do"
    for call, args in (
        (board.get, ()),
        (board.set_status, ("in_progress",)),
        (board.complete, ()),
        (board.update, ()),
    ):
        failure = fails(call, W, task.id, *args)
        assert deleted_at(failure) == when and "nothing to do" not in failure.message
        assert "todo_list" in failure.message


def test_a_cascade_names_its_root_and_the_root_its_dependents(board: Board) -> None:
    root = board.create(W, "root")
    left = board.create(W, "left", dependencies=[root.id])
    right = board.create(W, "right", dependencies=[root.id])
    join = board.create(W, "join", dependencies=[left.id, right.id])
    assert board.delete(W, root.id, cascade=True).deleted == [root.id, left.id, right.id, join.id]
    again = fails(board.delete, W, root.id, cascade=True)
    assert f"(with its dependents {left.id}, {right.id}, {join.id})" in again.message
    assert again.details["dependents_deleted"] == [left.id, right.id, join.id]
    when = deleted_at(again)
    for dependent in (left, right, join):
        failure = fails(board.delete, W, dependent.id)
        assert f"(by cascade from task {root.id})" in failure.message and "nothing to do" in failure.message
        assert failure.details == {"deleted_at": when, "deleted_with": root.id}
    lone = board.create(W, "lone root")
    only = board.create(W, "its only dependent", dependencies=[lone.id])
    board.delete(W, lone.id, cascade=True)
    assert f"(with its dependent {only.id})" in fails(board.delete, W, lone.id).message


def test_a_tombstone_is_seen_only_in_its_own_workflow(board: Board) -> None:
    task = board.create("mine", "private")
    board.delete("mine", task.id)
    failure = fails(board.delete, "theirs", task.id)
    assert "already deleted" not in failure.message and "deleted_at" not in failure.details
    assert f"no task {task.id!r} in workflow 'theirs'" in failure.message
    fails(board.get, "unknown-workflow", "task_000000000000")  # an id never seen: the plain NOT_FOUND
    assert "was already deleted" not in fails(board.get, W, "task_000000000000").message


def test_the_newest_tombstones_of_each_workflow_are_kept(open_board: OpenBoard) -> None:
    assert open_board().tombstones_kept == 1000  # by default; 3 here
    board = open_board(tombstones_kept=3)
    tasks = [board.create(W, f"t{index}") for index in range(5)]
    other = board.create("other", "elsewhere")
    board.delete("other", other.id)
    for task in tasks:
        board.delete(W, task.id)
    for forgotten in tasks[:2]:
        assert "already deleted" not in fails(board.delete, W, forgotten.id).message
    for kept in tasks[2:]:
        deleted_at(fails(board.delete, W, kept.id))
    deleted_at(fails(board.delete, "other", other.id))  # another workflow's are its own
    with board.db.read() as conn:
        counts = dict(conn.execute("SELECT workflow_id, COUNT(*) FROM deleted_tasks GROUP BY workflow_id").fetchall())
    assert counts == {W: 3, "other": 1}
    # a cascade wider than the bound: its root is kept, with the newest of its dependents
    root = board.create(W, "root")
    dependents = [board.create(W, f"d{index}", dependencies=[root.id]) for index in range(4)]
    board.delete(W, root.id, cascade=True)
    failure = fails(board.delete, W, root.id)
    assert failure.details["dependents_deleted"] == [dependents[2].id, dependents[3].id]
    assert "already deleted" not in fails(board.delete, W, dependents[1].id).message
    assert "deleted_with" in fails(board.delete, W, dependents[3].id).details


def test_a_new_task_never_takes_a_remembered_id(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids are the board's (random), never the caller's: a new task skips a tombstoned one, so a tombstone never
    describes a task that exists again, and a late retry of the old delete cannot delete the new task."""
    gone = board.create(W, "gone")
    board.delete(W, gone.id)
    drawn = iter([gone.id.removeprefix("task_"), "0123456789ab"])
    monkeypatch.setattr(board_module.secrets, "token_hex", lambda size: next(drawn))
    created = board.create(W, "new")
    assert created.id == "task_0123456789ab"
    deleted_at(fails(board.delete, W, gone.id))


def test_a_remembered_id_an_older_replica_reused_is_deleted_again(board: Board) -> None:
    """A replica still on the old code draws ids without looking at tombstones: deleting its task under a remembered
    id replaces the tombstone (no unique-key error on either engine)."""
    gone = board.create(W, "gone")
    board.delete(W, gone.id)
    first = deleted_at(fails(board.delete, W, gone.id))
    with board.db.write() as conn:
        conn.execute(OLD_TASK[0], (gone.id, *OLD_TASK[1][1:]))
    assert board.delete(W, gone.id).deleted == [gone.id]
    assert deleted_at(fails(board.delete, W, gone.id)) >= first
    with board.db.read() as conn:
        assert conn.execute("SELECT COUNT(*) FROM deleted_tasks WHERE id = ?", (gone.id,)).fetchone()[0] == 1


def test_an_id_forgotten_then_drawn_again_gets_a_new_tombstone(
    open_board: OpenBoard, monkeypatch: pytest.MonkeyPatch
) -> None:
    board = open_board(tombstones_kept=1)
    first = board.create(W, "first")
    board.delete(W, first.id)
    deleted_at(fails(board.delete, W, first.id))
    board.delete(W, board.create(W, "pushes the first tombstone out").id)
    assert "already deleted" not in fails(board.get, W, first.id).message
    monkeypatch.setattr(board_module.secrets, "token_hex", lambda size: first.id.removeprefix("task_"))
    again = board.create(W, "the same id, drawn again")
    assert again.id == first.id and board.get(W, again.id).task.name == "the same id, drawn again"
    board.delete(W, again.id)
    deleted_at(fails(board.delete, W, first.id))  # the new deletion's


def test_a_board_created_before_tombstones_gets_their_table(tmp_path: Path) -> None:
    path = tmp_path / "todo.sqlite3"
    Database(path, MIGRATIONS[:1]).close()  # what 965c919 created
    with sqlite3.connect(path) as conn:
        conn.execute(*OLD_TASK)
    board = Board(path)
    assert board.get(W, "task_00000000000a").task.name == "old"
    board.delete(W, "task_00000000000a")
    deleted_at(fails(board.delete, W, "task_00000000000a"))
    board.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_a_postgres_board_created_before_tombstones_gets_their_table(postgres: Postgres) -> None:
    url = postgres.create_database(f"tombstones_{next(_databases)}")
    old = PostgresDatabase(url, POSTGRES_MIGRATIONS[:1], name="todo")
    with old.write() as conn:
        conn.execute(*OLD_TASK)
    old.close()
    board = Board(None, postgres_url=url)
    board.delete(W, "task_00000000000a")
    deleted_at(fails(board.delete, W, "task_00000000000a"))
    with board.db.read() as conn:
        assert conn.execute("SELECT version FROM schema_versions WHERE store = 'todo'").fetchone()[0] == 2
    board.close()
