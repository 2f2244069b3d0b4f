"""file_ops domain modules called directly: globs, .gitignore, regex safety, package grammar, TOCTOU, state."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from mcp_sections.servers.file_ops import listing, packages, reading, searching, walking, writing
from mcp_sections.servers.file_ops.settings import FileOpsSettings
from mcp_sections.servers.file_ops.state import FileOpsState
from mcp_sections.shared.confinement.guards.paths import PathGuard
from mcp_sections.shared.confinement.sandbox import bubblewrap_problem, detect
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**", "src/a/b", True),
        ("src/**/test_*.py", "src/test_x.py", True),
        ("src/**/test_*.py", "src/a/b/test_x.py", True),
        ("src/**/test_*.py", "lib/test_x.py", False),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("*.{js,ts}", "x.ts", True),
        ("*.{js,ts}", "x.py", False),
        ("a*b", "a/b", False),
    ],
)
def test_glob_regex(pattern: str, path: str, expected: bool) -> None:
    assert bool(walking.glob_regex(pattern).match(path)) is expected


def test_gitignore_rules(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("# comment\n*.log\n!keep.log\n/top-only\nbuild/\ndocs/**/*.tmp\n")
    ignore = walking.GitIgnore().child(str(tmp_path), "")
    assert ignore.ignored("x.log", False) and ignore.ignored("a/b/x.log", False)
    assert not ignore.ignored("keep.log", False)
    assert ignore.ignored("top-only", False) and not ignore.ignored("sub/top-only", False)
    assert ignore.ignored("build", True) and not ignore.ignored("build", False)
    assert ignore.ignored("docs/a/b.tmp", False) and not ignore.ignored("other/b.tmp", False)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("local.txt\n")
    nested = ignore.child(str(tmp_path / "sub"), "sub")
    assert nested.ignored("sub/local.txt", False) and not nested.ignored("local.txt", False)


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a*)*b", r"(a|aa)+", r"(\w+\s?)*$", r"(.*a){1000}", r"(x)\1"])
def test_catastrophic_regexes_are_refused(pattern: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        searching.check_regex_safety(pattern)
    assert caught.value.code is ErrorCode.INVALID_INPUT


@pytest.mark.parametrize(
    "pattern", [r"def \w+\(", r"^import (os|sys)$", r"[a-z]+_[0-9]{2,4}", r"(?i)todo:.*", r"a+b*c?"]
)
def test_ordinary_regexes_pass(pattern: str) -> None:
    searching.check_regex_safety(pattern)


@pytest.mark.parametrize(
    ("manager", "spec"),
    [
        ("npm", "lodash"),
        ("npm", "left-pad@1.3.0"),
        ("npm", "@types/node@^20.1"),
        ("npm", "react@>=18"),
        ("npm", "typescript@next"),
        ("pip", "requests"),
        ("pip", "rich>=13,<14"),
        ("pip", "uvicorn[standard]==0.30.0"),
        ("pip", "zope.interface~=6.0"),
    ],
)
def test_valid_package_specs(manager: str, spec: str) -> None:
    assert packages.validate_specs(manager, [spec]) == [spec]


@pytest.mark.parametrize(
    ("manager", "spec"),
    [
        ("npm", "-g"),
        ("npm", "--registry=http://evil"),
        ("npm", "lodash@file:../x"),
        ("npm", "https://evil/x.tgz"),
        ("npm", "user/repo"),
        ("npm", "../local"),
        ("npm", "lodash lodash"),
        ("npm", "Lodash"),
        ("pip", "-e ."),
        ("pip", "--extra-index-url=http://evil"),
        ("pip", "pkg @ https://evil/pkg.whl"),
        ("pip", "./dist/pkg.whl"),
        ("pip", "pkg; python_version<'3'"),
        ("pip", "git+https://github.com/x/y"),
        ("pip", "pkg==1.0 --hash=sha256:x"),
    ],
)
def test_invalid_package_specs(manager: str, spec: str) -> None:
    with pytest.raises(ToolFailure) as caught:
        packages.validate_specs(manager, [spec])
    assert caught.value.code is ErrorCode.INVALID_INPUT


def test_atomic_write_refuses_a_parent_swapped_for_a_symlink(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "dir").mkdir(parents=True)
    outside.mkdir()
    guard = PathGuard([root])
    target = guard.resolve("dir/file.txt", purpose="write")
    (root / "dir").rmdir()  # the race: after the check, the directory becomes a link out of the root
    (root / "dir").symlink_to(outside)
    with pytest.raises(ToolFailure) as caught:
        writing.atomic_write(guard, target, b"pwned")
    assert caught.value.code is ErrorCode.PERMISSION_DENIED
    assert list(outside.iterdir()) == []


def test_open_file_refuses_a_middle_component_swapped_for_a_symlink(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "f.txt").write_text("inside")
    outside.mkdir()
    (outside / "f.txt").write_text("outside")
    guard = PathGuard([root])
    target = guard.resolve("dir/f.txt", purpose="read")
    os.rename(root / "dir", root / "old")
    (root / "dir").symlink_to(outside)
    with pytest.raises(ToolFailure) as caught:
        guard.open_file(target)
    assert caught.value.code is ErrorCode.PERMISSION_DENIED


def test_detect_encoding() -> None:
    assert reading.detect_encoding("é".encode(), complete=True) == "utf-8"
    assert reading.detect_encoding("é".encode("utf-16"), complete=True) == "utf-16"
    assert reading.detect_encoding(b"\xef\xbb\xbfx", complete=True) == "utf-8-sig"
    assert reading.detect_encoding("café".encode("latin-1"), complete=True) == "latin-1"
    assert reading.detect_encoding(b"\x00\x01\x02", complete=True) is None
    assert reading.detect_encoding(bytes(range(1, 32)) * 10, complete=True) is None
    # a multi-byte character cut at the end of a sample is still UTF-8
    assert reading.detect_encoding("aé".encode()[:-1], complete=False) == "utf-8"


def test_huge_utf16_tail_streams(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"row {n}\n" for n in range(5000)), encoding="utf-16")
    guard = PathGuard([tmp_path])
    read = reading.read_file(guard, "big.txt", tail=2, max_bytes=2048, max_image_bytes=1)
    assert read.content == "row 4998\nrow 4999\n"
    read = reading.read_file(guard, "big.txt", offset=100, limit=1, max_bytes=2048, max_image_bytes=1)
    assert read.content == "row 99\n"


def test_search_time_budget_gives_a_partial_result(tmp_path: Path) -> None:
    for n in range(300):
        (tmp_path / f"f{n}.txt").write_text("needle\n")
    guard = PathGuard([tmp_path])
    outcome = searching.search_files(
        guard,
        "needle",
        ".",
        regex=False,
        case_sensitive=True,
        include=[],
        exclude=[],
        context_lines=0,
        max_results=1000,
        respect_gitignore=False,
        include_hidden=False,
        max_file_bytes=1000,
        max_entries=10_000,
        timeout_seconds=1e-9,
    )
    assert outcome.timed_out and len(outcome.matches) < 300


def test_glob_never_loops_through_symlinks(tmp_path: Path) -> None:
    tmp_path = tmp_path / "tree"
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.py").write_text("x")
    (tmp_path / "a" / "b" / "up").symlink_to(tmp_path / "a")
    guard = PathGuard([tmp_path])
    outcome = listing.glob_files(
        guard,
        "**/*",
        ".",
        respect_gitignore=False,
        include_hidden=False,
        include_directories=True,
        exclude=[],
        max_results=100,
        max_entries=1000,
        timeout_seconds=5,
    )
    assert outcome.matches == ["a", "a/b", "a/b/up", "a/b/x.py"]


def test_settings_and_client_roots_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SECTIONS_FILE_OPS_EXTRA_DENY_GLOBS", "*.sqlite, dump.sql")
    monkeypatch.setenv("MCP_SECTIONS_FILE_OPS_MAX_READ_BYTES", "2048")
    settings = FileOpsSettings.load({})
    assert settings.max_read_bytes == 2048
    assert {"*.sqlite", "dump.sql", ".env"} <= set(settings.all_deny_globs())
    (tmp_path / "work" / "project").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    state = FileOpsState([tmp_path / "work"], settings)
    assert state.guard_for(None)[1] == "configured"
    guard, source = state.guard_for([f"file://{tmp_path}/work/project"])
    assert source == "intersection" and guard.roots == (tmp_path / "work" / "project",)
    guard, source = state.guard_for([f"file://{tmp_path}/elsewhere"])
    assert guard.roots == ()
    with pytest.raises(ToolFailure) as caught:
        guard.resolve("x", purpose="read")
    assert "do not overlap" in caught.value.message
    unconfigured = FileOpsState([], settings)
    guard, source = unconfigured.guard_for([f"file://{tmp_path}/elsewhere"])
    assert source == "client" and guard.roots == (tmp_path / "elsewhere",)


@pytest.mark.skipif(searching._regex_module is None, reason="the optional `regex` package gives per-match timeouts")
def test_slow_regex_hits_the_time_budget(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text("a" * 3000 + "\n")
    guard = PathGuard([tmp_path / "tree"])
    with pytest.raises(ToolFailure) as caught:
        searching.search_files(
            guard,
            r"\w*\w*\w*\w*\d",
            ".",
            regex=True,
            case_sensitive=True,
            include=[],
            exclude=[],
            context_lines=0,
            max_results=10,
            respect_gitignore=False,
            include_hidden=False,
            max_file_bytes=100_000,
            max_entries=1000,
            timeout_seconds=0.3,
        )
    assert caught.value.code is ErrorCode.TIMEOUT


def test_tail_under_the_cap_keeps_the_last_lines(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("".join(f"{n:04d}\n" for n in range(100)) + "no newline at the end")
    guard = PathGuard([tmp_path])
    read = reading.read_file(guard, "t.txt", tail=3, max_bytes=1000, max_image_bytes=1)
    assert read.content == "0098\n0099\nno newline at the end"
    assert (read.start_line, read.end_line, read.total_lines) == (99, 101, 101)
    read = reading.read_file(guard, "t.txt", tail=3, max_bytes=30, max_image_bytes=1)  # larger than the cap
    assert read.content == "0099\nno newline at the end" and read.truncated
    (tmp_path / "big.txt").write_text("".join(f"{n:04d}\n" for n in range(2000)) + "end")
    read = reading.read_file(guard, "big.txt", tail=3, max_bytes=1024, max_image_bytes=1)
    assert read.content == "1998\n1999\nend" and not read.truncated
    read = reading.read_file(guard, "big.txt", tail=500, max_bytes=1024, max_image_bytes=1)
    assert read.truncated and read.content.endswith("1999\nend") and len(read.content) <= 1024


def test_write_cap_and_edit_keeps_the_encoding(tmp_path: Path) -> None:
    guard = PathGuard([tmp_path])
    with pytest.raises(ToolFailure) as caught:
        writing.write_file(
            guard, "big.txt", "x" * 2000, encoding="utf-8", create_parents=False, overwrite=True, max_bytes=1024
        )
    assert caught.value.code is ErrorCode.MAX_LIMIT_EXCEEDED and not (tmp_path / "big.txt").exists()
    (tmp_path / "u16.txt").write_text("héllo\nwörld\n", encoding="utf-16")
    outcome = writing.edit_file(guard, "u16.txt", [writing.Edit("wörld", "welt")], dry_run=False, max_bytes=10_000)
    assert outcome.applied and "+welt" in outcome.diff
    data = (tmp_path / "u16.txt").read_bytes()
    assert data.startswith(b"\xff\xfe") and data.decode("utf-16") == "héllo\nwelt\n"


@pytest.mark.skipif(not __import__("shutil").which("npm"), reason="npm is not installed")
def test_npm_install_ignores_a_project_npmrc_that_names_its_own_git(tmp_path: Path) -> None:
    """A hostile `.npmrc` (`git=./evil.sh`) plus a `git+` dependency must not run the project's script."""
    root = tmp_path / "project"
    root.mkdir()
    marker = tmp_path / "PWNED"
    evil = root / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n", encoding="utf-8")
    evil.chmod(0o755)
    (root / ".npmrc").write_text(f"git={evil}\n", encoding="utf-8")
    (root / "package.json").write_text(
        '{"name": "p", "version": "1.0.0", "dependencies": {"x": "git+file:///nonexistent/repo.git"}}',
        encoding="utf-8",
    )
    with contextlib.suppress(ToolFailure):  # the git dependency cannot be fetched: failing is fine
        packages.install_package(
            PathGuard([root]),
            "npm",
            ["left-pad@1.3.0"],
            ".",
            dev=False,
            timeout_seconds=120,
            npm_ignore_scripts=True,
            pip_allow_server_environment=False,
            sandbox=detect("auto", "file_ops") if bubblewrap_problem() is None else detect("off"),
        )
    assert not marker.exists(), "npm ran the git program named by the project's .npmrc"
