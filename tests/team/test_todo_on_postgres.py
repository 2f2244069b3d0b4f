"""The task board on PostgreSQL runs the board's own tests (`tests/todo/test_board.py`): one implementation of each
query, said in PostgreSQL's spelling by `shared.store.postgres`, keeps every rule. And two boards on one server
(two replicas) see each other's writes at once, their writers queued as SQLite's are."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_sections.servers.todo.board import Board
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from tests.todo.test_board import (  # noqa: F401  (the board's tests, run here on PostgreSQL)
    test_a_twin_that_left_pending_no_longer_counts,
    test_add_returns_the_pending_twin_instead_of_doubling_it,
    test_create_rejects_bad_input,
    test_cycles_are_refused,
    test_delete_leaf_and_after_detaching,
    test_dependencies_must_exist_in_the_same_workflow,
    test_force_overrides_and_reports,
    test_limits_at_the_edge_are_accepted,
    test_list_order_filters_and_paging,
    test_new_unfinished_dependency_of_a_started_task,
    test_next_picks_priority_then_oldest,
    test_next_when_everything_waits_and_by_agent,
    test_reopening_a_completed_task,
    test_same_status_is_a_no_op,
    test_start_and_complete_need_completed_dependencies,
    test_timestamps_and_durations,
    test_unknown_ids,
    test_update_fields,
    test_workflow_isolation,
)

W = "default"


@pytest.fixture
def board(postgres_url: str) -> Iterator[Board]:
    board = Board(None, postgres_url=postgres_url)
    yield board
    board.close()


def test_a_cascading_delete_leaves_no_dependency_behind(board: Board) -> None:
    root = board.create(W, "root")
    left = board.create(W, "left", dependencies=[root.id])
    join = board.create(W, "join", dependencies=[left.id, root.id])
    assert board.delete(W, root.id, cascade=True).deleted == [root.id, left.id, join.id]
    with board.db.read() as connection:
        assert connection.execute("SELECT COUNT(*) FROM dependencies").fetchone()[0] == 0


def test_two_replicas_share_one_board_and_its_cap(postgres_url: str) -> None:
    one, two = Board(None, 10, postgres_url=postgres_url), Board(None, 10, postgres_url=postgres_url)
    created = one.create(W, "written by one")
    assert two.get(W, created.id).task == created  # at once, on the other replica
    refused: list[ToolFailure] = []

    def fill(board: Board) -> None:
        for _ in range(10):
            try:
                board.create(W, "racing")
            except ToolFailure as failure:
                refused.append(failure)

    threads = [threading.Thread(target=fill, args=(board,)) for board in (one, two, one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert one.list(W).total == 10  # the cap holds across replicas: the check and the insert are one locked write
    assert len(refused) == 31 and all(failure.code == ErrorCode.MAX_LIMIT_EXCEEDED for failure in refused)
    one.close()
    two.close()


def test_the_sections_settings_choose_postgresql(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`MCP_SECTIONS_<ID>_STORE=postgres` and `..._POSTGRES_URL` (or `[sections.<id>]`) put todo and memory there; the
    password comes from its file; `store = "postgres"` without a URL is refused."""
    from mcp_sections.servers.memory.section import open_memory
    from mcp_sections.servers.memory.settings import MemorySettings
    from mcp_sections.servers.todo.section import SECTION, open_board
    from mcp_sections.servers.todo.settings import TodoSettings
    from mcp_sections.shared.framework.sections import SectionRuntime
    from mcp_sections.shared.settings.config import load_settings

    (tmp_path / "password").write_text("unused-with-trust\n")
    for section in ("TODO", "MEMORY"):
        monkeypatch.setenv(f"MCP_SECTIONS_{section}_STORE", "postgres")
        monkeypatch.setenv(f"MCP_SECTIONS_{section}_POSTGRES_URL", postgres_url)
        monkeypatch.setenv(f"MCP_SECTIONS_{section}_POSTGRES_PASSWORD_FILE", str(tmp_path / "password"))
    settings = load_settings(data_dir=tmp_path / "data")
    board = open_board(SECTION.runtime(settings))
    memory = open_memory(SectionRuntime(settings, MemorySettings.load(embeddings_enabled=False)))
    try:
        assert board.path is None and board.db.dialect == "postgres"  # type: ignore[union-attr]
        assert memory.store.dialect.migrations[0].count("TSVECTOR") == 1
        created = board.create(W, "on the server")
        assert Board(None, postgres_url=postgres_url).get(W, created.id).task == created
        assert TodoSettings.load().postgres_password() == "unused-with-trust"
        assert not (tmp_path / "data" / "todo.sqlite3").exists()
    finally:
        board.close()
        memory.close()
    monkeypatch.delenv("MCP_SECTIONS_TODO_POSTGRES_URL")
    with pytest.raises(ValueError, match="needs postgres_url"):
        TodoSettings.load()


def test_the_same_call_on_two_replicas_at_once_makes_one_task(postgres_url: str) -> None:
    boards = [Board(None, postgres_url=postgres_url) for _ in range(2)]
    added = []

    def add(board: Board) -> None:
        for _ in range(5):
            added.append(board.add("twins", "Deploy", "to staging", 2, [], None))

    threads = [threading.Thread(target=add, args=(board,)) for board in (*boards, *boards)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for board in boards:
        board.close()
    assert sum(one.created for one in added) == 1 and len({one.task.id for one in added}) == 1
