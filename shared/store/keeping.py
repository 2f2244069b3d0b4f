"""Tables that remember only their newest rows per key (todo's and memory's tombstones of deleted ids).

The query is in SQLite's spelling, which `shared.store.postgres` says in PostgreSQL's: one implementation for both.
"""

from __future__ import annotations

import re

from mcp_sections.shared.store.postgres import SqlConnection

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def keep_newest(connection: SqlConnection, table: str, column: str, value: object, keep: int) -> None:
    """Delete all but the newest `keep` rows of `table` whose `column` is `value`, newest by the table's `n` (an
    increasing row number, indexed with `column`). `table` and `column` are the store's own names, never a caller's."""
    if not (_NAME.match(table) and _NAME.match(column)):
        raise ValueError(f"not a plain SQL name: {table!r}, {column!r}")
    connection.execute(
        f"DELETE FROM {table} WHERE {column} = ? AND n <= "
        f"(SELECT n FROM {table} WHERE {column} = ? ORDER BY n DESC LIMIT 1 OFFSET ?)",
        (value, value, keep),
    )
