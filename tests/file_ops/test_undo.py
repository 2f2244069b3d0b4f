"""The undo journal called directly: every change kind recorded and undone, the refusals, the limits, an
interrupted change, and two processes sharing one journal."""

from __future__ import annotations

import multiprocessing
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.servers.file_ops import entries, undoing, writing
from mcp_sections.servers.file_ops.journal import Change, Journal, Limits, Replace, changing
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure


class Files:
    """A root, a data directory outside it, and the file tools recording into one journal."""

    def __init__(self, base: Path, limits: Limits | None = None) -> None:
        self.root = base / "root"
        self.root.mkdir()
        self.data = base / "data"
        self.guard = PathGuard([self.root], private=[self.data])
        self.journal = Journal(self.data, limits or Limits())

    def run(self, tool: str, function: Callable[..., Any], *args: Any, undoable: bool = True, **kwargs: Any) -> Any:
        with changing(self.journal, tool, self.guard, undoable=undoable) as change:
            return function(self.guard, *args, change=change, **kwargs)

    def write(self, path: str, content: str, **options: Any) -> Any:
        options = {"encoding": "utf-8", "create_parents": True, "overwrite": True, "max_bytes": 1 << 26, **options}
        return self.run("write_file", writing.write_file, path, content, **options)

    def undo(self, change_id: int | None = None, *, force: bool = False, guard: PathGuard | None = None) -> Any:
        return undoing.undo_change(self.journal, guard or self.guard, change_id, force=force)

    def listing(self) -> list[Any]:
        return undoing.list_changes(self.journal, self.guard, limit=200, before_id=None).changes

    def tree(self) -> dict[str, str]:
        """Every entry below the root: file contents, link targets, 'dir'."""
        found: dict[str, str] = {}
        for path in sorted(self.root.rglob("*")):
            key = str(path.relative_to(self.root))
            if path.is_symlink():
                found[key] = "-> " + os.readlink(path)
            elif path.is_dir():
                found[key] = "dir"
            else:
                found[key] = path.read_text()
        return found


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return Files(tmp_path)


def refused(code: ErrorCode, action: Callable[[], Any]) -> str:
    with pytest.raises(ToolFailure) as caught:
        action()
    assert caught.value.code is code, caught.value.message
    return caught.value.message


# -- every change kind --------------------------------------------------------------------------------------------


def test_a_new_file_is_deleted_with_the_directories_created_for_it(files: Files) -> None:
    outcome = files.write("a/b/new.txt", "hello")
    assert outcome.change_id is not None
    [item] = files.listing()
    assert (item.id, item.tool, item.path, item.status) == (outcome.change_id, "write_file", outcome.path, "done")
    undone = files.undo()
    assert undone.undone_id == outcome.change_id and [a.action for a in undone.actions] == ["deleted"] * 3
    assert files.tree() == {}
    assert [c.status for c in files.listing()] == ["done", "undone"]


def test_an_overwrite_is_restored_and_the_undo_can_be_undone(files: Files) -> None:
    (files.root / "f.txt").write_text("old")
    (files.root / "f.txt").chmod(0o640)
    change = files.write("f.txt", "new").change_id
    undo = files.undo()
    assert files.tree() == {"f.txt": "old"} and stat.S_IMODE((files.root / "f.txt").stat().st_mode) == 0o640
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo(change))
    assert f"undo #{undo.change_id}" in message  # says how to redo
    redo = files.undo(undo.change_id)
    assert files.tree() == {"f.txt": "new"} and redo.undone_tool == "undo_file_change"
    files.undo(change)  # the redo made it undoable again
    assert files.tree() == {"f.txt": "old"}


def test_an_edit_is_restored_byte_for_byte(files: Files) -> None:
    (files.root / "e.txt").write_bytes(b"one\r\ntwo\r\n")
    edit = writing.Edit("two", "TWO")
    outcome = files.run("edit_file", writing.edit_file, "e.txt", [edit], dry_run=False, max_bytes=1 << 20)
    assert outcome.change_id is not None and (files.root / "e.txt").read_bytes() == b"one\r\nTWO\r\n"
    files.undo()
    assert (files.root / "e.txt").read_bytes() == b"one\r\ntwo\r\n"


def test_a_dry_run_and_an_identical_write_record_nothing(files: Files) -> None:
    (files.root / "same.txt").write_text("same")
    assert files.write("same.txt", "same").change_id is None
    edit = writing.Edit("same", "other")
    dry = files.run("edit_file", writing.edit_file, "same.txt", [edit], dry_run=True, max_bytes=1 << 20)
    assert dry.change_id is None and files.listing() == []


def test_a_move_is_moved_back_and_a_file_it_replaced_comes_back(files: Files) -> None:
    (files.root / "src.txt").write_text("moving")
    (files.root / "dst.txt").write_text("replaced")
    moved = files.run("move_file", entries.move_file, "src.txt", "dst.txt", overwrite=True)
    assert moved.overwritten and files.tree() == {"dst.txt": "moving"}
    [item] = files.listing()
    assert item.source == str(files.root / "src.txt") and item.path == str(files.root / "dst.txt")
    files.undo()
    assert files.tree() == {"dst.txt": "replaced", "src.txt": "moving"}


def test_a_moved_directory_moves_back_with_what_changed_inside_it(files: Files) -> None:
    (files.root / "d" / "sub").mkdir(parents=True)
    (files.root / "d" / "sub" / "x.txt").write_text("x")
    files.run("move_file", entries.move_file, "d", "e", overwrite=False)
    (files.root / "e" / "sub" / "x.txt").write_text("edited after the move")  # inside: the entry is the same one
    files.undo()
    assert files.tree() == {"d": "dir", "d/sub": "dir", "d/sub/x.txt": "edited after the move"}


def test_a_move_back_onto_a_taken_path_needs_force_and_keeps_the_occupant(files: Files) -> None:
    (files.root / "a.txt").write_text("a")
    files.run("move_file", entries.move_file, "a.txt", "b.txt", overwrite=False)
    (files.root / "a.txt").write_text("someone else's")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "'a.txt', where it came from, is taken now" in message and "force=true" in message
    assert files.tree() == {"a.txt": "someone else's", "b.txt": "a"}  # nothing was changed
    undo = files.undo(force=True)
    assert files.tree() == {"a.txt": "a"} and undo.forced == ["a.txt"]
    files.undo(undo.change_id)  # undoing the forced undo brings the occupant back too
    assert files.tree() == {"a.txt": "someone else's", "b.txt": "a"}


def test_a_moved_file_is_told_by_its_content(files: Files) -> None:
    """An edit undone since rewrote the moved file as a new inode with the same content: it still moves back;
    other content needs force; a moved directory is told by its inode."""
    (files.root / "a.txt").write_text("a")
    files.run("move_file", entries.move_file, "a.txt", "b.txt", overwrite=False)
    files.write("b.txt", "edited")
    files.undo()
    files.undo()
    assert files.tree() == {"a.txt": "a"}
    files.run("move_file", entries.move_file, "a.txt", "b.txt", overwrite=False)
    (files.root / "b.txt").write_text("other")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "'b.txt' changed since: move_file moved a file of 1 bytes there, it now holds a file of 5 bytes" in message
    (files.root / "b.txt").unlink()
    assert "is gone" in refused(ErrorCode.NOT_FOUND, lambda: files.undo(force=True))
    (files.root / "d").mkdir()
    files.run("move_file", entries.move_file, "d", "e", overwrite=False)
    moved = (files.root / "e").stat().st_ino
    (files.root / "e").rmdir()
    for number in range(10):  # another directory at "e" (not one that got the freed inode number back)
        (files.root / "e").mkdir()
        if (files.root / "e").stat().st_ino != moved:
            break
        (files.root / "e").rename(files.root / f"kept{number}")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "another entry now" in message


def test_copies_are_undone(files: Files) -> None:
    (files.root / "s.txt").write_text("source")
    (files.root / "t.txt").write_text("target before")
    copied = files.run("copy_file", entries.copy_file, "s.txt", "t.txt", overwrite=True, recursive=False)
    assert copied.overwritten and files.listing()[0].source == str(files.root / "s.txt")
    files.run("copy_file", entries.copy_file, "s.txt", "new.txt", overwrite=False, recursive=False)
    (files.root / "dir" / "in").mkdir(parents=True)
    (files.root / "dir" / "in" / "f.txt").write_text("f")
    files.run("copy_file", entries.copy_file, "dir", "dir2", overwrite=False, recursive=True)
    assert files.tree()["dir2/in/f.txt"] == "f"
    files.undo()  # the tree copy
    files.undo()  # the new file
    files.undo()  # the copy over t.txt
    expected = {"dir": "dir", "dir/in": "dir", "dir/in/f.txt": "f", "s.txt": "source", "t.txt": "target before"}
    assert files.tree() == expected


def test_a_copied_tree_changed_since_is_not_deleted_without_force(files: Files) -> None:
    (files.root / "dir").mkdir()
    (files.root / "dir" / "f.txt").write_text("f")
    files.run("copy_file", entries.copy_file, "dir", "copy", overwrite=False, recursive=True)
    (files.root / "copy" / "mine.txt").write_text("added later")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "'copy' changed since" in message and "directory of 1 entries" in message
    undo = files.undo(force=True)
    assert "copy" not in files.tree()
    files.undo(undo.change_id)  # what the forced undo deleted was kept, the added file with it
    assert files.tree()["copy/mine.txt"] == "added later"


def test_deleted_files_links_and_trees_come_back(files: Files) -> None:
    tree = files.root / "t"
    (tree / "deep" / "er").mkdir(parents=True)
    (tree / "deep" / "er" / "a.txt").write_text("a")
    (tree / "b.sh").write_text("#!/bin/sh\n")
    (tree / "b.sh").chmod(0o755)
    (tree / "same1.txt").write_text("duplicate")
    (tree / "same2.txt").write_text("duplicate")
    (tree / "empty").mkdir()
    (tree / "link").symlink_to("deep/er/a.txt")
    (files.root / "lone.txt").write_text("lone")
    (files.root / "lone-link").symlink_to("lone.txt")
    before = files.tree()
    deleted = files.run("delete_path", entries.delete_path, "t", recursive=True)
    files.run("delete_path", entries.delete_path, "lone.txt", recursive=False)
    files.run("delete_path", entries.delete_path, "lone-link", recursive=False)
    assert files.tree() == {} and deleted.entries_deleted == 9
    link, lone, whole = files.listing()
    assert (link.size_bytes, lone.size_bytes) == (0, len("lone"))
    assert whole.size_bytes == len("a") + len("#!/bin/sh\n") + len("duplicate")  # the duplicate is kept once
    for _ in range(3):
        files.undo()
    assert files.tree() == before
    assert stat.S_IMODE((tree / "b.sh").stat().st_mode) == 0o755


def test_a_created_directory_is_removed_only_while_empty(files: Files) -> None:
    created = files.run("create_directory", entries.create_directory, "x/y", parents=True)
    assert created.created and created.change_id is not None
    (files.root / "x" / "y" / "later.txt").write_text("later")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "no longer an empty directory" in message and files.tree()["x/y/later.txt"] == "later"
    (files.root / "x" / "y" / "later.txt").unlink()
    files.undo()
    assert files.tree() == {}
    existing = files.run("create_directory", entries.create_directory, ".", parents=True)
    assert existing.change_id is None
    files.write("made/f.txt", "f")  # creates "made" for the file
    (files.root / "made" / "f.txt").unlink()
    (files.root / "made").rmdir()
    (files.root / "made").write_text("a file where the directory was")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo(force=True))
    assert "made: a directory the change created, kept as it is no longer an empty directory" in message
    assert files.tree() == {"made": "a file where the directory was"}


# -- refusals -------------------------------------------------------------------------------------------------------


def test_a_file_changed_since_needs_force_and_what_was_there_is_kept(files: Files) -> None:
    files.write("f.txt", "agent")
    (files.root / "f.txt").write_text("user edit")
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "'f.txt' changed since: write_file left a file of 5 bytes, it now holds a file of 9 bytes" in message
    assert files.tree() == {"f.txt": "user edit"}
    undo = files.undo(force=True)
    assert files.tree() == {}
    files.undo(undo.change_id)
    assert files.tree() == {"f.txt": "user edit"}


def test_undo_goes_through_the_path_guard(files: Files, tmp_path: Path) -> None:
    files.write("d/f.txt", "one")
    change = files.write("d/f.txt", "two").change_id
    other = tmp_path / "other-root"
    other.mkdir()
    narrow = PathGuard([other], private=[files.data])
    assert "outside the allowed roots" in refused(ErrorCode.PERMISSION_DENIED, lambda: files.undo(change, guard=narrow))
    denied = PathGuard([files.root], deny_globs=["*.txt"], private=[files.data])
    assert "protected" in refused(ErrorCode.PERMISSION_DENIED, lambda: files.undo(change, guard=denied))
    # a symbolic link planted in the path since: never followed, even with force
    elsewhere = files.root / "elsewhere"
    elsewhere.mkdir()
    (files.root / "d").rename(files.root / "d-real")
    (files.root / "d").symlink_to(elsewhere)
    message = refused(ErrorCode.PERMISSION_DENIED, lambda: files.undo(change, force=True))
    assert "symbolic link" in message and list(elsewhere.iterdir()) == []


def test_unknown_and_exhausted_changes(files: Files) -> None:
    assert "no change left to undo" in refused(ErrorCode.NOT_FOUND, lambda: files.undo())
    assert "not in the undo journal" in refused(ErrorCode.NOT_FOUND, lambda: files.undo(99))
    files.write("a.txt", "a")
    files.write("b.txt", "b")
    files.undo()
    files.undo()
    assert files.tree() == {}
    assert "no change left" in refused(ErrorCode.NOT_FOUND, lambda: files.undo())


# -- limits ---------------------------------------------------------------------------------------------------------

SMALL = Limits(max_file_bytes=1000, max_total_bytes=5000, max_entries=20, max_changes=1000)


def test_a_file_over_the_limit_is_refused_unless_undoable_is_false(tmp_path: Path) -> None:
    files = Files(tmp_path, SMALL)
    (files.root / "big.txt").write_text("x" * 1001)
    message = refused(ErrorCode.MAX_LIMIT_EXCEEDED, lambda: files.write("big.txt", "small"))
    assert "'big.txt' is 1001 bytes; the undo journal keeps files up to 1000" in message
    assert "undoable=false" in message and (files.root / "big.txt").read_text() == "x" * 1001
    outcome = files.run(
        "write_file", writing.write_file, "big.txt", "small", undoable=False,
        encoding="utf-8", create_parents=False, overwrite=True, max_bytes=1 << 20,
    )  # fmt: skip
    assert outcome.change_id is None and files.listing() == []


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: [(d / f"f{i}").write_text("x") for i in range(25)], "more than 20 entries"),
        (lambda d: [(d / f"f{i}").write_text(str(i) * 900) for i in range(7)], "exceed 5000 bytes"),
        (lambda d: (d / ".env").write_text("SECRET=1"), "protected file"),
        (lambda d: os.mkfifo(d / "pipe"), "special file"),
    ],
)
def test_a_tree_the_journal_cannot_keep_is_refused_with_how(tmp_path: Path, make: Any, expected: str) -> None:
    files = Files(tmp_path, SMALL)
    tree = files.root / "t"
    tree.mkdir()
    make(tree)
    message = refused(
        ErrorCode.MAX_LIMIT_EXCEEDED if "exceed" in expected or "entries" in expected else ErrorCode.VALIDATION_FAILED,
        lambda: files.run("delete_path", entries.delete_path, "t", recursive=True),
    )
    assert expected in message and "undoable=false" in message and "Nothing was changed" in message
    assert tree.exists()
    deleted = files.run("delete_path", entries.delete_path, "t", recursive=True, undoable=False)
    assert deleted.change_id is None and not tree.exists()


def test_a_tree_copy_too_large_to_undo_is_refused(tmp_path: Path) -> None:
    files = Files(tmp_path, SMALL)
    (files.root / "t").mkdir()
    for i in range(25):
        (files.root / "t" / f"f{i}").write_text("x")
    message = refused(
        ErrorCode.MAX_LIMIT_EXCEEDED,
        lambda: files.run("copy_file", entries.copy_file, "t", "t2", overwrite=False, recursive=True),
    )
    assert "more than 20 entries" in message and not (files.root / "t2").exists()


def test_the_oldest_changes_go_first_and_shared_contents_count_once(tmp_path: Path) -> None:
    files = Files(tmp_path, SMALL)
    for i in range(8):
        (files.root / f"f{i}.txt").write_text(str(i) * 900)  # 900 bytes each, distinct
        files.write(f"f{i}.txt", "replaced")
    kept = files.listing()
    count, size = files.journal.totals()
    assert size <= 5000 and count == len(kept) < 8
    assert [item.path for item in kept] == [str(files.root / f"f{i}.txt") for i in range(7, 7 - len(kept), -1)]
    assert "not in the undo journal" in refused(ErrorCode.NOT_FOUND, lambda: files.undo(1))
    files.undo()
    assert (files.root / "f7.txt").read_text() == "7" * 900
    (tmp_path / "many").mkdir()
    many = Files(tmp_path / "many", Limits(max_changes=3))
    for i in range(5):
        many.write(f"n{i}.txt", "n")
    assert [item.path.rsplit("/", 1)[1] for item in many.listing()] == ["n4.txt", "n3.txt", "n2.txt"]


# -- an interrupted change ------------------------------------------------------------------------------------------


def interrupted(files: Files, path: str, *, made: bool) -> int:
    """Record a write as the journal does, then 'crash': the row stays pending (made: after the write)."""
    target = files.root / path
    change = Change(files.journal, files.guard, "write_file", "")
    change.replace(target)
    change_id = files.journal.begin(change)
    if made:
        writing.atomic_write(files.guard, target, b"half-way")
    return change_id


def test_an_interrupted_change_keeps_the_original(files: Files) -> None:
    (files.root / "f.txt").write_text("original")
    change_id = interrupted(files, "f.txt", made=True)
    [item] = files.listing()
    assert item.id == change_id and item.status == "interrupted"
    message = refused(ErrorCode.VALIDATION_FAILED, lambda: files.undo())
    assert "interrupted" in message
    files.undo(force=True)
    assert files.tree() == {"f.txt": "original"}


def test_an_interrupted_change_that_never_happened_is_forgotten(files: Files) -> None:
    (files.root / "f.txt").write_text("original")
    interrupted(files, "f.txt", made=False)
    outcome = files.undo()
    assert outcome.change_id is None and "before it changed anything" in outcome.message
    assert files.listing() == [] and files.tree() == {"f.txt": "original"}


# -- two processes --------------------------------------------------------------------------------------------------


def _writer(base: str, name: str, rounds: int) -> None:
    """One process writing the same shared file `rounds` times through its own journal handle."""
    files = Files.__new__(Files)
    files.root, files.data = Path(base) / "root", Path(base) / "data"
    files.guard = PathGuard([files.root], private=[files.data])
    files.journal = Journal(files.data, Limits())
    for number in range(rounds):
        files.write("shared.txt", f"{name} {number}")


def test_two_processes_keep_an_exact_chain_of_changes(files: Files, tmp_path: Path) -> None:
    """Every record's 'before' is exactly what the previous record left: the journal's lock serialises the
    check, the record and the change across processes; undoing them all gives back the first content."""
    (files.root / "shared.txt").write_text("start")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(tmp_path), name, 15)) for name in ("left", "right")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    records = [files.journal.record(item.id) for item in reversed(files.listing())]
    assert len(records) == 30
    previous = None
    for record in records:
        assert record is not None
        [operation] = record.operations
        assert isinstance(operation, Replace) and operation.after is not None
        if previous is not None:
            assert operation.before.hash == previous.hash
        previous = operation.after
    for _ in range(30):
        files.undo()
    assert files.tree() == {"shared.txt": "start"}


def test_the_journal_is_private_even_inside_a_root(tmp_path: Path) -> None:
    """A root containing the data directory (a root at home): the journal is readable by no file tool, and a
    directory holding it is never deleted or moved."""
    root = tmp_path / "home"
    data = root / ".local" / "share" / "mcp-sections"
    data.mkdir(parents=True)
    guard = PathGuard([root], private=[data])
    journal = Journal(data, Limits())
    with changing(journal, "write_file", guard) as change:
        writing.write_file(
            guard, "f.txt", "x", encoding="utf-8", create_parents=False, overwrite=True, max_bytes=100, change=change
        )
    for name in ("file_changes.sqlite3", "file_changes.sqlite3-wal", "file_changes.sqlite3-shm"):
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
    for path in (str(data / "file_changes.sqlite3"), str(data)):
        with pytest.raises(ToolFailure) as caught:
            guard.resolve(path, purpose="read")
        assert caught.value.code is ErrorCode.PERMISSION_DENIED
    for action in (
        lambda change: entries.delete_path(guard, ".local", recursive=True, change=change),
        lambda change: entries.move_file(guard, ".local", "elsewhere", overwrite=False, change=change),
    ):
        with changing(journal, "delete_path", guard) as change, pytest.raises(ToolFailure) as caught:
            action(change)
        assert caught.value.code is ErrorCode.PERMISSION_DENIED and "own state" in caught.value.message
    assert (data / "file_changes.sqlite3").exists()


# -- settings -------------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_undo_off_and_a_journal_that_cannot_open(tmp_path: Path) -> None:
    from mcp_sections.servers.file_ops import section
    from mcp_sections.servers.file_ops.models import ListFileChangesInput, UndoFileChangeInput, WriteFileInput
    from mcp_sections.servers.file_ops.settings import FileOpsSettings
    from mcp_sections.servers.file_ops.state import FileOpsState

    root = tmp_path / "root"
    root.mkdir()
    off = FileOpsState([root], FileOpsSettings(undo_enabled=False), data_dir=tmp_path / "data")
    written = await section.write_file(WriteFileInput(path="a.txt", content="a"), off, None)  # type: ignore[arg-type]
    assert written.change_id is None and not (tmp_path / "data").exists()
    for call in (
        section.list_file_changes(ListFileChangesInput(), off, None),  # type: ignore[arg-type]
        section.undo_file_change(UndoFileChangeInput(), off, None),  # type: ignore[arg-type]
    ):
        with pytest.raises(ToolFailure) as caught:
            await call
        assert caught.value.code is ErrorCode.VALIDATION_FAILED and "undo_enabled = false" in caught.value.message

    (tmp_path / "not-a-directory").write_text("")
    broken = FileOpsState([root], FileOpsSettings(), data_dir=tmp_path / "not-a-directory")
    with pytest.raises(ToolFailure) as caught:
        await section.write_file(WriteFileInput(path="a.txt", content="b"), broken, None)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.DATABASE_ERROR and "undo_enabled = false" in caught.value.message
    assert (root / "a.txt").read_text() == "a"

    on = FileOpsState([root], FileOpsSettings(), data_dir=tmp_path / "data")
    written = await section.write_file(WriteFileInput(path="a.txt", content="c"), on, None)  # type: ignore[arg-type]
    listed = await section.list_file_changes(ListFileChangesInput(), on, None)  # type: ignore[arg-type]
    assert [item.id for item in listed.changes] == [written.change_id]
    assert "write_file" in listed.render_text()
    undone = await section.undo_file_change(UndoFileChangeInput(), on, None)  # type: ignore[arg-type]
    assert "restored" in undone.render_text() and (root / "a.txt").read_text() == "a"
    on.close()
