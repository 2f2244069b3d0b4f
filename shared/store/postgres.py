"""A PostgreSQL database with the interface of `shared.store.sqlite.Database`, for stores several replicas share.

One person keeps memory and todo in an embedded SQLite file. A team running several gateway replicas on several
machines needs one server they all reach: PostgreSQL, through psycopg 3. A store keeps one implementation of its
queries: `read()` and `write()` hand out a connection whose `execute` takes SQLite's spelling and says it in
PostgreSQL's (the thin dialect layer, `postgres_sql`):
- `?` placeholders become `%s` (a literal `%` is doubled), outside quoted literals and identifiers;
- `INSERT OR IGNORE` becomes `ON CONFLICT DO NOTHING`, `INSERT OR REPLACE` an upsert on the first unique key its
  columns cover (from the catalog: what SQLite's REPLACE does on that key);
- identifiers SQLite allows bare and PostgreSQL reserves (`only`) are quoted.
What the two engines do differently (full-text search, the schema) each store says in its own dialect module.

Transactions behave as SQLite's do here: `read()` is one consistent snapshot (REPEATABLE READ, read only), `write()`
one transaction that holds the database's write lock (a transaction-scoped advisory lock), so writers queue as
they do behind `BEGIN IMMEDIATE`: a rule that reads before it writes (a cap, a cycle check) holds across replicas,
and a change log numbered by a sequence is committed in its order. Migrations are numbered per store in a
`schema_versions` table (SQLite's `user_version`), applied under the same lock.

Reconnection: one connection per thread; a connection found broken when a transaction begins (the server
restarted, a network cut) is replaced, retried with a growing pause for up to `RECONNECT_SECONDS`, so a restart
of the server costs the calls made during it a wait, not an error. A failure inside a transaction is a
DATABASE_ERROR ("retry the call"); nothing half-done is committed.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, model_validator

from mcp_sections.shared.ground.errors import ConfigError, ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint

logger = logging.getLogger("mcp_sections.store.postgres")

RECONNECT_SECONDS = 15.0
CONNECT_TIMEOUT_SECONDS = 5
STATEMENT_TIMEOUT_MS = 60_000
RESERVED = ("only",)  # identifiers PostgreSQL reserves that SQLite stores use bare
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|%|\b(?:" + "|".join(RESERVED) + r")\b", re.IGNORECASE)
_INSERT_OR = re.compile(r"^\s*INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO\s+(\w+)\s*(?:\(([^)]*)\))?", re.IGNORECASE)


class SqlConnection(Protocol):
    """What a store's queries use of a connection, SQLite's or `Connection` here."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Any, /) -> Any: ...


class StoreBackendSettings(BaseModel):
    """Where a section keeps its store: `store = "sqlite"` (the default: one file in the data directory) or
    `"postgres"` with `postgres_url` (a server the replicas of a team share). A mixin of a section's settings."""

    store: Literal["sqlite", "postgres"] = Field(
        default="sqlite",
        description="sqlite: an embedded file in the data directory (one person). postgres: a PostgreSQL server "
        "several gateway replicas share (a team; needs postgres_url and the `team` extra).",
    )
    postgres_url: str | None = Field(
        default=None,
        max_length=2000,
        description="libpq URL of the PostgreSQL database (postgresql://user@host:5432/db), without its password.",
    )
    postgres_password_file: Path | None = Field(
        default=None, description="A file holding the password (a compose secret: /run/secrets/postgres_password)."
    )

    def postgres_password(self) -> str | None:
        if self.postgres_password_file is None:
            return None
        try:
            return self.postgres_password_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"postgres_password_file {self.postgres_password_file} cannot be read: {exc}") from exc

    def postgres_server(self) -> dict[str, str | None]:
        """What a store opens on `store = "postgres"`: its `postgres_url` and `postgres_password` arguments (none: the
        SQLite file of the data directory)."""
        if self.store != "postgres":
            return {}
        return {"postgres_url": self.postgres_url, "postgres_password": self.postgres_password()}

    @model_validator(mode="after")
    def _url_with_postgres(self) -> StoreBackendSettings:
        if self.store == "postgres" and not self.postgres_url:
            raise ValueError("store = 'postgres' needs postgres_url (postgresql://user@host:5432/database)")
        return self


def postgres_sql(sql: str) -> str:
    """SQLite's spelling of a statement in PostgreSQL's (see the module docstring; upserts need the catalog)."""
    return _translated(sql)


@lru_cache(maxsize=1024)
def _translated(sql: str) -> str:
    def token(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "?":
            return "%s"
        if text == "%":
            return "%%"
        if text.lower() in RESERVED:
            return f'"{text.lower()}"'
        return text  # a quoted literal or identifier, as it is

    return _TOKENS.sub(token, sql)


class Row(tuple[Any, ...]):
    """A result row read by position or by column name, as `sqlite3.Row` is."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}
    return lambda values: Row(values, names)


class Connection:
    """A psycopg connection that takes SQLite's spelling (`postgres_sql`); `execute` returns the cursor."""

    def __init__(self, raw: Any, database: PostgresDatabase) -> None:
        self.raw = raw
        self._database = database

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        return self.raw.execute(self._database.statement(self.raw, sql), list(parameters))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any:
        cursor = self.raw.cursor()
        cursor.executemany(self._database.statement(self.raw, sql), [list(row) for row in rows])
        return cursor


class PostgresDatabase:
    """One store's tables in a PostgreSQL database; `read()` and `write()` as `shared.store.sqlite.Database`'s.

    `name` numbers this store's migrations apart from other stores in the same database, and keys its write lock.
    """

    dialect = "postgres"

    def __init__(self, url: str, migrations: Sequence[str], *, name: str, password: str | None = None) -> None:
        try:
            import psycopg  # noqa: F401
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"store = 'postgres' needs the Python package psycopg, which is not installed; {install_hint('team')}."
            ) from exc
        self.url = url
        self.name = name
        self._password = password
        self.path = None  # no file: the data lives on the server
        self._lock_key = zlib.crc32(f"mcp-sections:{name}".encode())
        self._local = threading.local()
        self._connections: list[Any] = []
        self._registry_lock = threading.Lock()
        self._upserts: dict[tuple[str, str], str] = {}
        self._migrate(migrations)

    # ---- connections -------------------------------------------------------------------------------------------
    def _connect(self) -> Any:
        import psycopg

        connection = getattr(self._local, "connection", None)
        if connection is not None and not connection.closed and not connection.broken:
            return connection
        if connection is not None:
            self._forget(connection)
        password: dict[str, Any] = {"password": self._password} if self._password else {}
        connection = psycopg.connect(
            self.url,
            autocommit=True,  # transactions are begun and ended here, explicitly (as SQLite's are)
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            application_name=f"mcp-sections {self.name}",
            **password,
        )
        connection.row_factory = _row_factory
        self._local.connection = connection
        with self._registry_lock:
            self._connections.append(connection)
        return connection

    def _forget(self, connection: Any) -> None:
        self._local.connection = None
        with self._registry_lock:
            if connection in self._connections:
                self._connections.remove(connection)
        with suppress(Exception):  # already gone with its server
            connection.close()

    def _begin(self, statements: Sequence[str]) -> Any:
        """This thread's connection inside a new transaction; a broken or refused connection is replaced and the
        begin retried until `RECONNECT_SECONDS` (nothing ran yet, so nothing is repeated)."""
        import psycopg

        deadline = time.monotonic() + RECONNECT_SECONDS
        pause = 0.05
        while True:
            connection = None
            try:
                connection = self._connect()
                for statement in statements:
                    connection.execute(statement)
                return connection
            except psycopg.OperationalError as exc:
                if connection is not None:
                    self._forget(connection)
                if time.monotonic() + pause > deadline:
                    raise ToolFailure(
                        ErrorCode.DATABASE_ERROR,
                        f"the PostgreSQL server of the {self.name} store cannot be reached ({_first_line(exc)}); "
                        "retry the call once it is back.",
                    ) from exc
                logger.info("the %s store reconnects to PostgreSQL: %s", self.name, _first_line(exc))
                time.sleep(pause)
                pause = min(pause * 2, 1.0)

    # ---- transactions ------------------------------------------------------------------------------------------
    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A consistent snapshot for several SELECTs."""
        raw = self._begin(["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"])
        with _database_errors(self.name):
            try:
                yield Connection(raw, self)
            finally:
                _end(raw, "COMMIT")

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A transaction holding the store's write lock: committed on success, rolled back on any error."""
        raw = self._begin(["BEGIN", f"SELECT pg_advisory_xact_lock({self._lock_key})"])
        with _database_errors(self.name):
            try:
                yield Connection(raw, self)
                raw.execute("COMMIT")
            except BaseException:
                _end(raw, "ROLLBACK")
                raise

    def _migrate(self, migrations: Sequence[str]) -> None:
        with self.write() as connection:
            raw = connection.raw
            raw.execute("CREATE TABLE IF NOT EXISTS schema_versions (store TEXT PRIMARY KEY, version INTEGER NOT NULL)")
            row = raw.execute("SELECT version FROM schema_versions WHERE store = %s", [self.name]).fetchone()
            current = row[0] if row else 0
            for number, script in enumerate(migrations[current:], start=current + 1):
                raw.execute(script)  # several statements: the simple protocol, no parameters
                raw.execute(
                    "INSERT INTO schema_versions (store, version) VALUES (%s, %s) "
                    "ON CONFLICT (store) DO UPDATE SET version = EXCLUDED.version",
                    [self.name, number],
                )

    def close(self) -> None:
        with self._registry_lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            with suppress(Exception):
                connection.close()
        self._local = threading.local()

    # ---- the dialect -------------------------------------------------------------------------------------------
    def statement(self, raw: Any, sql: str) -> str:
        """`sql` in PostgreSQL's spelling, an `INSERT OR ...` with its conflict clause."""
        found = _INSERT_OR.match(sql)
        if found is None:
            return postgres_sql(sql)
        action, table, columns = found.group(1).upper(), found.group(2), found.group(3)
        head = f"INSERT INTO {table}" + (f" ({columns})" if columns else "")
        rest = postgres_sql(f"{head} {sql[found.end() :].lstrip()}")
        if action == "IGNORE":
            return rest + " ON CONFLICT DO NOTHING"
        key = (table, columns or "")
        if key not in self._upserts:
            self._upserts[key] = _upsert_clause(raw, table, columns)
        return rest + self._upserts[key]


def _upsert_clause(raw: Any, table: str, columns: str | None) -> str:
    """`ON CONFLICT (key) DO UPDATE SET ...` on the first unique key (the primary key first) the columns cover."""
    listed = raw.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND table_schema = current_schema() "
        "ORDER BY ordinal_position",
        [table],
    ).fetchall()
    inserted = [name.strip().strip('"') for name in columns.split(",")] if columns else [row[0] for row in listed]
    keys = raw.execute(
        "SELECT i.indisprimary, array_agg(a.attname::text ORDER BY k.ordinality) FROM pg_index i "
        "JOIN pg_class c ON c.oid = i.indrelid "
        "CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ordinality) "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum "
        "WHERE c.relname = %s AND i.indisunique AND c.relnamespace = to_regnamespace(current_schema())::oid "
        "GROUP BY i.indexrelid, i.indisprimary ORDER BY i.indisprimary DESC, i.indexrelid",
        [table],
    ).fetchall()
    target = next((list(names) for _, names in keys if set(names) <= set(inserted)), None)
    if target is None:
        raise ToolFailure(ErrorCode.DATABASE_ERROR, f"INSERT OR REPLACE into {table}: no unique key among its columns")
    updates = [name for name in inserted if name not in target]
    quoted = ", ".join(f'"{name}"' for name in target)
    if not updates:
        return f" ON CONFLICT ({quoted}) DO NOTHING"
    sets = ", ".join(f'"{name}" = EXCLUDED."{name}"' for name in updates)
    return f" ON CONFLICT ({quoted}) DO UPDATE SET {sets}"


def _end(raw: Any, statement: str) -> None:
    """End the transaction (a connection that broke meanwhile is left for the next begin to replace)."""
    if raw.closed or raw.broken:
        return
    try:
        raw.execute(statement)
    except Exception:
        logger.debug("%s failed on a connection that is going away", statement, exc_info=True)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


@contextmanager
def _database_errors(store: str) -> Iterator[None]:
    """PostgreSQL failures become DATABASE_ERROR tool failures (tool errors pass through untouched)."""
    import psycopg

    try:
        yield
    except psycopg.OperationalError as exc:
        raise ToolFailure(
            ErrorCode.DATABASE_ERROR,
            f"the {store} store lost its PostgreSQL connection ({_first_line(exc)}); retry the call.",
        ) from exc
    except psycopg.Error as exc:
        raise ToolFailure(
            ErrorCode.DATABASE_ERROR,
            f"database error in the {store} store: {_first_line(exc)}; retry the call.",
        ) from exc
