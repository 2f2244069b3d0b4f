"""Hostile paths against file_ops over stdio: each must fail with the exact error code, and nothing outside
the allowed root may change (a sentinel tree beside the root is hashed before and after every attack).

Covers what the reference filesystem server got wrong (CVE-2025-53110: string-prefix containment, so
`/root_evil` passed for `/root`; CVE-2025-53109: symlinks leading out of the root) and the usual rest.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.in_memory import section_in_memory
from tests.stdio import data_of, error_of

PD, NF, II, LIMIT = "PERMISSION_DENIED", "NOT_FOUND", "INVALID_INPUT", "MAX_LIMIT_EXCEEDED"
SECRET = "TOP-SECRET-OUTSIDE"
READ_CAP = 64 * 1024


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("attacks").resolve()
    root, outside, evil = base / "root", base / "outside", base / "root_evil"
    for directory in (root / "sub", root / "mid", root / "keys", outside / "dir", evil):
        directory.mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET + "\n")
    (outside / "dir" / "inner.txt").write_text(SECRET + " inner\n")
    (outside / "hardtarget.txt").write_text("outside, hard-linked into the root\n")
    (evil / "x.txt").write_text("evil sibling\n")
    (root / "ok.txt").write_text("fine\n")
    (root / "sub" / "file.txt").write_text("sub\n")
    (root / "link_out_dir").symlink_to(outside)
    (root / "link_out_file").symlink_to(outside / "secret.txt")
    (root / "mid" / "escape").symlink_to("../../outside")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "dangle_out").symlink_to(outside / "created-through-link.txt")
    (root / "dangle_in").symlink_to(root / "not-yet")
    (root / "link_dev").symlink_to("/dev/zero")
    os.link(outside / "hardtarget.txt", root / "hard.txt")
    os.mkfifo(root / "fifo")
    (root / ".env").write_text("API_KEY=do-not-leak\n")
    (root / "keys" / "server.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (root / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (root / "huge.log").write_text("".join(f"{n:09d}\n" for n in range(20_000)))  # 200 KB > the read cap
    return base


@pytest.fixture(scope="module")
async def client(base: Path) -> AsyncIterator[Client]:
    config = base / "absent-config.toml"
    config.write_text("", encoding="utf-8")
    env = {
        "MCP_SECTIONS_CONFIG": str(config),
        "MCP_SECTIONS_ROOTS": "",
        "MCP_SECTIONS_FILE_OPS_MAX_READ_BYTES": str(READ_CAP),
    }
    async with section_in_memory("file_ops", "--root", str(base / "root"), env=env) as connected:
        yield connected


def fingerprint(base: Path) -> dict[str, tuple[Any, ...]]:
    """Everything outside the root: names, types, contents, modes, link targets, link counts, mtimes."""
    seen: dict[str, tuple[Any, ...]] = {}
    for directory, dirnames, filenames in os.walk(base):
        if Path(directory) == base:
            dirnames[:] = [name for name in dirnames if name != "root"]
        for name in dirnames + filenames:
            path = Path(directory) / name
            info = os.lstat(path)
            rel = str(path.relative_to(base))
            if stat.S_ISLNK(info.st_mode):
                seen[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                seen[rel] = ("dir", stat.S_IMODE(info.st_mode))
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                seen[rel] = ("file", digest, stat.S_IMODE(info.st_mode), info.st_nlink, info.st_mtime_ns)
    return seen


@pytest.fixture
def untouched_outside(base: Path) -> Any:
    before = fingerprint(base)
    yield
    assert fingerprint(base) == before, "something outside the allowed root changed"


ROOT = "{root}"
BASE = "{base}"

ATTACKS: list[tuple[str, str, dict[str, Any], str]] = [
    # -- traversal and absolute paths
    ("dotdot", "read_file", {"path": "../outside/secret.txt"}, PD),
    ("deep-dotdot", "read_file", {"path": "../../../../../../etc/passwd"}, PD),
    ("dotdot-after-sub", "read_file", {"path": "sub/../../outside/secret.txt"}, PD),
    ("dotdot-through-missing", "read_file", {"path": "nope/../../outside/secret.txt"}, PD),
    ("absolute-outside", "read_file", {"path": "/etc/passwd"}, PD),
    ("absolute-via-root-dotdot", "read_file", {"path": ROOT + "/../outside/secret.txt"}, PD),
    ("proc-environ", "read_file", {"path": "/proc/self/environ"}, PD),
    ("file-uri-outside", "read_file", {"path": "file:///etc/passwd"}, PD),
    ("home-tilde", "read_file", {"path": "~/.bashrc"}, PD),
    # -- encodings and malformed input: never decoded into a traversal
    ("percent-encoded-dotdot", "read_file", {"path": "%2e%2e/outside/secret.txt"}, NF),
    ("backslash-dotdot", "read_file", {"path": "..\\outside\\secret.txt"}, NF),
    ("unicode-dots", "read_file", {"path": "\u2025/outside/secret.txt"}, NF),
    ("nul-byte", "read_file", {"path": "ok.txt\x00../../etc/passwd"}, II),
    ("empty-path", "read_file", {"path": " "}, II),
    ("overlong-component", "read_file", {"path": "a" * 300}, II),
    # -- prefix siblings (CVE-2025-53110)
    ("prefix-sibling-read", "read_file", {"path": BASE + "/root_evil/x.txt"}, PD),
    ("prefix-sibling-write", "write_file", {"path": BASE + "/root_evil/x.txt", "content": "pwned"}, PD),
    ("prefix-sibling-list", "list_directory", {"path": BASE + "/root_evil"}, PD),
    # -- symlinks leading outside (CVE-2025-53109), as the file, the directory, a middle component
    ("symlink-file-read", "read_file", {"path": "link_out_file"}, PD),
    ("symlink-dir-read", "read_file", {"path": "link_out_dir/secret.txt"}, PD),
    ("symlink-middle-read", "read_file", {"path": "mid/escape/secret.txt"}, PD),
    ("symlink-file-write", "write_file", {"path": "link_out_file", "content": "pwned"}, PD),
    ("symlink-dir-write", "write_file", {"path": "link_out_dir/new.txt", "content": "pwned"}, PD),
    (
        "symlink-middle-write",
        "write_file",
        {"path": "mid/escape/dir/new.txt", "content": "x", "create_parents": True},
        PD,
    ),
    ("symlink-edit", "edit_file", {"path": "link_out_file", "edits": [{"old_text": "TOP", "new_text": "X"}]}, PD),
    ("symlink-list", "list_directory", {"path": "link_out_dir"}, PD),
    ("symlink-tree", "directory_tree", {"path": "mid/escape"}, PD),
    ("symlink-info", "get_file_info", {"path": "link_out_file"}, PD),
    ("symlink-exists", "file_exists", {"path": "link_out_dir/secret.txt"}, PD),
    ("symlink-mkdir", "create_directory", {"path": "link_out_dir/newdir"}, PD),
    ("symlink-to-device", "read_file", {"path": "link_dev"}, PD),
    # -- loops and dangling links
    ("symlink-loop", "read_file", {"path": "loop_a"}, PD),
    ("symlink-loop-component", "write_file", {"path": "loop_a/x.txt", "content": "x"}, PD),
    ("dangling-out-write", "write_file", {"path": "dangle_out", "content": "pwned"}, PD),
    ("dangling-in-write", "write_file", {"path": "dangle_in", "content": "x"}, PD),
    ("dangling-copy-dest", "copy_file", {"source": "ok.txt", "destination": "dangle_out"}, PD),
    # -- hard links, special files, size caps
    ("hardlink-write", "write_file", {"path": "hard.txt", "content": "pwned"}, PD),
    ("hardlink-edit", "edit_file", {"path": "hard.txt", "edits": [{"old_text": "outside", "new_text": "X"}]}, PD),
    ("fifo-read", "read_file", {"path": "fifo"}, PD),
    ("fifo-write", "write_file", {"path": "fifo", "content": "x"}, PD),
    ("dev-zero", "read_file", {"path": "/dev/zero"}, PD),
    ("huge-file", "read_file", {"path": "huge.log"}, LIMIT),
    # -- protected secrets
    ("dotenv-read", "read_file", {"path": ".env"}, PD),
    ("dotenv-write", "write_file", {"path": ".env", "content": "API_KEY=attacker"}, PD),
    ("pem-read", "read_file", {"path": "keys/server.pem"}, PD),
    ("ssh-key-copy", "copy_file", {"source": "id_rsa", "destination": "innocent.txt"}, PD),
    ("secret-rename", "move_file", {"source": ".env", "destination": "readable.txt"}, PD),
    # -- deleting roots and outside things
    ("delete-root-dot", "delete_path", {"path": ".", "recursive": True}, PD),
    ("delete-root-absolute", "delete_path", {"path": ROOT, "recursive": True}, PD),
    ("delete-root-via-dotdot", "delete_path", {"path": "sub/..", "recursive": True}, PD),
    ("delete-parent-of-root", "delete_path", {"path": BASE, "recursive": True}, PD),
    ("delete-outside-file", "delete_path", {"path": "../outside/secret.txt"}, PD),
    ("delete-through-symlink", "delete_path", {"path": "link_out_dir/dir", "recursive": True}, PD),
    ("delete-outside-symlinked-dir", "delete_path", {"path": "link_out_dir", "recursive": True}, PD),
    # -- moving and copying across the boundary
    ("move-out", "move_file", {"source": "ok.txt", "destination": "../outside/moved.txt"}, PD),
    ("move-out-via-symlink", "move_file", {"source": "ok.txt", "destination": "link_out_dir/moved.txt"}, PD),
    ("move-in-from-outside", "move_file", {"source": "../outside/secret.txt", "destination": "stolen.txt"}, PD),
    ("move-root", "move_file", {"source": ".", "destination": "sub/root-moved"}, PD),
    ("copy-from-outside", "copy_file", {"source": "../outside/secret.txt", "destination": "stolen.txt"}, PD),
    ("copy-via-symlink", "copy_file", {"source": "link_out_file", "destination": "stolen.txt"}, PD),
    ("copy-out", "copy_file", {"source": "ok.txt", "destination": "../outside/copy.txt"}, PD),
    ("copy-tree-out", "copy_file", {"source": "sub", "destination": BASE + "/root_evil/sub", "recursive": True}, PD),
    # -- globbing, searching, listing
    ("glob-dotdot", "glob_files", {"pattern": "../outside/*"}, PD),
    ("glob-dotdot-inner", "glob_files", {"pattern": "**/../../outside/*"}, PD),
    ("glob-absolute", "glob_files", {"pattern": "/etc/*"}, II),
    ("glob-base-symlink", "glob_files", {"pattern": "**/*", "path": "link_out_dir"}, PD),
    ("search-outside-dir", "search_files", {"pattern": SECRET, "path": "../outside"}, PD),
    ("search-base-symlink", "search_files", {"pattern": SECRET, "path": "mid/escape"}, PD),
    ("list-outside", "list_directory", {"path": "/"}, PD),
    ("tree-outside", "directory_tree", {"path": BASE}, PD),
    ("install-outside", "install_package", {"manager": "npm", "packages": ["lodash"], "path": "../outside"}, PD),
    ("install-option-injection", "install_package", {"manager": "npm", "packages": ["--prefix=/tmp/x"]}, II),
]


def _fill(value: Any, base: Path) -> Any:
    if isinstance(value, str):
        return value.replace(ROOT, str(base / "root")).replace(BASE, str(base))
    if isinstance(value, dict):
        return {key: _fill(item, base) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, base) for item in value]
    return value


def test_there_are_enough_attacks() -> None:
    assert len(ATTACKS) >= 35
    assert len({name for name, *_ in ATTACKS}) == len(ATTACKS)


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "tool", "arguments", "code"), ATTACKS, ids=[attack[0] for attack in ATTACKS])
async def test_attack_is_refused(
    client: Client, base: Path, untouched_outside: Any, name: str, tool: str, arguments: dict[str, Any], code: str
) -> None:
    result = await client.call_tool(tool, _fill(arguments, base))
    error_code, message = error_of(result)
    assert error_code == code, f"{name}: {message}"
    assert SECRET not in message and "do-not-leak" not in message
    assert str(base / "outside") not in message  # never echo where a link really points


@pytest.mark.anyio
async def test_denials_do_not_reveal_existence_outside(client: Client, base: Path, untouched_outside: Any) -> None:
    messages = []
    for name in ("secret.txt", "no-such-file.txt"):
        for tool in ("read_file", "file_exists", "get_file_info"):
            path = str(base / "outside" / name)
            code, message = error_of(await client.call_tool(tool, {"path": path}))
            assert code == PD
            messages.append(message.replace(path, "<path>"))
    assert len(set(messages)) == 1


@pytest.mark.anyio
async def test_walks_never_follow_symlinks_out(client: Client, base: Path, untouched_outside: Any) -> None:
    found = data_of(await client.call_tool("search_files", {"pattern": SECRET, "include_hidden": True}))
    assert found["matches"] == []
    globbed = data_of(await client.call_tool("glob_files", {"pattern": "**/*", "include_hidden": True}))
    assert not [path for path in globbed["matches"] if "inner" in path or "secret" in path]
    assert "ok.txt" in globbed["matches"]
    tree = data_of(await client.call_tool("directory_tree", {"path": ".", "max_depth": 5, "show_hidden": True}))
    assert not [entry for entry in tree["entries"] if entry["path"].startswith(("link_out_dir/", "mid/escape/"))]
    listing = data_of(await client.call_tool("list_directory", {"path": ".", "show_hidden": True}))
    targets = {entry["name"]: entry.get("link_target") for entry in listing["entries"]}
    assert targets["link_out_dir"] == "(outside the allowed roots)"


@pytest.mark.anyio
async def test_batch_reads_fail_per_file(client: Client, base: Path, untouched_outside: Any) -> None:
    data = data_of(
        await client.call_tool("read_multiple_files", {"paths": ["ok.txt", "link_out_file", "../outside/secret.txt"]})
    )
    assert [item.get("error_code") for item in data["files"]] == [None, PD, PD]
    assert SECRET not in str(data)


@pytest.mark.anyio
async def test_allowed_operations_next_to_the_traps_still_work(
    client: Client, base: Path, untouched_outside: Any
) -> None:
    root = base / "root"
    data_of(await client.call_tool("delete_path", {"path": "dangle_in"}))  # a link inside the root: the link goes
    assert not os.path.lexists(root / "dangle_in") and not (root / "not-yet").exists()
    # a hard link to an outside file: its other name is the outside file, so reading it is refused too
    assert error_of(await client.call_tool("read_file", {"path": "hard.txt"}))[0] == "PERMISSION_DENIED"
    data_of(await client.call_tool("read_file", {"path": "huge.log", "tail": 1}))


@pytest.mark.anyio
async def test_no_roots_configured_denies_everything(base: Path) -> None:
    config = base / "absent-config.toml"
    config.write_text("", encoding="utf-8")  # also when this test runs alone (the module's client wrote it otherwise)
    env = {"MCP_SECTIONS_CONFIG": str(config), "MCP_SECTIONS_ROOTS": ""}
    async with section_in_memory("file_ops", env=env, cwd=base / "root") as client:
        code, message = error_of(await client.call_tool("read_file", {"path": "ok.txt"}))
        assert code == PD and "--root" in message
        assert data_of(await client.call_tool("list_allowed_roots", {}))["roots"] == []
