"""shared.store.sqlite: processes that open a new database at the same moment all get to write.

Switching a new file to WAL takes an exclusive lock for which SQLite does not call the busy handler: two
processes opening it at once saw "database is locked" at once (3 runs in 40 of the loop below, before the fix;
found as a flake of tests/memory/test_memory_processes.py). Real processes, real SQLite.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path
from typing import Any

from mcp_sections.shared.store.sqlite import Database

MIGRATIONS = ("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",)
THREADS, WRITES = 6, 10


def open_and_write(paths: list[str], errors: multiprocessing.Queue, start: Any) -> None:  # type: ignore[type-arg]
    """One process, for each new database in turn: threads that open it together (one connection each) and write."""
    failures: list[str] = []
    for path in paths:
        start.wait()  # both processes begin each database together
        failures += threads_open_and_write(Path(path))
    errors.put(failures)


def threads_open_and_write(path: Path) -> list[str]:
    failures: list[str] = []
    ready = threading.Barrier(THREADS)
    opened: list[Database] = []
    lock = threading.Lock()

    def run(thread: int) -> None:
        try:
            ready.wait()
            with lock:
                if not opened:
                    opened.append(Database(path, MIGRATIONS))
            for index in range(WRITES):
                with opened[0].write() as connection:
                    connection.execute("INSERT INTO notes (text) VALUES (?)", (f"{thread}-{index}",))
        except Exception as exc:
            failures.append(f"{path.name}: {exc!r}")

    threads = [threading.Thread(target=run, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_processes_opening_a_new_database_together_all_write(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    paths = [str(tmp_path / f"race-{attempt}.sqlite3") for attempt in range(8)]  # 8 races, two processes each time
    errors, start = context.Queue(), context.Barrier(2)
    processes = [context.Process(target=open_and_write, args=(paths, errors, start)) for _ in range(2)]
    for process in processes:
        process.start()
    failures = errors.get(timeout=120) + errors.get(timeout=120)
    for process in processes:
        process.join(timeout=60)
    assert failures == []
    for path in paths:
        with sqlite3.connect(path) as connection:
            assert connection.execute("SELECT count(*) FROM notes").fetchone()[0] == 2 * THREADS * WRITES
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
