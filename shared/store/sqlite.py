"""SQLite databases that several processes and threads can share safely.

WAL journal, `synchronous=FULL` (a committed write survives a killed process and a power cut),
a busy timeout plus `BEGIN IMMEDIATE` for writers so that concurrent writers queue instead of
failing, one connection per thread, and numbered migrations tracked in `PRAGMA user_version`.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

BUSY_TIMEOUT_MS = 15_000
LOCK_RETRIES = 5
CLOSE_WAIT_SECONDS = 30.0  # how long `close` waits for transactions under way in other threads

logger = logging.getLogger("mcp_sections.store.sqlite")


class Database:
    """One SQLite file. `read()` and `write()` hand out this thread's connection inside a transaction."""

    def __init__(self, path: Path, migrations: Sequence[str] = ()) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._registry_lock = threading.Lock()
        self._released = threading.Condition(self._registry_lock)
        self._in_use: Counter[int] = Counter()  # id(connection) -> transactions under way on it
        path.parent.mkdir(parents=True, exist_ok=True)
        self._migrate(migrations)

    def _new_connection(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        connection.row_factory = sqlite3.Row
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _use_wal(connection)
        connection.execute("PRAGMA synchronous = FULL")
        connection.execute("PRAGMA foreign_keys = ON")
        return connection

    @contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection (opened on first use), counted in use until the block ends, so that `close` never
        closes it under a statement this thread runs (that crashes the process: a server stopping while its warm-up
        read)."""
        with self._registry_lock:
            connection = getattr(self._local, "connection", None)
            if connection is not None:
                self._in_use[id(connection)] += 1
        if connection is None:
            connection = self._new_connection()  # not registered yet: `close` cannot see it
            with self._registry_lock:
                self._local.connection = connection
                self._connections.append(connection)
                self._in_use[id(connection)] += 1
        try:
            yield connection
        finally:
            with self._released:
                self._in_use[id(connection)] -= 1
                if self._in_use[id(connection)] <= 0:
                    del self._in_use[id(connection)]
                    self._released.notify_all()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several SELECTs."""
        with _database_errors(), self._using() as connection:
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                if connection.in_transaction:  # SQLite may already have rolled back after an error
                    connection.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locked) transaction: committed on success, rolled back on any error."""
        with _database_errors(), self._using() as connection:
            _begin_immediate(connection)
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                # Also after a failed COMMIT: never leave this thread's connection inside a transaction.
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise

    def _migrate(self, migrations: Sequence[str]) -> None:
        with self.write() as connection:
            current = connection.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(migrations[current:], start=current + 1):
                for statement in _statements(script):
                    connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {number}")

    def close(self) -> None:
        """Close every thread's connection once its transaction under way (if any) has ended, waiting at most
        `CLOSE_WAIT_SECONDS`; one still in use then is left to the garbage collector. A thread that uses the
        database afterwards opens a new connection."""
        with self._released:
            if not self._released.wait_for(lambda: not self._in_use, timeout=CLOSE_WAIT_SECONDS):
                logger.warning("closing %s: %d connection(s) still in use are left open", self.path, len(self._in_use))
            for connection in self._connections:
                if id(connection) not in self._in_use:
                    connection.close()
            self._connections.clear()
            self._local = threading.local()


def _use_wal(connection: sqlite3.Connection) -> None:
    """Put the file in WAL mode (it stays so). Switching takes an exclusive lock for which SQLite does not call
    the busy handler: two processes opening a new database at once saw "database is locked" at once. So the
    mode is read first (no lock needed once it is WAL) and the switch is retried."""

    def switch() -> None:
        if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            connection.execute("PRAGMA journal_mode = WAL")

    _retry_while_locked(switch, LOCK_RETRIES * 4, 0.02)


def _begin_immediate(connection: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, retried: the busy timeout already waits, this covers rare early SQLITE_BUSY."""
    _retry_while_locked(lambda: connection.execute("BEGIN IMMEDIATE"), LOCK_RETRIES, 0.05)


def _retry_while_locked(action: Callable[[], object], attempts: int, step_seconds: float) -> None:
    """Run `action`, again after a growing pause while SQLite answers "locked"/"busy" (the last attempt raises)."""
    for attempt in range(attempts):
        try:
            action()
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or attempt == attempts - 1:
                raise
            time.sleep(step_seconds * (attempt + 1))


def _statements(script: str) -> list[str]:
    """Split a migration script on complete statements (triggers contain inner semicolons)."""
    statements, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements


@contextmanager
def _database_errors() -> Iterator[None]:
    """SQLite failures become DATABASE_ERROR tool failures (tool errors pass through untouched)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            raise ToolFailure(ErrorCode.DATABASE_ERROR, "the database stayed busy too long; retry the call.") from exc
        raise ToolFailure(
            ErrorCode.DATABASE_ERROR, f"database error: {exc}; retry, or check the data directory."
        ) from exc
    except sqlite3.DatabaseError as exc:
        raise ToolFailure(
            ErrorCode.DATABASE_ERROR, f"database error: {exc}; check the data directory's files and permissions."
        ) from exc
