"""Which embedding model a store's vectors belong to. Vectors of two models cannot be compared, so a store
embedded with one model refuses searches by meaning with another — instead of silently answering from the few
items re-embedded so far — until it is re-embedded on purpose (`mcp-sections reembed <section>`).

The lock is one row in the store's own SQLite database, claimed by the first vectors written; a store embedded
before the lock existed is attributed to the model most of its vectors come from (`existing_sql`).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from mcp_sections.shared.ground.errors import ToolFailure, validation_failed

TABLE = (
    "CREATE TABLE IF NOT EXISTS embedding_model "
    "(only INTEGER PRIMARY KEY CHECK (only = 1), model TEXT NOT NULL, since REAL NOT NULL)"
)
RECHECK_SECONDS = 5.0  # another process (the reembed command) may switch the model


class ModelLock:
    """The model of one store's vectors."""

    def __init__(self, database: Any, existing_sql: str | None = None) -> None:
        self.database = database
        self.existing_sql = existing_sql
        self._known: str | None = None
        self._checked_at = 0.0

    def stored(self) -> str | None:
        """The model the vectors belong to (None: no vector yet)."""
        if self._known is not None and time.monotonic() - self._checked_at < RECHECK_SECONDS:
            return self._known
        with self.database.write() as connection:
            connection.execute(TABLE)
            row = connection.execute("SELECT model FROM embedding_model").fetchone()
            model = row[0] if row else self._existing(connection)
            if model is not None and row is None:
                connection.execute("INSERT INTO embedding_model VALUES (1, ?, ?)", (model, time.time()))
        self._known, self._checked_at = model, time.monotonic()
        return model

    def mismatch(self, model: str) -> str | None:
        """The stored model when it is not `model` (the store must not be searched with `model`)."""
        stored = self.stored()
        return stored if stored is not None and stored != model else None

    def claim(self, model: str) -> None:
        """Vectors of `model` are about to be written: the store becomes `model`'s if it is nobody's yet."""
        if self._known == model:
            return
        with self.database.write() as connection:
            connection.execute(TABLE)
            connection.execute("INSERT OR IGNORE INTO embedding_model VALUES (1, ?, ?)", (model, time.time()))
        self._known = None

    def switch(self, model: str) -> None:
        """The store now belongs to `model` (its old vectors must be dropped by the caller, same transaction)."""
        with self.database.write() as connection:
            switch_in(connection, model)
        self._known = None

    def _existing(self, connection: sqlite3.Connection) -> str | None:
        if self.existing_sql is None:
            return None
        try:
            row = connection.execute(self.existing_sql).fetchone()
        except sqlite3.OperationalError:  # the store keeps its vectors elsewhere (Neo4j)
            return None
        return row[0] if row else None


def switch_in(connection: sqlite3.Connection, model: str) -> None:
    connection.execute(TABLE)
    connection.execute("INSERT OR REPLACE INTO embedding_model VALUES (1, ?, ?)", (model, time.time()))


def mismatch_failure(stored: str, configured: str, store: str, section_id: str) -> ToolFailure:
    """The refusal of a search by meaning with `configured` on a `store` embedded with `stored`."""
    return validation_failed(
        f"this {store} was embedded with {stored}, but the configured model is {configured}: vectors of "
        f"two models cannot be compared. Set embedding_model (and embedding_provider) back to {stored}, or re-embed "
        f"everything with the new model: `mcp-sections reembed {section_id}`. Text search works meanwhile.",
        stored_model=stored,
        configured_model=configured,
    )
