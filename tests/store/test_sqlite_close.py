"""Closing a SQLite database while another thread is inside a transaction waits for it to end.

Closing a connection under a statement another thread runs crashes the process (seen: rag_ops stopping while its
warm-up thread read the brain's schema, a segmentation fault); so `Database.close` waits for transactions under way.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from mcp_sections.shared.store.sqlite import Database


def test_close_waits_for_a_transaction_under_way_in_another_thread(tmp_path: Path) -> None:
    database = Database(tmp_path / "x.sqlite3", ["CREATE TABLE t (n INTEGER)"])
    with database.write() as db:
        db.execute("INSERT INTO t VALUES (1), (2), (3)")
    inside, seen, failures = threading.Event(), [], []

    def reader() -> None:
        try:
            with database.read() as db:
                inside.set()
                time.sleep(0.5)  # close() is called meanwhile
                seen.append(db.execute("SELECT count(*) FROM t").fetchone()[0])
        except Exception as exc:  # on the old code: "Cannot operate on a closed database"
            failures.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    assert inside.wait(10)
    started = time.monotonic()
    database.close()
    waited = time.monotonic() - started
    thread.join(10)
    assert failures == [] and seen == [3]
    assert waited > 0.2, "close returned while the other thread's transaction was under way"


def test_a_thread_reads_again_after_close(tmp_path: Path) -> None:
    database = Database(tmp_path / "x.sqlite3", ["CREATE TABLE t (n INTEGER)"])
    with database.read() as db:
        assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    database.close()
    with database.read() as db:  # a new connection for this thread
        assert db.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    database.close()
