"""The undo journal: every change file_ops makes, with what was there before, in the data directory.

`<data_dir>/file_changes.sqlite3` holds one row per change (its operations as JSON) and the replaced contents
as blobs, stored once per SHA-256 however many changes refer to them (`refs`). A change is recorded BEFORE it
is made: the row is written `pending` with the states it will replace, the change runs, and the row becomes
`done` with the states the change produced (a crash in between leaves a pending row and the original content,
never a lost original). A change that failed part-way keeps its row with what it did; one that changed nothing
leaves no row, and gives its id back (ids follow each other).

Several file_ops processes may share the data directory: an exclusive lock on `file_changes.lock` (flock) is
held from the moment a change looks at the file system until its row is finished, so each record's "before" is
exactly what the change replaced, and an undo cannot interleave with another change. The lock is fair: the calls
of one process take it in arrival order, and across processes a blocking flock wakes a waiter as soon as it is free
(`locking.py`).

Bounded: files up to `undo_max_file_bytes` are kept, `undo_max_total_bytes` of distinct contents in all,
`undo_max_changes` changes for `undo_max_age_days`; the oldest changes are dropped first. A change whose
contents do not fit is refused (MAX_LIMIT_EXCEEDED) unless the call passes `undoable=false`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.store.sqlite import Database

from .locking import FairLock, LockTimeout
from .states import Budget, State, TooLarge, check_fits, read_state, same

DATABASE_FILE = "file_changes.sqlite3"
LOCK_FILE = "file_changes.lock"
LOCK_TIMEOUT_SECONDS = 60.0
WAL_LIMIT_BYTES = 16 * 1024 * 1024  # the write-ahead log shrinks back to this after a checkpoint

MIGRATIONS = (
    """
    CREATE TABLE changes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        time REAL NOT NULL,
        tool TEXT NOT NULL,
        path TEXT NOT NULL,
        source TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'done')),
        operations TEXT NOT NULL,
        size INTEGER NOT NULL DEFAULT 0,
        undoes INTEGER,
        undone_by INTEGER,
        note TEXT
    );
    CREATE TABLE blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
    CREATE TABLE refs (
        change INTEGER NOT NULL REFERENCES changes(id) ON DELETE CASCADE,
        hash TEXT NOT NULL REFERENCES blobs(hash),
        PRIMARY KEY (change, hash)
    ) WITHOUT ROWID;
    CREATE INDEX refs_by_hash ON refs(hash);
    """,
)


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 10 * 1024 * 1024
    max_total_bytes: int = 200 * 1024 * 1024
    max_entries: int = 10_000
    max_changes: int = 1000
    max_age_days: float = 30.0

    def budget(self, *, keep: bool) -> Budget:
        return Budget(self.max_file_bytes, self.max_total_bytes, self.max_entries, {} if keep else None)


# -- operations ------------------------------------------------------------------------------------------------


@dataclass
class Replace:
    """The entry at `path` went from `before` (kept) to `after` (None: not known, the change was interrupted)."""

    path: Path
    before: State
    after: State | None = None
    deep: bool = False  # read a directory's `after` with all it holds

    def to_json(self) -> dict[str, Any]:
        return {
            "op": "replace",
            "path": str(self.path),
            "before": self.before.to_json(),
            "after": None if self.after is None else self.after.to_json(),
            "deep": self.deep,
        }


@dataclass
class Rename:
    """The entry at `source` (a file, link or directory, `identity` = device and inode) moved to `destination`;
    `moved_as` is its identity there (another one after a copy across file systems; None: not known). `content`:
    a file's content (within the file limit) or a link's target, which tells whether the entry at `destination`
    is still what was moved better than an inode number (files are rewritten as new inodes, and freed inode
    numbers are reused); directories and larger files are told by their identity."""

    source: Path
    destination: Path
    kind: str
    identity: tuple[int, int]
    moved_as: tuple[int, int] | None = None
    content: State | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "op": "rename",
            "source": str(self.source),
            "destination": str(self.destination),
            "kind": self.kind,
            "identity": list(self.identity),
            "moved_as": None if self.moved_as is None else list(self.moved_as),
            "content": None if self.content is None else self.content.to_json(),
        }


Operation = Replace | Rename


def operation_from_json(data: dict[str, Any]) -> Operation:
    if data["op"] == "rename":
        moved, content = data.get("moved_as"), data.get("content")
        return Rename(
            Path(data["source"]),
            Path(data["destination"]),
            data["kind"],
            (data["identity"][0], data["identity"][1]),
            None if moved is None else (moved[0], moved[1]),
            None if content is None else State.from_json(content),
        )
    after = data.get("after")
    return Replace(
        Path(data["path"]),
        State.from_json(data["before"]),
        None if after is None else State.from_json(after),
        bool(data.get("deep")),
    )


def identity_of(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # a parent that is not a directory: nothing there
        return None
    return info.st_dev, info.st_ino


@dataclass
class Record:
    """One row of the journal."""

    id: int
    time: float
    tool: str
    path: str
    source: str | None
    status: str
    operations: list[Operation]
    size: int
    undoes: int | None
    undone_by: int | None
    note: str | None


# -- recording a change ------------------------------------------------------------------------------------------


@dataclass
class Change:
    """One change being made: the caller declares what it will replace or move (`replace`, `rename`), then
    makes it inside `applying()`, which writes the pending row first and finishes it after."""

    journal: Journal | None
    guard: PathGuard | None
    tool: str
    hint: str
    operations: list[Operation] = field(default_factory=list)
    id: int | None = None
    note: str | None = None
    undoes: int | None = None
    source: Path | None = None  # where a copy came from (listed beside the path)
    _budget: Budget | None = None

    @classmethod
    def off(cls, tool: str) -> Change:
        """A change that records nothing (undo is off, or `undoable=false`)."""
        return cls(None, None, tool, "")

    def replace(
        self, path: Path, *, after: State | None = None, deep: bool = False, before: State | None = None
    ) -> None:
        """`path` is about to change: keep what it holds now (`deep`: a directory with all it holds). `after`:
        what it will hold, when the change cannot leave it there at the end (a path a move empties first);
        `before`: what it will hold when this step starts, when an earlier step of the change decides it."""
        if self.journal is None or self.guard is None:
            return
        if self._budget is None:
            self._budget = self.journal.limits.budget(keep=True)
        try:
            if before is None:
                before = read_state(self.guard, path, deep=deep, budget=self._budget)
        except TooLarge as exc:
            raise ToolFailure(ErrorCode.MAX_LIMIT_EXCEEDED, f"{exc}, so this {self.tool} {self.hint}") from None
        except ToolFailure as failure:
            if failure.code is not ErrorCode.VALIDATION_FAILED:
                raise
            raise ToolFailure(failure.code, f"{failure.message}, so this {self.tool} {self.hint}") from None
        self.operations.append(Replace(path, before, after, deep=deep or before.deep))

    def expect_fits(self, directory: Path) -> None:
        """Refuse (MAX_LIMIT_EXCEEDED) a change that would create the tree at `directory` again elsewhere when
        that tree would not fit the journal: undoing the change must keep it."""
        if self.journal is None or self.guard is None:
            return
        try:
            check_fits(self.guard, directory, self.journal.limits.budget(keep=False))
        except TooLarge as exc:
            raise ToolFailure(ErrorCode.MAX_LIMIT_EXCEEDED, f"{exc}, so this {self.tool} {self.hint}") from None

    def rename(self, source: Path, destination: Path, kind: str) -> None:
        if self.journal is None or self.guard is None:
            return
        identity = identity_of(source)
        if identity is None:
            return
        content = None
        if kind in ("file", "symlink"):
            with contextlib.suppress(TooLarge, ToolFailure, OSError):
                content = read_state(self.guard, source, deep=False, budget=self.journal.limits.budget(keep=False))
        self.operations.append(Rename(source, destination, kind, identity, content=content))

    @contextlib.contextmanager
    def applying(self) -> Iterator[None]:
        if self.journal is None or self.guard is None or not self.operations:
            yield
            return
        self.id = self.journal.begin(self)
        try:
            yield
        except BaseException:
            self.journal.finish(self, failed=True)
            raise
        self.journal.finish(self, failed=False)

    def blobs(self) -> dict[str, bytes]:
        return dict(self._budget.blobs or {}) if self._budget is not None else {}


# -- the journal -------------------------------------------------------------------------------------------------


class Journal:
    """The undo journal of one data directory (shared by every file_ops process using it)."""

    def __init__(self, directory: Path, limits: Limits) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.limits = limits
        self.lock_path = directory / LOCK_FILE
        self.lock = FairLock.of(self.lock_path)
        path = directory / DATABASE_FILE
        # It holds copies of the user's files: owner-only, set before SQLite makes the -wal and -shm files, which
        # take the database file's permissions.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600))
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            with contextlib.suppress(OSError):
                os.chmod(name, 0o600)
        self.db = Database(path, MIGRATIONS)

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def change(self, tool: str, guard: PathGuard, *, undoable: bool = True, hint: str = "") -> Iterator[Change]:
        """Hold the journal's lock while one change is checked, recorded and made."""
        with self.locked():
            yield Change(self if undoable else None, guard if undoable else None, tool, hint or _HINT)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the journal's lock: first come, first served among this process's calls (`locking.FairLock`), a
        blocking flock across processes."""
        try:
            with self.lock.held(LOCK_TIMEOUT_SECONDS):
                yield
        except LockTimeout:
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"another change has held the undo journal's lock for {LOCK_TIMEOUT_SECONDS:.0f} s (a large change, "
                "or another file_ops process); retry in a moment.",
            ) from None

    # -- writing -----------------------------------------------------------------------------------------------

    def begin(self, change: Change) -> int:
        """Write the pending row and the contents it keeps; drop the oldest changes past the limits."""
        blobs = change.blobs()
        main, source = _main_paths(change)
        with self.db.write() as db:
            db.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT_BYTES}")  # a 200 MB change must not leave a 200 MB WAL
            for digest, data in blobs.items():
                db.execute("INSERT OR IGNORE INTO blobs (hash, size, data) VALUES (?, ?, ?)", (digest, len(data), data))
            cursor = db.execute(
                "INSERT INTO changes (time, tool, path, source, status, operations, size, undoes) "
                "VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
                (
                    time.time(),
                    change.tool,
                    main,
                    source,
                    _operations_json(change.operations),
                    sum(map(len, blobs.values())),
                    change.undoes,
                ),
            )
            change_id = int(cursor.lastrowid or 0)
            db.executemany("INSERT INTO refs (change, hash) VALUES (?, ?)", [(change_id, h) for h in blobs])
            self._prune(db, keep=(change_id, change.undoes or change_id))
        return change_id

    def finish(self, change: Change, *, failed: bool) -> None:
        """Read what the change left and finish its row; a change that changed nothing leaves no row."""
        assert change.id is not None and change.guard is not None
        kept: list[Operation] = []
        unknown = False
        for operation in change.operations:
            if isinstance(operation, Rename):
                if identity_of(operation.source) == operation.identity:
                    continue  # not moved
                operation.moved_as = identity_of(operation.destination)
                kept.append(operation)
                continue
            if operation.after is None or failed:
                try:
                    operation.after = read_state(
                        change.guard, operation.path, deep=operation.deep, budget=self.limits.budget(keep=False)
                    )
                except (TooLarge, ToolFailure, OSError):
                    operation.after = None
                    unknown = True
            if operation.after is None or not same(operation.before, operation.after):
                kept.append(operation)
        with self.db.write() as db:
            if not kept:
                db.execute("DELETE FROM changes WHERE id = ?", (change.id,))
                # Give its id back: no call returned it, and under the lock no later row took one, so the next
                # change's id follows the last recorded one (AUTOINCREMENT would otherwise skip it). An id a
                # recorded change was given is still never reused: the sequence only steps back from this one.
                db.execute("UPDATE sqlite_sequence SET seq = seq - 1 WHERE name = 'changes' AND seq = ?", (change.id,))
                change.id = None
                change.operations = []
                return
            hashes = {h for op in kept if isinstance(op, Replace) for h in op.before.hashes()}
            db.execute("DELETE FROM refs WHERE change = ?", (change.id,))
            db.executemany("INSERT INTO refs (change, hash) VALUES (?, ?)", [(change.id, h) for h in hashes])
            size = db.execute(
                "SELECT COALESCE(SUM(b.size), 0) FROM refs r JOIN blobs b ON b.hash = r.hash WHERE r.change = ?",
                (change.id,),
            ).fetchone()[0]
            note = change.note
            if failed:
                note = "the call failed part-way; this is what it changed" + (f" ({note})" if note else "")
            db.execute(
                "UPDATE changes SET status = ?, operations = ?, size = ?, note = ? WHERE id = ?",
                ("pending" if unknown else "done", _operations_json(kept), size, note, change.id),
            )
            if change.undoes is not None and not failed:
                db.execute("UPDATE changes SET undone_by = ? WHERE id = ?", (change.id, change.undoes))
                # undoing an undo re-applies what that undo had undone: it is no longer undone
                db.execute(
                    "UPDATE changes SET undone_by = NULL WHERE id = (SELECT undoes FROM changes WHERE id = ?)",
                    (change.undoes,),
                )
        change.operations = kept

    def _prune(self, db: sqlite3.Connection, *, keep: tuple[int, int]) -> None:
        """Drop the oldest changes past the limits, never those in `keep` (the new one, and the one it undoes)."""
        limits = self.limits
        db.execute(
            "DELETE FROM changes WHERE time < ? AND id NOT IN (?, ?)",
            (time.time() - limits.max_age_days * 86400, *keep),
        )
        db.execute(
            "DELETE FROM changes WHERE id NOT IN (?, ?) "
            "AND id NOT IN (SELECT id FROM changes ORDER BY id DESC LIMIT ?)",
            (*keep, limits.max_changes),
        )
        db.execute("DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM refs)")
        total = db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]
        while total > limits.max_total_bytes:
            oldest = db.execute(
                "SELECT id FROM changes WHERE id NOT IN (?, ?) AND size > 0 ORDER BY id LIMIT 16", keep
            ).fetchall()
            if not oldest:
                break
            db.executemany("DELETE FROM changes WHERE id = ?", [(row[0],) for row in oldest])
            db.execute("DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM refs)")
            total = db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]

    # -- reading -----------------------------------------------------------------------------------------------

    def record(self, change_id: int) -> Record | None:
        with self.db.read() as db:
            row = db.execute("SELECT * FROM changes WHERE id = ?", (change_id,)).fetchone()
        return None if row is None else _record(row)

    def summaries(self, *, before_id: int | None = None) -> list[Record]:
        """Every change older than `before_id`, newest first, without their operations (the journal holds at
        most `max_changes`)."""
        with self.db.read() as db:
            rows = db.execute(
                "SELECT id, time, tool, path, source, status, '[]' AS operations, size, undoes, undone_by, note "
                "FROM changes WHERE id < ? ORDER BY id DESC",
                (before_id or 2**62,),
            ).fetchall()
        return [_record(row) for row in rows]

    def forget(self, change_id: int) -> None:
        with self.db.write() as db:
            db.execute("DELETE FROM changes WHERE id = ?", (change_id,))

    def blob(self, digest: str) -> bytes:
        with self.db.read() as db:
            row = db.execute("SELECT data FROM blobs WHERE hash = ?", (digest,)).fetchone()
        if row is None:
            raise ToolFailure(ErrorCode.NOT_FOUND, "a kept content is missing from the undo journal.")
        return bytes(row[0])

    def totals(self) -> tuple[int, int]:
        """(changes, bytes of distinct contents) in the journal."""
        with self.db.read() as db:
            changes = db.execute("SELECT COUNT(*) FROM changes").fetchone()[0]
            size = db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]
        return int(changes), int(size)


_HINT = (
    "could not be undone. Pass undoable=false to make it anyway without a way back, or change less at once (the "
    "limits are [sections.file_ops] undo_max_file_bytes, undo_max_total_bytes and undo_max_entries). Nothing was "
    "changed."
)


def _main_paths(change: Change) -> tuple[str, str | None]:
    """The path a change is listed under (and where it came from, for moves and copies): the move's, else the
    deepest path it replaces (a file rather than the directories created for it)."""
    renames = [op for op in change.operations if isinstance(op, Rename)]
    if renames:
        return str(renames[-1].destination), str(renames[-1].source)
    replaces = [op for op in change.operations if isinstance(op, Replace)]
    deepest = max(replaces, key=lambda op: len(op.path.parts))
    return str(deepest.path), (str(change.source) if change.source is not None else None)


def _operations_json(operations: list[Operation]) -> str:
    return json.dumps([operation.to_json() for operation in operations], separators=(",", ":"))


def _record(row: sqlite3.Row) -> Record:
    return Record(
        id=row["id"],
        time=row["time"],
        tool=row["tool"],
        path=row["path"],
        source=row["source"],
        status=row["status"],
        operations=[operation_from_json(item) for item in json.loads(row["operations"])],
        size=row["size"],
        undoes=row["undoes"],
        undone_by=row["undone_by"],
        note=row["note"],
    )


def changing(
    journal: Journal | None, tool: str, guard: PathGuard, *, undoable: bool = True
) -> contextlib.AbstractContextManager[Change]:
    """`journal.change(...)`, or a change that records nothing when there is no journal (undo is off)."""
    if journal is None:
        return contextlib.nullcontext(Change.off(tool))
    return journal.change(tool, guard, undoable=undoable)
