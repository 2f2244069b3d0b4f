"""shared.store.keeping.keep_newest: todo's and memory's tombstones keep their newest rows per workflow with one
query (both engines run it through tests/todo/test_tombstones.py and tests/memory/test_memory_tombstones.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_sections.shared.store.keeping import keep_newest
from mcp_sections.shared.store.sqlite import Database

TABLE = "CREATE TABLE gone (n INTEGER PRIMARY KEY, id TEXT NOT NULL, workflow_id TEXT NOT NULL)"


def ids(database: Database) -> list[str]:
    with database.read() as connection:
        return [row[0] for row in connection.execute("SELECT id FROM gone ORDER BY n").fetchall()]


def test_keeps_the_newest_rows_of_one_key_and_no_other_keys_rows(tmp_path: Path) -> None:
    database = Database(tmp_path / "keeping.sqlite3", (TABLE,))
    with database.write() as connection:
        rows = [(f"{workflow}{index}", workflow) for index in range(5) for workflow in ("a", "b")]
        connection.executemany("INSERT INTO gone (id, workflow_id) VALUES (?, ?)", rows)
        keep_newest(connection, "gone", "workflow_id", "a", 2)
        keep_newest(connection, "gone", "workflow_id", "c", 2)  # no row of that key: nothing to do
    assert ids(database) == ["b0", "b1", "b2", "a3", "b3", "a4", "b4"]
    with database.write() as connection:
        keep_newest(connection, "gone", "workflow_id", "b", 10)  # fewer than kept: all stay
        keep_newest(connection, "gone", "workflow_id", "a", 0)
        with pytest.raises(ValueError, match="not a plain SQL name"):
            keep_newest(connection, "gone; DROP TABLE gone", "workflow_id", "a", 1)
    assert ids(database) == ["b0", "b1", "b2", "b3", "b4"]
    database.close()
