"""Moves, copies and deletes work on directory descriptors: a parent swapped for a symbolic link to an outside
directory between the check and the copy or the delete redirects nothing (#38 finding 7).

The two roots lie on two real file systems (a tmpfs under /dev/shm and the test's temporary directory), so a move
between them is a copy then a delete. The race is made deterministic by doing the racing program's swap at the
moment it matters: right after the move opened its directories, or when the first deletion starts."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_sections.servers.file_ops import entries, undoing
from mcp_sections.servers.file_ops.journal import Journal, Limits, changing
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure

SHM = Path("/dev/shm")


class Places:
    """`near` (a root on tmpfs) holding `a/`, `outside` beside it (not a root), `far` (a root on the test's file
    system), and the file tools over both roots with a journal."""

    def __init__(self, shm: Path, tmp: Path) -> None:
        self.near, self.outside, self.far = shm / "near", shm / "outside", tmp / "far"
        for directory in (self.near / "a", self.outside, self.far / "sub"):
            directory.mkdir(parents=True)
        self.guard = PathGuard([self.near, self.far], private=[tmp / "data"])
        self.journal = Journal(tmp / "data", Limits())

    def swap(self, directory: Path) -> None:
        """What the racing program does: `directory` moves aside and a symlink to `outside` takes its name."""
        directory.rename(directory.with_name(directory.name + "-real"))
        directory.symlink_to(self.outside, target_is_directory=True)

    def run(self, tool: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with changing(self.journal, tool, self.guard) as change:
            return function(self.guard, *args, change=change, **kwargs)

    def move(self, source: Path, destination: Path, *, overwrite: bool = False) -> Any:
        return self.run("move_file", entries.move_file, str(source), str(destination), overwrite=overwrite)


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Places]:
    if not SHM.is_dir() or os.stat(SHM).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another file system than the temporary directory")
    shm = Path(tempfile.mkdtemp(dir=SHM, prefix="moves-"))
    try:
        yield Places(shm, tmp_path)
    finally:
        shutil.rmtree(shm)


def tree(directory: Path, marker: str, files: int = 30) -> None:
    (directory / "deep" / "er").mkdir(parents=True)
    for number in range(files):
        (directory / f"f{number}.txt").write_text(f"{marker} {number}\n")
    (directory / "deep" / "er" / "leaf.txt").write_text(f"{marker} leaf\n")
    (directory / "deep" / "link").symlink_to("../f0.txt")


def contents(directory: Path) -> dict[str, str]:
    found = {}
    for path in sorted(directory.rglob("*")):
        key = str(path.relative_to(directory))
        if path.is_symlink():
            found[key] = f"-> {os.readlink(path)}"
        else:
            found[key] = "dir" if path.is_dir() else path.read_text() if path.is_file() else "special"
    return found


def after_opening(guard: PathGuard, directory: Path, action: Callable[[], None]) -> list[bool]:
    """Run `action` once, right after the guard hands out a descriptor of `directory` (the check is done)."""
    done: list[bool] = []
    original = guard.open_directory

    def opened(path: Path | str) -> int:
        fd = original(path)
        if not done and os.fspath(path) == os.fspath(directory):
            done.append(True)
            action()
        return fd

    guard.open_directory = opened  # type: ignore[method-assign]
    return done


def at_first_deletion(monkeypatch: pytest.MonkeyPatch, name: str, action: Callable[[], None]) -> list[bool]:
    """Run `action` once, as the first deletion of an entry called `name` starts (by path or by descriptor)."""
    done: list[bool] = []

    def hooked(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if not done and os.path.basename(os.fspath(path)) == name:
                done.append(True)
                action()
            return original(path, *args, **kwargs)

        return call

    monkeypatch.setattr(shutil, "rmtree", hooked(shutil.rmtree))
    monkeypatch.setattr(os, "unlink", hooked(os.unlink))
    return done


def test_a_tree_moved_across_file_systems_deletes_only_itself(places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    tree(places.near / "a" / "tree", "mine")
    tree(places.outside / "tree", "victim")
    victim = contents(places.outside / "tree")
    swapped = at_first_deletion(monkeypatch, "tree", lambda: places.swap(places.near / "a"))
    places.move(places.near / "a" / "tree", places.far / "tree")
    assert swapped
    assert contents(places.outside / "tree") == victim  # the outside directory survives
    assert contents(places.far / "tree") == {key: value.replace("victim", "mine") for key, value in victim.items()}
    assert not (places.near / "a-real" / "tree").exists()  # the entry that was moved is what was deleted


def test_a_file_moved_across_file_systems_deletes_only_itself(places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    data = os.urandom(3 << 20)
    (places.near / "a" / "big.bin").write_bytes(data)
    (places.outside / "big.bin").write_bytes(b"victim")
    swapped = at_first_deletion(monkeypatch, "big.bin", lambda: places.swap(places.near / "a"))
    moved = places.move(places.near / "a" / "big.bin", places.far / "big.bin")
    assert swapped and moved.type == "file"
    assert (places.outside / "big.bin").read_bytes() == b"victim"
    assert (places.far / "big.bin").read_bytes() == data
    assert not (places.near / "a-real" / "big.bin").exists()


def test_a_parent_swapped_after_the_check_is_not_followed(places: Places) -> None:
    """The swap lands after both directories were opened, before anything is copied: the copy reads the directory
    that was checked and the delete removes from it, never the outside one."""
    tree(places.near / "a" / "tree", "mine")
    tree(places.outside / "tree", "victim")
    victim = contents(places.outside / "tree")
    swapped = after_opening(places.guard, places.far, lambda: places.swap(places.near / "a"))
    places.move(places.near / "a" / "tree", places.far / "tree")
    assert swapped
    assert contents(places.outside / "tree") == victim
    assert (
        "mine 0\n" in contents(places.far / "tree").values()
        and "victim 0\n" not in contents(places.far / "tree").values()
    )


def test_undo_moves_back_through_the_same_descriptors(places: Places) -> None:
    tree(places.near / "a" / "tree", "mine")
    moved = places.move(places.near / "a" / "tree", places.far / "sub" / "tree")
    tree(places.outside / "tree", "victim")
    victim = contents(places.outside / "tree")
    swapped = after_opening(places.guard, places.near / "a", lambda: places.swap(places.far / "sub"))
    undoing.undo_change(places.journal, places.guard, moved.change_id, force=False)
    assert swapped
    assert contents(places.outside / "tree") == victim
    assert contents(places.near / "a" / "tree")["f0.txt"] == "mine 0\n"
    assert not (places.far / "sub-real" / "tree").exists()


def test_a_tree_copy_reads_the_directory_that_was_checked(places: Places) -> None:
    tree(places.near / "a" / "tree", "mine")
    tree(places.outside / "tree", "victim")
    after_opening(places.guard, places.far, lambda: places.swap(places.near / "a"))
    copied = places.run(
        "copy_file",
        entries.copy_file,
        str(places.near / "a" / "tree"),
        str(places.far / "copy"),
        overwrite=False,
        recursive=True,
    )
    assert copied.files_copied == 32  # 30 files, the leaf and the link
    assert "victim 0\n" not in contents(places.far / "copy").values()
    assert contents(places.far / "copy")["deep/link"] == "-> ../f0.txt"  # a link is copied as a link


def test_a_destination_that_appears_meanwhile_is_never_replaced(places: Places) -> None:
    for source in (places.far / "sub" / "same-fs.txt", places.near / "a" / "across.txt"):
        source.write_text("moved\n")
        destination = places.far / f"new-{source.name}"
        after_opening(places.guard, places.far, lambda destination=destination: destination.write_text("newcomer\n"))
        with pytest.raises(ToolFailure) as refused:
            places.move(source, destination)
        assert refused.value.code is ErrorCode.VALIDATION_FAILED, refused.value.message
        assert destination.read_text() == "newcomer\n" and source.read_text() == "moved\n"
        assert not [name for name in os.listdir(places.far) if name.startswith(".mcp-sections-tmp")]


def test_a_special_file_in_a_tree_refuses_the_move_and_changes_nothing(places: Places) -> None:
    tree(places.near / "a" / "tree", "mine")
    os.mkfifo(places.near / "a" / "tree" / "deep" / "pipe")
    before = contents(places.near / "a" / "tree")
    with pytest.raises(ToolFailure) as refused:
        places.move(places.near / "a" / "tree", places.far / "tree")
    assert refused.value.code is ErrorCode.VALIDATION_FAILED and "deep/pipe" in refused.value.message
    assert contents(places.near / "a" / "tree") == before
    assert sorted(os.listdir(places.far)) == ["sub"]
