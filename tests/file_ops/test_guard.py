"""The shared path guard, called directly (no server)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcp_sections.shared.confinement.guards.paths import (
    DEFAULT_DENY_GLOBS,
    PathGuard,
    intersect_roots,
    is_inside,
    roots_from_uris,
)
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.hosts import url_host
from mcp_sections.shared.ground.locations import outermost


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "sub" / "b.txt").write_text("b\n")
    (tmp_path / "root_evil").mkdir()
    (tmp_path / "root_evil" / "x.txt").write_text("evil\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return root


def code_of(guard: PathGuard, path: str, purpose: str = "read") -> str:
    with pytest.raises(ToolFailure) as caught:
        guard.resolve(path, purpose=purpose)  # type: ignore[arg-type]
    return caught.value.code.value


def test_roots_are_real_deduplicated_and_skip_missing(tree: Path, tmp_path: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(tree)
    guard = PathGuard([tree, link, tree / "..", tmp_path / "missing"])
    assert guard.roots == (tree.resolve(), tmp_path.resolve())
    assert PathGuard([]).roots == ()


def test_no_roots_denies_everything_with_a_configuration_hint(tree: Path) -> None:
    with pytest.raises(ToolFailure) as caught:
        PathGuard([]).resolve(str(tree / "a.txt"), purpose="read")
    assert caught.value.code is ErrorCode.PERMISSION_DENIED
    assert "--root" in caught.value.message and "MCP_SECTIONS_ROOTS" in caught.value.message


def test_relative_paths_resolve_against_the_first_root_not_the_cwd(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("other\n")
    monkeypatch.chdir(other)
    guard = PathGuard([tree, other])
    assert guard.resolve("a.txt", purpose="read") == tree / "a.txt"
    assert guard.resolve("sub/../a.txt", purpose="read") == tree / "a.txt"
    assert guard.resolve(".", purpose="list") == tree
    assert guard.resolve(str(other / "a.txt"), purpose="read") == other / "a.txt"


def test_containment_is_by_component_never_by_string_prefix(tree: Path, tmp_path: Path) -> None:
    guard = PathGuard([tree])
    assert not guard.contains(tmp_path / "root_evil" / "x.txt")
    assert guard.contains(tree / "sub")
    assert is_inside("/a/b", "/a") and not is_inside("/a_b", "/a") and is_inside("/x", "/")
    assert outermost(["/a/b", "/a_b", "/a", "/a/b", "/c/d"]) == ["/a_b", "/a", "/c/d"]
    assert [url_host(h) for h in ("::1", "[::1]", "127.0.0.1", "example.org")] == [
        "[::1]",
        "[::1]",
        "127.0.0.1",
        "example.org",
    ]
    assert code_of(guard, str(tmp_path / "root_evil" / "x.txt")) == "PERMISSION_DENIED"
    assert code_of(guard, "../root_evil/x.txt") == "PERMISSION_DENIED"


def test_outside_refusals_do_not_reveal_existence(tree: Path, tmp_path: Path) -> None:
    guard = PathGuard([tree])
    messages = set()
    for path in (tmp_path / "outside" / "secret.txt", tmp_path / "outside" / "absent.txt"):
        with pytest.raises(ToolFailure) as caught:
            guard.resolve(str(path), purpose="read")
        assert caught.value.code is ErrorCode.PERMISSION_DENIED
        messages.add(caught.value.message.replace(str(path), "<p>"))
    assert len(messages) == 1


@pytest.mark.parametrize(
    ("path", "code"),
    [("", "INVALID_INPUT"), ("   ", "INVALID_INPUT"), ("a\x00b", "INVALID_INPUT"), ("x" * 5000, "INVALID_INPUT")],
)
def test_malformed_paths(tree: Path, path: str, code: str) -> None:
    assert code_of(PathGuard([tree]), path) == code


def test_symlinks_followed_inside_refused_outside(tree: Path, tmp_path: Path) -> None:
    (tree / "in-link").symlink_to(tree / "sub")
    (tree / "out-link").symlink_to(tmp_path / "outside")
    (tree / "out-file").symlink_to(tmp_path / "outside" / "secret.txt")
    guard = PathGuard([tree])
    assert guard.resolve("in-link/b.txt", purpose="read") == tree / "sub" / "b.txt"
    for purpose in ("read", "write", "create", "list", "delete", "execute"):
        assert code_of(guard, "out-link/secret.txt", purpose) == "PERMISSION_DENIED"
        assert code_of(guard, "out-file", purpose) == "PERMISSION_DENIED"
        assert code_of(guard, "out-link/new.txt", purpose) == "PERMISSION_DENIED"


def test_dangling_links_are_never_written_through_but_can_be_deleted(tree: Path, tmp_path: Path) -> None:
    (tree / "dangle").symlink_to(tree / "nothing-here")
    (tree / "dangle-out").symlink_to(tmp_path / "outside" / "new.txt")
    guard = PathGuard([tree])
    assert code_of(guard, "dangle", "write") == "PERMISSION_DENIED"
    assert code_of(guard, "dangle", "create") == "PERMISSION_DENIED"
    assert code_of(guard, "dangle", "read") == "NOT_FOUND"
    assert code_of(guard, "dangle-out", "write") == "PERMISSION_DENIED"
    assert guard.resolve("dangle", purpose="delete") == tree / "dangle"


def test_symlink_loops_are_refused(tree: Path) -> None:
    (tree / "loop1").symlink_to(tree / "loop2")
    (tree / "loop2").symlink_to(tree / "loop1")
    assert code_of(PathGuard([tree]), "loop1/x") == "PERMISSION_DENIED"
    assert code_of(PathGuard([tree]), "loop1") == "PERMISSION_DENIED"


def test_new_targets_are_checked_through_their_nearest_existing_ancestor(tree: Path) -> None:
    guard = PathGuard([tree])
    assert guard.resolve("sub/new/deeper/file.txt", purpose="write") == tree / "sub" / "new" / "deeper" / "file.txt"
    assert code_of(guard, "sub/new/../../../escape.txt", "write") == "PERMISSION_DENIED"


def test_hard_linked_files_are_neither_read_nor_written_unless_reads_are_allowed(tree: Path) -> None:
    os.link(tree / "a.txt", tree / "hard.txt")
    guard = PathGuard([tree])
    assert code_of(guard, "hard.txt", "read") == "PERMISSION_DENIED"  # its other name may be a secret
    assert code_of(guard, "a.txt", "read") == "PERMISSION_DENIED"  # both names are the same file
    assert code_of(guard, "hard.txt", "write") == "PERMISSION_DENIED"
    allowing = PathGuard([tree], allow_hard_links=True)
    assert allowing.resolve("hard.txt", purpose="read") == tree / "hard.txt"
    assert code_of(allowing, "hard.txt", "write") == "PERMISSION_DENIED"  # never written in place


def test_repository_internals_are_never_written(tree: Path) -> None:
    (tree / "repo" / ".git" / "hooks").mkdir(parents=True)
    (tree / "repo" / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    guard = PathGuard([tree])
    for target, purpose in [
        ("repo/.git/config", "write"),
        ("repo/.git/hooks/pre-commit", "create"),
        ("repo/.git/objects/info/alternates", "create"),
        ("repo/.git", "delete"),
        ("other/.git", "create"),  # a .git file pointing elsewhere
    ]:
        assert code_of(guard, target, purpose) == "PERMISSION_DENIED", target
    assert guard.resolve("repo/.git/config", purpose="read") == tree / "repo" / ".git" / "config"


def test_special_files_are_refused(tree: Path) -> None:
    os.mkfifo(tree / "fifo")
    assert code_of(PathGuard([tree]), "fifo") == "PERMISSION_DENIED"
    assert code_of(PathGuard([tree]), "fifo", "write") == "PERMISSION_DENIED"


def test_roots_and_their_ancestors_are_never_deleted(tree: Path) -> None:
    guard = PathGuard([tree / "sub"])
    assert guard.resolve(str(tree / "sub"), purpose="list") == tree / "sub"
    with pytest.raises(ToolFailure) as caught:
        guard.resolve(str(tree / "sub"), purpose="delete")
    assert "roots are never deleted" in caught.value.message
    assert code_of(guard, "deep/..", "delete") == "PERMISSION_DENIED"
    assert guard.resolve("deep", purpose="delete") == tree / "sub" / "deep"
    assert code_of(guard, "missing", "delete") == "NOT_FOUND"


@pytest.mark.parametrize(
    "name", [".env", ".env.production", "server.pem", "tls.key", "id_rsa", "id_ed25519.pub", ".netrc", "cert.p12"]
)
def test_default_deny_globs(tree: Path, name: str) -> None:
    (tree / name).write_text("secret\n")
    guard = PathGuard([tree])
    assert code_of(guard, name) == "PERMISSION_DENIED"
    assert code_of(guard, name, "write") == "PERMISSION_DENIED"
    assert code_of(guard, name, "delete") == "PERMISSION_DENIED"


def test_deny_globs_see_through_symlinks_both_ways(tree: Path) -> None:
    (tree / ".env").write_text("SECRET=1\n")
    (tree / "notes.txt").symlink_to(tree / ".env")
    (tree / ".ssh").mkdir()
    (tree / ".ssh" / "config").write_text("Host x\n")
    guard = PathGuard([tree])
    assert code_of(guard, "notes.txt") == "PERMISSION_DENIED"
    assert code_of(guard, ".ssh/config") == "PERMISSION_DENIED"
    assert code_of(guard, ".ENV") in ("PERMISSION_DENIED",)  # case-insensitive match


def test_deny_globs_are_configurable(tree: Path) -> None:
    (tree / ".env").write_text("X=1\n")
    (tree / "build").mkdir()
    (tree / "build" / "out.js").write_text("x\n")
    guard = PathGuard([tree], deny_globs=["build/**"])
    assert guard.resolve(".env", purpose="read") == tree / ".env"
    assert code_of(guard, "build/out.js") == "PERMISSION_DENIED"
    assert ".env" in DEFAULT_DENY_GLOBS


def test_links_outside_the_roots_pointing_in_are_refused(tree: Path, tmp_path: Path) -> None:
    (tmp_path / "outside" / "in-link").symlink_to(tree / "a.txt")
    guard = PathGuard([tree])
    assert code_of(guard, str(tmp_path / "outside" / "in-link")) == "PERMISSION_DENIED"
    assert code_of(guard, str(tmp_path / "outside" / "in-link"), "delete") == "PERMISSION_DENIED"


def test_file_uris_and_with_roots(tree: Path) -> None:
    guard = PathGuard([tree])
    assert guard.resolve(f"file://{tree}/a.txt", purpose="read") == tree / "a.txt"
    narrowed = guard.with_roots([tree / "sub"])
    assert narrowed.roots == (tree / "sub",)
    assert narrowed.deny_globs == guard.deny_globs
    assert code_of(narrowed, str(tree / "a.txt")) == "PERMISSION_DENIED"


def test_open_file_refuses_a_final_symlink_and_directories(tree: Path, tmp_path: Path) -> None:
    guard = PathGuard([tree])
    (tree / "out-file").symlink_to(tmp_path / "outside" / "secret.txt")
    with pytest.raises(ToolFailure) as caught:
        guard.open_file(tree / "out-file")
    assert caught.value.code is ErrorCode.PERMISSION_DENIED
    with pytest.raises(ToolFailure) as caught:
        guard.open_file(tree / "sub")
    assert caught.value.code is ErrorCode.INVALID_INPUT
    fd = guard.open_file(tree / "a.txt")
    os.close(fd)


def test_client_roots_policy(tree: Path, tmp_path: Path) -> None:
    sub, outside = tree / "sub", tmp_path / "outside"
    assert intersect_roots([tree], [sub]) == [sub]
    assert intersect_roots([sub], [tree]) == [sub]
    assert intersect_roots([tree], [outside]) == []
    assert intersect_roots([tree], [sub, outside]) == [sub]
    assert intersect_roots([], [outside]) == [outside.resolve()]
    uris = [f"file://{sub}", "https://example.com/x", "file://remote-host/x", f"file://{tree}/with%20space"]
    assert roots_from_uris(uris) == [sub, tree / "with space"]
