"""The file_ops section's tools through the official `mcp` client, in memory (one server per module);
test_stdio.py runs the same server over stdio."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.stdio import call, fail, text_of

READ_CAP = 100_000
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("file-ops").resolve()


@pytest.fixture(scope="module")
async def client(root: Path) -> AsyncIterator[Client]:
    config = root.parent / "absent-config.toml"
    config.write_text("", encoding="utf-8")
    env = {
        "MCP_SECTIONS_CONFIG": str(config),
        "MCP_SECTIONS_ROOTS": "",
        "MCP_SECTIONS_FILE_OPS_MAX_READ_BYTES": str(READ_CAP),
    }
    async with section_in_memory("file_ops", "--root", str(root), env=env) as connected:
        yield connected


def area(root: Path, name: str) -> Path:
    """A fresh directory per test, so tests sharing the server do not see each other's files."""
    directory = root / name
    directory.mkdir()
    return directory


@pytest.mark.anyio
async def test_read_file_windows(client: Client, root: Path) -> None:
    here = area(root, "read")
    (here / "lines.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    data = await call(client, "read_file", path="read/lines.txt")
    assert data["total_lines"] == 100 and data["encoding"] == "utf-8" and not data["truncated"]
    data = await call(client, "read_file", path="read/lines.txt", offset=10, limit=3)
    assert data["content"] == "line 10\nline 11\nline 12\n"
    assert (data["start_line"], data["end_line"], data["truncated"]) == (10, 12, False)
    assert (await call(client, "read_file", path="read/lines.txt", head=2))["content"] == "line 1\nline 2\n"
    assert (await call(client, "read_file", path="read/lines.txt", tail=2))["content"] == "line 99\nline 100\n"
    await fail(client, "read_file", "INVALID_INPUT", path="read/lines.txt", head=2, tail=2)
    await fail(client, "read_file", "INVALID_INPUT", path="read/lines.txt", offset=500)
    await fail(client, "read_file", "NOT_FOUND", path="read/absent.txt")
    await fail(client, "read_file", "INVALID_INPUT", path="read")
    await fail(client, "read_file", "INVALID_INPUT", path="read/lines.txt", unknown=1)
    result = await client.call_tool("read_file", {"path": str(here / "lines.txt"), "head": 1})
    assert text_of(result) == "line 1\n"


@pytest.mark.anyio
async def test_read_file_encodings_binary_and_images(client: Client, root: Path) -> None:
    here = area(root, "encodings")
    (here / "u16.txt").write_bytes("héllo wörld\n".encode("utf-16"))
    (here / "latin.txt").write_bytes("café\n".encode("latin-1"))
    (here / "bom.txt").write_bytes(b"\xef\xbb\xbfbom\n")
    (here / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (here / "pixel.png").write_bytes(PNG)
    assert (await call(client, "read_file", path="encodings/u16.txt"))["content"] == "héllo wörld\n"
    latin = await call(client, "read_file", path="encodings/latin.txt")
    assert (latin["content"], latin["encoding"]) == ("café\n", "latin-1")
    assert (await call(client, "read_file", path="encodings/bom.txt"))["content"] == "bom\n"
    assert "binary" in await fail(client, "read_file", "INVALID_INPUT", path="encodings/blob.bin")
    result = await client.call_tool("read_file", {"path": "encodings/pixel.png"})
    assert not result.is_error
    image = result.content[1]
    assert image.type == "image" and image.mime_type == "image/png" and base64.b64decode(image.data) == PNG
    assert result.structured_content["mime_type"] == "image/png"


@pytest.mark.anyio
async def test_read_file_size_cap_and_windows_of_huge_files(client: Client, root: Path) -> None:
    here = area(root, "huge")
    (here / "big.log").write_text("".join(f"entry {n:06d}\n" for n in range(20_000)))  # ~260 KB > cap
    message = await fail(client, "read_file", "MAX_LIMIT_EXCEEDED", path="huge/big.log")
    assert "head" in message and "tail" in message
    assert (await call(client, "read_file", path="huge/big.log", head=2))["content"] == "entry 000000\nentry 000001\n"
    tail = await call(client, "read_file", path="huge/big.log", tail=2)
    assert tail["content"] == "entry 019998\nentry 019999\n"
    window = await call(client, "read_file", path="huge/big.log", offset=15_001, limit=1)
    assert window["content"] == "entry 015000\n" and window["start_line"] == 15_001


@pytest.mark.anyio
async def test_read_multiple_files_isolates_failures(client: Client, root: Path) -> None:
    here = area(root, "multi")
    (here / "one.txt").write_text("one\n")
    (here / "two.txt").write_text("two\n2\n")
    (here / ".env").write_text("SECRET=1\n")
    (here / "pic.png").write_bytes(PNG)
    data = await call(
        client,
        "read_multiple_files",
        paths=["multi/one.txt", "multi/missing.txt", "multi/two.txt", "multi/.env", "/etc/passwd", "multi/pic.png"],
        max_lines_per_file=1,
    )
    assert (data["succeeded"], data["failed"]) == (2, 4)
    by_code = [item.get("error_code") for item in data["files"]]
    assert by_code == [None, "NOT_FOUND", None, "PERMISSION_DENIED", "PERMISSION_DENIED", "INVALID_INPUT"]
    assert data["files"][2]["content"] == "two\n"


@pytest.mark.anyio
async def test_write_file_is_atomic_and_careful(client: Client, root: Path) -> None:
    here = area(root, "write")
    data = await call(client, "write_file", path="write/new.txt", content="hello\n")
    assert data["created"] is True and data["bytes_written"] == 6
    assert (here / "new.txt").read_text() == "hello\n"
    os.chmod(here / "new.txt", 0o640)
    data = await call(client, "write_file", path="write/new.txt", content="again\n")
    assert data["created"] is False
    assert stat.S_IMODE(os.stat(here / "new.txt").st_mode) == 0o640  # mode kept across the rename
    message = await fail(client, "write_file", "VALIDATION_FAILED", path="write/new.txt", content="x", overwrite=False)
    assert "overwrite=true" in message and "this very content" not in message
    repeated = await fail(  # the call that wrote it, repeated as a client does when it lost the answer
        client, "write_file", "VALIDATION_FAILED", path="write/new.txt", content="again\n", overwrite=False
    )
    assert "It holds this very content: an earlier call may have written it." in repeated
    await fail(client, "write_file", "NOT_FOUND", path="write/a/b/c.txt", content="x")
    await call(client, "write_file", path="write/a/b/c.txt", content="deep", create_parents=True)
    assert (here / "a" / "b" / "c.txt").read_text() == "deep"
    await call(client, "write_file", path="write/u16.txt", content="ü", encoding="utf-16")
    assert (here / "u16.txt").read_bytes().decode("utf-16") == "ü"
    await fail(client, "write_file", "INVALID_INPUT", path="write/a", content="x")
    assert not [name for name in os.listdir(here) if name.startswith(".mcp-sections-tmp")]
    # a symlink to a file inside the roots is written through to its real target, the link stays
    (here / "link.txt").symlink_to(here / "new.txt")
    await call(client, "write_file", path="write/link.txt", content="via link\n")
    assert (here / "link.txt").is_symlink() and (here / "new.txt").read_text() == "via link\n"


@pytest.mark.anyio
async def test_edit_file(client: Client, root: Path) -> None:
    here = area(root, "edit")
    target = here / "code.py"
    target.write_text("def f():\n    return 1\n\n\ndef g():\n    return 1\n")
    data = await call(
        client,
        "edit_file",
        path="edit/code.py",
        edits=[{"old_text": "def f():\n    return 1", "new_text": "def f():\n    return 2"}],
        dry_run=True,
    )
    assert data["applied"] is False and "-    return 1" in data["diff"] and "+    return 2" in data["diff"]
    assert "return 2" not in target.read_text()
    message = await fail(
        client, "edit_file", "VALIDATION_FAILED", path="edit/code.py", edits=[{"old_text": "return 1", "new_text": "x"}]
    )
    assert "2 times" in message and "replace_all" in message
    message = await fail(
        client,
        "edit_file",
        "VALIDATION_FAILED",
        path="edit/code.py",
        edits=[{"old_text": "def f():\n  return 1", "new_text": "x"}],
    )
    assert "whitespace" in message
    # all or nothing: the second edit fails, so the first is not applied either
    await fail(
        client,
        "edit_file",
        "VALIDATION_FAILED",
        path="edit/code.py",
        edits=[{"old_text": "def f", "new_text": "def h"}, {"old_text": "absent", "new_text": "x"}],
    )
    assert "def f" in target.read_text()
    data = await call(
        client,
        "edit_file",
        path="edit/code.py",
        edits=[
            {"old_text": "return 1", "new_text": "return 3", "replace_all": True},
            {"old_text": "g", "new_text": "k"},
        ],
    )
    assert data["applied"] is True and data["replacements"] == 3
    assert target.read_text() == "def f():\n    return 3\n\n\ndef k():\n    return 3\n"
    (here / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edits = [{"old_text": "one\ntwo", "new_text": "first\nsecond"}]
    await call(client, "edit_file", path="edit/crlf.txt", edits=edits)
    assert (here / "crlf.txt").read_bytes() == b"first\r\nsecond\r\nthree\r\n"
    # the same call again, as a client repeats one whose answer it lost: refused, saying the edit looks made
    message = await fail(client, "edit_file", "VALIDATION_FAILED", path="edit/crlf.txt", edits=edits)
    assert "new_text is there already (line 1)" in message and "No edit was applied" in message
    assert (here / "crlf.txt").read_bytes() == b"first\r\nsecond\r\nthree\r\n"


@pytest.mark.anyio
async def test_list_directory_and_tree(client: Client, root: Path) -> None:
    here = area(root, "listing")
    (here / "dir").mkdir()
    (here / "dir" / "inner").mkdir()
    (here / "dir" / "inner" / "deep.txt").write_text("d")
    (here / "small.txt").write_text("1")
    (here / "large.txt").write_text("1" * 100)
    (here / ".hidden").write_text("h")
    (here / "link").symlink_to(here / "dir")
    (here / "escape").symlink_to("/etc")
    data = await call(client, "list_directory", path="listing")
    entries = {entry["name"]: entry for entry in data["entries"]}
    assert set(entries) == {"dir", "small.txt", "large.txt", "link", "escape"}
    assert entries["dir"]["type"] == "directory" and entries["small.txt"]["size_bytes"] == 1
    assert entries["link"]["type"] == "symlink" and entries["link"]["link_target"] == str(here / "dir")
    assert entries["escape"]["link_target"] == "(outside the allowed roots)"
    data = await call(client, "list_directory", path="listing", show_hidden=True, sort_by="size", reverse=True)
    assert data["entries"][0]["name"] == "large.txt" and ".hidden" in {e["name"] for e in data["entries"]}
    first = await call(client, "list_directory", path="listing", limit=2, show_hidden=True)
    assert len(first["entries"]) == 2 and first["total_entries"] == 6 and not first["truncated"]
    pages = [first]
    while pages[-1].get("next_cursor"):
        pages.append(
            await call(
                client, "list_directory", path="listing", limit=2, show_hidden=True, cursor=pages[-1]["next_cursor"]
            )
        )
    paged = [entry["name"] for page in pages for entry in page["entries"]]
    whole = await call(client, "list_directory", path="listing", show_hidden=True)
    assert paged == [entry["name"] for entry in whole["entries"]] and len(pages) == 3
    message = await fail(client, "list_directory", "INVALID_INPUT", path="listing", cursor=first["next_cursor"])
    assert "other arguments" in message  # the cursor of a listing with show_hidden=true
    await fail(client, "list_directory", "INVALID_INPUT", path="listing/small.txt")

    tree = await call(client, "directory_tree", path="listing", max_depth=1)
    assert {entry["path"] for entry in tree["entries"]} == {"dir", "small.txt", "large.txt", "link"}
    tree = await call(client, "directory_tree", path="listing", exclude=["large.txt"])
    paths = [entry["path"] for entry in tree["entries"]]
    assert "dir/inner/deep.txt" in paths and "large.txt" not in paths and "link/inner" not in paths
    assert (await call(client, "directory_tree", path="listing", max_entries=2))["truncated"] is True
    paged_tree = await call(client, "directory_tree", path="listing", limit=2)
    assert len(paged_tree["entries"]) == 2 and paged_tree["total_entries"] == len(tree["entries"]) + 1
    rest = await call(client, "directory_tree", path="listing", limit=100, cursor=paged_tree["next_cursor"])
    assert rest.get("next_cursor") is None and len(rest["entries"]) == paged_tree["total_entries"] - 2


@pytest.mark.anyio
async def test_glob_files(client: Client, root: Path) -> None:
    here = area(root, "glob")
    for rel in ("a.py", "src/b.py", "src/pkg/c.py", "src/pkg/d.ts", "build/e.py", "node/f.js", ".hidden/g.py"):
        (here / rel).parent.mkdir(parents=True, exist_ok=True)
        (here / rel).write_text("x")
    (here / ".gitignore").write_text("build/\n*.js\n")
    (here / "loop").symlink_to(here)
    data = await call(client, "glob_files", pattern="**/*.py", path="glob")
    assert data["matches"] == ["a.py", "build/e.py", "src/b.py", "src/pkg/c.py"]
    data = await call(client, "glob_files", pattern="**/*.py", path="glob", respect_gitignore=True)
    assert data["matches"] == ["a.py", "src/b.py", "src/pkg/c.py"]
    data = await call(client, "glob_files", pattern="src/**/*.{py,ts}", path="glob")
    assert data["matches"] == ["src/b.py", "src/pkg/c.py", "src/pkg/d.ts"]
    assert (await call(client, "glob_files", pattern="*.py", path="glob"))["matches"] == ["a.py"]
    data = await call(client, "glob_files", pattern="**/*.py", path="glob", include_hidden=True, max_results=2)
    assert data["count"] == 2 and data["truncated"] is True
    await fail(client, "glob_files", "PERMISSION_DENIED", pattern="../**/*.py", path="glob")
    await fail(client, "glob_files", "INVALID_INPUT", pattern="/etc/*", path="glob")


@pytest.mark.anyio
async def test_search_files(client: Client, root: Path) -> None:
    here = area(root, "search")
    (here / "a.py").write_text("import os\n\ndef needle():\n    return 'Needle'\n")
    (here / "b.txt").write_text("no match here\nneedle in text\n")
    (here / "c.bin").write_bytes(b"\x00needle\x00")
    (here / "ignored").mkdir()
    (here / "ignored" / "d.py").write_text("needle\n")
    (here / ".gitignore").write_text("ignored/\n")
    data = await call(client, "search_files", pattern="needle", path="search")
    assert [(m["path"], m["line_number"]) for m in data["matches"]] == [("a.py", 3), ("b.txt", 2)]
    assert data["files_skipped"] >= 1  # the binary file
    data = await call(client, "search_files", pattern="needle", path="search", case_sensitive=False, include=["*.py"])
    assert [(m["path"], m["line_number"]) for m in data["matches"]] == [("a.py", 3), ("a.py", 4)]
    data = await call(client, "search_files", pattern="needle", path="search", respect_gitignore=False)
    assert "ignored/d.py" in {m["path"] for m in data["matches"]}
    data = await call(client, "search_files", pattern=r"def \w+\(\)", path="search", regex=True, context_lines=1)
    match = data["matches"][0]
    assert match["line"] == "def needle():" and match["before"] == [""] and match["after"] == ["    return 'Needle'"]
    assert (
        "a.py:3:def needle():"
        in (await client.call_tool("search_files", {"pattern": "def", "path": "search"})).content[0].text
    )
    data = await call(client, "search_files", pattern="(a+)+$", path="search", regex=True)  # rg: linear time
    assert data["matches"] == [] and not data["timed_out"]
    await fail(client, "search_files", "INVALID_INPUT", pattern="(", path="search", regex=True)
    data = await call(client, "search_files", pattern="needle", path="search", max_results=1)
    assert len(data["matches"]) == 1 and data["truncated"] is True
    single = await call(client, "search_files", pattern="needle", path="search/b.txt")
    assert [m["line_number"] for m in single["matches"]] == [2]


@pytest.mark.anyio
async def test_exists_and_info(client: Client, root: Path) -> None:
    here = area(root, "info")
    (here / "f.txt").write_text("12345")
    (here / "l").symlink_to(here / "f.txt")
    assert (await call(client, "file_exists", path="info/f.txt")) == {
        "path": str(here / "f.txt"),
        "exists": True,
        "type": "file",
    }
    assert (await call(client, "file_exists", path="info/nothing"))["exists"] is False
    await fail(client, "file_exists", "PERMISSION_DENIED", path="/etc/passwd")
    info = await call(client, "get_file_info", path="info/l")
    assert info["size_bytes"] == 5 and info["is_symlink"] is True and info["link_target"] == str(here / "f.txt")
    assert info["is_binary"] is False and info["mime_type"] == "text/plain" and info["hard_links"] == 1
    info = await call(client, "get_file_info", path="info")
    assert info["type"] == "directory" and info["entries"] == 2


@pytest.mark.anyio
async def test_create_move_copy_delete(client: Client, root: Path) -> None:
    here = area(root, "manage")
    assert (await call(client, "create_directory", path="manage/x/y"))["created"] is True
    assert (await call(client, "create_directory", path="manage/x/y"))["created"] is False
    await fail(client, "create_directory", "NOT_FOUND", path="manage/p/q", parents=False)
    (here / "f.txt").write_text("content")
    moved = await call(client, "move_file", source="manage/f.txt", destination="manage/x/g.txt")
    assert moved["type"] == "file" and (here / "x" / "g.txt").read_text() == "content"
    assert not (here / "f.txt").exists()
    repeated = await fail(client, "move_file", "NOT_FOUND", source="manage/f.txt", destination="manage/x/g.txt")
    assert "an earlier call may have moved it there" in repeated  # the same call again: its result is named
    absent = await fail(client, "move_file", "NOT_FOUND", source="manage/f.txt", destination="manage/x/h.txt")
    assert "earlier call" not in absent
    (here / "other.txt").write_text("other")
    await fail(client, "move_file", "VALIDATION_FAILED", source="manage/other.txt", destination="manage/x/g.txt")
    assert (await call(client, "move_file", source="manage/other.txt", destination="manage/x/g.txt", overwrite=True))[
        "overwritten"
    ]
    await fail(client, "move_file", "INVALID_INPUT", source="manage/x", destination="manage/x/y/z")
    copied = await call(client, "copy_file", source="manage/x/g.txt", destination="manage/copy.txt")
    assert copied["files_copied"] == 1 and (here / "copy.txt").read_text() == "other"
    await fail(client, "copy_file", "INVALID_INPUT", source="manage/x", destination="manage/x2")
    (here / "x" / ".env").write_text("S=1")
    tree = await call(client, "copy_file", source="manage/x", destination="manage/x2", recursive=True)
    assert tree["type"] == "directory" and (here / "x2" / "y").is_dir() and (here / "x2" / "g.txt").exists()
    assert not (here / "x2" / ".env").exists()  # protected files are not copied
    (here / "link").symlink_to(here / "x2")
    deleted = await call(client, "delete_path", path="manage/link")
    assert deleted["type"] == "symlink" and (here / "x2").is_dir()  # the link, never its target
    await fail(client, "delete_path", "INVALID_INPUT", path="manage/x2")
    assert (await call(client, "delete_path", path="manage/x2", recursive=True))["entries_deleted"] == 3
    assert (await call(client, "delete_path", path="manage/copy.txt"))["entries_deleted"] == 1
    await fail(client, "delete_path", "NOT_FOUND", path="manage/copy.txt")


@pytest.mark.anyio
async def test_install_package(client: Client, root: Path) -> None:
    here = area(root, "project")
    for spec in ("--index-url=http://evil", "https://evil/x.tar.gz", "../pkg", "pkg; rm -rf /", "a b", "git+ssh://x"):
        await fail(client, "install_package", "INVALID_INPUT", manager="pip", packages=[spec], path="project")
    for spec in ("-g", "lodash@file:../x", "http://x/y.tgz", "github:user/repo", "@scope/a/b"):
        await fail(client, "install_package", "INVALID_INPUT", manager="npm", packages=[spec], path="project")
    message = await fail(
        client, "install_package", "VALIDATION_FAILED", manager="pip", packages=["requests"], path="project"
    )
    assert "virtual environment" in message
    venv = here / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    fake = venv / "bin" / "python"
    fake.write_text('#!/bin/sh\necho "$@" > "$PWD/args.txt"\necho installed\n')
    fake.chmod(0o755)
    data = await call(
        client,
        "install_package",
        manager="pip",
        packages=["requests>=2,<3", "uvicorn[standard]==0.30.0"],
        path="project",
    )
    assert data["exit_code"] == 0 and data["cwd"] == str(here) and data["environment"] == str(venv)
    assert (here / "args.txt").read_text().split() == [
        "-m",
        "pip",
        "install",
        "--no-input",
        "--disable-pip-version-check",
        "--",
        "requests>=2,<3",
        "uvicorn[standard]==0.30.0",
    ]


@pytest.mark.anyio
async def test_list_allowed_roots(client: Client, root: Path) -> None:
    data = await call(client, "list_allowed_roots")
    assert data["roots"] == [str(root)] and data["source"] == "configured" and ".env" in data["deny_globs"]
